"""docs/tools/: one Markdown page per tool family plus an index, rendered from the tool registry.

A tool's family is read from the module that declares it (the catalog's module for that tool), so a family moved into a domain package (`fermix_cli/jobs/tools.py`) keeps its page without any edit
here. Tools and families are sorted and nothing depends on the clock, so the output is deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..cli.clitree import first_sentence
from ..core.catalog import default_catalog

GENERATOR = "python -m fermix_cli.build docs"
PACKAGE = "fermix_cli"

# Schema keywords shown in the constraints column, in this order, with their labels.
_CONSTRAINTS = (
    ("minLength", "min length"),
    ("maxLength", "max length"),
    ("pattern", "pattern"),
    ("minimum", "≥"),
    ("exclusiveMinimum", ">"),
    ("maximum", "≤"),
    ("exclusiveMaximum", "<"),
    ("minItems", "min items"),
    ("maxItems", "max items"),
    ("uniqueItems", "unique items"),
)


def family_of(module: str) -> str:
    """The tool family a declaring module belongs to.

    `fermix_cli.tools.X` and `fermix_cli.tools.X.Y` belong to `X`; a domain package's module such as
    `fermix_cli.jobs.tools` belongs to the domain (`jobs`).
    """
    parts = module.split(".")
    if parts and parts[0] == PACKAGE:
        parts = parts[1:]
    if parts and parts[0] == "tools":
        parts = parts[1:]
    if not parts or not parts[0]:
        raise ValueError(f"no tool family in module name {module!r}")
    return parts[0]


def by_family(specs: Iterable[Any], modules: Mapping[str, str] | None = None) -> dict[str, list[Any]]:
    """Family name -> its tools sorted by name; families sorted by name.

    `modules` maps each tool to its declaring module (default: fermix's catalog).
    """
    specs = list(specs)
    if modules is None:
        modules = default_catalog().tool_modules
    out: dict[str, list[Any]] = {}
    for spec in sorted(specs, key=lambda s: s.name):
        out.setdefault(family_of(modules[spec.name]), []).append(spec)
    return dict(sorted(out.items()))


# ----- rendering helpers -------------------------------------------------------------------------


def cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|")


def _code(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    tick = "``" if "`" in text else "`"
    pad = " " if tick == "``" else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def type_name(prop: dict[str, Any]) -> str:
    """A short, readable name for a property's JSON schema type."""
    if "enum" in prop:
        return "one of " + ", ".join(_code(v) for v in prop["enum"])
    if "const" in prop:
        return _code(prop["const"])
    kind = prop.get("type")
    if kind == "array":
        return "array of " + type_name(prop.get("items", {}))
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return " or ".join(type_name(p) for p in prop[key])
    return "any JSON value"


def constraints(prop: dict[str, Any]) -> str:
    """The schema's limits on a property (and on an array's items), as one short phrase."""
    out = []
    for key, label in _CONSTRAINTS:
        if key in prop:
            value = prop[key]
            if key == "uniqueItems":
                if value:
                    out.append(label)
            elif key == "pattern":
                out.append(f"{label} {_code(value)}")
            else:
                out.append(f"{label} {json.dumps(value)}")
    items = prop.get("items")
    if isinstance(items, dict):
        inner = constraints(items)
        if inner:
            out.append(f"each item: {inner}")
    return "; ".join(out)


def shell_quote(text: str) -> str:
    """`text` in single quotes for a POSIX shell."""
    return "'" + text.replace("'", "'\\''") + "'"


def _hints(spec: Any) -> str:
    h = spec.hints
    names = [n for n, on in (("read-only", h.read_only), ("destructive", h.destructive),
                             ("idempotent", h.idempotent), ("open-world", h.open_world)) if on]  # fmt: skip
    return ", ".join(names) or "none"


def _paragraphs(text: str) -> list[str]:
    return [" ".join(block.split()) for block in text.strip().split("\n\n") if block.strip()]


def _params_table(schema: dict[str, Any]) -> list[str]:
    props = schema.get("properties", {})
    if not props:
        return ["None."]
    required = set(schema.get("required", ()))
    out = [
        "| name | type | required | default | constraints | description |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, prop in props.items():
        default = _code(prop["default"]) if "default" in prop else ""
        row = (
            _code(name),
            cell(type_name(prop)),
            "yes" if name in required else "no",
            cell(default),
            cell(constraints(prop)),
            cell(prop.get("description", "")),
        )
        out.append("| " + " | ".join(row) + " |")
    return out


def tool_section(spec: Any) -> list[str]:
    """One tool's section of its family page."""
    out = [f"## {spec.name}", ""]
    for block in _paragraphs(spec.description):
        out += [block, ""]
    facts = [
        f"- Policy class: `{spec.policy_class}`",
        f"- Owner only: {'yes' if spec.owner_only else 'no'}",
        f"- MCP hints: {_hints(spec)}",
        f"- Category: `{spec.category}`",
    ]
    if spec.toolsets:
        facts.append("- Toolsets: " + ", ".join(f"`{t}`" for t in sorted(spec.toolsets)))
    out += [*facts, ""]
    if spec.when_to_use:
        out += ["### When to use", ""]
        for block in _paragraphs(spec.when_to_use):
            out += [block, ""]
    out += ["### Parameters", "", *_params_table(spec.input_schema()), ""]
    out += ["### Examples", ""]
    if not spec.examples:
        out += ["None declared.", ""]
    for ex in spec.examples:
        call = f"fermix tool {spec.name} --json {shell_quote(json.dumps(dict(ex.args), ensure_ascii=False))}"
        if ex.note:
            out += [" ".join(ex.note.split()), ""]
        out += ["```sh", call, "```", ""]
    out += ["### Errors", ""]
    if not spec.failure_modes:
        out += ["Only the common ones: `invalid_input`, `policy_denied`, `internal_error`.", ""]
    else:
        out += [f"- `{fm.tag}`: {' '.join(fm.description.split())}" for fm in spec.failure_modes]
        out.append("")
    return out


def _banner() -> str:
    return f"<!-- Generated by `{GENERATOR}` from the tool registry; do not edit. -->"


def family_page(family: str, specs: list[Any]) -> str:
    out = [_banner(), "", f"# {family} tools", ""]
    out += [
        "Each tool runs as `fermix tool NAME --json '{...}'` (or one flag per parameter); "
        "see [the CLI contract](../cli.md) for input forms, output and exit codes. "
        "Back to [the tool index](README.md).",
        "",
    ]
    out += [f"- [{s.name}](#{s.name}): {first_sentence(s.description)}" for s in specs]
    out.append("")
    for spec in specs:
        out += tool_section(spec)
    return "\n".join(out).rstrip("\n") + "\n"


def index_page(families: dict[str, list[Any]]) -> str:
    rows = sorted((s, fam) for fam, specs in families.items() for s in [x.name for x in specs])
    spec_of = {s.name: s for specs in families.values() for s in specs}
    out = [_banner(), "", "# Tools", ""]
    out += [
        "Every built-in tool, generated from the registry. Run one with "
        "`fermix tool NAME --json '{...}'`; `fermix tool NAME --schema` prints its input schema and "
        "`fermix tool list --json` lists them all. The policy class decides who may run a tool "
        "(see [the sandbox and policy](../sandbox.md)).",
        "",
        "Families: " + ", ".join(f"[{fam}]({fam}.md)" for fam in families) + ".",
        "",
        "| tool | family | policy class | description |",
        "| --- | --- | --- | --- |",
    ]
    for name, fam in rows:
        spec = spec_of[name]
        out.append(
            f"| [`{name}`]({fam}.md#{name}) | [{fam}]({fam}.md) | `{spec.policy_class}` "
            f"| {cell(first_sentence(spec.description))} |"
        )
    return "\n".join(out) + "\n"


def render_all(specs: Iterable[Any], modules: Mapping[str, str] | None = None) -> dict[str, str]:
    """File name (inside docs/tools/) -> page text."""
    families = by_family(specs, modules)
    pages = {f"{fam}.md": family_page(fam, tools) for fam, tools in families.items()}
    pages["README.md"] = index_page(families)
    return dict(sorted(pages.items()))
