"""The global options every command takes, written before the command: --home, --cwd, --session, --trust."""

from __future__ import annotations

from ..core.errors import ToolError
from ..core.records import Record

GLOBAL_FLAGS = ("--home", "--cwd", "--session", "--trust")


class GlobalOptions(Record):
    home: str | None = None
    cwd: str | None = None
    session: str | None = None
    trust: str | None = None


def split_globals(argv: list[str]) -> tuple[GlobalOptions, list[str]]:
    """Take the leading global options off argv; the rest starts with the command."""
    opts = GlobalOptions()
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name not in GLOBAL_FLAGS:
            break
        if not eq:
            if i + 1 >= len(argv):
                raise ToolError("usage", f"{name} needs a value", {"flag": name})
            value = argv[i + 1]
            i += 1
        setattr(opts, name[2:], value)
        i += 1
    if opts.session is not None:
        from ..core.context import checked_session_id

        checked_session_id(opts.session, "--session")
    if opts.trust is not None and opts.trust not in ("operator", "guest"):
        raise ToolError(
            "usage", f"--trust must be operator or guest, got {opts.trust!r}", {"flag": "--trust"}
        )
    return opts, argv[i:]
