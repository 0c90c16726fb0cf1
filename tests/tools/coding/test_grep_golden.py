"""grep golden outputs on the fixture tree: ranked (grouped_v1) and raw, with context and paging."""

from __future__ import annotations

from pathlib import Path

import pytest
from search_fixture import FIXTURE, make_tree

from tests.conftest import Env


@pytest.fixture
def proj(world: Env) -> Path:
    make_tree(world.project, FIXTURE)
    return world.project


# bin/blob.dat is binary from its first bytes: rg does not search it, like every grep, and the answer
# says so. bad.txt matches too, on a line that is not UTF-8: the answer says so instead of leaving it
# out silently.
BINARY_NOTE = (
    "[incomplete: 1 file left out (binary); 1 holds binary data from the start (a NUL byte) and was not "
    "searched; to search them as text run `rg -a PATTERN PATH` in the shell (e.g. bin/blob.dat)]"
)
SKIP_NOTES = (
    BINARY_NOTE + "\n[incomplete: 1 line left out (invalid_utf8); in 1 file(s) they are not UTF-8 text, so "
    "they are not shown; to see them run `rg -a PATTERN PATH` in the shell]"
)

RANKED = (
    """\
grouped_v1
## src/lib/runner.py
2:[import] from run import run
--
5:[def-like]     def run(self):
6:[match]         return run()
--
8:[match] runner = Runner()

## src/run.rs
3:[def-like] pub fn run(args: Args) -> Result<()> {
--
5:[match]     run_inner(args)?;
--
9:[def-like] fn run_inner(args: Args) -> Result<()> {
10:[match]     run_step(1)

## src/app.ts
1:[import] import { run } from "./run";
2:[def-like] export const runTwice = (x: number) => run(run(x));
--
4:[match]   run(1);

## src/main.rs
1:[import] use crate::run::run;
--
4:[match]     run(std::env::args());

## docs/running.md
3:[match] To run the tool, call run.

"""
    + SKIP_NOTES
)


def test_ranked_default_golden(proj: Path, invoke) -> None:
    r = invoke("grep", {"patterns": ["run"]})
    assert r["output"] == RANKED
    assert r["format"] == "grouped_v1"
    assert (r["primary_total"], r["hits_total"], r["returned"]) == (14, 14, 14)
    assert r["has_more"] is False and r["next_offset"] is None and r["truncated"] is False
    assert r["scan_complete"] is True and r["total_exact"] is True
    assert r["files_matched"] == 5
    # Hidden and ignored files are rg's to skip (by design, not a partial answer): not counted.
    assert r["skipped"] == {"binary": 1, "invalid_utf8": 1, "unreadable": 0, "denied": 0, "special": 0}
    assert r["complete"] is False
    assert [o["reason"] for o in r["omitted"]] == ["binary", "invalid_utf8"]
    assert r["matchers"] == [{"pattern": "run", "kind": "regex"}]
    assert r["hits"][0] == {
        "path": "src/lib/runner.py",
        "line": 5,
        "label": "def-like",
        "text": "    def run(self):",
    }


RANKED_PAGE_TWO = (
    """\
grouped_v1
## src/run.rs
2-
3:[def-like] pub fn run(args: Args) -> Result<()> {
4-    let cfg = load()?;
5:[match]     run_inner(args)?;
6-    Ok(())
--
8-
9:[def-like] fn run_inner(args: Args) -> Result<()> {
10:[match]     run_step(1)
11-}

## src/app.ts
1:[import] import { run } from "./run";
2:[def-like] export const runTwice = (x: number) => run(run(x));
3-export function start() {

[5 more primary matches; use offset=9]
"""
    + SKIP_NOTES
)


