"""ast_grep outline: the bundled rules for each language, views, item kinds, filters and limits."""

from __future__ import annotations

import json

import pytest
from search_fixture import make_tree

from fermix_cli.core.errors import ToolError
from tests.conftest import Env, unreadable

SOURCES = {
    "lib.rs": (
        "use std::io::{self, Read};\n"
        "pub struct Config {\n    pub path: PathBuf,\n    count: usize,\n}\n"
        "enum Color { Red, Green(u8) }\n"
        "pub trait Shape { fn area(&self) -> f64; }\n"
        "impl Shape for Config {\n    fn area(&self) -> f64 { 1.0 }\n    pub fn new() -> Self { todo!() }\n}\n"
        "pub(crate) fn run(x: i32) -> i32 { x }\n"
        "pub type Alias = Vec<u8>;\n"
        "const MAX: usize = 3;\n"
        "mod inner { pub fn f() {} }\n"
        "macro_rules! mac { () => {} }\n"
    ),
    "app.ts": (
        'import { a } from "./mod";\n'
        "export interface Shape { area(): number; name: string; }\n"
        "export class Point implements Shape {\n"
        "  private x: number = 0;\n  y = 1;\n  constructor(x: number) { this.x = x; }\n"
        "  area(): number { return 0; }\n  protected helper() {}\n}\n"
        "type Alias = string;\n"
        "enum Color { Red, Green = 2 }\n"
        "export const MAX = 3;\n"
        "let counter = 0;\n"
        "export function run(x: number): number { return x; }\n"
        "const arrow = (a: number) => a * 2;\n"
        "namespace NS { export const z = 1; }\n"
        "export { a as alpha };\n"
    ),
    "view.tsx": (
        'import React from "react";\n'
        "export function Button(props: Props) { return <button>{props.label}</button>; }\n"
        "export default class Panel extends React.Component { render() { return <div />; } }\n"
    ),
    "web.js": (
        'const fs = require("fs");\n'
        'import y from "y";\n'
        "export class A { #p = 1; q = 2; m() {} }\n"
        "function f() {}\n"
        "var v = 1;\n"
    ),
    "mod.py": (
        "import os, sys\n"
        "from x.y import z\n"
        "MAX = 3\n"
        "_private = 1\n"
        "def run(a, b=1) -> int:\n    return a\n"
        "@dec\nclass Point(Base):\n"
        "    x: int = 0\n    _hidden = 1\n"
        "    def __init__(self, x):\n        self.x = x\n"
        "    @property\n    def area(self):\n        return 0\n"
        "    def _priv(self):\n        pass\n"
        "async def go():\n    pass\n"
    ),
    "main.go": (
        "package main\n"
        'import (\n\t"fmt"\n\tstr "strings"\n)\n'
        "type Config struct {\n\tPath string\n\tcount int\n}\n"
        "type Shape interface {\n\tArea() float64\n}\n"
        "type ID = int\n"
        "const Max = 3\n"
        "var g = 1\n"
        "func Run(x int) int { return x }\n"
        "func (c *Config) load() error { return nil }\n"
    ),
    "Point.kt": (
        "package demo\n"
        "import kotlin.math.max\n"
        "class Point(val x: Int, private val y: Int) : Shape {\n"
        '    val name: String = "p"\n    private var secret = 1\n'
        "    constructor() : this(0, 0)\n    fun area(): Double = 0.0\n}\n"
        "interface Shape { fun area(): Double }\n"
        "enum class Color { RED, GREEN }\n"
        "internal fun run(x: Int): Int = x\n"
        "const val K = 1\n"
        "typealias Alias = List<Int>\n"
    ),
    "Point.java": (
        "package demo;\n"
        "import java.util.List;\n"
        "public class Point implements Shape {\n"
        "    private int x;\n    public int y, z = 2;\n"
        "    public Point(int x) { this.x = x; }\n"
        "    public double area() { return 0; }\n    private void helper() {}\n}\n"
        "interface Shape { double area(); int K = 1; }\n"
        "enum Color { RED, GREEN }\n"
    ),
    "Config.swift": (
        "import Foundation\n"
        "public struct Config {\n    public let path: String\n    var count = 0\n"
        "    init(path: String) { self.path = path }\n    public func load() -> Bool { return true }\n}\n"
        "protocol Shape { func area() -> Double }\n"
        "enum Color { case red, green }\n"
        "extension Config { func extra() {} }\n"
        "public func run(x: Int) -> Int { x }\n"
        "let MAX = 3\n"
        "typealias Alias = [Int]\n"
    ),
}

