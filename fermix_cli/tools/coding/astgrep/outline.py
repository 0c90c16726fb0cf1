"""ast_grep outline: symbols of a parsed file, filtered and shaped by `items`, `view`, `name`,
`symbol_type` and `pub_members`, as JSON-ready entries.

Views grow from `names` (name, type, flags, range) to `signatures` (+ the top-level signature),
`digest` (+ member names) and `expanded` (+ member signatures). Lines and columns are 1-based and
range ends are exclusive; byte offsets are never shown. Filters select top-level entries only; a
parent and its members are kept or dropped together.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....core.errors import ToolError
from ....core.records import Record
from .languages import DeadlinePassed, check_deadline
from .symbol_rules import EXTRACTORS, SYMBOL_TYPES, Node, Symbol

ITEMS = ("structure", "exports", "imports", "all")
VIEWS = ("digest", "names", "signatures", "expanded")
MAX_FILTER_BYTES = 512


class OutlineOptions(Record, frozen=True):
    items: str = "structure"
    view: str = "digest"
    name: str | None = None  # a Rust regex, checked by rg
    types: frozenset[str] | None = None
    pub_members: bool = False


def parse_types(raw: str) -> frozenset[str]:
    """`symbol_type`: comma-separated lower camel case types."""
    wanted = [t.strip() for t in raw.split(",") if t.strip()]
    bad = [t for t in wanted if t not in SYMBOL_TYPES]
    if bad or not wanted:
        raise ToolError(
            "invalid_symbol_type",
            f"Unknown symbol_type {', '.join(bad) or repr(raw)}. Valid types: {', '.join(SYMBOL_TYPES)}",
            {"invalid": bad, "valid": list(SYMBOL_TYPES)},
        )
    return frozenset(wanted)


def compile_name(raw: str) -> str:
    """`name` once rg has checked it: a Rust regex, matched with rg (linear time, Unicode-aware)."""
    from ....core.search.ripgrep import check_pattern

    why = check_pattern(raw)
    if why is not None:
        raise ToolError("invalid_name", f"name is not a valid regex: {why}", {"name": raw})
    return raw


def name_filter(pattern: str, syms: list[Symbol], deadline: float) -> list[bool]:
    """For each symbol, whether `pattern` matches its name, signature or first source line: one rg
    call for the lot."""
    import subprocess
    import time

    from ....core.search.ripgrep import matching_records

    records = []
    for sym in syms:
        records += [sym.name, sym.signature(), sym.node.text().split("\n", 1)[0]]
    check_deadline(deadline)
    try:
        hits = matching_records(pattern, records, max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        raise DeadlinePassed() from None
    return [any(3 * i + k in hits for k in range(3)) for i in range(len(syms))]


def check_filter_size(field: str, value: str | None) -> None:
    if value is not None and len(value.encode("utf-8")) > MAX_FILTER_BYTES:
        raise ToolError(
            "invalid_input",
            f"{field} is {len(value.encode('utf-8'))} bytes; name and symbol_type filters are limited to "
            f"{MAX_FILTER_BYTES} bytes",
            {"field": field},
        )


def symbols(root: Node, language: str, deadline: float) -> Iterator[Symbol]:
    """Top-level symbols in source order; checks the deadline around each extraction step."""
    extract = EXTRACTORS[language]
    for child in root.children():
        check_deadline(deadline)
        if not child.is_named():
            continue
        for sym in extract(child):
            check_deadline(deadline)
            yield sym


def selected(sym: Symbol, opts: OutlineOptions) -> bool:
    if opts.items == "imports" and sym.type != "import":
        return False
    if opts.items == "structure" and sym.type in ("import", "export"):
        return False
    if opts.items == "exports" and not (sym.exported or sym.type == "export"):
        return False
    # `name` is matched for many symbols at once: name_filter
    return opts.types is None or sym.type in opts.types


def span(node: Node) -> dict[str, dict[str, int]]:
    r = node.range()
    return {
        "start": {"line": r.start.line + 1, "column": r.start.column + 1},
        "end": {"line": r.end.line + 1, "column": r.end.column + 1},
    }


def entry(sym: Symbol, opts: OutlineOptions) -> dict[str, Any]:
    item: dict[str, Any] = {"name": sym.name, "type": sym.type}
    if opts.view != "names":
        item["signature"] = sym.signature()
    item["exported"] = sym.exported
    item["imported"] = sym.imported
    item["range"] = span(sym.node)
    if opts.view in ("digest", "expanded") and sym.members_of is not None:
        members = []
        for m in sym.members():
            if opts.pub_members and not m.exported:
                continue
            member: dict[str, Any] = {"name": m.name, "type": m.type}
            if opts.view == "expanded":
                member["signature"] = m.signature()
            member["exported"] = m.exported
            member["range"] = span(m.node)
            members.append(member)
        item["members"] = members
    return item
