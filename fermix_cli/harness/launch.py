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
    from ..core.shell.childenv import build_child_env
    from ..core.shell.procgroup import SPAWN_MARKER, new_spawn_id

    env = build_child_env(ctx.config.sandbox.env, helper_cwd=cwd).env
    env[SPAWN_MARKER] = new_spawn_id()
    return env


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
            held = set(json.loads(row["locks"])) & set(locks)
            if held:
                tree = sorted(held)[0]
                raise ToolError(
                    "worktree_busy",
                    f"coding run {row['id']} is already working in {tree} (one run per git worktree); wait for it, "
                    "cancel it, or use another worktree (git worktree add)",
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
    env = child_env(ctx, launch.cwd)
    locks = list(dict.fromkeys(worktree_of(p, env) for p in [launch.cwd, *launch.add_dirs]))
    prompt_data = launch.prompt.encode("utf-8")
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
        if len(prompt_data) > cfg.max_prompt_arg_bytes:
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
    return {
        "run_id": run_id,
        "status": "running",
        "vendor": launch.vendor,
        "cwd": launch.cwd,
        "worktree": locks[0],
        "prompt_delivery": "brief_file" if brief_path else "argument",
        "note": "the run works in the background; its outcome arrives on its own (get_coding_run shows it meanwhile)",
    }
