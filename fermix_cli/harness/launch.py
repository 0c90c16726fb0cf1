"""Starting a local coding run: admission through the sandbox, the caps, the ledger row, the detached spawn.

Order matters and is the contract: the parameters and every path are checked first (nothing written on
a refusal); then, in one BEGIN IMMEDIATE transaction, the caps (2 runs at once, 1 per git worktree) are
checked and the run is ledgered as `starting`; only then is the run directory written and the
supervisor spawned, in its own session, with the environment the exec tools give a child (fermix's
secrets left out, FERMIX_SPAWNED set). The vendor CLI outlives the fermix process that launched it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..core.errors import ExitClass, ToolError
from ..core.procid import process_start
from ..core.records import Record, field
from .gates import settings, vendor_executable
from .store import settle, ts

if TYPE_CHECKING:
    from ..core.context import ToolContext

BRIEF_NAME = "brief.md"
SECONDS_PER_MINUTE = 60.0  # the unit of timeout_minutes (tests shorten it)
# Linux refuses an exec whose single argument (NUL included) passes MAX_ARG_STRLEN, 32 pages = 128 KiB,
# with E2BIG whatever the total; elsewhere only the total (ARG_MAX) counts.
ARG_STRLEN_MAX = 32 * 4096 if sys.platform.startswith("linux") else None
# The largest prompt that rides the command line there, with room left below that cap.
PROMPT_ARG_CAP = 120 * 1024
# Room kept free of the total argv + environment limit: paths added after the check, an interpreter's
# own arguments when the CLI is a script, the supervisor's own exec.
ARG_TOTAL_ROOM = 64 * 1024


def prompt_arg_limit(configured: int) -> int:
    """The most UTF-8 bytes of a prompt (or cloud query) passed as one argument: the configured
    `max_prompt_arg_bytes`, lowered under the operating system's cap on one argument."""
    return configured if ARG_STRLEN_MAX is None else min(configured, PROMPT_ARG_CAP)


def check_arg_sizes(argv: list[str], env: dict[str, str]) -> None:
    """Refuse, before anything is written, arguments the exec would refuse with E2BIG."""
    for i, arg in enumerate(argv):
        size = len(arg.encode("utf-8", "surrogateescape"))
        if ARG_STRLEN_MAX is not None and size >= ARG_STRLEN_MAX:
            flag = arg.split("=", 1)[0] if arg.startswith("--") else (argv[i - 1] if i else arg[:40])
            raise ToolError(
                "argument_too_long",
                f"the value for {flag} is {size} bytes; the operating system takes at most "
                f"{ARG_STRLEN_MAX - 1} bytes in one command-line argument: shorten it, or put the text in a "
                "file (append_system_prompt_file for system-prompt text)",
                {"option": flag, "bytes": size, "max_bytes": ARG_STRLEN_MAX - 1},
            )
    limit = _arg_max()
    total = exec_bytes(argv, env)
    if limit is not None and total + ARG_TOTAL_ROOM > limit:
        raise ToolError(
            "argument_too_long",
            f"the command line and environment of the run come to {total} bytes, over what the operating "
            f"system takes in one exec ({limit} bytes, {ARG_TOTAL_ROOM} kept free): shorten the long "
            "parameters (append_system_prompt, json_schema, allowed_tools) or pass fewer environment "
            "variables ([sandbox.env])",
            {"bytes": total, "max_bytes": limit - ARG_TOTAL_ROOM},
        )


def exec_bytes(argv: list[str], env: dict[str, str]) -> int:
    """What an exec of `argv` with `env` counts against ARG_MAX: each string, its NUL and its pointer."""
    return sum(len(a.encode("utf-8", "surrogateescape")) + 1 + 8 for a in argv) + sum(
        len(k.encode("utf-8", "surrogateescape")) + len(v.encode("utf-8", "surrogateescape")) + 2 + 8
        for k, v in env.items()
    )


