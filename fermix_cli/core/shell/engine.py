"""The engine behind `shell` and `bash`: hardline first, then `sh -c` with a replaced environment.

Order: the working directory is resolved by the sandbox, the hardline judges the command, and only
then does anything run (the `[sandbox.env]` helpers included). The child runs in its own process
group with stdin from /dev/null, behind a lifeline that ends the group if the fermix process running
it is killed; see `procgroup` for how it ends.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from ..traces import append_trace
from .childenv import ChildEnv, build_child_env
from .procgroup import SPAWN_MARKER, ProcessOutcome, run_captured, with_lifeline

if TYPE_CHECKING:
    from ..context import ToolContext

DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 600_000
# Linux refuses an exec whose single argument (here the `sh -c` string) exceeds 32 pages (E2BIG); the
# string is the command behind its lifeline preamble.
MAX_ARGUMENT_BYTES = 131_071
MAX_COMMAND_BYTES = MAX_ARGUMENT_BYTES - len(with_lifeline("").encode())


def check_command_text(command: str) -> str:
    """The command as given, or `invalid_command` when it is empty or blank."""
    if not isinstance(command, str):
        raise ToolError("invalid_command", "command must be a string")
    if not command.strip():
        raise ToolError("invalid_command", "Command must be a non-empty string")
    if "\x00" in command:
        raise ToolError("invalid_command", "Command contains a NUL byte")
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > MAX_COMMAND_BYTES:
        raise ToolError(
            "invalid_command",
            f"Command is {size} bytes; a command takes at most {MAX_COMMAND_BYTES} (the system's limit "
            "for one `sh -c` argument, less fermix's lifeline preamble). Write the script to a file and "
            "run `sh FILE`.",
            {"bytes": size, "limit": MAX_COMMAND_BYTES},
        )
    return command


def hardline_check(command: str, ctx: ToolContext, cwd: str, *, tool: str) -> None:
    """The hardline blocklist for `command` run in `cwd`; records a trace when it refuses."""
    from .hardline.judge import HardlineEnv, check_command

    home = ctx.os_home
    aliases = tuple({os.path.realpath(home)} - {home})
    extra = tuple(
        {str(p) for p in ctx.paths.homes()} - {str(ctx.paths.data_dir)}
    )  # config and log dirs when they differ from the data dir
    env = HardlineEnv(
        home=home, fermix_home=str(ctx.paths.data_dir), cwd=cwd, extra_roots=extra, home_aliases=aliases
    )
    try:
        check_command(command, env)
    except ToolError as e:
        if e.code == "sandbox_hardline":
            append_trace(
                ctx.paths,
                "sandbox_event",
                {
                    "source": "sandbox",
                    "decision": "hardline",
                    "phase": "pre_execution",
                    "tool": tool,
                    "reason": e.details.get("reason", ""),
                    "command": command[:300],
                },
            )
        raise


def child_env(ctx: ToolContext, cwd: str, *, tool: str) -> ChildEnv:
    """The replaced environment for a child of `tool`; unresolved names are traced (names only)."""
    resolved = build_child_env(ctx.config.sandbox.env, helper_cwd=cwd)
    if resolved.missing:
        append_trace(
            ctx.paths,
            "sandbox_event",
            {"event": "env_unresolved", "tool": tool, "names": resolved.missing_names},
        )
    return resolved


def check_programs_on_path(command: str, ctx: ToolContext) -> None:
    """`command_not_found` for the first literal command name that is not on the child's PATH."""
    from .cmdcheck import missing_commands

    env_cfg = ctx.config.sandbox.env
    path = os.environ.get("PATH")
    if path is None or "PATH" in env_cfg.deny or "PATH" in env_cfg.vars:
        return  # the child's PATH is not the one we can see here; leave it to the shell
    missing = missing_commands(command, path)
    if missing:
        raise ToolError(
            "command_not_found",
            f"{missing[0]} is not on PATH; nothing ran. Check the spelling, install it, or call it by path",
            {"command": missing[0], "missing": missing},
        )


def find_shell(env: dict[str, str]) -> str:
    """`sh` from the child's PATH, falling back to /bin/sh."""
    found = shutil.which("sh", path=env.get("PATH", ""))
    if found:
        return found
    if os.access("/bin/sh", os.X_OK):
        return "/bin/sh"
    raise ToolError("executable_not_found", "Shell executable missing: /bin/sh", {"path": "/bin/sh"})


