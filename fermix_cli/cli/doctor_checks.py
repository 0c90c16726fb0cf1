"""`fermix doctor`: one line per check, each OK, WARN, FAIL or N/A, judged without changing anything.

Checks are pure functions of the paths, the environment and the files they read, so tests can build
each case on disk. Nothing here migrates state.db or creates a directory.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import ToolError
from ..core.paths import FermixPaths, not_a_directory
from ..core.records import Record, asdict, field
from ..core.search import engines
from ..core.search.engines import Engine

if TYPE_CHECKING:
    import sqlite3

    from ..core.config import Config

Status = Literal["ok", "warn", "fail", "n/a"]
TAGS: dict[Status, str] = {"ok": " OK ", "warn": "WARN", "fail": "FAIL", "n/a": "N/A "}
NAME_WIDTH = 18


class Check(Record, frozen=True):
    name: str
    status: Status
    detail: str
    data: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return f"[{TAGS[self.status]}] {self.name:<{NAME_WIDTH}} {self.detail}"


class DoctorInput(Record):
    """Everything the checks look at; tests substitute any part."""

    paths: FermixPaths
    os_home: str
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    which: Callable[[str], str | None] = shutil.which
    uid: int = field(default_factory=os.getuid)
    # The search engines: where fermix finds them (beside the interpreter, then PATH) and their version.
    engine: Callable[[str], Engine | None] = engines.locate
    engine_version: Callable[[str], str | None] = engines.version


# ----- individual checks -------------------------------------------------------------------------


def check_python() -> Check:
    """3.11 or newer; for a fermix.pyz, the minor version it was built for."""
    from ..core.pyzbuild import wrong_python

    v = sys.version_info
    detail = f"{v.major}.{v.minor}.{v.micro} at {sys.executable}"
    refusal = wrong_python()
    if refusal is not None:
        return Check("python", "fail", refusal)  # it names this Python and the one needed
    return Check("python", "ok" if v >= (3, 11) else "fail", detail)


def missing_modules(modules: tuple[str, ...] = ()) -> list[str]:
    """Which of `modules` (default: the standard modules fermix needs, sqlite3 and ssl) this Python lacks."""
    import importlib

    from ..core.errors import OPTIONAL_STDLIB

    missing = []
    for module in modules or tuple(OPTIONAL_STDLIB):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


def check_python_modules() -> Check:
    from ..core.errors import OPTIONAL_STDLIB, missing_module_message

    missing = missing_modules()
    if missing:
        detail = " ".join(missing_module_message(m) for m in missing)
        return Check("python modules", "fail", detail, {"missing": missing})
    return Check("python modules", "ok", ", ".join(OPTIONAL_STDLIB) + " present", {"missing": []})


def check_config(inp: DoctorInput) -> tuple[Check, Config | None]:
    from ..core.config import read_raw, validate_config

    path = inp.paths.config_file
    try:
        raw = read_raw(path)
        config = validate_config(raw, str(path))
    except ToolError as e:
        return Check("config", "fail", e.message, {"path": str(path), "code": e.code}), None
    if not path.exists():
        return Check("config", "ok", f"no {path.name} at {path}; defaults apply", {"path": str(path)}), config
    return Check("config", "ok", f"{path} is valid", {"path": str(path)}), config


def _mode_problem(path: Path, want: int, uid: int) -> tuple[Status, str] | None:
    """None when `path` is owned by `uid` with no more access than `want`, else (status, why)."""
    st = path.lstat()
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        return "warn", f"{path} is a symlink"
    if st.st_uid != uid:
        return "fail", f"{path} is owned by uid {st.st_uid}, not you (uid {uid})"
    if mode & 0o022:
        return "fail", f"{path} is writable by others (mode {mode:04o}); run: chmod {want:o} {path}"
    if mode & ~want:
        return "warn", f"{path} has mode {mode:04o}, expected {want:04o}; run: chmod {want:o} {path}"
    return None


def home_blocked(inp: DoctorInput) -> str | None:
    """Why the fermix home cannot be used at all (it, or a directory above it, is a file), or None."""
    for home in inp.paths.homes():
        blocker = not_a_directory(home)
        if blocker is not None:
            where = "it is a file" if blocker == home else f"{blocker} is not a directory"
            return f"{home} is not a directory ({where}); set FERMIX_HOME to a directory"
    return None


def _no_home(inp: DoctorInput, name: str) -> Check | None:
    """N/A when state.db cannot be read at all: the home is not a directory, or this Python has no sqlite3."""
    if home_blocked(inp) is not None:
        return Check(name, "n/a", "the fermix home is not a directory; see the home check")
    if missing_modules(("sqlite3",)):
        return Check(
            name, "n/a", "this Python has no sqlite3 to read state.db with; see the python modules check"
        )
    return None


def _state_unreadable(name: str, e: sqlite3.Error) -> Check:
    return Check(name, "n/a", f"state.db could not be read ({e}); see the state.db check", {"error": str(e)})


def check_home(inp: DoctorInput) -> Check:
    """Home directories 0700 and owned by the user; config.toml and state.db no looser than 0600."""
    blocked = home_blocked(inp)
    if blocked is not None:
        return Check("home", "fail", blocked)
    items: list[tuple[Path, int]] = [(d, 0o700) for d in inp.paths.homes()]
    items += [(inp.paths.config_file, 0o600), (inp.paths.state_db, 0o600)]
    problems: list[tuple[Status, str]] = []
    seen: list[str] = []
    for path, want in items:
        if not os.path.lexists(path):
            continue
        seen.append(str(path))
        found = _mode_problem(path, want, inp.uid)
        if found:
            problems.append(found)
    homes = ", ".join(str(d) for d in inp.paths.homes())
    if not seen:
        return Check("home", "ok", f"{homes} not created yet (created 0700 on first use)")
    if not problems:
        return Check("home", "ok", f"{homes}: private (0700, files 0600)", {"checked": seen})
    worst: Status = "fail" if any(s == "fail" for s, _ in problems) else "warn"
    detail = "; ".join(why for _, why in problems)
    return Check("home", worst, detail, {"checked": seen})


def check_state(inp: DoctorInput) -> Check:
    path = inp.paths.state_db
    blocked = _no_home(inp, "state.db")
    if blocked is not None:
        return blocked
    from ..core.state import inspect_state

    r = inspect_state(path)
    data = {"path": str(path), "schema_version": r.schema_version, "latest_version": r.latest_version}
    if not r.exists:
        return Check(
            "state.db", "ok", f"{path} not created yet (the first tool that needs it creates it)", data
        )
    if not r.ok:
        return Check("state.db", "fail", f"{path}: {r.detail}; move it aside to start afresh", data)
    version = r.schema_version or 0
    schema = f"schema {version}/{r.latest_version}"
    if version > r.latest_version:
        return Check("state.db", "fail", f"{path}: {schema}, newer than this fermix; upgrade fermix", data)
    if version < r.latest_version:
        detail = f"{path}: {r.detail}, {schema}; the next command that opens it migrates it"
        return Check("state.db", "warn", detail, data)
    return Check("state.db", "ok", f"{path}: {r.detail}, {schema}, {r.bytes} bytes", data)


def check_reminders(inp: DoctorInput) -> Check:
    blocked = _no_home(inp, "reminders")
    if blocked is not None:
        return blocked
    import sqlite3

    from ..events.health import failed_reminders

    try:
        count, latest = failed_reminders(inp.paths.state_db)
    except sqlite3.Error as e:
        return _state_unreadable("reminders", e)
    if not count:
        return Check("reminders", "ok", "no failed reminder deliveries", {"failed": 0})
    last = latest[0]
    detail = (
        f"{count} reminder(s) failed to deliver; latest {last['title']!r} due {last['scheduled_for']}: "
        f"{last['last_error_code'] or ''} {last['last_error'] or ''}".rstrip()
        + ". See: fermix events list --status any"
    )
    return Check("reminders", "warn", detail, {"failed": count, "latest": latest})


def check_sandbox(inp: DoctorInput, config: Config | None) -> Check:
    from ..core.pathcanon import canonicalize
    from ..core.sandbox import Sandbox

    if config is None:
        return Check("sandbox", "n/a", "config is invalid; fix it first")
    cwd = os.getcwd()
    sb = Sandbox.from_config(config.sandbox, inp.paths, home=inp.os_home, launch_cwd=cwd)
    try:
        roots = sb.roots
    except ToolError as e:
        return Check("sandbox", "fail", e.message)
    issues: list[str] = []
    if sb.refused_grants:
        issues.append(
            "refused grants (unsafe, or inside a blocked root; ignored): " + ", ".join(sb.refused_grants)
        )
    for raw in config.sandbox.allowed_roots:
        if raw in sb.refused_grants:
            continue
        expanded = inp.os_home + raw[1:] if raw == "~" or raw.startswith("~/") else raw
        try:
            target = canonicalize(expanded if expanded.startswith("/") else os.path.join(cwd, expanded))
        except (ToolError, ValueError):
            issues.append(f"grant {raw} cannot be resolved")
            continue
        if not os.path.isdir(target):
            issues.append(f"granted root {raw} is not a directory")
    data = {"mode": sb.mode, "roots": [{"path": r.path, "source": r.source} for r in roots]}
    summary = f"mode {sb.mode}; {len(roots)} root(s): " + ", ".join(r.path for r in roots)
    if issues:
        return Check("sandbox", "warn", summary + "; " + "; ".join(issues), data)
    return Check("sandbox", "ok", summary, data)


def check_binary(name: str, found: str | None, missing: str, status_if_missing: Status = "warn") -> Check:
    if found:
        return Check(name, "ok", found, {"path": found})
    return Check(name, status_if_missing, missing)


def check_engine(inp: DoctorInput, program: str, label: str, fix: str) -> Check:
    """A search engine fermix runs: which binary, found where, which version; missing is a failure."""
    found = inp.engine(program)
    if found is None:
        places = engines.looked_in(program)
        return Check(
            label, "fail", f"{program} not found in {', '.join(places)}; {fix}", {"looked_in": places}
        )
    version = inp.engine_version(found.path)
    where = {
        "interpreter": "beside the interpreter",
        "scripts": "in the scripts dir",
        "bundled": "bundled with fermix",
        "PATH": "on PATH",
    }
    detail = f"{version or 'version unknown'} at {found.path} ({where.get(found.source, found.source)})"
    status: Status = "ok" if version else "warn"
    return Check(label, status, detail, {"path": found.path, "source": found.source, "version": version})


OFFICIAL_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
OFFICIAL_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}


def _key_found(name: str, block: Any, env: Mapping[str, str]) -> bool | None:
    """Whether a provider's API key resolves; None when it needs none (offline, or a custom base_url)."""
    kind = getattr(block, "type", None) or name
    if kind not in OFFICIAL_KEYS:
        return None  # mock and echo
    if getattr(block, "api_key", None):
        return True
    var = getattr(block, "api_key_env", None)
    if var:
        return bool(env.get(var, "").strip())
    base_url = getattr(block, "base_url", None)
    if base_url and base_url.rstrip("/") != OFFICIAL_URLS[kind]:
        return None  # a local OpenAI-compatible server may need no key
    return bool(env.get(OFFICIAL_KEYS[kind], "").strip())