# (type, name, exported, [(member type, member name, public), ...] or None when it has no members)
EXPECTED = {
    "lib.rs": [
        ("struct", "Config", True, [("field", "path", True), ("field", "count", False)]),
        ("enum", "Color", False, [("enumMember", "Red", True), ("enumMember", "Green", True)]),
        ("trait", "Shape", True, [("method", "area", True)]),
        ("impl", "Config", False, [("method", "area", False), ("method", "new", True)]),
        ("function", "run", False, None),
        ("typeAlias", "Alias", True, None),
        ("constant", "MAX", False, None),
        ("module", "inner", False, [("function", "f", True)]),
        ("macro", "mac", False, None),
    ],
    "app.ts": [
        ("interface", "Shape", True, [("method", "area", True), ("property", "name", True)]),
        (
            "class",
            "Point",
            True,
            [
                ("property", "x", False),
                ("property", "y", True),
                ("constructor", "constructor", True),
                ("method", "area", True),
                ("method", "helper", False),
            ],
        ),
        ("typeAlias", "Alias", False, None),
        ("enum", "Color", False, [("enumMember", "Red", True), ("enumMember", "Green", True)]),
        ("constant", "MAX", True, None),
        ("variable", "counter", False, None),
        ("function", "run", True, None),
        ("function", "arrow", False, None),
        ("module", "NS", False, []),
    ],
    "view.tsx": [
        ("function", "Button", True, None),
        ("class", "Panel", True, [("method", "render", True)]),
    ],
    "web.js": [
        ("class", "A", True, [("property", "#p", False), ("property", "q", True), ("method", "m", True)]),
        ("function", "f", False, None),
        ("variable", "v", False, None),
    ],
    "mod.py": [
        ("constant", "MAX", True, None),
        ("variable", "_private", False, None),
        ("function", "run", True, None),
        (
            "class",
            "Point",
            True,
            [
                ("field", "x", True),
                ("field", "_hidden", False),
                ("constructor", "__init__", True),
                ("property", "area", True),
                ("method", "_priv", False),
            ],
        ),
        ("function", "go", True, None),
    ],
    "main.go": [
        ("struct", "Config", True, [("field", "Path", True), ("field", "count", False)]),
        ("interface", "Shape", True, [("method", "Area", True)]),
        ("typeAlias", "ID", True, None),
        ("constant", "Max", True, None),
        ("variable", "g", False, None),
        ("function", "Run", True, None),
        ("method", "load", False, None),
    ],
    "Point.kt": [
        (
            "class",
            "Point",
            True,
            [
                ("property", "x", True),
                ("property", "y", False),
                ("property", "name", True),
                ("property", "secret", False),
                ("constructor", "constructor", True),
                ("method", "area", True),
            ],
        ),
        ("interface", "Shape", True, [("method", "area", True)]),
        ("enum", "Color", True, [("enumMember", "RED", True), ("enumMember", "GREEN", True)]),
        ("function", "run", False, None),
        ("constant", "K", True, None),
        ("typeAlias", "Alias", True, None),
    ],
    "Point.java": [
        (
            "class",
            "Point",
            True,
            [
                ("field", "x", False),
                ("field", "y", True),
                ("field", "z", True),
                ("constructor", "Point", True),
                ("method", "area", True),
                ("method", "helper", False),
            ],
        ),
        ("interface", "Shape", False, [("method", "area", True), ("constant", "K", True)]),
        ("enum", "Color", False, [("enumMember", "RED", True), ("enumMember", "GREEN", True)]),
    ],
    "Config.swift": [
        (
            "struct",
            "Config",
            True,
            [
                ("property", "path", True),
                ("property", "count", False),
                ("constructor", "init", False),
                ("method", "load", True),
            ],
        ),
        ("protocol", "Shape", False, [("method", "area", False)]),
        ("enum", "Color", False, [("enumMember", "red", True), ("enumMember", "green", True)]),
        ("extension", "Config", False, [("method", "extra", False)]),
        ("function", "run", True, None),
        ("constant", "MAX", False, None),
        ("typeAlias", "Alias", False, None),
    ],
}

