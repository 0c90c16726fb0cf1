"""grep's ranked mode on files with many hits: the ranking as defined, without decoding every hit.

Ranked mode used to decode up to 10,000 hits of every file in Python: 300 files of 10,000 `print(x)`
lines took 11.7 s and 640 MB and stopped at the deadline with 203 of 300 files. Only the hits that can
still change a file's top five are decoded now (`RankedSelection`); every answer must be the one the
full decode gives.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from search_fixture import make_tree

from fermix_cli.tools.coding.grep import ranking
from fermix_cli.tools.coding.grep import tool as grep_mod
from tests.conftest import Env, stall_rg

PLAIN = "print(x)\n"


def _tree() -> dict[str, str | bytes]:
    return {
        # A definition long after the first chunk of rg's output, and one past the first 10,000 hits.
        "late_def.py": PLAIN * 3000 + "def print_late():\n" + PLAIN * 3000,
        "keep_edge.py": PLAIN * 9_998 + "def print_in():\n" + PLAIN * 2 + "def print_out():\n",
        # Imports first (they do not fill the top five), then plain hits, then definitions.
        "imports.py": "from m import print_a\n" * 40 + PLAIN * 700 + "class PrintB:\n" + PLAIN * 5,
        "many_defs.py": "".join(f"def print_{i}(): pass\n{PLAIN}" for i in range(400)),
        # What JSON escapes: tabs, quotes, backslashes; and definitions by assignment.
        "escapes.js": (
            'print("a\\"b")\n' * 600
            + "\tfunction printTab() {}\n"
            + 'x = "print\\\\"\n' * 600
            + "const printArrow = (a) => a\n"
            + "printVar := func() {}\n"
            + "let printer = function () {}\n"
        ),
        # A keyword in the path (every message of the file holds it), and lines that are not UTF-8.
        "models/type_print.py": PLAIN * 800 + "def print_m():\n",
        "latin.py": b"print(\xff)\n" * 300 + b"def print_l():\n" + PLAIN.encode() * 300,
        "few.py": "print(1)\nimport print\n",
    }


@pytest.fixture
def full_decode(monkeypatch):
    """The ranking with every hit decoded, as before: the oracle."""

    def use() -> None:
        monkeypatch.setattr(grep_mod, "RankedSelection", None)

    return use


def _strip(r: dict) -> dict:
    return {k: v for k, v in r.items() if k != "bytes_scanned"}


@pytest.mark.parametrize("context", [0, 2, 20])
def test_ranked_answers_are_those_of_the_full_decode(world: Env, invoke, full_decode, context) -> None:
    make_tree(world.project, _tree())
    pages = [{"limit": 50}, {"limit": 7, "offset": 3}, {"limit": 500}, {"limit": 5, "offset": 30}]
    got = [invoke("grep", {"patterns": ["print", "Print"], "context": context, **pg}) for pg in pages]
    full_decode()
    want = [invoke("grep", {"patterns": ["print", "Print"], "context": context, **pg}) for pg in pages]
    for g, w in zip(got, want, strict=True):
        assert _strip(g) == _strip(w)
    first = got[0]
    assert first["complete"] is False and first["scan_complete"] is True
    labels = {(h["path"], h["line"]): h["label"] for h in got[2]["hits"]}
    assert labels[("late_def.py", 3001)] == "def-like"
    assert labels[("keep_edge.py", 9_999)] == "def-like" and ("keep_edge.py", 10_002) not in labels
    assert labels[("imports.py", 741)] == "def-like"
    assert labels[("escapes.js", 601)] == "def-like"
    assert {line for (path, line), lab in labels.items() if path == "escapes.js" and lab == "def-like"} == {
        601,
        1202,
        1203,
        1204,
    }


def test_many_hits_are_ranked_whole_in_bounded_memory(world: Env, invoke) -> None:
    files, per_file = 20, 10_000
    make_tree(world.project, {f"f{i:02d}.py": PLAIN * per_file for i in range(files)})
    tracemalloc.start()
    try:
        r = invoke("grep", {"patterns": ["print"], "limit": 5})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r["scan_complete"] is True and r["hits_total"] == files * per_file
    assert r["files_matched"] == files and r["primary_total"] == files * 5
    assert r["output"].splitlines()[:3] == ["grouped_v1", "## f00.py", "1:[match] print(x)"]
    # Every hit decoded and kept: 55 MiB; now a few per file (1.4 MiB), rg's output a chunk at a time.
    assert peak < 16 << 20, f"peak {peak / (1 << 20):.1f} MiB"


def test_the_timeout_note_offers_what_grep_has(world: Env, invoke, monkeypatch, tmp_path) -> None:
    """grep's deadline is fixed: the note says to narrow the search, not to raise a limit it lacks."""
    stall_rg(monkeypatch, tmp_path)  # the real rg, after a stall only the deadline's kill ends
    monkeypatch.setattr(grep_mod, "DEADLINE_S", 0.3)
    make_tree(world.project, {"a.txt": "hit\n"})
    r = invoke("grep", {"patterns": ["hit"]})
    (timeout,) = [o for o in r["omitted"] if o["reason"] == "timeout"]
    assert "raise" not in timeout["how"] and "raise" not in r["output"]
    assert "narrow the path, glob, type or pattern" in timeout["how"]
    assert "0.3 s limit" in timeout["how"]


# ----- the hints a skipped hit is judged by ---------------------------------------------------------

_WORDS = ["def", "class", "fn", "function", "const", "let", "var", "type", "import", "from", "export",
          "use", "require(", "pub", "async", "=>", ":=", "=", "print", "Print", " ", "\t", "(", ")", '"',
          "\\", "{", "}", "x", "é", "\x01", "#include", "macro_rules!", "mod", "impl", "<T>"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=12), st.integers(0, 40))
def test_a_line_without_the_hints_is_neither_def_like_nor_an_import(words: list[str], at: int) -> None:
    """DEF_HINT and IMPORT_HINT, looked for in a line as rg's JSON escapes it, must find something in
    every line `definition_name` or `is_import` says yes to (else a definition could be skipped)."""
    line = "".join(words).encode()
    escaped = json.dumps(line.decode(), ensure_ascii=False)[1:-1].encode()  # as rg escapes
    if ranking.definition_name(line, 0, len(line)) is not None:
        assert ranking.DEF_HINT.search(escaped) is not None
    if ranking.is_import(line, 0, len(line)):
        assert ranking.IMPORT_HINT.search(escaped) is not None


def test_the_keys_after_a_line_text_hold_no_hint(world: Env) -> None:
    """The hints are looked for from a line's text to the end of its message: rg's keys there must hold
    none of their words (a submatch's text is part of the line's, so it may)."""
    import subprocess

    from fermix_cli.core.search import engines

    make_tree(world.project, {"a.txt": "zz zz\n"})
    out = subprocess.run(
        [engines.rg(), "--json", "zz", "a.txt"], cwd=world.project, capture_output=True, check=True
    ).stdout
    (match,) = [ln for ln in out.splitlines() if ln.startswith(b'{"type":"match"')]
    tail = match[match.index(b'"lines":{"text":"zz zz\\n"}') + len(b'"lines":{"text":"zz zz\\n') :]
    assert tail.startswith(b'"},"line_number":1,') and b"submatches" in tail
    assert ranking.DEF_HINT.search(tail) is None and ranking.IMPORT_HINT.search(tail) is None