def check_providers(inp: DoctorInput, config: Config | None) -> Check:
    if config is None:
        return Check("providers", "n/a", "config is invalid; fix it first")
    providers: Mapping[str, Any] | None = getattr(config.fermix_core, "providers", None)
    if providers is None:
        return Check("providers", "n/a", "this fermix has no model providers")
    names = sorted(providers)
    if not names:
        from_env = [k for k, var in sorted(OFFICIAL_KEYS.items()) if inp.env.get(var, "").strip()]
        if from_env:
            return Check("providers", "ok", f"none configured; {', '.join(from_env)} from the environment")
        return Check(
            "providers", "warn", "none configured and no API key in the environment; only mock and echo work"
        )
    missing = [n for n in names if _key_found(n, providers[n], inp.env) is False]
    if missing:
        return Check("providers", "warn", f"{', '.join(names)}; no API key found for: {', '.join(missing)}")
    return Check("providers", "ok", ", ".join(names), {"providers": names})


def check_mcp_servers(inp: DoctorInput, config: Config | None) -> Check:
    if config is None:
        return Check("mcp servers", "n/a", "config is invalid; fix it first")
    servers = config.mcp.servers
    if not servers:
        return Check("mcp servers", "n/a", "none configured")
    missing = []
    for name, server in sorted(servers.items()):
        if server.enabled and server.command is not None and not _command_found(server.command, inp):
            missing.append(f"{name} ({server.command})")
    enabled = sorted(n for n, s in servers.items() if s.enabled)
    detail = f"{len(enabled)} enabled: {', '.join(enabled) or '(none)'}"
    if missing:
        return Check("mcp servers", "warn", f"{detail}; command not found for {', '.join(missing)}")
    # Starting a server runs its code and may take seconds; doctor changes nothing, so it only says how.
    return Check("mcp servers", "ok", f"{detail}; not started here (fermix mcp tools starts and lists them)")


