"""The bundled outline rules: which syntax nodes are symbols, and how each one is named, typed, and
exported, for Rust, TypeScript/TSX, JavaScript, Python, Go, Kotlin, Java and Swift.

Each language has a function from one top-level node to the symbols it declares. A symbol's
members (fields, methods, variants, ...) are produced on demand, since the `names` and
`signatures` views never show them. These rules are fixed: no project rule file is ever loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ....core.records import Record

Node = Any  # ast_grep_py.SgNode

SYMBOL_TYPES = (
    "function", "method", "class", "struct", "enum", "enumMember", "interface", "trait", "impl",
    "typeAlias", "constant", "variable", "module", "field", "property", "constructor", "macro",
    "protocol", "extension", "object", "import", "export",
)  # fmt: skip

MAX_SIGNATURE_CHARS = 300


class Symbol(Record):
    node: Node  # what the range covers
    name: str
    type: str
    exported: bool
    imported: bool = False
    head: Node | None = None  # where the signature text starts (default: node)
    body: Node | None = None  # the signature stops where this starts
    members_of: Callable[[], list[Symbol]] | None = None

    def signature(self) -> str:
        return signature(self.head or self.node, self.body)

    def members(self) -> list[Symbol]:
        return self.members_of() if self.members_of is not None else []


def signature(node: Node, body: Node | None) -> str:
    """The declaration's text up to its body, on one line, without a trailing `{`, `:` or `;`."""
    text = node.text()
    if body is not None:
        cut = body.range().start.index - node.range().start.index
        if 0 < cut <= len(text):
            text = text[:cut]
    text = " ".join(text.split()).rstrip(" {:;,=")
    if len(text) > MAX_SIGNATURE_CHARS:
        text = text[:MAX_SIGNATURE_CHARS] + "…"
    return text


def named(node: Node) -> list[Node]:
    return [c for c in node.children() if c.is_named()]


def child_of(node: Node, *kinds: str) -> Node | None:
    for c in node.children():
        if c.kind() in kinds:
            return c
    return None


def text_of(node: Node | None) -> str:
    return node.text() if node is not None else ""


def field_text(node: Node, name: str) -> str:
    return text_of(node.field(name))


def unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'`" else s


def modifier_words(node: Node) -> set[str]:
    words: set[str] = set()
    for c in node.children():
        if c.kind() in ("modifiers", "visibility_modifier", "accessibility_modifier"):
            words |= set(c.text().replace("(", " ").replace(")", " ").split())
    return words


def has_token(node: Node, token: str) -> bool:
    return any(not c.is_named() and c.kind() == token for c in node.children())


# ----- Rust --------------------------------------------------------------------------------------

RUST_DECLS = {
    "function_item": "function", "function_signature_item": "function", "struct_item": "struct",
    "union_item": "struct", "enum_item": "enum", "trait_item": "trait", "impl_item": "impl",
    "type_item": "typeAlias", "associated_type": "typeAlias", "const_item": "constant",
    "static_item": "variable", "mod_item": "module", "macro_definition": "macro",
}  # fmt: skip


def _rust_pub(node: Node) -> bool:
    return text_of(child_of(node, "visibility_modifier")) == "pub"


def rust(node: Node, in_body: str | None = None) -> Iterator[Symbol]:
    kind = node.kind()
    if kind in ("use_declaration", "extern_crate_declaration"):
        name = field_text(node, "argument") or field_text(node, "name")
        yield Symbol(node, name, "import", False, imported=True)
        return
    if kind not in RUST_DECLS:
        return
    type_ = RUST_DECLS[kind]
    if in_body in ("impl", "trait") and type_ == "function":
        type_ = "method"
    name = field_text(node, "type") if kind == "impl_item" else field_text(node, "name")
    body = node.field("body")
    exported = in_body == "trait" or in_body == "enum" or _rust_pub(node)
    members = None
    if body is not None and kind in (
        "struct_item",
        "union_item",
        "enum_item",
        "trait_item",
        "impl_item",
        "mod_item",
    ):
        members = lambda b=body, t=type_: _rust_members(b, t)  # noqa: E731
    yield Symbol(node, name, type_, exported, body=body, members_of=members)


