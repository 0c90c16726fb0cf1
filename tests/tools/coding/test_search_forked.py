"""grep and content_search with half of their files probed in a forked child give the plain loop's result.

Every test runs the same call twice, forked and not, and compares the whole result: pages, counts,
skips, truncation and where a budget stopped the scan.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from search_fixture import make_tree

from fermix_cli.core.search import forkmap
from fermix_cli.tools import search
from fermix_cli.tools.coding import grep_scan
from tests.conftest import Env

pytestmark = pytest.mark.skipif(not forkmap.can_fork(), reason="needs Linux, two cores and no other thread")


def _tree(root: Any) -> None:
    files: dict[str, str | bytes] = {}
    for i in range(60):
        body = "".join(f"line {j} of file {i}\n" for j in range(i % 7 + 1))
        if i % 3 == 0:
            body += f"def target_{i}(x):\n    return target(x)\n"
        if i % 5 == 0:
            body += "import target\n" + "filler text\n" * (i * 3)
        files[f"d{i % 4}/sub{i % 2}/f{i:02d}.py"] = body
    files["d0/binary.bin"] = b"target\x00\x01\x02"
    files["d1/latin1.txt"] = "target café\n".encode("latin-1")
    files["d2/empty.txt"] = ""
    files["d3/big.txt"] = "target big\n" * 400  # 4,400 bytes: past the small file caps below
    make_tree(root, files)


def _both(
    invoke: Any, monkeypatch: pytest.MonkeyPatch, args: dict[str, Any], tool: str = "grep"
) -> dict[str, Any]:
    forks: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(forkmap.os, "fork", counting_fork)
    monkeypatch.setattr(forkmap, "PARALLEL_MIN_ITEMS", 10**9)
    plain = invoke(tool, args)
    assert not forks
    monkeypatch.setattr(forkmap, "PARALLEL_MIN_ITEMS", 2)
    forked = invoke(tool, args)
    assert forks, "the forked path did not run"
    assert forked == plain
    return plain


@pytest.mark.parametrize(
    "args",
    [
        {"patterns": ["target"]},
        {"patterns": ["target"], "context": 2},
        {"patterns": [r"def \w+\("], "offset": 3, "limit": 4},
        {"patterns": ["target", "filler"], "mode": "raw", "limit": 7},
        {"patterns": ["target"], "mode": "raw", "limit": 5, "offset": 40, "context": 1},
        {"patterns": ["no such text"]},
    ],
)
def test_forked_scan_matches_the_plain_loop(world: Env, invoke, monkeypatch, args: dict[str, Any]) -> None:
    _tree(world.project)
    r = _both(invoke, monkeypatch, args)
    # Ranked mode reads every file; raw mode stops once it knows there is a next page.
    assert r["files_scanned"] > 60 if "mode" not in args else r["scan_stop"] in (None, "lookahead")


@pytest.mark.parametrize("call_bytes", [300, 2_500, 6_000, 9_000])
def test_call_byte_cap_lands_on_the_same_file(world: Env, invoke, monkeypatch, call_bytes: int) -> None:
    _tree(world.project)
    monkeypatch.setattr(grep_scan, "CALL_BYTES_CAP", call_bytes)
    monkeypatch.setattr(grep_scan, "FILE_CAP", 1_000)
    r = _both(invoke, monkeypatch, {"patterns": ["target"]})
    assert r["scan_stop"] == "byte_cap" and r["bytes_scanned"] <= call_bytes


@pytest.mark.parametrize("max_files", [5, 40])
def test_file_cap_lands_on_the_same_file(world: Env, invoke, monkeypatch, max_files: int) -> None:
    _tree(world.project)
    monkeypatch.setattr(grep_scan, "MAX_FILES", max_files)
    r = _both(invoke, monkeypatch, {"patterns": ["target"], "mode": "raw", "limit": 500})
    assert r["scan_stop"] == "file_cap" and r["files_scanned"] == max_files


def test_truncated_files_are_counted_the_same(world: Env, invoke, monkeypatch) -> None:
    _tree(world.project)
    monkeypatch.setattr(grep_scan, "FILE_CAP", 120)
    r = _both(invoke, monkeypatch, {"patterns": ["target"], "mode": "raw", "limit": 500})
    assert r["files_truncated"] >= 1


@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "target"},
        {"pattern": "target", "max_results": 7},
        {"pattern": "target", "max_results": 40},
        {"pattern": r"def \w+\(", "regex": True},
        {"pattern": "no such text"},
    ],
)
def test_content_search_forked_matches_the_plain_loop(
    world: Env, invoke, monkeypatch, args: dict[str, Any]
) -> None:
    _tree(world.project)
    monkeypatch.setattr(search, "CONTENT_FILE_CAP", 4_000)  # d3/big.txt is skipped as too large
    r = _both(invoke, monkeypatch, args, tool="content_search")
    assert r["truncated"] == ("max_results" in args)
    if not r["truncated"]:
        assert r["files_skipped_large"] == 1


def test_a_child_probing_ahead_stops_reading_at_the_call_cap(
    world: Env, invoke, monkeypatch, tmp_path
) -> None:
    # fermix's half (a/) is well under the cap, the child's half (b/) well over it: the call stops in
    # the child's half, after the child has probed (and logged) all of it.
    small = {f"a/f{i:02d}.txt": "target\n" for i in range(40)}
    large = {f"b/f{i:02d}.txt": "target " + "x" * 192 + "\n" for i in range(40)}
    make_tree(world.project, small | large)
    log = tmp_path / "skipped"
    real_probe = grep_scan.Searcher.probe

    def probe(self: grep_scan.Searcher, path: str) -> Any:
        out = real_probe(self, path)
        if out is None:  # record, from whichever process, that a probe did not read its file
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\n")
        return out

    monkeypatch.setattr(grep_scan.Searcher, "probe", probe)
    monkeypatch.setattr(grep_scan, "CALL_BYTES_CAP", 1_500)
    r = _both(invoke, monkeypatch, {"patterns": ["target"]})
    assert r["scan_stop"] == "byte_cap"
    pids = set(log.read_text().split())
    assert len(log.read_text().split()) > 20  # most of b/ was never read by the child
    assert pids and str(os.getpid()) not in pids  # only the child skipped files


def test_a_content_search_child_stops_once_it_has_more_than_the_limit(
    world: Env, invoke, monkeypatch
) -> None:
    files = {f"d/f{i:03d}.txt": "target\n" * 5 for i in range(80)}
    make_tree(world.project, files)
    r = _both(invoke, monkeypatch, {"pattern": "target", "max_results": 3}, tool="content_search")
    assert r["truncated"] and len(r["matches"]) == 3
    r = _both(invoke, monkeypatch, {"pattern": "target", "max_results": 300}, tool="content_search")
    assert r["truncated"] and len(r["matches"]) == 300
