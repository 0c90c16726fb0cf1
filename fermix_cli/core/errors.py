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
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}
        self.exit_class = exit_class if exit_class is not None else exit_class_for(code)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}

    def model_text(self) -> str:
        """The `tag: message` form a model sees (reference error convention)."""
        return f"{self.code}: {self.message}"