def _rust_members(body: Node, parent: str) -> list[Symbol]:
    out: list[Symbol] = []
    for c in named(body):
        k = c.kind()
        if k == "field_declaration":
            out.append(Symbol(c, field_text(c, "name"), "field", _rust_pub(c)))
        elif k == "enum_variant":
            out.append(Symbol(c, field_text(c, "name"), "enumMember", True))
        else:
            out += [s.replace(members_of=None) for s in rust(c, parent)]
    return out


# ----- TypeScript / TSX / JavaScript ---------------------------------------------------------------

TS_DECLS = {
    "function_declaration": "function", "generator_function_declaration": "function",
    "function_signature": "function", "class_declaration": "class", "abstract_class_declaration": "class",
    "class": "class", "interface_declaration": "interface", "type_alias_declaration": "typeAlias",
    "enum_declaration": "enum", "internal_module": "module", "module": "module",
}  # fmt: skip
TS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


def ts(node: Node, exported: bool = False, outer: Node | None = None) -> Iterator[Symbol]:
    kind = node.kind()
    span = outer or node
    if kind == "import_statement":
        yield Symbol(node, unquote(field_text(node, "source")), "import", False, imported=True)
    elif kind == "export_statement":
        decl = node.field("declaration")
        value = node.field("value")
        if decl is not None:
            yield from ts(decl, True, node)
        elif value is not None and value.kind() in TS_DECLS:
            yield from ts(value, True, node)
        else:
            source = node.field("source")
            clause = child_of(node, "export_clause")
            name = (
                "default"
                if has_token(node, "default")
                else text_of(clause) or unquote(text_of(source)) or "*"
            )
            yield Symbol(node, " ".join(name.split()), "export", True)
    elif kind in ("lexical_declaration", "variable_declaration"):
        const = node.children()[0].text() == "const" if node.children() else False
        for d in named(node):
            if d.kind() != "variable_declarator":
                continue
            value = d.field("value")
            if (
                value is not None
                and value.kind() == "call_expression"
                and field_text(value, "function") == "require"
            ):
                source = unquote(text_of(child_of(value.field("arguments"), "string")))
                yield Symbol(span if len(named(node)) == 1 else d, source, "import", False, imported=True)
                continue
            is_fn = value is not None and value.kind() in TS_FUNCTION_VALUES
            type_ = "function" if is_fn else ("constant" if const else "variable")
            body = value.field("body") if is_fn else None
            single = len(named(node)) == 1
            yield Symbol(
                span if single else d,
                field_text(d, "name"),
                type_,
                exported,
                head=span if single else d,
                body=body,
            )
    elif kind in ("expression_statement", "ambient_declaration"):
        for inner in named(node):
            if inner.kind() in TS_DECLS:
                yield from ts(inner, exported, node)
    elif kind in TS_DECLS:
        name = unquote(field_text(node, "name")) or "default"
        body = node.field("body")
        members = None
        if body is not None and kind not in (
            "function_declaration",
            "generator_function_declaration",
            "function_signature",
        ):
            members = lambda b=body: _ts_members(b)  # noqa: E731
        yield Symbol(span, name, TS_DECLS[kind], exported, head=span, body=body, members_of=members)


def _ts_public(node: Node, name: str) -> bool:
    words = modifier_words(node)
    return not name.startswith("#") and not ({"private", "protected"} & words)


def _ts_members(body: Node) -> list[Symbol]:
    out: list[Symbol] = []
    for c in named(body):
        k = c.kind()
        name = field_text(c, "name") or field_text(c, "property")
        if k == "method_definition":
            type_ = "constructor" if name == "constructor" else "method"
            out.append(Symbol(c, name, type_, _ts_public(c, name), body=c.field("body")))
        elif k in ("method_signature", "abstract_method_signature"):
            out.append(Symbol(c, name, "method", _ts_public(c, name)))
        elif k in ("public_field_definition", "field_definition", "property_signature"):
            out.append(Symbol(c, name, "property", _ts_public(c, name)))
        elif k == "property_identifier":
            out.append(Symbol(c, c.text(), "enumMember", True))
        elif k == "enum_assignment":
            out.append(Symbol(c, name, "enumMember", True))
    return out


