"""Git tools: git_read (status, log, diff, branch, show) and git_write (add, commit, checkout, pull).

Arguments are judged by `tools/git/args.py` before any process starts; the repository is inspected and
git is run hardened by `tools/git/run.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ...core.context import ToolContext
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from .args import READ_COMMANDS, WRITE_COMMANDS, check_args, check_command
from .run import GitRunner

Arg = Annotated[str, Field(max_length=4096)]


class GitParams(Params):
    repo: Annotated[
        str | None,
        Field(max_length=4096, description="Repository directory (defaults to the current directory)"),
    ] = None
    command: Annotated[str, Field(min_length=1, max_length=64, description="Git subcommand")]
    args: Annotated[
        list[Arg],
        Field(default_factory=list, max_length=256, description="Flags and arguments for the subcommand"),
    ]


def _run(tool: Literal["git_read", "git_write"], p: GitParams, ctx: ToolContext) -> dict[str, Any]:
    check_command(tool, p.command)
    check_args(tool, p.command, p.args)
    runner = GitRunner(ctx, tool)
    repo = runner.open_repo(p.repo)
    return runner.run(repo, p.command, p.args)


def git_read(p: GitParams, ctx: ToolContext) -> dict[str, Any]:
    return _run("git_read", p, ctx)


def git_write(p: GitParams, ctx: ToolContext) -> dict[str, Any]:
    return _run("git_write", p, ctx)


def _render(r: dict[str, Any]) -> str:
    text: str = r["output"] or f"git {r['command']}: done (no output)"
    for note in r.get("notes", ()):
        text += f"\n[{note}]"
    return text


_SHARED_FAILURES = (
    FailureMode(
        "denied_arg",
        "an argument is refused by the shared denylist or a per-command rule (--recurse-submodules, "
        "--ignore-submodules other than =all ...); nothing ran",
    ),
    FailureMode("unknown_command", "the subcommand is not one this tool runs"),
    FailureMode(
        "invalid_repo",
        "not a git work tree, or its config or a submodule's sets a key that runs programs",
    ),
    FailureMode(
        "outside_root", "the repository (or its git dir, or a submodule's) is outside the sandbox roots"
    ),
    FailureMode(
        "protected_path",
        "the repository's work tree holds a protected path (a dotfiles repository at the home holds "
        "~/.ssh); git could read or overwrite it",
    ),
    FailureMode("git_failed", "git exited non-zero; the output is in the message"),
    FailureMode("timeout", "git ran longer than 120 s; a model also sees the output so far"),
    FailureMode(
        "cancelled",
        "the caller cancelled the call (an MCP client); git was stopped; a model sees the output so far",
    ),
)

TOOLS = specs(
    ToolSpec(
        name="git_read",
        category="git",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Run a read-only git subcommand: " + ", ".join(READ_COMMANDS) + ". `branch` lists only. "
            "Arguments that could escape the repository (--no-index, --git-dir, --output, ..., absolute, ~ "
            "and .. paths) are refused in every spelling before git runs."
        ),
        params=GitParams,
        handler=git_read,
        render=_render,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Inspect a repository's state, history or changes.",
        examples=(
            Example({"command": "status", "args": ["--short"]}, "short status of the current repository"),
            Example({"command": "log", "args": ["--oneline", "-n", "10"]}, "last ten commits"),
            Example({"command": "branch", "args": ["--merged=main"]}, "branches merged into main"),
        ),
        failure_modes=_SHARED_FAILURES,
    ),
    ToolSpec(
        name="git_write",
        category="git",
        policy_class="read_write",
        description=(
            "Run a mutating git subcommand: " + ", ".join(WRITE_COMMANDS) + ". push is refused "
            "(push_deferred). Commit messages go inline with -m: -F, --file, --template and "
            "--pathspec-from-file are refused in every spelling. Hooks are off."
        ),
        params=GitParams,
        handler=git_write,
        render=_render,
        hints=Hints(destructive=True),
        when_to_use="Stage, commit, switch branches or pull in a repository inside a write root.",
        examples=(
            Example({"command": "add", "args": ["src/app.py"]}, "stage one file"),
            Example({"command": "commit", "args": ["-m", "Fix the parser"]}, "commit staged changes"),
        ),
        failure_modes=(*_SHARED_FAILURES, FailureMode("push_deferred", "this tool cannot push")),
    ),
)
