"""The one error type every tool raises, and how its code maps to a CLI exit class."""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitClass(IntEnum):
    """Exit codes of the CLI contract (ARCHITECTURE section 6)."""

    OK = 0
    TOOL_FAILED = 1
    BAD_INPUT = 2
    REFUSED = 3
    INTERNAL = 4


# Codes that mean "refused by policy or sandbox" (exit 3).
POLICY_CODES = frozenset(
    {
        "outside_root",
        "outside_cwd",
        "absolute_path_denied",
        "protected_path",
        "blocked_root",
        "too_many_symlinks",
        "unsafe_root",
        "sandbox_denied",
        "sandbox_hardline",
        "blocked_url",
        "denied_arg",
        "push_deferred",
        "policy_denied",
        "tool_not_allowed",
        "not_attended",
        "category_not_allowed",
        "not_editable",
        "preflight_refused",
    }
)

# Failures to reach a host (no DNS answer, no connection, no reply in time, a dropped exchange):
# the tool failed (exit 1), never a refusal, and trying again later may well succeed.
NETWORK_FAILURE_CODES = frozenset({"dns_failure", "connect_failed", "timeout", "network"})

# Codes that mean "bad input" (exit 2), besides every `invalid_*` and `missing_*` code.
INPUT_CODES = frozenset(
    {
        "invalid_json",
        "invalid_input",
        "unknown_tool",
        "unknown_flag",
        "unknown_command",
        "query_too_long",
        "location_required",
        "usage",
    }
)

# `invalid_*` codes that describe the state of the world, not the caller's input.
_NOT_INPUT = frozenset({"invalid_repo"})


def exit_class_for(code: str) -> ExitClass:
    """The exit class a stable error code belongs to."""
    if code in POLICY_CODES:
        return ExitClass.REFUSED
    if code == "internal_error":
        return ExitClass.INTERNAL
    if code in INPUT_CODES or (code.startswith(("invalid_", "missing_")) and code not in _NOT_INPUT):
        return ExitClass.BAD_INPUT
    return ExitClass.TOOL_FAILED


class ToolError(Exception):
    """A failure with a stable snake_case code, a message that says how to recover, and details."""

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        exit_class: ExitClass | None = None,
        model_message: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}
        self.exit_class = exit_class if exit_class is not None else exit_class_for(code)
        # What a model reads instead of `message` when it needs more (a failed command's output,
        # which the envelope carries once, in details).
        self.model_message = message if model_message is None else model_message

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}

    def model_text(self) -> str:
        """The `tag: message` form a model sees (reference error convention)."""
        return f"{self.code}: {self.model_message}"


def world_error(code: str, message: str, details: dict[str, Any] | None = None) -> ToolError:
    """A failure caused by what is on disk, not by the input: exit 1, even for a code such as
    `invalid_path` that the reference also uses for malformed input (a directory where a file is
    needed, a path that changed while it was opened)."""
    return ToolError(code, message, details, exit_class=ExitClass.TOOL_FAILED)


# SQLite primary result codes that describe the disk or the file, never fermix's SQL.
_SQLITE_ENVIRONMENT = frozenset({3, 5, 6, 7, 8, 10, 11, 13, 14, 15, 26})  # PERM BUSY LOCKED NOMEM READONLY
# IOERR CORRUPT FULL CANTOPEN PROTOCOL NOTADB
# SQLITE_BUSY, SQLITE_LOCKED: another connection held the lock past the busy timeout (contention, not damage).
_SQLITE_BUSY = frozenset({5, 6})
_OS_ENVIRONMENT = frozenset(
    {"EROFS", "EACCES", "EPERM", "ENOSPC", "EDQUOT", "EIO", "EMFILE", "ENFILE", "ENOMEM"}
)