def fits_exec(argv: list[str], env: dict[str, str]) -> bool:
    limit = _arg_max()
    return limit is None or exec_bytes(argv, env) + ARG_TOTAL_ROOM <= limit


def _arg_max() -> int | None:
    try:
        value = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        return None
    return value if value > 0 else None


class Launch(Record):
    """A checked launch: the tool, the vendor, the admitted paths and the CLI's arguments (prompt aside)."""

    tool: str
    vendor: str
    prompt: str
    cwd: str
    add_dirs: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)  # vendor flags, before the prompt
    trailer: list[str] = field(default_factory=list)  # after the options, before the prompt (codex resume)
    posture: str | None = None
    resume_of: str | None = None
    ephemeral: bool = False
    # Variables the CLI cannot work without (bare: the API key); a launch without them is refused.
    needs_env: list[str] = field(default_factory=list)
    timeout_minutes: int = 30
    progress: str = "quiet"


def new_run_id() -> str:
    return "hr_" + secrets.token_hex(6)


def refuse_posture(tool: str, param: str, value: str) -> ToolError:
    return ToolError(
        "unsafe_posture",
        f"{tool} refuses {param}={value}: fermix admits the run's directories through its own sandbox but does not "
        "confine the child process, so the vendor's sandbox is the only confinement; choose a confined posture "
        "or omit it to inherit the operator's configured one",
        {"tool": tool, param: value},
        exit_class=ExitClass.REFUSED,
    )


def admit_cwd(ctx: ToolContext, tool: str, raw: str) -> str:
    if not raw.startswith("/"):
        raise ToolError("invalid_path", f"cwd must be an absolute path, got {raw!r}", {"cwd": raw})
    return ctx.sandbox.working_dir(raw, tool=tool)


def admit_dirs(ctx: ToolContext, tool: str, raws: list[str]) -> list[str]:
    out = []
    for raw in raws:
        path = ctx.sandbox.write_path(raw, tool=tool)
        if not os.path.isdir(path):
            raise ToolError("invalid_path", f"add_dirs: not a directory: {path}", {"path": path})
        out.append(path)
    return out


def admit_files(ctx: ToolContext, tool: str, raws: list[str], what: str) -> list[str]:
    out = []
    for raw in raws:
        path = ctx.sandbox.read_path(raw, tool=tool)
        if not os.path.isfile(path):
            raise ToolError("invalid_path", f"{what}: not a file: {path}", {"path": path})
        out.append(path)
    return out