# ----- Python ------------------------------------------------------------------------------------


def _py_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__") and len(name) > 4)


def python(node: Node, outer: Node | None = None, in_class: bool = False) -> Iterator[Symbol]:
    kind = node.kind()
    span = outer or node
    if kind == "import_statement":
        yield Symbol(node, ", ".join(c.text() for c in named(node)), "import", False, imported=True)
    elif kind in ("import_from_statement", "future_import_statement"):
        module = field_text(node, "module_name") or "__future__"
        yield Symbol(node, module, "import", False, imported=True)
    elif kind == "decorated_definition":
        inner = node.field("definition")
        if inner is not None:
            yield from python(inner, node, in_class)
    elif kind in ("function_definition", "class_definition"):
        name = field_text(node, "name")
        body = node.field("body")
        if kind == "class_definition":
            type_ = "class"
            members = (lambda b=body: _py_members(b)) if body is not None else None
        else:
            type_ = "method" if in_class else "function"
            if in_class and name == "__init__":
                type_ = "constructor"
            if in_class and outer is not None and any(d.text() == "@property" for d in named(outer)):
                type_ = "property"
            members = None
        exported = _py_public(name) if in_class else not name.startswith("_")
        yield Symbol(span, name, type_, exported, head=node, body=body, members_of=members)
    elif kind == "expression_statement":
        assign = child_of(node, "assignment")
        left = assign.field("left") if assign is not None else None
        if left is not None and left.kind() == "identifier":
            name = left.text()
            if in_class:
                yield Symbol(node, name, "field", _py_public(name))
            else:
                const = name.isupper() and any(ch.isalpha() for ch in name)
                yield Symbol(node, name, "constant" if const else "variable", not name.startswith("_"))
    elif kind == "type_alias_statement":
        name = field_text(node, "left")
        yield Symbol(node, name, "typeAlias", not name.startswith("_"))


def _py_members(body: Node) -> list[Symbol]:
    return [s for c in named(body) for s in python(c, in_class=True) if s.type != "import"]


# ----- Go ----------------------------------------------------------------------------------------


def _go_public(name: str) -> bool:
    return bool(name) and name[0].isupper()


def go(node: Node) -> Iterator[Symbol]:
    kind = node.kind()
    if kind == "import_declaration":
        specs = [c for c in named(node) if c.kind() == "import_spec"]
        lists = [c for c in named(node) if c.kind() == "import_spec_list"]
        for lst in lists:
            specs += [c for c in named(lst) if c.kind() == "import_spec"]
        for spec in specs:
            yield Symbol(spec, unquote(field_text(spec, "path")), "import", False, imported=True)
    elif kind in ("function_declaration", "method_declaration"):
        name = field_text(node, "name")
        type_ = "function" if kind == "function_declaration" else "method"
        yield Symbol(node, name, type_, _go_public(name), body=node.field("body"))
    elif kind == "type_declaration":
        specs = [c for c in named(node) if c.kind() in ("type_spec", "type_alias")]
        for spec in specs:
            name = field_text(spec, "name")
            t = spec.field("type")
            tk = t.kind() if t is not None else ""
            type_ = {"struct_type": "struct", "interface_type": "interface"}.get(tk, "typeAlias")
            span = node if len(specs) == 1 else spec
            body = None
            members = None
            if tk == "struct_type":
                body = child_of(t, "field_declaration_list")
                members = lambda b=body: _go_fields(b)  # noqa: E731
            elif tk == "interface_type":
                body = child_of(t, "{")
                members = lambda b=t: _go_methods(b)  # noqa: E731
            yield Symbol(span, name, type_, _go_public(name), body=body, members_of=members)
    elif kind in ("const_declaration", "var_declaration"):
        specs = [c for c in named(node) if c.kind() in ("const_spec", "var_spec")]
        type_ = "constant" if kind == "const_declaration" else "variable"
        for spec in specs:
            span = node if len(specs) == 1 else spec
            for ident in named(spec):
                if ident.kind() == "identifier":
                    yield Symbol(span, ident.text(), type_, _go_public(ident.text()))


