"""snapshot: the page's accessibility tree as indented lines, with `ref` handles for its elements.

The tree comes from `Accessibility.getFullAXTree` on the current document, every time (never a cache),
so a snapshot after a navigation or a single-page-app swap shows what is there now. Each element line
gets a ref (`e1`, `e2`, ...) mapped to its backend DOM node id; the map is saved with the tab's target
id and the document's loader id, so a later CLI call can use the ref until the document changes.
"""

from __future__ import annotations

from typing import Any

from .page import Tab
from .session import Session

INTERACTIVE = frozenset(
    {
        "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
        "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton",
        "treeitem", "TextField", "PopUpButton", "textField",
    }
)  # fmt: skip
TEXT_ROLES = frozenset({"StaticText", "text"})
NOISE_ROLES = frozenset({"InlineTextBox", "LineBreak", "none", "generic", "presentation", "ignored"})
STRUCTURE_ROLES = frozenset(
    {"group", "list", "listitem", "paragraph", "section", "div", "LayoutTable", "LayoutTableRow",
     "LayoutTableCell", "Section", "region", "contentinfo", "banner", "main", "navigation", "form",
     "RootWebArea", "WebArea", "article", "figure"}
)  # fmt: skip
STATE_PROPERTIES = ("checked", "disabled", "expanded", "selected", "pressed", "required", "focused", "level")
MAX_LINES = 3000
TEXT_FIELDS = frozenset({"textbox", "searchbox", "spinbutton"})
TEXT_FIELD = "\x00field"  # marks the children of a text field


def _text_below(node_id: str, by_id: dict[str, Any], children_of: dict[str, list[str]]) -> str:
    """The visible text under a node (its static text, in order), for nodes with no name of their own."""
    parts: list[str] = []
    stack = list(reversed(children_of.get(node_id, [])))
    while stack and len(parts) < 20:
        node = by_id.get(stack.pop())
        if node is None:
            continue
        if _value(node, "role") in TEXT_ROLES:
            parts.append(str(_value(node, "name") or "").strip())
        else:
            stack.extend(reversed(children_of.get(node["nodeId"], [])))
    return " ".join(p for p in parts if p)


def _value(node: dict[str, Any], key: str) -> Any:
    item = node.get(key)
    return item.get("value") if isinstance(item, dict) else None


def take_snapshot(
    session: Session,
    tab: Tab,
    *,
    interactive: bool,
    compact: bool,
    depth: int | None,
    include_urls: bool,
) -> dict[str, Any]:
    tab.check_no_dialog()
    document = tab.document_key()
    info = tab.evaluate("[location.href, document.title, document.readyState]")
    nodes = tab.call("Accessibility.getFullAXTree")["nodes"]
    by_id = {n["nodeId"]: n for n in nodes}
    children_of = {n["nodeId"]: n.get("childIds", []) for n in nodes}
    roots = [n for n in nodes if not n.get("parentId")] or nodes[:1]

    lines: list[str] = []
    refs: dict[str, int] = {}
    truncated = False
    # Depth-first, explicit stack: (node id, indent level, the shown parent's name).
    stack: list[tuple[str, int, str]] = [(r["nodeId"], 0, "") for r in reversed(roots)]
    while stack:
        node_id, level, parent_name = stack.pop()
        node = by_id.get(node_id)
        if node is None:
            continue
        role = str(_value(node, "role") or "")
        name = str(_value(node, "name") or "").strip()
        if role == "LabelText":
            # A <label> has no accessible name of its own; its text is what a reader sees.
            role = "label"
            name = name or _text_below(node_id, by_id, children_of)
        if parent_name == TEXT_FIELD:
            continue  # a field's own text is its value, shown on the field's line
        shown = _shown(node, role, name, parent_name, interactive, compact)
        child_level = level
        if shown:
            if depth is not None and level > depth:
                continue
            if len(lines) >= MAX_LINES:
                truncated = True
                break
            lines.append(_line(node, role, name, 0 if interactive else level, refs, include_urls))
            child_level = level + 1
        kids = children_of.get(node_id, [])
        context = TEXT_FIELD if role in TEXT_FIELDS else (name if shown else parent_name)
        for kid in reversed(kids):
            stack.append((kid, child_level, context))

    session.state.setdefault("refs", {})[tab.target_id] = {"document": document, "refs": refs}
    session.save()
    return {
        "tab": tab.target_id,
        "url": info[0],
        "title": info[1],
        "ready_state": info[2],
        "snapshot": "\n".join(lines),
        "refs": len(refs),
        "truncated": truncated,
    }


def _shown(
    node: dict[str, Any], role: str, name: str, parent_name: str, interactive: bool, compact: bool
) -> bool:
    if node.get("ignored"):
        return False
    if interactive:
        return role in INTERACTIVE and "backendDOMNodeId" in node
    if role in NOISE_ROLES and not name:
        return False
    if role in TEXT_ROLES:
        return bool(name) and name != parent_name
    if role in ("InlineTextBox", "LineBreak"):
        return False
    return not (compact and role in STRUCTURE_ROLES and not name)


def _line(
    node: dict[str, Any], role: str, name: str, level: int, refs: dict[str, int], include_urls: bool
) -> str:
    indent = "  " * level
    if role in TEXT_ROLES:
        return f"{indent}- text {_quote(name)}"
    parts = [f"{indent}- {role}"]
    if name:
        parts.append(_quote(name))
    backend = node.get("backendDOMNodeId")
    if backend is not None and role not in ("RootWebArea", "WebArea"):
        ref = f"e{len(refs) + 1}"
        refs[ref] = int(backend)
        parts.append(f"[ref={ref}]")
    props = {p.get("name"): p.get("value", {}).get("value") for p in node.get("properties", [])}
    for key in STATE_PROPERTIES:
        value = props.get(key)
        if value is None or value is False or value == "false":
            continue
        parts.append(f"[{key}]" if value is True or value == "true" else f"[{key}={value}]")
    value = _value(node, "value")
    if value not in (None, ""):
        parts.append(f"value={_quote(str(value))}")
    if include_urls and props.get("url"):
        parts.append(f"url={props['url']}")
    return " ".join(parts)


def _quote(text: str) -> str:
    text = text if len(text) <= 200 else text[:199] + "…"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'
