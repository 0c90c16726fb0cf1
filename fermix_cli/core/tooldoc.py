"""A tool's documentation, derived from its spec: the markdown tool_help and tool_describe return."""

from __future__ import annotations

import json
from typing import Any

from .registry import ToolSpec


def _type_name(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    t = schema.get("type")
    if t == "array":
        return f"array of {_type_name(schema.get('items', {}))}"
    if isinstance(t, str):
        return t
    if "anyOf" in schema:
        return " or ".join(_type_name(s) for s in schema["anyOf"])
    return "any"


def parameter_lines(spec: ToolSpec, schema: dict[str, Any] | None = None) -> list[str]:
    """One line per parameter of `schema` (the tool's published one when not given)."""
    schema = spec.input_schema() if schema is None else schema
    required = set(schema.get("required", ()))
    lines = []
    for name, prop in schema.get("properties", {}).items():
        need = "required" if name in required else "optional"
        desc = prop.get("description", "")
        default = f" Default: {json.dumps(prop['default'])}." if "default" in prop else ""
        lines.append(f"- `{name}` ({_type_name(prop)}, {need}) — {desc}{default}".rstrip(" —"))
    return lines or ["- none"]


def tool_markdown(spec: ToolSpec, schema: dict[str, Any] | None = None) -> str:
    """`# name`, the description, then Parameters (of `schema`, as a caller sees it, when given),
    Examples and Failure modes."""
    note = " (built-in)" if spec.kind == "builtin" else f" ({spec.kind} tool)"
    out = [f"# {spec.name}", "", spec.description + note, ""]
    out.append(
        f"Category: {spec.category}. Policy class: {spec.policy_class}"
        + (". Owner only." if spec.owner_only else ".")
    )
    if spec.when_to_use:
        out += ["", f"When to use: {spec.when_to_use}"]
    out += ["", "## Parameters", *parameter_lines(spec, schema), "", "## Examples"]
    out += [f"- `{json.dumps(dict(e.args), ensure_ascii=False)}` — {e.note}" for e in spec.examples] or [
        "- none"
    ]
    out += ["", "## Failure modes"]
    out += [f"- `{f.tag}` — {f.description}" for f in spec.failure_modes] or ["- none"]
    return "\n".join(out) + "\n"
