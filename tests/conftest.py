"""Shared fixtures: a fresh fake OS home and FERMIX_HOME per test, and a runner for the real CLI."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent

# Tests that run git themselves (set-up) or through fermix's git tools. The README's test command runs
# where git is not installed too: there they are skipped, with this reason, instead of erroring.
GIT_MISSING = "git is not installed (apt-get install git; .ci/run installs it)"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason=GIT_MISSING)


# The suite runs fermix as a terminal would start it: a hangup ends it. A run under `nohup` (or any
# parent that ignores SIGHUP) would pass the ignored hangup to every fermix the tests start, and fermix
# rightly keeps an ignored SIGHUP ignored, so the tests of what a closed terminal does could not pass.
if hasattr(signal, "SIGHUP"):
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
# Likewise Ctrl-C: a shell starts a background job (`cmd &`, no job control) with SIGINT ignored, and
# an ignored SIGINT passes to every process the tests start, so the tests of an interrupted call (the
# call must end, exit 130) would see it run on. The suite takes SIGINT as Python does by default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package under test once, before any worker starts.

    The black-box tests run `python -m fermix_cli` thousands of times from this checkout. With
    PYTHONDONTWRITEBYTECODE set (as in many CI images) or a fresh clone, every one of those processes
    would compile fermix_cli from source again: about 2-3x the CPU of a call from bytecode, as an
    installed package runs. compileall writes the files whatever that variable says.
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    import compileall

    compileall.compile_dir(REPO / "fermix_cli", quiet=1)


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        return json.loads(self.stderr)["error"]


@dataclass
class Env:
    """A sandboxed world for one test: OS home, fermix home, and a project inside the home."""

    root: Path
    home: Path
    fermix_home: Path
    project: Path

    @property
    def env(self) -> dict[str, str]:
        # No real provider keys either: a test must never reach a model on the internet.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("FERMIX_", "PYTEST_")) and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
        }
        env.update(
            HOME=str(self.home),
            FERMIX_HOME=str(self.fermix_home),
            PYTHONPATH=str(REPO),
            NO_COLOR="1",
            PYDANTIC_DISABLE_PLUGINS="__all__",
        )
        return env

    def run(
        self, *args: str, input: str | None = None, cwd: Path | None = None, timeout: float = 60
    ) -> Result:
        """Run the real CLI (`python -m fermix_cli`) as a separate process."""
        proc = subprocess.run(
            [sys.executable, "-m", "fermix_cli", *args],
            input=input,
            capture_output=True,
            text=True,
            cwd=cwd or self.project,
            env=self.env,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def tool(
        self, name: str, args: dict[str, Any] | None = None, *extra: str, cwd: Path | None = None
    ) -> Result:
        return self.run("tool", name, "--json", json.dumps(args or {}), *extra, cwd=cwd)

    def imports_of(
        self,
        argv: list[str],
        watched: Iterable[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> tuple[Result, list[str]]:
        """Run `fermix ARGV` in a fresh interpreter: its result, and which `watched` modules it imported.

        A watched name ending in `.*` stands for the package and everything below it.
        """
        code = (
            "import sys\n"
            "from fermix_cli.__main__ import main\n"
            "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
            f"watched = {list(watched)!r}\n"
            "loaded = [w for w in watched if w in sys.modules or (w.endswith('.*') and any("
            "m == w[:-2] or m.startswith(w[:-1]) for m in sys.modules))]\n"
            "print('LOADED', loaded, file=sys.stderr)\n"
            "sys.exit(rc)\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, *argv],
            capture_output=True,
            text=True,
            env=env or self.env,
            cwd=cwd or self.project,
            timeout=60,
        )
        stderr, _, last = proc.stderr.rstrip("\n").rpartition("\n")
        assert last.startswith("LOADED "), proc.stderr
        return Result(proc.returncode, proc.stdout, stderr), ast.literal_eval(last.removeprefix("LOADED "))

    def context(self, **kw: Any) -> Any:
        """An in-process ToolContext for this world (operator at the CLI unless told otherwise)."""
        from fermix_cli.core.context import ToolContext
        from fermix_cli.core.paths import resolve_paths

        kw.setdefault("launch_cwd", str(self.project))
        return ToolContext(paths=resolve_paths(str(self.fermix_home)), os_home=str(self.home), **kw)


@pytest.fixture(autouse=True)
def _fermix_logging_restored() -> Iterator[None]:
    """A test that runs a command in-process sets up fermix's log file (`core.logs.setup_logging`), which
    stops "fermix" records from propagating: undone after each test, so a later test's `caplog` still
    sees them whichever tests ran before it in the same worker."""
    import logging

    from fermix_cli.core import logs

    root = logging.getLogger("fermix")
    saved = (logs._log_file, list(root.handlers), root.propagate, root.level)
    yield
    logs._log_file = saved[0]
    for handler in root.handlers:
        if handler not in saved[1]:
            root.removeHandler(handler)
            handler.close()
    root.propagate, root.level = saved[2], saved[3]


@pytest.fixture
def world(tmp_path: Path) -> Env:
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    fermix_home = home / ".fermix"
    return Env(tmp_path, home, fermix_home, project)


@pytest.fixture
def invoke(world: Env) -> Callable[..., Any]:
    """Call a tool in-process through registry.invoke with the world's context."""
    from fermix_cli.core.registry import default_registry

    def call(name: str, args: dict[str, Any], **ctx_kw: Any) -> Any:
        ctx = world.context(**ctx_kw)
        try:
            return default_registry().invoke(name, args, ctx)
        finally:
            ctx.close()

    return call


