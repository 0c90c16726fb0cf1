"""Shell tools: fermix's `shell` (agent toolset) and the coding contract's `bash` (coding toolset).

Both run through one engine (`core/shell/engine.py`): the hardline blocklist before anything runs,
`sh -c` in its own process group, a replaced and redacted environment, a timeout that ends the whole
group, and a 1 MiB output cap. The blocklist catches common mistakes; it is not an OS sandbox.
"""

from __future__ import annotations

from typing import Annotated, Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ..core.shell.engine import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    check_command_text,
    render_result,
    run_shell,
)
from ..core.shell.hardline.judge import check_no_expansion
from ..core.shell.lex import MAX_INPUT_CHARS

# The hardline parses every command the schema admits; one limit for both.
COMMAND_MAX = MAX_INPUT_CHARS

_COMMON_FAILURES = (
    FailureMode("sandbox_hardline", "the command matches the hardline blocklist; nothing ran"),
    FailureMode("exit_nonzero", "the command exited non-zero; exit code and output are in details"),
    FailureMode("timeout", "the command ran past its timeout; its whole process group was killed"),
    FailureMode("cancelled", "the caller cancelled the call (an MCP client); its process group was killed"),
    FailureMode("invalid_command", "the command is empty or blank"),
    FailureMode("outside_root", "the working directory is outside the sandbox roots"),
    FailureMode("missing_working_dir", "the working directory does not exist"),
    FailureMode("executable_not_found", "no sh on PATH and no /bin/sh"),
)


# ----- shell -----------------------------------------------------------------------------------


class ShellParams(Params):
    command: Annotated[
        str, Field(max_length=COMMAND_MAX, description="Shell command to execute (run as sh -c)")
    ]
    working_dir: Annotated[
        str | None,
        Field(
            max_length=4096,
            description="Working directory inside the sandbox (defaults to the sandbox mode's working directory)",
        ),
    ] = None
    timeout_ms: Annotated[
        int,
        Field(
            ge=1, le=MAX_TIMEOUT_MS, description="Timeout in milliseconds; the whole process group is killed"
        ),
    ] = DEFAULT_TIMEOUT_MS


def shell(p: ShellParams, ctx: ToolContext) -> dict[str, Any]:
    return run_shell(p.command, ctx, working_dir=p.working_dir, timeout_ms=p.timeout_ms, tool="shell")


# ----- bash ------------------------------------------------------------------------------------


class BashParams(Params):
    command: Annotated[
        str, Field(max_length=COMMAND_MAX, description="Non-interactive command to run (sh -c)")
    ]
    intent: Annotated[
        str,
        Field(
            max_length=2000,
            description="Nonblank, brief reason the command is needed; shown above the command",
        ),
    ]
    timeout: Annotated[int, Field(ge=1, le=300, description="Timeout in seconds (1-300)")] = 30


def bash(p: BashParams, ctx: ToolContext) -> dict[str, Any]:
    check_command_text(p.command)
    if not p.intent.strip():
        raise ToolError(
            "missing_intent",
            "bash requires a nonblank intent explaining why the command is needed.",
            {"field": "intent"},
        )
    if not ctx.config.capabilities.tools.bash.shell_expansion:
        check_no_expansion(p.command)
    result = run_shell(
        p.command, ctx, working_dir=None, timeout_ms=p.timeout * 1000, tool="bash", check_programs=True
    )
    return {"intent": p.intent.strip(), **result}


# The coding contract's runtime aliases of `bash`: in the coding toolset `shell` and `cmd` mean `bash`,
# while everywhere else `shell` is fermix's own shell tool (registry names stay unique).
TOOLSET_ALIASES = {"coding": {"shell": "bash", "cmd": "bash"}}

TOOLS = specs(
    ToolSpec(
        name="shell",
        category="system",
        policy_class="exec",
        description=(
            "Run a shell command (sh -c) in the sandbox working directory. The hardline blocklist of "
            "obviously dangerous commands is checked first; the environment is replaced; the process "
            "group is killed on timeout; output is capped at 1 MiB. A non-zero exit is an error."
        ),
        params=ShellParams,
        handler=shell,
        render=render_result,
        hints=Hints(destructive=True, open_world=True),
        when_to_use="Run a program or a short pipeline when no dedicated tool does the job.",
        examples=(
            Example({"command": "ls -la"}, "list the working directory"),
            Example({"command": "make test", "working_dir": "~/src/app", "timeout_ms": 120000}, "run tests"),
        ),
        failure_modes=_COMMON_FAILURES,
    ),
    ToolSpec(
        name="bash",
        category="coding",
        policy_class="exec",
        description=(
            "Run a non-interactive command in the active working directory, with a nonblank intent "
            "saying why. Same engine as shell: hardline blocklist, replaced environment, process-group "
            "timeout (1-300 s), 1 MiB output cap. Also reachable as `shell` and `cmd` in the coding toolset."
        ),
        params=BashParams,
        handler=bash,
        render=render_result,
        hints=Hints(destructive=True, open_world=True),
        when_to_use="Build, test or inspect the project from the coding toolset.",
        examples=(Example({"command": "pytest -q", "intent": "run the test suite"}, "run tests"),),
        failure_modes=(
            *_COMMON_FAILURES,
            FailureMode("missing_intent", "intent is blank"),
            FailureMode("preflight_refused", "shell expansion is disabled and the command uses $ ~ ` { or }"),
            FailureMode(
                "command_not_found", "a literal command name is not a builtin, function or PATH program"
            ),
        ),
        toolsets=frozenset({"coding"}),
    ),
)
