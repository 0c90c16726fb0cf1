"""Who may see and run which tool. Enforced at `registry.invoke`, always; hiding is never the only gate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .context import POLICY_CLASSES, ToolContext
from .errors import ToolError

if TYPE_CHECKING:
    from .registry import ToolSpec

TRUST_CLASSES: dict[str, frozenset[str]] = {
    "operator": frozenset(POLICY_CLASSES),
    "guest": frozenset({"read_only"}),
}


def effective_classes(ctx: ToolContext) -> frozenset[str]:
    """The policy classes this context may use: the trust default narrowed by any ceiling."""
    classes = TRUST_CLASSES.get(ctx.trust, TRUST_CLASSES["guest"])
    if ctx.policy_ceiling is not None:
        classes = classes & ctx.policy_ceiling
    return classes


def denial_reason(spec: ToolSpec, ctx: ToolContext) -> str | None:
    """Why `ctx` may not run `spec`, or None when it may."""
    if spec.policy_class not in effective_classes(ctx):
        who = "a guest" if ctx.trust == "guest" else f"this {ctx.origin} context"
        return f"{spec.name} needs policy class {spec.policy_class}, which {who} does not have"
    if spec.owner_only and ctx.trust != "operator":
        return f"{spec.name} is available to the owner only"
    if ctx.allowed_tools is not None and spec.name not in ctx.allowed_tools:
        return f"{spec.name} is not in this run's allowed tools"
    return None


def can_see(spec: ToolSpec, ctx: ToolContext) -> bool:
    return denial_reason(spec, ctx) is None and (spec.available is None or spec.available(ctx))


def check(spec: ToolSpec, ctx: ToolContext) -> None:
    """Raise `policy_denied` (exit 3) unless `ctx` may run `spec`; then run the tool's own gate.

    A `gate_first` tool's gate runs before the policy checks, so its refusal is the one a caller hears.
    """
    if spec.gate_first and spec.gate is not None:
        spec.gate(ctx)
    reason = denial_reason(spec, ctx)
    if reason is not None:
        raise ToolError(
            "policy_denied", f"{reason}.", {"tool": spec.name, "trust": ctx.trust, "origin": ctx.origin}
        )
    if spec.gate is not None and not spec.gate_first:
        spec.gate(ctx)