def worktree_of(path: str, env: dict[str, str]) -> str:
    """The git checkout `path` lies in (each linked worktree is its own), else the directory itself."""
    try:
        proc = subprocess.run(
            ["git", "-C", path, "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=10,
            env={**env, "GIT_OPTIONAL_LOCKS": "0"},
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return path
    top = proc.stdout.strip()
    return os.path.realpath(top) if proc.returncode == 0 and top else path


def child_env(ctx: ToolContext, cwd: str) -> dict[str, str]:
    return resolve_child_env(ctx, cwd)[0]


def resolve_child_env(ctx: ToolContext, cwd: str) -> tuple[dict[str, str], list[str], list[str]]:
    """The child's environment, the allowed names that could not be resolved, and a note on each."""
    from ..core.shell.childenv import build_child_env
    from ..core.shell.procgroup import SPAWN_MARKER, new_spawn_id

    resolved = build_child_env(ctx.config.sandbox.env, helper_cwd=cwd)
    env = resolved.env
    env[SPAWN_MARKER] = new_spawn_id()
    return env, resolved.missing_names, resolved.notes


def _require_env(launch: Launch, env: dict[str, str], missing: list[str]) -> None:
    """Refuse a launch whose CLI cannot work without a variable the child environment does not carry."""
    for name in launch.needs_env:
        if name in env:
            continue
        why = (
            f"{name} is allowed in [sandbox.env] but could not be resolved (not set in fermix's environment, "
            f"or its helper failed): export it before starting fermix, or fix [sandbox.env.vars.{name}]"
            if name in missing
            else f"the run's environment is built from [sandbox.env], which does not pass {name}: add "
            f'"{name}" to `allow` under [sandbox.env] in config.toml (or give it a source under '
            f"[sandbox.env.vars.{name}]) and export it before starting fermix"
        )
        raise ToolError(
            "missing_credentials",
            f"{launch.tool} with bare: true reads {name} only (no OAuth or keychain login), and {why}; or omit "
            "bare to use the CLI's own login",
            {"tool": launch.tool, "variable": name, "config": "sandbox.env.allow"},
        )


def _is_checkout(path: str) -> bool:
    """Whether a lock is a git checkout's top (its own worktree) rather than a plain directory."""
    return os.path.lexists(os.path.join(path, ".git"))


def _covers(outer: str, inner: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def lock_conflict(held: list[str], wanted: list[str]) -> str | None:
    """The held lock a launch's locks collide with, if any.

    The same path always collides. A plain directory (not a git checkout) covers everything beneath
    it, nested repositories included, since the CLI working there can write anywhere below; a git
    checkout is one worktree, and a checkout nested inside it (a linked worktree, a submodule) is
    another, as git sees it.
    """
    for h in held:
        for w in wanted:
            if h == w or (_covers(h, w) and not _is_checkout(h)) or (_covers(w, h) and not _is_checkout(w)):
                return h
    return None


def _reserve(
    ctx: ToolContext, launch: Launch, run_id: str, run_dir: str, locks: list[str], prompt_bytes: int
) -> None:
    cap = settings(ctx).max_concurrent_runs
    with ctx.state.write() as db:
        active = db.execute(
            "SELECT id, locks FROM coding_runs WHERE status IN ('starting', 'running') AND rail = 'local'"
        ).fetchall()
        if len(active) >= cap:
            raise ToolError(
                "too_many_runs",
                f"{len(active)} coding runs are already running (at most {cap} at once); wait for one to finish "
                "or cancel one with cancel_coding_run",
                {"active": [r["id"] for r in active], "max_concurrent_runs": cap},
            )
        for row in active:
            tree = lock_conflict(json.loads(row["locks"]), locks)
            if tree is not None:
                raise ToolError(
                    "worktree_busy",
                    f"coding run {row['id']} is already working in {tree}, which overlaps this run's "
                    f"{', '.join(locks)} (one run per git worktree; a directory that is not a git checkout "
                    "counts with everything beneath it); wait for it, cancel it, or use another worktree "
                    "(git worktree add)",
                    {"run_id": row["id"], "worktree": tree},
                )
        db.execute(
            "INSERT INTO coding_runs (id, tool, vendor, rail, status, cwd, worktree, locks, add_dirs, run_dir,"
            " prompt_bytes, posture, resume_of, ephemeral, timeout_seconds, progress, session_id, origin, job_id,"
            " created_at) VALUES (?,?,?,'local','starting',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                launch.tool,
                launch.vendor,
                launch.cwd,
                locks[0],
                json.dumps(locks),
                json.dumps(launch.add_dirs),
                run_dir,
                prompt_bytes,
                launch.posture,
                launch.resume_of,
                int(launch.ephemeral),
                launch.timeout_minutes * 60,
                launch.progress,
                ctx.session_id,
                ctx.origin,
                ctx.job_id,
                ts(ctx.now()),
            ),
        )


def _write_private(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def start(ctx: ToolContext, launch: Launch) -> dict[str, Any]:
    """Ledger the run, then start it detached; returns at once with the run id."""
    cfg = settings(ctx)
    executable = vendor_executable(cfg, launch.vendor)
    if executable is None:
        raise ToolError(
            "vendor_cli_missing",
            f"the {launch.vendor} CLI is no longer on PATH; install it (or fix [fermix_core.harness]) and try again",
            {"vendor": launch.vendor},
        )
    env, missing, env_notes = resolve_child_env(ctx, launch.cwd)
    _require_env(launch, env, missing)
    prompt_data = launch.prompt.encode("utf-8")
    head = [executable, *launch.options, *launch.trailer, "--"]
    # A prompt too long for one argument, or for what is left of the whole exec, goes to a brief file.
    spill = len(prompt_data) > prompt_arg_limit(cfg.max_prompt_arg_bytes) or not fits_exec(
        [*head, launch.prompt], env
    )
    # The brief pointer and the run directory's paths are short; they are counted in the room kept.
    check_arg_sizes([*head, "" if spill else launch.prompt], env)
    locks = list(dict.fromkeys(worktree_of(p, env) for p in [launch.cwd, *launch.add_dirs]))
    settle(ctx)  # runs that ended free their slots first
    run_id = new_run_id()
    run_dir = str(ctx.paths.data_dir / "harness" / run_id)
    _reserve(ctx, launch, run_id, run_dir, locks, len(prompt_data))
    try:
        ctx.paths.ensure_dir(ctx.paths.data_dir / "harness")
        os.mkdir(run_dir, 0o700)
        options = list(launch.options)
        brief_path = None
        prompt = launch.prompt
        if spill:
            brief_dir = os.path.join(run_dir, "brief")
            os.mkdir(brief_dir, 0o700)
            brief_path = os.path.join(brief_dir, BRIEF_NAME)
            _write_private(brief_path, prompt_data)
            prompt = (
                f"Your task brief is in the file {brief_path} ({len(prompt_data)} bytes, too long for the command "
                "line). Read that file in full first, then carry out the task it describes."
            )
            if launch.vendor == "claude_code":
                options += ["--add-dir", brief_dir]
        if launch.vendor == "codex":
            options += ["--output-last-message", os.path.join(run_dir, "last_message.txt")]
        argv = [executable, *options, *launch.trailer, "--", prompt]
        spec = {"argv": argv, "cwd": launch.cwd, "timeout_s": launch.timeout_minutes * SECONDS_PER_MINUTE}
        _write_private(os.path.join(run_dir, "spec.json"), json.dumps(spec).encode("utf-8"))
        source = resources.files("fermix_cli.harness").joinpath("supervise.py").read_text(encoding="utf-8")
        with open(os.path.join(run_dir, "supervisor.log"), "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", source, run_dir],
                cwd=run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
    except Exception as e:
        with ctx.state.write() as db:
            db.execute(
                "UPDATE coding_runs SET status = 'failed', reason = ?, ended_at = ?, delivery_state = 'pending'"
                " WHERE id = ?",
                (f"the run could not be started: {type(e).__name__}: {e}"[:500], ts(ctx.now()), run_id),
            )
        if isinstance(e, ToolError):
            raise
        raise ToolError(
            "spawn_failed", f"coding run {run_id} could not be started: {e}", {"run_id": run_id}
        ) from e
    shown = [a if a != prompt else f"<prompt: {len(prompt.encode())} bytes>" for a in argv]
    with ctx.state.write() as db:
        db.execute(
            "UPDATE coding_runs SET status = 'running', pid = ?, pid_start = ?, started_at = ?, argv = ?,"
            " brief_path = ? WHERE id = ? AND status = 'starting'",
            (proc.pid, process_start(proc.pid), ts(ctx.now()), json.dumps(shown), brief_path, run_id),
        )
    out: dict[str, Any] = {
        "run_id": run_id,
        "status": "running",
        "vendor": launch.vendor,
        "cwd": launch.cwd,
        "worktree": locks[0],
        "prompt_delivery": "brief_file" if brief_path else "argument",
        "note": "the run works in the background; its outcome arrives on its own (get_coding_run shows it meanwhile)",
    }
    if env_notes:
        out["env_missing"] = missing
        out["notes"] = env_notes
    return out