def check_skill_roots(inp: DoctorInput, config: Config | None) -> Check:
    """Every skill root a readable directory and every skill in them loadable; skill loading skips a bad
    root or skill (and reports it), never fails, so this is where the owner hears of one. Skills are
    loaded through the sandbox, as the tools load them (a SKILL.md hard-linked to a protected file is
    a `protected_path` error here too)."""
    from ..core.sandbox import Sandbox
    from ..core.skillrefs import discover_in, root_problem, roots_of

    if config is None:
        return Check("skill roots", "n/a", "config is invalid; fix it first")
    roots = roots_of(inp.paths, config)
    sandbox = Sandbox.from_config(config.sandbox, inp.paths, home=inp.os_home, launch_cwd=os.getcwd())
    found = discover_in(roots, sandbox)
    bad = [
        {"path": path, "code": err["code"], "message": err["message"]}
        for path, err in sorted(found.errors.items())
        if err["code"] != "invalid_skill_root"
    ]
    data = {
        "roots": [{"path": r.path, "origin": r.origin} for r in roots],
        "skills": len(found.skills),
        "errors": bad,
    }
    problems = [p for p in map(root_problem, roots) if p is not None]
    if bad:
        shown = "; ".join(e["message"] for e in bad[:3]) + ("; ..." if len(bad) > 3 else "")
        problems.append(
            f"{len(bad)} skill(s) not loaded (fermix skills list shows them all; fix or remove each): {shown}"
        )
    if problems:
        return Check("skill roots", "warn", "; ".join(problems), data)
    detail = f"{len(roots)} root(s): " + ", ".join(r.path for r in roots) + f"; {len(found.skills)} skill(s)"
    return Check("skill roots", "ok", detail, data)


