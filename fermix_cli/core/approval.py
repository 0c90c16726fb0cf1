"""Asking the owner to confirm something mid-run (e.g. request_directory_access).

An interactive front end (`fermix agent`) puts a callback in `ctx.extras["confirm"]`; tools call
`confirm_with_owner`. With no owner at a terminal there is nobody to ask, and the answer is no.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .context import ToolContext

Confirm = Callable[[str, Mapping[str, Any]], bool]
CONFIRM_KEY = "confirm"


def can_confirm(ctx: ToolContext) -> bool:
    """Whether an owner is present to answer a confirmation."""
    return callable(ctx.extras.get(CONFIRM_KEY)) and ctx.trust == "operator"


def confirm_with_owner(ctx: ToolContext, question: str, details: Mapping[str, Any] | None = None) -> bool:
    """Ask the owner `question`; False when nobody can be asked or the owner declines."""
    if not can_confirm(ctx):
        return False
    callback: Confirm = ctx.extras[CONFIRM_KEY]
    return bool(callback(question, dict(details or {})))