def processes_with(marker: str) -> list[int]:
    """The pids of the processes whose command line holds `marker` (to see a child outlive its call)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def survivors(pgid: int, marker: str, safety_net: float = 60) -> list[int]:
    """The live processes still in group `pgid` or whose command line holds `marker`, once they are all
    gone or `safety_net` seconds have passed (SIGKILLed processes take a moment to leave /proc)."""

    def left() -> list[int]:
        found = set(processes_with(marker))
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                    found.add(int(entry))
        return sorted(found)

    end = time.monotonic() + safety_net
    while (found := left()) and time.monotonic() < end:
        time.sleep(0.05)
    return found


@contextlib.contextmanager
def unreadable(monkeypatch: pytest.MonkeyPatch, engine: str, tmp: Path, *paths: Path) -> Iterator[None]:
    """For the block: `paths` unreadable (mode 0), and the search engine `engine` ("rg" or "ast_grep"
    of `core.search.engines`) run so that the permissions bite as they do for everyone else. The
    machine's tests run as root, who reads any file: for root the real engine runs behind a wrapper
    that drops that override (`setpriv`, util-linux). Modes are restored after."""
    import shutil
    import stat

    from fermix_cli.core.search import engines

    real = getattr(engines, engine)()
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is needed to drop root's read override")
        wrapper = tmp / f"{Path(real).name}-no-read-override"
        wrapper.write_text(
            f'#!/bin/sh\nexec {setpriv} --bounding-set=-dac_override,-dac_read_search {real} "$@"\n'
        )
        wrapper.chmod(0o755)
        monkeypatch.setattr(engines, engine, lambda: str(wrapper))
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in paths}
    for p in paths:
        p.chmod(0)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def stall_rg(monkeypatch: pytest.MonkeyPatch, where: Path) -> Path:
    """Make the search tools run the real rg behind a 30 s stall, which only a deadline's kill of the
    process group ends; returns the wrapper."""
    from fermix_cli.core.search import engines

    wrapper = where / "rg-slow"
    wrapper.write_text(f'#!/bin/sh\nsleep 30\nexec "{engines.rg()}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(engines, "rg", lambda: str(wrapper))
    return wrapper


def hold_write_lock(path: Path, seconds: float, release: threading.Event | None = None) -> threading.Thread:
    """Another writer: BEGIN IMMEDIATE on the SQLite file `path`, held for `seconds` (or until `release`
    is set, if sooner) from a thread of the test (started once the lock is held; join it to wait for
    the release)."""
    held = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        (release or threading.Event()).wait(seconds)
        conn.execute("COMMIT")
        conn.close()

    t = threading.Thread(target=hold)
    t.start()
    held.wait(30)
    return t