def test_ranked_pagination_with_context_golden(proj: Path, invoke) -> None:
    first = invoke("grep", {"patterns": ["run"], "limit": 4, "context": 1})
    assert first["output"].endswith("\n\n[10 more primary matches; use offset=4]\n" + SKIP_NOTES)
    assert first["output"].startswith(
        "grouped_v1\n## src/lib/runner.py\n1-import os\n2:[import] from run import run\n"
    )
    assert (first["returned"], first["next_offset"], first["has_more"]) == (4, 4, True)
    second = invoke("grep", {"patterns": ["run"], "offset": 4, "limit": 5, "context": 1})
    assert second["output"] == RANKED_PAGE_TWO
    assert (second["returned"], second["next_offset"], second["has_more"]) == (5, 9, True)
    last = invoke("grep", {"patterns": ["run"], "offset": 9, "limit": 50})
    assert last["returned"] == 5 and last["has_more"] is False and last["next_offset"] is None
    assert last["output"].startswith("grouped_v1\n## src/app.ts\n1:[import] import { run }")


RAW_FIRST = (
    """\
docs/running.md:3:To run the tool, call run.
src/app.ts:1:import { run } from "./run";
src/app.ts:2:export const runTwice = (x: number) => run(run(x));
src/app.ts:4:  run(1);
src/lib/runner.py:2:from run import run
src/lib/runner.py:5:    def run(self):

[more matches; use offset=6]
"""
    + SKIP_NOTES
)

RAW_SECOND = (
    """\
src/lib/runner.py:5:    def run(self):
src/lib/runner.py:6:        return run()
src/lib/runner.py-7-
src/lib/runner.py:8:runner = Runner()
--
src/main.rs:1:use crate::run::run;
src/main.rs-2-
src/main.rs-3-fn main() {
src/main.rs:4:    run(std::env::args());
src/main.rs-5-}
--
src/run.rs-2-
src/run.rs:3:pub fn run(args: Args) -> Result<()> {
src/run.rs-4-    let cfg = load()?;
src/run.rs:5:    run_inner(args)?;
src/run.rs-6-    Ok(())

[more matches; use offset=12]
"""
    + SKIP_NOTES
)


def test_raw_mode_golden_with_lookahead_paging(proj: Path, invoke) -> None:
    r = invoke("grep", {"patterns": ["run"], "mode": "raw", "limit": 6})
    assert r["output"] == RAW_FIRST
    assert r["format"] == "raw"
    assert (r["returned"], r["has_more"], r["next_offset"]) == (6, True, 6)
    # Paging is not a partial scan: every file is searched, so the total is exact from page one.
    assert r["scan_stop"] is None and r["truncation_reasons"] == []
    assert r["primary_total"] == 14 and r["total_exact"] is True
    second = invoke("grep", {"patterns": ["run"], "mode": "raw", "offset": 6, "limit": 6, "context": 1})
    assert second["output"] == RAW_SECOND
    third = invoke("grep", {"patterns": ["run"], "mode": "raw", "offset": 12, "limit": 6})
    assert (
        third["output"]
        == "src/run.rs:9:fn run_inner(args: Args) -> Result<()> {\nsrc/run.rs:10:    run_step(1)\n\n"
        + SKIP_NOTES
    )
    assert third["has_more"] is False and third["scan_complete"] is True and third["total_exact"] is True
    assert third["primary_total"] == 14


def test_raw_lookahead_is_exact_at_the_boundary(proj: Path, invoke) -> None:
    r = invoke("grep", {"patterns": ["run"], "mode": "raw", "offset": 13, "limit": 1})
    assert r["returned"] == 1 and r["has_more"] is False
    r = invoke("grep", {"patterns": ["run"], "mode": "raw", "offset": 12, "limit": 1})
    assert r["returned"] == 1 and r["has_more"] is True and r["next_offset"] == 13


