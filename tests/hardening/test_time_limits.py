"""Documented time limits hold, and catastrophic regexes are no threat (issues 14 and 15).

Searches run on ripgrep, whose regex engine is linear-time: the patterns that made a backtracking engine
run for ever finish at once, and completely. The deadline itself (rg's process group killed when it
passes) is tested with a FIFO named as the path, which rg blocks reading until the kill (grep skips a
FIFO at once, so for grep rg stalls behind a wrapper instead). The limits are
shortened here; the clock is real, because the real clock is the subject. What a call costs besides the
search is measured in the same test with a quick call, and allowed on top of the limit and its 10 %.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from tests.conftest import Env, stall_rg

CATASTROPHIC = ["(a+)+b", "(a|aa)+b", "(aa|a)+c"]


def _timed(call: Any) -> float:
    started = time.monotonic()
    with contextlib.suppress(ToolError):  # a search that finds nothing is not a failure here
        call()
    return time.monotonic() - started


def _tree(world: Env) -> None:
    src = world.project / "src"
    src.mkdir()
    for i in range(40):
        (src / f"f{i}.txt").write_text(("a" * 5000 + "!\n") * 20)


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_regexes_finish_completely(world: Env, invoke: Any, pattern: str) -> None:
    _tree(world)
    started = time.monotonic()
    out = invoke("grep", {"patterns": [pattern], "path": "src"})
    assert out["scan_complete"] is True and out["complete"] is True
    cs = invoke("content_search", {"pattern": pattern, "path": "src", "regex": True, "timeout_ms": 5000})
    assert cs["complete"] is True
    assert time.monotonic() - started < 5.0


def test_grep_stops_at_its_deadline(
    world: Env, invoke: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import fermix_cli.tools.coding.grep.tool as grep_tool

    (world.project / "f.txt").write_text("zq\n")
    monkeypatch.setattr(grep_tool, "DEADLINE_S", 1.0)
    overhead = _timed(lambda: invoke("grep", {"patterns": ["zq+x"], "path": "f.txt"}))
    stall_rg(monkeypatch, tmp_path)  # the real rg, after a stall only the deadline's kill ends
    started = time.monotonic()
    out = invoke("grep", {"patterns": ["x"], "path": "f.txt"})
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 1.1 + overhead + 0.5, (elapsed, overhead)  # the limit, 10 %, the call's work
    assert out["scan_complete"] is False and "deadline" in out["truncation_reasons"]


def test_content_search_stops_at_timeout_ms(
    world: Env, invoke: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (world.project / "f.txt").write_text("zq\n")
    overhead = _timed(lambda: invoke("content_search", {"pattern": "zq+x", "path": "f.txt", "regex": True}))
    stall_rg(monkeypatch, tmp_path)  # the real rg, after a stall only the deadline's kill ends
    started = time.monotonic()
    with pytest.raises(ToolError) as e:
        invoke("content_search", {"pattern": "x", "path": "f.txt", "timeout_ms": 1000})
    elapsed = time.monotonic() - started
    assert e.value.code == "timeout"
    assert 1.0 <= elapsed < 1.1 + overhead + 0.5, (elapsed, overhead)