def _go_fields(body: Node | None) -> list[Symbol]:
    out: list[Symbol] = []
    for c in named(body) if body is not None else []:
        if c.kind() != "field_declaration":
            continue
        names = [n.text() for n in named(c) if n.kind() == "field_identifier"]
        if not names:  # an embedded type is named by its type
            names = [field_text(c, "type").lstrip("*")]
        out += [Symbol(c, n, "field", _go_public(n)) for n in names]
    return out


def _go_methods(iface: Node) -> list[Symbol]:
    return [
        Symbol(c, field_text(c, "name"), "method", _go_public(field_text(c, "name")))
        for c in named(iface)
        if c.kind() == "method_elem"
    ]


# ----- Kotlin ------------------------------------------------------------------------------------

_KOTLIN_HIDDEN = frozenset({"private", "protected", "internal"})


def _kt_public(node: Node) -> bool:
    return not (modifier_words(node) & _KOTLIN_HIDDEN)


def _kt_name(node: Node) -> str:
    for c in named(node):
        if c.kind() in ("type_identifier", "simple_identifier"):
            return c.text()
        if c.kind() == "variable_declaration":
            return text_of(child_of(c, "simple_identifier"))
    return ""


def kotlin(node: Node, in_class: bool = False) -> Iterator[Symbol]:
    kind = node.kind()
    if kind == "import_list":
        for h in named(node):
            yield from kotlin(h)
    elif kind == "import_header":
        yield Symbol(node, text_of(child_of(node, "identifier")), "import", False, imported=True)
    elif kind in ("class_declaration", "object_declaration", "companion_object"):
        if kind == "class_declaration":
            type_ = (
                "interface"
                if has_token(node, "interface")
                else "enum"
                if has_token(node, "enum")
                else "class"
            )
        else:
            type_ = "object"
        name = _kt_name(node) or ("Companion" if kind == "companion_object" else "")
        body = child_of(node, "class_body", "enum_class_body")
        ctor = child_of(node, "primary_constructor")
        yield Symbol(
            node, name, type_, _kt_public(node), body=body, members_of=lambda: _kt_members(body, ctor)
        )
    elif kind == "infix_expression":
        # `object X { ... }` at the top of a file parses as an infix expression in this grammar.
        kids = named(node)
        if len(kids) >= 2 and kids[0].kind() == "object_literal" and kids[1].kind() == "simple_identifier":
            yield Symbol(node, kids[1].text(), "object", True, body=kids[2] if len(kids) > 2 else None)
    elif kind == "function_declaration":
        type_ = "method" if in_class else "function"
        yield Symbol(node, _kt_name(node), type_, _kt_public(node), body=child_of(node, "function_body"))
    elif kind == "property_declaration":
        const = "const" in modifier_words(node)
        type_ = "property" if in_class else ("constant" if const else "variable")
        yield Symbol(node, _kt_name(node), type_, _kt_public(node))
    elif kind == "secondary_constructor":
        yield Symbol(node, "constructor", "constructor", _kt_public(node), body=child_of(node, "statements"))
    elif kind == "type_alias":
        yield Symbol(node, _kt_name(node), "typeAlias", _kt_public(node))
    elif kind == "enum_entry":
        yield Symbol(node, _kt_name(node), "enumMember", True)


def _kt_members(body: Node | None, ctor: Node | None) -> list[Symbol]:
    out: list[Symbol] = []
    for p in named(ctor) if ctor is not None else []:
        if p.kind() == "class_parameter" and child_of(p, "binding_pattern_kind") is not None:
            out.append(Symbol(p, _kt_name(p), "property", _kt_public(p)))
    for c in named(body) if body is not None else []:
        out += [s.replace(members_of=None) for s in kotlin(c, in_class=True)]
    return out


# ----- Java --------------------------------------------------------------------------------------

JAVA_TYPES = {
    "class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
    "record_declaration": "class", "annotation_type_declaration": "interface",
}  # fmt: skip