LANGUAGE = {
    "lib.rs": "rust",
    "app.ts": "typescript",
    "view.tsx": "tsx",
    "web.js": "javascript",
    "mod.py": "python",
    "main.go": "go",
    "Point.kt": "kotlin",
    "Point.java": "java",
    "Config.swift": "swift",
}


def summary(result: dict) -> list:
    out = []
    for line in result["symbols"]:
        it = line["item"]
        members = it.get("members")
        out.append(
            (
                it["type"],
                it["name"],
                it["exported"],
                None if members is None else [(m["type"], m["name"], m["exported"]) for m in members],
            )
        )
    return out


@pytest.fixture
def src(world: Env) -> Env:
    make_tree(world.project, {f"src/{k}": v for k, v in SOURCES.items()})
    return world


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_outline_structure_per_language(src: Env, invoke, name: str) -> None:
    r = invoke("ast_grep", {"operation": "outline", "path": f"src/{name}"})
    assert summary(r) == EXPECTED[name]
    assert {line["language"] for line in r["symbols"]} == {LANGUAGE[name]}
    assert r["output"] == "\n".join(json.dumps(x, separators=(",", ":")) for x in r["symbols"])
    assert r["partial"] is False and r["truncated"] is False and r["files_skipped"] == 0


def test_outline_golden_json_line(world: Env, invoke) -> None:
    make_tree(
        world.project, {"src/lib.rs": "pub struct Config {\n    pub path: PathBuf,\n    count: usize,\n}\n"}
    )
    r = invoke("ast_grep", {"operation": "outline", "path": "src", "language": "rust", "view": "expanded"})
    assert r["output"] == (
        '{"path":"src/lib.rs","language":"rust","item":{"name":"Config","type":"struct",'
        '"signature":"pub struct Config","exported":true,"imported":false,'
        '"range":{"start":{"line":1,"column":1},"end":{"line":4,"column":2}},"members":['
        '{"name":"path","type":"field","signature":"pub path: PathBuf","exported":true,'
        '"range":{"start":{"line":2,"column":5},"end":{"line":2,"column":22}}},'
        '{"name":"count","type":"field","signature":"count: usize","exported":false,'
        '"range":{"start":{"line":3,"column":5},"end":{"line":3,"column":17}}}]}}'
    )


def test_views(src: Env, invoke) -> None:
    def item(view: str) -> dict:
        r = invoke(
            "ast_grep", {"operation": "outline", "path": "src/mod.py", "view": view, "name": "^Point$"}
        )
        return r["symbols"][0]["item"]

    names = item("names")
    assert set(names) == {"name", "type", "exported", "imported", "range"}
    sigs = item("signatures")
    assert sigs["signature"] == "class Point(Base)" and "members" not in sigs
    digest = item("digest")
    assert digest["signature"] == "class Point(Base)"
    assert all(set(m) == {"name", "type", "exported", "range"} for m in digest["members"])
    expanded = item("expanded")
    assert [m["signature"] for m in expanded["members"]][:3] == [
        "x: int = 0",
        "_hidden = 1",
        "def __init__(self, x)",
    ]


def test_items(src: Env, invoke) -> None:
    def names(items: str, path: str = "src/app.ts") -> list[tuple[str, str]]:
        r = invoke("ast_grep", {"operation": "outline", "path": path, "items": items, "view": "names"})
        return [(x["item"]["type"], x["item"]["name"]) for x in r["symbols"]]

    assert names("imports") == [("import", "./mod")]
    assert names("exports") == [
        ("interface", "Shape"),
        ("class", "Point"),
        ("constant", "MAX"),
        ("function", "run"),
        ("export", "{ a as alpha }"),
    ]
    everything = names("all")
    assert everything[0] == ("import", "./mod") and everything[-1] == ("export", "{ a as alpha }")
    assert len(everything) == len(EXPECTED["app.ts"]) + 2
    assert names("imports", "src/web.js") == [("import", "fs"), ("import", "y")]
    assert names("imports", "src/main.go") == [("import", "fmt"), ("import", "strings")]
    assert names("imports", "src/mod.py") == [("import", "os, sys"), ("import", "x.y")]
    r = invoke("ast_grep", {"operation": "outline", "path": "src/lib.rs", "items": "imports"})
    assert r["symbols"][0]["item"]["imported"] is True and r["symbols"][0]["item"]["exported"] is False