def _command_found(command: str, inp: DoctorInput) -> bool:
    if "/" in command:
        return os.access(os.path.expanduser(command), os.X_OK)
    return inp.which(command) is not None


# ----- all together ------------------------------------------------------------------------------


def check_job_runs(inp: DoctorInput) -> Check:
    blocked = _no_home(inp, "job runs")
    if blocked is not None:
        return blocked
    import sqlite3

    from ..jobs.health import describe, interrupted_runs_readonly

    try:
        found = interrupted_runs_readonly(inp.paths.state_db)
    except sqlite3.Error as e:
        return _state_unreadable("job runs", e)
    if not found["count"]:
        return Check("job runs", "ok", "no interrupted job runs", {"interrupted": 0})
    return Check(
        "job runs", "warn", describe(found), {"interrupted": found["count"], "latest": found["latest"]}
    )


def _left_by_dead_processes(
    inp: DoctorInput, name: str, find: Callable[[Path], list[str]], key: str, ok: str, warn: str
) -> Check:
    """Records a fermix process that ended (killed or crashed) left open: `warn` takes their count and
    an example as {n} and {first}."""
    blocked = _no_home(inp, name)
    if blocked is not None:
        return blocked
    import sqlite3

    try:
        orphaned = find(inp.paths.state_db)
    except sqlite3.Error as e:
        return _state_unreadable(name, e)
    if not orphaned:
        return Check(name, "ok", ok, {"orphaned": 0})
    return Check(
        name,
        "warn",
        warn.format(n=len(orphaned), first=orphaned[0]),
        {"orphaned": len(orphaned), key: orphaned[:5]},
    )


def check_agent_runs(inp: DoctorInput) -> Check:
    def find(db: Path) -> list[str]:
        from ..agent.transcripts import orphaned_runs_readonly  # imports sqlite3: only past _no_home

        return orphaned_runs_readonly(db)

    return _left_by_dead_processes(
        inp,
        "agent runs",
        find,
        "runs",
        "no run left running by a fermix process that ended",
        "{n} run(s) left running by a fermix process that ended (killed or crashed), e.g. {first}; the "
        "next `fermix logs` or `fermix ask` marks them interrupted",
    )