# Standard modules a Python may be built without (pyenv or a source build lacking the headers):
# module -> (the names its import fails on, what fermix needs it for, the Debian package with the headers).
OPTIONAL_STDLIB = {
    "sqlite3": (("sqlite3", "_sqlite3"), "fermix's state.db (memories, jobs, transcripts)", "libsqlite3-dev"),
    "ssl": (("ssl", "_ssl"), "HTTPS (the web tools, model providers, Telegram)", "libssl-dev"),
}


def missing_module_message(module: str) -> str:
    """Why fermix cannot work without stdlib `module` here, and how to get a Python that has it."""
    import sys

    _, needed_for, headers = OPTIONAL_STDLIB[module]
    version = ".".join(map(str, sys.version_info[:3]))
    return (
        f"this Python ({sys.executable}) was built without the {module} module, which {needed_for} needs. "
        f"Use a Python that has it (Debian's and Ubuntu's python3 do), or build this one again with "
        f"{module}'s headers present: apt-get install {headers}, then for a pyenv Python: "
        f"pyenv install --force {version}"
    )


def missing_module_error(exc: BaseException) -> ToolError | None:
    """The typed error for an import that failed because this Python lacks sqlite3 or ssl, else None."""
    if not isinstance(exc, ImportError):
        return None
    for module, (names, _, _) in OPTIONAL_STDLIB.items():
        if exc.name in names:
            return ToolError("python_module_missing", missing_module_message(module), {"module": module})
    return None


def environment_error(exc: BaseException) -> ToolError | None:
    """The exit-1 ToolError for a failure of the disk, the state file or memory, or a Python built without
    sqlite3 or ssl; None for a bug.

    A read-only home, a full disk or a corrupt state.db is not fermix's fault: it must not be
    reported as an internal error (exit 4).
    """
    missing = missing_module_error(exc)
    if missing is not None:
        return missing
    import errno

    if isinstance(exc, MemoryError):
        return ToolError("out_of_memory", "fermix ran out of memory; nothing more was done.", {})
    if isinstance(exc, OSError) and exc.errno == errno.ENOTDIR:
        where = exc.filename if isinstance(exc.filename, str) else None
        return ToolError(
            "not_a_directory",
            f"a path fermix needs as a directory is a file or below one{f': {where}' if where else ''}. "
            "Check FERMIX_HOME (run: fermix doctor) and the paths in the call.",
            {"path": where} if where else {},
        )
    if isinstance(exc, OSError) and errno.errorcode.get(exc.errno or 0) in _OS_ENVIRONMENT:
        where = exc.filename if isinstance(exc.filename, str) else None
        return ToolError(
            "io_failed",
            f"the disk refused: {exc.strerror or exc}{f' ({where})' if where else ''}. "
            "Check that the fermix home and the target are writable and not full.",
            {"path": where} if where else {},
        )
    code = getattr(exc, "sqlite_errorcode", None)
    if type(exc).__module__ == "sqlite3" and isinstance(code, int) and code & 0xFF in _SQLITE_BUSY:
        return state_busy()
    if type(exc).__module__ == "sqlite3" and isinstance(code, int) and code & 0xFF in _SQLITE_ENVIRONMENT:
        return ToolError(
            "state_unavailable",
            f"state.db cannot be used: {exc}. Check the file and its directory, or run: fermix doctor",
            {"sqlite_error": getattr(exc, "sqlite_errorname", None)},
        )
    return None


def state_busy(seconds: float | None = None) -> ToolError:
    """`state_busy` (exit 1): another process held state.db's write lock longer than fermix waits."""
    if seconds is None:
        from .state import BUSY_TIMEOUT_MS

        seconds = BUSY_TIMEOUT_MS / 1000
    return ToolError(
        "state_busy",
        f"another fermix process held state.db's write lock for more than {seconds:g} s, so nothing was "
        "written. Try again; if it keeps happening, find the process holding it with "
        "`fuser $FERMIX_HOME/state.db` or `lsof $FERMIX_HOME/state.db`.",
        {"waited_seconds": seconds},
    )
