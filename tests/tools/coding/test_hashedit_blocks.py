"""Block resolution per grammar, and block ops through hash_edit."""

from __future__ import annotations

import pytest
from hashline_workspace import Workspace

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding import blocks
from fermix_cli.tools.coding.blocks import is_pure_closer, language_for, resolve_block
from fermix_cli.tools.coding.hashline import compute_tag

PY = '''import os

@cache
def load(key):
    """Doc."""
    path = os.path.join(
        "data", key)
    if path:
        return 1
    return 2


class Store:
    x = 1
'''

RS = """use std::io;

/// Docs.
#[derive(Debug)]
pub struct Config {
    path: String,
}

impl Config {
    pub fn load(&self) -> io::Result<()> {
        if self.path.is_empty() {
            return Ok(());
        }
        Ok(())
    }
}
"""

TS = """import { x } from "./x";

export interface Point {
  x: number;
  y: number;
}

export function dist(a: Point, b: Point): number {
  const dx = a.x - b.x;
  return Math.sqrt(dx * dx);
}

const handler = async (req: Request) => {
  await x(req);
};
"""

MD = "# Title\n\nintro\n\n## A\n\ntext a\n\n### A1\n\nx\n\n## B\n\nb\n"

CASES = [
    ("a.py", PY, 1, (1, 1)),
    ("a.py", PY, 2, None),  # blank line
    ("a.py", PY, 3, (3, 10)),  # anchoring on the decorator includes it
    ("a.py", PY, 4, (4, 10)),
    ("a.py", PY, 5, (5, 10)),  # a first body line resolves to the `block` node
    ("a.py", PY, 6, (6, 7)),  # a statement spanning two lines
    ("a.py", PY, 7, (7, 7)),  # a continuation whose first token is its own node
    ("a.py", PY, 8, (8, 9)),
    ("a.py", PY, 13, (13, 14)),
    ("a.py", PY, 99, None),  # out of range
    ("a.rs", RS, 3, (3, 3)),  # doc comments are separate nodes
    ("a.rs", RS, 4, (4, 4)),  # so are attributes
    ("a.rs", RS, 5, (5, 7)),
    ("a.rs", RS, 7, None),  # closer
    ("a.rs", RS, 9, (9, 16)),
    ("a.rs", RS, 10, (10, 15)),
    ("a.rs", RS, 11, (11, 13)),
    ("a.rs", RS, 13, None),
    ("a.ts", TS, 3, (3, 6)),
    ("a.ts", TS, 4, (4, 4)),
    ("a.ts", TS, 8, (8, 11)),
    ("a.ts", TS, 11, None),
    ("a.ts", TS, 13, (13, 15)),
    ("a.md", MD, 1, (1, 15)),  # a heading's section runs to the next heading of the same or higher level
    ("a.md", MD, 5, (5, 11)),  # trailing blank lines are not part of the block
    ("a.md", MD, 9, (9, 11)),
    ("a.md", MD, 13, (13, 15)),
    ("a.md", MD, 3, (3, 3)),
    ("a.unknown", "def f():\n    pass\n", 1, None),  # unknown language
    ("a.py", "def f(:\n    pass\n", 1, None),  # parse error (MISSING token)
    ("a.py", "def f(x):\n    return (1\n\ny = 2\n", 1, None),  # parse error (ERROR node)
]


@pytest.mark.parametrize(("path", "text", "line", "span"), CASES)
def test_resolve_block(path: str, text: str, line: int, span: tuple[int, int] | None) -> None:
    assert resolve_block(text, path, line) == span


def test_language_map() -> None:
    assert language_for("src/x.PY") == "python"
    assert language_for("a.tsx") == "tsx"
    assert language_for("Makefile") is None


def test_an_unsupported_language_does_not_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(blocks.LANGUAGES, ".toml", "toml")  # ast-grep-py lacks toml and panics
    assert resolve_block("[a]\nb = 1\n", "x.toml", 1) is None


@pytest.mark.parametrize(
    ("line", "closer"),
    [
        ("}", True),
        ("  });", True),
        ("],", True),
        ("</div>", True),
        ("", False),
        ("} else {", False),
        ("x)", False),
    ],
)
def test_pure_closer(line: str, closer: bool) -> None:
    assert is_pure_closer(line) is closer


def block_ws(ws: Workspace, path: str, text: str) -> str:
    ws.write(path, text)
    ws.read(path)
    return compute_tag(text)


def test_del_blk_on_rust(ws: Workspace) -> None:
    tag = block_ws(ws, "a.rs", RS)
    response = ws.edit(f"[a.rs#{tag}]\nDEL.BLK 11")
    assert ws.text("a.rs") == RS.replace(
        "        if self.path.is_empty() {\n            return Ok(());\n        }\n", ""
    )
    assert response.split("\n")[1] == "DEL.BLK 11 → resolved lines 11-13 (3 lines)"


def test_swap_blk_on_typescript(ws: Workspace) -> None:
    tag = block_ws(ws, "a.ts", TS)
    ws.edit(f"[a.ts#{tag}]\nSWAP.BLK 3:\n+export type Point = [number, number];")
    assert ws.text("a.ts").split("\n")[2:4] == ["export type Point = [number, number];", ""]


def test_ins_blk_post_on_python(ws: Workspace) -> None:
    tag = block_ws(ws, "a.py", PY)
    response = ws.edit(f"[a.py#{tag}]\nINS.BLK.POST 4:\n+\n+\n+def save(key):\n+    pass")
    lines = ws.text("a.py").split("\n")
    assert lines[9:14] == ["    return 2", "", "", "def save(key):", "    pass"]
    assert "INS.BLK.POST 4 → resolved lines 4-10 (7 lines); body lands after line 10" in response


def test_ins_blk_post_on_a_closer_is_downgraded(ws: Workspace) -> None:
    tag = block_ws(ws, "a.rs", RS)
    response = ws.edit(f"[a.rs#{tag}]\nINS.BLK.POST 7:\n+\n+struct Extra;")
    assert ws.text("a.rs").split("\n")[6:9] == ["}", "", "struct Extra;"]
    assert response.endswith(
        "Warnings:\nINS.BLK.POST 7: line 7 closes a block; inserted after line 7 (as INS.POST 7)."
    )


def test_ins_blk_post_without_a_block_is_downgraded(ws: Workspace) -> None:
    tag = block_ws(ws, "notes.txt", "a\nb\n")
    response = ws.edit(f"[notes.txt#{tag}]\nINS.BLK.POST 1:\n+x")
    assert ws.text("notes.txt") == "a\nx\nb\n"
    assert response.endswith(
        "Warnings:\nINS.BLK.POST 1: no syntactic block starts on line 1; inserted after line 1 instead (as INS.POST 1)."
    )


def test_block_ops_on_a_stale_tag_resolve_against_the_snapshot(ws: Workspace) -> None:
    tag = block_ws(ws, "a.py", PY)
    ws.write("a.py", "# header\n" + PY)  # external change shifts everything by one
    ws.edit(f"[a.py#{tag}]\nDEL.BLK 8")
    assert "    if path:" not in ws.text("a.py")
    assert ws.text("a.py").startswith("# header\nimport os\n")


def test_block_lines_must_have_been_seen(ws: Workspace) -> None:
    ws.write("a.rs", RS)
    ws.read("a.rs:9-9")  # shows 8-12 only
    with pytest.raises(ToolError) as caught:
        ws.edit(f"[a.rs#{compute_tag(RS)}]\nDEL.BLK 9")
    assert caught.value.message.startswith("This edit targets line(s) 13-16 of a.rs that were not shown")