def check_tool_calls(inp: DoctorInput) -> Check:
    def find(db: Path) -> list[str]:
        from ..core.callstarts import orphaned_calls_readonly  # imports sqlite3: only past _no_home

        return orphaned_calls_readonly(db)

    return _left_by_dead_processes(
        inp,
        "tool calls",
        find,
        "calls",
        "no call left started by a fermix process that ended",
        "{n} tool call(s) started by a fermix process that ended (killed or crashed) before their end "
        "was recorded, e.g. {first}; what they did stands. `fermix logs --calls` lists them (and marks "
        "them interrupted)",
    )


def check_computer_use(inp: DoctorInput, config: Config | None) -> Check:
    from ..computer.health import computer_use_health

    if config is None:
        return Check("computer use", "n/a", "config is invalid; fix it first")
    status, detail, data = computer_use_health(config.fermix_core.computer_use, inp.env, inp.which)
    return Check("computer use", status, detail, data)  # type: ignore[arg-type]


def check_harness(inp: DoctorInput, config: Config | None) -> Check:
    """The coding harness: registered (enabled, a vendor CLI on PATH), approved, and runs needing attention."""
    name = "coding harness"
    if config is None:
        return Check(name, "n/a", "config.toml is invalid; see the config check")
    cfg = config.fermix_core.harness
    if not cfg.enabled:
        return Check(name, "n/a", "disabled ([fermix_core.harness] enabled = false)")
    found = [
        v
        for v, cmd in (("codex", cfg.codex_command), ("claude", cfg.claude_command))
        if _command_found(cmd, inp)
    ]
    if not found:
        return Check(
            name, "n/a", "neither codex nor claude is on PATH; the coding-agent tools are not registered"
        )
    blocked = _no_home(inp, name)
    if blocked is not None:
        return blocked
    import sqlite3

    from ..harness.health import run_counts

    try:
        counts = run_counts(inp.paths.state_db)
    except sqlite3.Error as e:
        return _state_unreadable(name, e)
    data = {"vendors": found, "approved": cfg.approved, **counts}
    if counts["dead_lettered"]:
        detail = (
            f"{counts['dead_lettered']} coding run outcome(s) could not be delivered. See: fermix runs list"
        )
        return Check(name, "warn", detail, data)
    if not cfg.approved:
        detail = (
            f"{', '.join(found)} found; not approved, so no model sees the tools "
            "(the owner approves with: fermix config set fermix_core.harness.approved true)"
        )
        return Check(name, "ok", detail, data)
    return Check(name, "ok", f"approved; {', '.join(found)} found; {counts['active']} run(s) active", data)


def run_checks(inp: DoctorInput) -> list[Check]:
    """Every check, in a fixed order."""
    config_check, config = check_config(inp)
    return [
        check_python(),
        check_python_modules(),
        config_check,
        check_home(inp),
        check_state(inp),
        check_sandbox(inp, config),
        check_providers(inp, config),
        check_mcp_servers(inp, config),
        check_skill_roots(inp, config),
        check_reminders(inp),
        check_job_runs(inp),
        check_agent_runs(inp),
        check_tool_calls(inp),
        check_computer_use(inp, config),
        check_harness(inp, config),
        check_binary("git", inp.which("git"), "not found on PATH; the git tools are unavailable"),
        check_engine(inp, "rg", "ripgrep", "grep, find and the search tools need it: " + engines.fix("rg")),
        check_engine(inp, "ast-grep", "ast-grep", "tree-wide ast_grep needs it: " + engines.fix("ast-grep")),
    ]


def summary(checks: list[Check]) -> dict[str, int]:
    counts = {"ok": 0, "warn": 0, "fail": 0, "n/a": 0}
    for c in checks:
        counts[c.status] += 1
    return counts


def summary_line(checks: list[Check]) -> str:
    n = summary(checks)
    return f"{n['ok']} ok, {n['warn']} warning(s), {n['fail']} failure(s), {n['n/a']} not applicable"


def report(checks: list[Check]) -> dict[str, Any]:
    """The `--json` form."""
    return {
        "ok": not any(c.status == "fail" for c in checks),
        "checks": [asdict(c) for c in checks],
        "summary": summary(checks),
    }