def test_name_and_symbol_type_filters(src: Env, invoke) -> None:
    r = invoke(
        "ast_grep",
        {"operation": "outline", "path": "src", "symbol_type": "struct, interface", "view": "names"},
    )
    got = [(x["path"], x["item"]["name"]) for x in r["symbols"]]
    assert got == [
        ("src/Config.swift", "Config"),
        ("src/Point.java", "Shape"),
        ("src/Point.kt", "Shape"),
        ("src/app.ts", "Shape"),
        ("src/lib.rs", "Config"),
        ("src/main.go", "Config"),
        ("src/main.go", "Shape"),
    ]
    # `name` is a regex over the name, the signature and the first source line.
    r = invoke("ast_grep", {"operation": "outline", "path": "src/lib.rs", "name": r"-> i32", "view": "names"})
    assert [x["item"]["name"] for x in r["symbols"]] == ["run"]
    r = invoke("ast_grep", {"operation": "outline", "path": "src/lib.rs", "name": "^(Config|MAX)$"})
    assert [x["item"]["type"] for x in r["symbols"]] == ["struct", "impl", "constant"]
    for args, code in (
        ({"symbol_type": "klass"}, "invalid_symbol_type"),
        ({"symbol_type": " , "}, "invalid_symbol_type"),
        ({"name": "(unclosed"}, "invalid_name"),
        ({"name": "x" * 513}, "invalid_input"),
        ({"symbol_type": "function," * 60}, "invalid_input"),
    ):
        with pytest.raises(ToolError) as e:
            invoke("ast_grep", {"operation": "outline", "path": "src/lib.rs", **args})
        assert e.value.code == code, args


def test_pub_members(src: Env, invoke) -> None:
    r = invoke(
        "ast_grep", {"operation": "outline", "path": "src/Point.java", "pub_members": True, "name": "^Point$"}
    )
    assert [m["name"] for m in r["symbols"][0]["item"]["members"]] == ["y", "z", "Point", "area"]
    r = invoke(
        "ast_grep", {"operation": "outline", "path": "src/mod.py", "pub_members": False, "name": "^Point$"}
    )
    assert len(r["symbols"][0]["item"]["members"]) == 5


def test_limit_counts_top_level_entries(src: Env, invoke) -> None:
    r = invoke("ast_grep", {"operation": "outline", "path": "src/lib.rs", "limit": 2})
    assert r["symbols_returned"] == 2 and r["truncated"] is True
    assert summary(r) == EXPECTED["lib.rs"][:2]  # members come with their parents
    lines = r["output"].split("\n\n")[0].splitlines()
    assert len(lines) == 2 and all(json.loads(x)["path"] == "src/lib.rs" for x in lines)


def test_output_cap_keeps_whole_entries(world: Env, invoke) -> None:
    body = "".join(f"    def method_{i}_{'x' * 40}(self): pass\n" for i in range(200))
    make_tree(world.project, {f"m{j}.py": f"class Big{j}:\n{body}" for j in range(3)})
    r = invoke("ast_grep", {"operation": "outline", "limit": 500, "view": "expanded"})
    assert r["truncated"] is True and len(r["output"].encode()) <= 65_536
    assert 0 < r["symbols_returned"] < 3
    for line in r["output"].split("\n\n")[0].splitlines():
        assert len(json.loads(line)["item"]["members"]) == 200
    # An entry that alone is over the cap is not cut: nothing is returned, and truncated says so.
    make_tree(world.project, {"m0.py": "class Huge:\n" + body * 3})
    r = invoke("ast_grep", {"operation": "outline", "path": "m0.py", "view": "expanded"})
    assert r["symbols_returned"] == 0 and r["truncated"] is True


def test_outline_skips_other_languages_and_refuses_them_explicitly(world: Env, invoke) -> None:
    make_tree(world.project, {"a.rb": "class A; end\n", "b.py": "def f(): pass\n"})
    r = invoke("ast_grep", {"operation": "outline"})
    assert [x["item"]["name"] for x in r["symbols"]] == ["f"] and r["files_unsupported"] == 1
    for args in ({"path": "a.rb"}, {"language": "ruby"}):
        with pytest.raises(ToolError) as e:
            invoke("ast_grep", {"operation": "outline", **args})
        assert e.value.code == "invalid_language"