def java(node: Node, in_interface: bool = False) -> Iterator[Symbol]:
    kind = node.kind()
    public = in_interface or "public" in modifier_words(node)
    if kind == "import_declaration":
        name = " ".join(c.text() for c in named(node))
        yield Symbol(node, name.replace(" ", ""), "import", False, imported=True)
    elif kind in JAVA_TYPES:
        body = node.field("body")
        iface = kind in ("interface_declaration", "annotation_type_declaration")
        yield Symbol(
            node, field_text(node, "name"), JAVA_TYPES[kind], public, body=body,
            members_of=lambda: _java_members(body, iface),
        )  # fmt: skip
    elif kind in ("method_declaration", "annotation_type_element_declaration"):
        yield Symbol(node, field_text(node, "name"), "method", public, body=node.field("body"))
    elif kind in ("constructor_declaration", "compact_constructor_declaration"):
        yield Symbol(node, field_text(node, "name"), "constructor", public, body=node.field("body"))
    elif kind in ("field_declaration", "constant_declaration"):
        type_ = "constant" if kind == "constant_declaration" else "field"
        for d in named(node):
            if d.kind() == "variable_declarator":
                yield Symbol(node, field_text(d, "name"), type_, public)
    elif kind == "enum_constant":
        yield Symbol(node, field_text(node, "name"), "enumMember", True)


def _java_members(body: Node | None, iface: bool) -> list[Symbol]:
    out: list[Symbol] = []
    for c in named(body) if body is not None else []:
        kids = named(c) if c.kind() == "enum_body_declarations" else [c]
        for k in kids:
            out += [s.replace(members_of=None) for s in java(k, in_interface=iface)]
    return out


# ----- Swift -------------------------------------------------------------------------------------

SWIFT_KINDS = {
    "class": "class",
    "struct": "struct",
    "enum": "enum",
    "extension": "extension",
    "actor": "class",
}


def _swift_public(node: Node) -> bool:
    return bool(modifier_words(node) & {"public", "open"})


def swift(node: Node, in_type: bool = False) -> Iterator[Symbol]:
    kind = node.kind()
    if kind == "import_declaration":
        yield Symbol(node, text_of(child_of(node, "identifier")), "import", False, imported=True)
    elif kind in ("class_declaration", "protocol_declaration"):
        decl = field_text(node, "declaration_kind") if kind == "class_declaration" else "protocol"
        type_ = SWIFT_KINDS.get(decl, "protocol" if decl == "protocol" else "class")
        body = node.field("body")
        # A protocol's requirements are as visible as the protocol itself.
        every = _swift_public(node) if kind == "protocol_declaration" else None
        yield Symbol(node, field_text(node, "name"), type_, _swift_public(node), body=body,
                     members_of=lambda: _swift_members(body, every))  # fmt: skip
    elif kind in ("function_declaration", "protocol_function_declaration"):
        type_ = "method" if in_type else "function"
        yield Symbol(node, field_text(node, "name"), type_, _swift_public(node), body=node.field("body"))
    elif kind in ("property_declaration", "protocol_property_declaration"):
        pattern = child_of(node, "pattern")
        ident = child_of(pattern, "simple_identifier") if pattern is not None else None
        name = field_text(node, "name") or text_of(ident) or text_of(pattern)
        let = text_of(child_of(node, "value_binding_pattern")).startswith("let")
        type_ = "property" if in_type else ("constant" if let else "variable")
        yield Symbol(node, name, type_, _swift_public(node))
    elif kind == "init_declaration":
        yield Symbol(node, "init", "constructor", _swift_public(node), body=node.field("body"))
    elif kind == "typealias_declaration":
        yield Symbol(node, field_text(node, "name"), "typeAlias", _swift_public(node))
    elif kind == "enum_entry":
        for ident in named(node):
            if ident.kind() == "simple_identifier":
                yield Symbol(node, ident.text(), "enumMember", True)


def _swift_members(body: Node | None, every: bool | None = None) -> list[Symbol]:
    out: list[Symbol] = []
    for c in named(body) if body is not None else []:
        for s in swift(c, in_type=True):
            out.append(s.replace(members_of=None, exported=s.exported if every is None else every))
    return out


EXTRACTORS: dict[str, Callable[[Node], Iterator[Symbol]]] = {
    "rust": rust,
    "typescript": ts,
    "tsx": ts,
    "javascript": ts,
    "python": python,
    "go": go,
    "kotlin": kotlin,
    "java": java,
    "swift": swift,
}
