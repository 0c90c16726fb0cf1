"""`fermix jobs install`: a crontab line, or a systemd user timer, that calls `fermix jobs run` every minute.

Installing is idempotent: the crontab line carries a marker naming the fermix home, and installing
again replaces that line rather than adding a second one. Nothing is written without `--apply`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ..core.errors import ToolError
from ..core.paths import FermixPaths
from ..core.records import Record

UNIT = "fermix-jobs"


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _installed() -> bool:
    """Whether this fermix is the one installed in site-packages (not a checkout run from source)."""
    import site

    here = os.path.realpath(_package_root())
    return any(os.path.realpath(d) == here for d in site.getsitepackages())


def fermix_command() -> list[str]:
    """How cron or systemd should start this very fermix: its console script when installed, else
    `python -m fermix_cli` with this checkout on PYTHONPATH (see `environment`)."""
    script = Path(sys.executable).with_name("fermix")
    if _installed() and script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "fermix_cli"]


def environment(paths: FermixPaths, command: list[str]) -> dict[str, str]:
    """What the scheduled command needs that cron's bare environment lacks."""
    env: dict[str, str] = {}
    if paths.explicit_home:
        env["FERMIX_HOME"] = str(paths.data_dir)
    if command[1:2] == ["-m"]:
        env["PYTHONPATH"] = _package_root()
    return env


def marker(paths: FermixPaths) -> str:
    return f"# fermix jobs run (home: {paths.data_dir})"


def cron_line(paths: FermixPaths) -> str:
    command = fermix_command()
    env = environment(paths, command)
    prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in sorted(env.items()))
    # The shell refuses to run a command whose redirection target's directory is missing.
    log = paths.ensure_dir(paths.log_dir) / "jobs-cron.log"
    run = " ".join(shlex.quote(c) for c in command)
    line = f"* * * * * {prefix}{run} jobs run --quiet >/dev/null 2>>{shlex.quote(str(log))} {marker(paths)}"
    return line.replace("%", "\\%")  # cron turns a bare % into a newline


class SystemdUnits(Record, frozen=True):
    directory: Path
    service: str
    timer: str


def unit_dir(os_home: str) -> Path:
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(os_home, ".config")
    return Path(base) / "systemd" / "user"


def systemd_value(value: str) -> str:
    """`value` as one word of a systemd unit setting: double-quoted, with `\\`, `"` and `%` escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def systemd_units(paths: FermixPaths, os_home: str) -> SystemdUnits:
    command = fermix_command()
    env = environment(paths, command)
    # systemd.exec: a value with spaces is quoted as a whole ("KEY=value"); `$` in ExecStart= is doubled.
    env_lines = "".join(f"Environment={systemd_value(f'{k}={v}')}\n" for k, v in sorted(env.items()))
    run = " ".join(systemd_value(c).replace("$", "$$") for c in command)
    service = (
        "[Unit]\n"
        "Description=fermix scheduled jobs (fermix jobs run)\n\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"{env_lines}"
        f"ExecStart={run} jobs run --quiet\n"
    )
    timer = (
        "[Unit]\n"
        "Description=Run fermix scheduled jobs every minute\n\n"
        "[Timer]\n"
        "OnCalendar=*-*-* *:*:00\n"
        "AccuracySec=1s\n"
        "Persistent=false\n\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    return SystemdUnits(unit_dir(os_home), service, timer)


def _run(argv: list[str], *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    if shutil.which(argv[0]) is None:
        raise ToolError(
            "executable_not_found",
            f"{argv[0]} is not installed here; {'use --systemd, or ' if argv[0] == 'crontab' else ''}"
            f"add the line yourself (fermix jobs install prints it).",
            {"program": argv[0]},
        )
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)


def _current_crontab() -> str:
    proc = _run(["crontab", "-l"])
    if proc.returncode != 0:
        if "no crontab" in proc.stderr.lower():
            return ""
        raise ToolError("install_failed", f"crontab -l failed: {proc.stderr.strip()}", {})
    return proc.stdout


def apply_cron(paths: FermixPaths, *, remove: bool = False) -> str:
    """Install (or remove) this home's line in the user's crontab; returns what the crontab now holds of it."""
    mark = marker(paths)
    kept = [line for line in _current_crontab().splitlines() if not line.rstrip().endswith(mark)]
    line = cron_line(paths)
    if not remove:
        kept.append(line)
    text = "\n".join(kept) + "\n" if kept else ""
    proc = _run(["crontab", "-"], stdin=text)
    if proc.returncode != 0:
        raise ToolError("install_failed", f"crontab - failed: {proc.stderr.strip()}", {})
    return "" if remove else line


def apply_systemd(paths: FermixPaths, os_home: str, *, remove: bool = False) -> list[str]:
    """Write (or delete) the units and enable (or disable) the timer; returns the files touched."""
    units = systemd_units(paths, os_home)
    service = units.directory / f"{UNIT}.service"
    timer = units.directory / f"{UNIT}.timer"
    if remove:
        _run(["systemctl", "--user", "disable", "--now", f"{UNIT}.timer"])
        for f in (service, timer):
            f.unlink(missing_ok=True)
        _run(["systemctl", "--user", "daemon-reload"])
        return [str(service), str(timer)]
    units.directory.mkdir(parents=True, exist_ok=True)
    service.write_text(units.service, encoding="utf-8")
    timer.write_text(units.timer, encoding="utf-8")
    for argv in (
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", f"{UNIT}.timer"],
    ):
        proc = _run(argv)
        if proc.returncode != 0:
            raise ToolError(
                "install_failed",
                f"{' '.join(argv)} failed: {proc.stderr.strip()}. The unit files are in {units.directory}.",
                {"files": [str(service), str(timer)]},
            )
    return [str(service), str(timer)]