def test_empty_outline_succeeds(world: Env, invoke) -> None:
    make_tree(world.project, {"a.py": "# nothing here\n"})
    r = invoke("ast_grep", {"operation": "outline"})
    assert r["output"] == "[no symbols]" and r["symbols_returned"] == 0 and r["partial"] is False


def test_outline_never_loads_project_rules(world: Env, invoke) -> None:
    make_tree(
        world.project,
        {
            "sgconfig.yml": "ruleDirs: [rules]\ncustomLanguages: {}\n",
            "rules/r.yml": "id: x\n",
            "a.py": "X = 1\n",
        },
    )
    r = invoke("ast_grep", {"operation": "outline"})
    assert summary(r) == [("constant", "X", True, None)]


def test_outline_reports_a_directory_it_could_not_list(world: Env, invoke, monkeypatch, tmp_path) -> None:
    make_tree(world.project, {"a.py": "def f():\n    pass\n", "locked/b.py": "def g():\n    pass\n"})
    with unreadable(monkeypatch, "rg", tmp_path, world.project / "locked"):
        r = invoke("ast_grep", {"operation": "outline", "language": "python"})
    assert '"name":"f"' in r["output"] and '"name":"g"' not in r["output"]
    assert r["partial"] is True and r["skip_reasons"] == {"unreadable": 1}
    assert r["skipped_files"] == [{"path": "locked", "reason": "unreadable", "kind": "directory"}]
    assert r["files_skipped"] == 0 and r["directories_skipped"] == 1 and r["complete"] is False
    assert (
        "[incomplete: 1 path left out (unreadable); they could not be read; fix their permissions "
        in r["output"]
    )
    assert "(e.g. locked/)]" in r["output"]


def test_names_that_are_not_utf8_are_skipped_and_counted(world: Env, invoke) -> None:
    import os

    with open(os.path.join(os.fsencode(world.project), b"bad\xff.py"), "wb") as f:
        f.write(b"def f():\n    pass\n")
    make_tree(world.project, {"ok.py": "def g():\n    pass\n"})
    r = invoke("ast_grep", {"operation": "outline"})
    assert [(s["path"], s["item"]["name"]) for s in r["symbols"]] == [("ok.py", "g")]
    assert r["skip_reasons"] == {"invalid_utf8_name": 1} and r["partial"] is True
    assert r["skipped_files"] == [{"path": "bad\\xff.py", "reason": "invalid_utf8_name"}]
    assert "[incomplete: 1 file left out (invalid_utf8_name);" in r["output"]


def test_name_filter_is_a_rust_regex_in_linear_time(world: Env, invoke) -> None:
    import time

    make_tree(world.project, {"r.py": "def " + "a" * 40 + "(): pass\n", "u.py": "def größe(): pass\n"})
    started = time.monotonic()
    r = invoke("ast_grep", {"operation": "outline", "path": "r.py", "name": "^(a|aa)+$x"})
    assert r["symbols_returned"] == 0 and time.monotonic() - started < 5
    r = invoke("ast_grep", {"operation": "outline", "path": "u.py", "name": r"^\w+$", "view": "names"})
    assert [s["item"]["name"] for s in r["symbols"]] == ["größe"]  # \w is Unicode-aware
    r = invoke("ast_grep", {"operation": "outline", "path": "u.py", "name": r"\p{Greek}|(?i)GRÖSSE|gr\u00f6"})
    assert r["symbols_returned"] == 1
    e = None
    try:
        invoke("ast_grep", {"operation": "outline", "path": "u.py", "name": "a(?=b)"})  # no look-around
    except ToolError as x:
        e = x
    assert e is not None and e.code == "invalid_name"


def test_an_outline_of_a_fifo_says_it_is_no_regular_file(world: Env, invoke) -> None:
    """A FIFO is left out as `special` (never opened for reading: it would block), not as `unreadable`
    with advice to fix its permissions."""
    import os

    os.mkfifo(world.project / "pipe.py")
    r = invoke("ast_grep", {"operation": "outline", "path": "pipe.py"})
    assert (r["complete"], r["skip_reasons"]) == (False, {"special": 1})
    assert "FIFOs, sockets or devices" in r["output"] and "permissions" not in r["output"]
