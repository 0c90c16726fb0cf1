"""The in-memory snapshot store's contract, and that the engine imports nothing heavy up front."""

from __future__ import annotations

import subprocess
import sys

from fermix_cli.tools.coding.patchparse import FileOp, Hunk, Section, parse_patch
from fermix_cli.tools.coding.snapshots import MemorySnapshotStore, Snapshot


def test_get_returns_the_newest_version_with_that_tag_and_whether_it_is_latest() -> None:
    store = MemorySnapshotStore()
    store.record("/a", "AAAA", "one\n", [1])
    store.record("/a", "BBBB", "two\n", [1])
    assert store.get("/a", "AAAA") == Snapshot("one\n", frozenset({1}), latest=False)
    assert store.get("/a", "BBBB") == Snapshot("two\n", frozenset({1}), latest=True)
    assert store.get("/a", "CCCC") is None
    assert store.get("/b", "AAAA") is None


def test_rereading_identical_content_unions_seen_rows_and_becomes_latest() -> None:
    store = MemorySnapshotStore()
    store.record("/a", "AAAA", "x\ny\n", [1])
    store.record("/a", "BBBB", "z\n", [1])
    store.record("/a", "AAAA", "x\ny\n", [2])
    assert store.get("/a", "AAAA") == Snapshot("x\ny\n", frozenset({1, 2}), latest=True)


def test_colliding_tags_stay_separate_and_lookup_returns_the_most_recent() -> None:
    store = MemorySnapshotStore()
    store.record("/a", "1D84", "line one 263\nline two 4471\n", [1, 2])
    store.record("/a", "1D84", "line one 410\nline two 6970\n", [])
    snap = store.get("/a", "1D84")
    assert snap is not None and snap.text.startswith("line one 410") and snap.seen == frozenset()


def test_mark_seen_keeps_recency() -> None:
    store = MemorySnapshotStore()
    store.record("/a", "AAAA", "old\n", [])
    store.record("/a", "BBBB", "new\n", [])
    store.mark_seen("/a", "AAAA", [1])
    assert store.get("/a", "AAAA") == Snapshot("old\n", frozenset({1}), latest=False)


def test_limits_four_versions_per_path_and_thirty_paths() -> None:
    store = MemorySnapshotStore()
    for n in range(5):
        store.record("/a", f"000{n}", f"{n}\n", [])
    assert store.get("/a", "0000") is None and store.get("/a", "0001") is not None
    for n in range(30):
        store.record(f"/p{n}", "AAAA", "x", [])
    assert store.get("/a", "0004") is None  # least recently used path evicted
    assert store.get("/p0", "AAAA") is not None


def test_byte_limit_evicts_least_recent_paths() -> None:
    store = MemorySnapshotStore(max_bytes=10)
    store.record("/a", "AAAA", "123456", [])
    store.record("/b", "BBBB", "123456", [])
    assert store.get("/a", "AAAA") is None and store.get("/b", "BBBB") is not None


def test_move_carries_history() -> None:
    store = MemorySnapshotStore()
    store.record("/a", "AAAA", "x", [1])
    store.move("/a", "/b")
    assert store.get("/a", "AAAA") is None and store.get("/b", "AAAA") is not None


def test_parsed_request_shape() -> None:
    sections = parse_patch('[src/a b.py#c918]\nSWAP 2.=3:\n+x\nINS.HEAD:\n+h\nDEL 5\nMV "lib/a b.py"')
    assert sections == (
        Section(
            path="src/a b.py",
            tag="C918",
            hunks=(
                Hunk("SWAP", 2, 3, ("x",), 2),
                Hunk("INS.HEAD", 0, 0, ("h",), 4),
                Hunk("DEL", 5, 5, (), 6),
            ),
            fileop=FileOp("MV", "lib/a b.py", 7),
            line=1,
            source='[src/a b.py#c918]\nSWAP 2.=3:\n+x\nINS.HEAD:\n+h\nDEL 5\nMV "lib/a b.py"',
            written=("src/a b.py",),
        ),
    )


def test_importing_the_engine_loads_no_ast_grep() -> None:
    code = (
        "import sys, fermix_cli.tools.coding.hashedit, fermix_cli.tools.coding.hashline;"
        "print('ast_grep_py' in sys.modules, 'xxhash' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
