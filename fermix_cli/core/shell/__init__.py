"""The shell engine, shared by `shell`, `bash`, the git tools and job commands.

- `lex`, `words`, `expand`, `script`: a POSIX shell lexer and parser that never runs anything.
- `hardline/`: the blocklist of destructive commands, judged on the parsed script.
- `cmdcheck`: which commands of a script are missing from PATH.
- `childenv`: the replaced environment every child process gets.
- `procgroup`: one child in its own process group, with a deadline, an output cap and a clean ending.
- `engine`: `run_shell`, the order of all of the above for one command.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .childenv import base_env, build_child_env
    from .engine import run_shell
    from .procgroup import ProcessOutcome, group_members, marked_processes, run_captured

_EXPORTS = {
    "base_env": "childenv",
    "build_child_env": "childenv",
    "run_shell": "engine",
    "ProcessOutcome": "procgroup",
    "group_members": "procgroup",
    "marked_processes": "procgroup",
    "run_captured": "procgroup",
}

__all__ = [
    "ProcessOutcome",
    "base_env",
    "build_child_env",
    "group_members",
    "marked_processes",
    "run_captured",
    "run_shell",
]


def __getattr__(name: str) -> Any:  # PEP 562: submodules load on first use
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