def run_shell(
    command: str,
    ctx: ToolContext,
    *,
    working_dir: str | None,
    timeout_ms: int,
    tool: str,
    check_programs: bool = False,
    spawn_id: str | None = None,
) -> dict[str, Any]:
    """Check and run one shell command; the success result, or `exit_nonzero` / `timeout`.

    `check_programs` (bash) refuses a literal command name that is not on PATH before anything runs.
    `spawn_id` is the command's spawn marker (default: a fresh one), for a caller that must find its
    processes after the process running it is gone (`marked_processes`).
    """
    check_command_text(command)
    cwd = ctx.sandbox.working_dir(working_dir, tool=tool)
    hardline_check(command, ctx, cwd, tool=tool)
    if check_programs:
        check_programs_on_path(command, ctx)
    resolved = child_env(ctx, cwd, tool=tool)
    shell = find_shell(resolved.env)
    try:
        outcome = run_captured(
            [shell, "-c", with_lifeline(command)],
            cwd=cwd,
            env=resolved.env if spawn_id is None else {**resolved.env, SPAWN_MARKER: spawn_id},
            timeout_s=timeout_ms / 1000,
            redact=resolved.secrets,
            cancel=ctx.cancel,
            lifeline=True,
        )
    except FileNotFoundError:
        raise ToolError(
            "executable_not_found", f"Shell executable missing: {shell}", {"path": shell}
        ) from None
    except PermissionError as e:
        raise ToolError(
            "executable_not_found", f"Shell executable cannot run: {shell} ({e.strerror})", {"path": shell}
        ) from None
    notes = [*resolved.notes, *output_notes(outcome)]
    result: dict[str, Any] = {
        "exit_code": outcome.exit_code,
        "output": outcome.text(),
        "truncated": outcome.truncated,
        "decoded_lossy": outcome.undecodable_bytes() > 0,
        "duration_ms": outcome.duration_ms,
        "working_dir": cwd,
        "env_missing": resolved.missing_names,
        "notes": notes,
    }
    lead = "".join(f"Note: {n}\n" for n in notes)
    # A model reads what the command printed before it was stopped (the envelope has it in details).
    so_far = f"; output so far:\n{result['output']}" if result["output"] else "; it printed nothing"
    if outcome.cancelled:
        why = ctx.cancel.reason if ctx.cancel is not None else "the call was cancelled"
        stopped = f"{lead}Command stopped after {outcome.duration_ms}ms: {why}; its process group was killed"
        raise ToolError("cancelled", stopped, result, model_message=stopped + so_far)
    if outcome.timed_out:
        stopped = f"{lead}Command timed out after {timeout_ms}ms"
        raise ToolError(
            "timeout", stopped, {**result, "timeout_ms": timeout_ms}, model_message=stopped + so_far
        )
    if outcome.truncated and outcome.exit_code == 0:
        result["notes"] = [*notes, "output cut at 1 MiB (after redaction); the command ran to its end"]
    if outcome.exit_code != 0:
        cut = " (output truncated at 1 MiB; the command was stopped)" if outcome.truncated else ""
        failed = f"{lead}Command failed (exit code {outcome.exit_code}){cut}"
        raise ToolError(
            "exit_nonzero",
            f"{failed}; its output is in details.output",
            result,
            model_message=f"{failed}:\n{result['output']}",
        )
    return result


def output_notes(outcome: ProcessOutcome) -> list[str]:
    """What a reader of the output as text must know: bytes lost to decoding, NULs kept as they are."""
    notes = []
    lost = outcome.undecodable_bytes()
    if lost:
        notes.append(
            f"{lost} byte(s) of output are not UTF-8 and appear as U+FFFD (decoded_lossy); "
            "redirect binary output to a file, or pipe it through `od -c` or `base64`"
        )
    nuls = outcome.output.count(b"\0")
    if nuls:
        notes.append(f"the output holds {nuls} NUL byte(s), kept as U+0000 (binary data?)")
    return notes


def render_result(result: dict[str, Any]) -> str:
    """What a model sees: notes, then the raw output."""
    lead = "".join(f"Note: {n}\n" for n in result.get("notes", []))
    return lead + result["output"]