def test_or_patterns_repairs_and_fallback_are_reported(proj: Path, invoke) -> None:
    r = invoke("grep", {"patterns": ["fn run(", r"def run\b", "{x", "(unclosed[", "a{2,"]})
    assert r["output"] == (
        "grouped_v1\n## src/lib/runner.py\n5:[def-like]     def run(self):\n\n"
        "## src/run.rs\n3:[def-like] pub fn run(args: Args) -> Result<()> {\n\n" + BINARY_NOTE
    )
    assert r["matchers"] == [
        {"pattern": "fn run(", "kind": "regex_repaired", "repaired": r"fn run\("},
        {"pattern": r"def run\b", "kind": "regex"},
        {"pattern": "{x", "kind": "regex_repaired", "repaired": r"\{x"},
        {"pattern": "(unclosed[", "kind": "regex_repaired", "repaired": r"\(unclosed\["},
        {"pattern": "a{2,", "kind": "regex_repaired", "repaired": r"a\{2,"},
    ]


def test_literal_fallback_when_repairs_do_not_help(world: Env, invoke) -> None:
    make_tree(world.project, {"a.txt": "what ?bad luck\n+x\n", "b.txt": "bad\n"})
    r = invoke("grep", {"patterns": ["?bad", "+x"], "mode": "raw"})
    assert [m["kind"] for m in r["matchers"]] == ["literal_fallback", "literal_fallback"]
    assert all(m["error"] for m in r["matchers"])
    assert r["output"] == "a.txt:1:what ?bad luck\na.txt:2:+x"


def test_regex_patterns_are_case_sensitive(proj: Path, invoke) -> None:
    raw = invoke("grep", {"patterns": ["Running"], "mode": "raw"})["output"]
    assert raw == "docs/running.md:1:# Running\n\n" + BINARY_NOTE
    assert invoke("grep", {"patterns": ["RUN"]})["output"] == "grouped_v1\n\n[no matches]\n" + BINARY_NOTE


def test_definitions_with_names_beyond_ascii_are_def_like(world: Env, invoke) -> None:
    """Python, Rust, JavaScript and Go allow letters beyond ASCII in names: such a definition ranks as
    one (its name was matched as ASCII only)."""
    (world.project / "u.py").write_text("def ñame(): pass\nfn 名前() {}\nconst café = () => 1\nx = ñame()\n")
    r = invoke("grep", {"patterns": ["ñame", "名前", "café"]})
    assert r["output"] == (
        "grouped_v1\n## u.py\n1:[def-like] def ñame(): pass\n2:[def-like] fn 名前() {}\n"
        "3:[def-like] const café = () => 1\n4:[match] x = ñame()"
    )


def test_a_type_filter_leaves_hidden_files_out_as_the_walk_does(world: Env, invoke) -> None:
    """rg's `-t` brings hidden files in (as `-g` does); grep skips hidden files with a type as without."""
    for rel in ("a.py", ".x.py", "src/.z.py", ".s.json", "b.json"):
        (world.project / rel).parent.mkdir(parents=True, exist_ok=True)
        (world.project / rel).write_text("foo\n")
    r = invoke("grep", {"patterns": ["foo"], "mode": "raw", "type": ["py", "json"]})
    assert r["output"] == "a.py:1:foo\nb.json:1:foo"
    r = invoke("grep", {"patterns": ["foo"], "mode": "raw", "type": ["py"], "glob": [".x.py"]})
    assert r["output"] == ".x.py:1:foo"  # a glob that names a hidden file still brings it in


def test_a_pattern_too_big_only_when_case_folded_falls_back_to_a_literal(world: Env, invoke) -> None:
    """The compile check runs as the search does, case folding included: one pattern past rg's size
    limit only when folded is matched literally, not refused with advice about several patterns."""
    (world.project / "k.txt").write_text("k{1000000}\n")
    r = invoke("grep", {"patterns": ["k{1000000}"], "case_insensitive": True, "mode": "raw"})
    (m,) = r["matchers"]
    assert m["kind"] == "literal_fallback" and "size limit" in m["error"]
    assert r["output"] == "k.txt:1:k{1000000}"
