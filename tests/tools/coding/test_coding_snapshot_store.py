"""The SQLite snapshot store: the engine's store contract, LRU bounds, TTL, sessions, two processes at once."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fermix_cli.core.state import StateDB
from fermix_cli.tools.coding.snapshot_db import SqliteSnapshotStore, StoreLimits, decode_seen, encode_seen
from fermix_cli.tools.coding.snapshots import MemorySnapshotStore, Snapshot

REPO = Path(__file__).resolve().parents[3]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def db(tmp_path: Path):
    state = StateDB(tmp_path / "state.db")
    yield state
    state.close()


@pytest.fixture
def make(db: StateDB) -> Callable[..., SqliteSnapshotStore]:
    def build(session: str = "s1", clock: Clock | None = None, **limits: float) -> SqliteSnapshotStore:
        return SqliteSnapshotStore(db, session, limits=StoreLimits(**limits), clock=clock or Clock())  # type: ignore[arg-type]

    return build


def rows(db: StateDB) -> list[tuple[str, str, str]]:
    return [
        (r["session_id"], r["path"], r["tag"])
        for r in db.query("SELECT session_id, path, tag FROM hashline_snapshots ORDER BY seq")
    ]


# ----- the same contract as the in-memory reference ---------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def store(request, make):
    return MemorySnapshotStore() if request.param == "memory" else make()


def test_get_returns_newest_version_with_the_tag_and_whether_it_is_latest(store) -> None:
    store.record("/a", "AAAA", "one\n", [1])
    store.record("/a", "BBBB", "two\n", [1])
    assert store.get("/a", "AAAA") == Snapshot("one\n", frozenset({1}), latest=False)
    assert store.get("/a", "BBBB") == Snapshot("two\n", frozenset({1}), latest=True)
    assert store.get("/a", "CCCC") is None
    assert store.get("/b", "AAAA") is None


def test_identical_content_unions_seen_rows_and_becomes_latest(store) -> None:
    store.record("/a", "AAAA", "x\ny\n", [1])
    store.record("/a", "BBBB", "z\n", [1])
    store.record("/a", "AAAA", "x\ny\n", [2])
    assert store.get("/a", "AAAA") == Snapshot("x\ny\n", frozenset({1, 2}), latest=True)


def test_colliding_tags_stay_separate_and_the_most_recent_wins(store) -> None:
    store.record("/a", "1D84", "line one 263\nline two 4471\n", [1, 2])
    store.record("/a", "1D84", "line one 410\nline two 6970\n", [])
    snap = store.get("/a", "1D84")
    assert snap is not None and snap.text.startswith("line one 410") and snap.seen == frozenset()
    store.record("/a", "1D84", "line one 263\nline two 4471\n", [])
    snap = store.get("/a", "1D84")
    assert snap is not None and snap.text.startswith("line one 263") and snap.seen == {1, 2}


def test_mark_seen_keeps_recency(store) -> None:
    store.record("/a", "AAAA", "old\n", [])
    store.record("/a", "BBBB", "new\n", [])
    store.mark_seen("/a", "AAAA", [1])
    assert store.get("/a", "AAAA") == Snapshot("old\n", frozenset({1}), latest=False)
    assert store.get("/a", "BBBB") == Snapshot("new\n", frozenset(), latest=True)


def test_four_versions_per_path_and_thirty_paths(store) -> None:
    for n in range(5):
        store.record("/a", f"000{n}", f"{n}\n", [])
    assert store.get("/a", "0000") is None and store.get("/a", "0001") is not None
    for n in range(30):
        store.record(f"/p{n}", "AAAA", "x", [])
    assert store.get("/a", "0004") is None  # the least recently recorded path went first
    assert store.get("/p0", "AAAA") is not None and store.get("/p29", "AAAA") is not None


def test_move_carries_history(store) -> None:
    store.record("/a", "AAAA", "x", [1])
    store.move("/a", "/b")
    assert store.get("/a", "AAAA") is None
    assert store.get("/b", "AAAA") == Snapshot("x", frozenset({1}), latest=True)


# ----- SQLite specifics ---------------------------------------------------------------------------


def test_recording_a_path_again_makes_it_most_recent(make, db) -> None:
    store = make(max_paths=3)
    for name in ("/a", "/b", "/c"):
        store.record(name, "AAAA", name, [1])
    store.record("/a", "BBBB", "a2", [1])  # /a is now the most recent; /b is the LRU
    store.record("/d", "AAAA", "d", [1])
    assert {p for _, p, _ in rows(db)} == {"/a", "/c", "/d"}
    assert store.get("/b", "AAAA") is None


def test_mark_seen_and_get_do_not_refresh_recency(make, db) -> None:
    store = make(max_paths=2)
    store.record("/a", "AAAA", "a", [])
    store.record("/b", "AAAA", "b", [])
    store.mark_seen("/a", "AAAA", [1])
    assert store.get("/a", "AAAA") is not None
    store.record("/c", "AAAA", "c", [])
    assert {p for _, p, _ in rows(db)} == {"/b", "/c"}


def test_byte_budget_evicts_least_recent_paths_but_keeps_the_newest(make, db) -> None:
    store = make(max_bytes=10)
    store.record("/a", "AAAA", "1234", [])
    store.record("/b", "BBBB", "1234", [])
    assert {p for _, p, _ in rows(db)} == {"/a", "/b"}
    store.record("/c", "CCCC", "123456", [])  # 14 bytes: /a goes, /b (4) + /c (6) fit exactly
    assert {p for _, p, _ in rows(db)} == {"/b", "/c"}
    store.record("/d", "DDDD", "x" * 50, [])  # alone over budget: kept, everything older goes
    assert rows(db) == [("s1", "/d", "DDDD")]


def test_byte_budget_counts_utf8_bytes(make, db) -> None:
    store = make(max_bytes=8)
    store.record("/a", "AAAA", "ééé", [])  # 6 bytes, 3 characters
    store.record("/b", "BBBB", "éé", [])  # 4 bytes: 10 > 8
    assert {p for _, p, _ in rows(db)} == {"/b"}


def test_sessions_are_separate_and_bounded_each(make, db) -> None:
    one, two = make("one", max_paths=2), make("two", max_paths=2)
    one.record("/a", "AAAA", "a", [1])
    assert two.get("/a", "AAAA") is None
    for name in ("/x", "/y", "/z"):
        two.record(name, "AAAA", name, [])
    assert one.get("/a", "AAAA") is not None  # another session's churn never evicts mine
    assert {p for s, p, _ in rows(db) if s == "two"} == {"/y", "/z"}


def test_overall_bounds_evict_across_sessions_least_recent_first(make, db) -> None:
    limits = {"max_total_paths": 3, "max_total_bytes": 1000}
    for n, session in enumerate(["s1", "s2", "s3", "s4"]):
        make(session, **limits).record(f"/p{n}", "AAAA", "x", [])
    assert [(s, p) for s, p, _ in rows(db)] == [("s2", "/p1"), ("s3", "/p2"), ("s4", "/p3")]
    make("s5", max_total_bytes=5).record("/big", "AAAA", "12345", [])
    assert [(s, p) for s, p, _ in rows(db)] == [("s5", "/big")]


def test_snapshots_expire_after_24_hours(make, db) -> None:
    clock = Clock()
    store = make(clock=clock)
    store.record("/a", "AAAA", "a", [1])
    clock.now += 24 * 3600 - 1
    assert store.get("/a", "AAAA") is not None and store.paths_with("a", "AAAA") == ["/a"]
    clock.now += 2
    assert store.get("/a", "AAAA") is None and store.paths_with("a", "AAAA") == []
    store.mark_seen("/a", "AAAA", [2])  # an expired snapshot is not revived
    store.record("/b", "BBBB", "b", [])
    assert rows(db) == [("s1", "/b", "BBBB")]  # pruned on the next write


def test_expired_identical_version_is_not_merged(make) -> None:
    clock = Clock()
    store = make(clock=clock)
    store.record("/a", "AAAA", "a", [1])
    clock.now += 25 * 3600
    store.record("/a", "AAAA", "a", [2])
    assert store.get("/a", "AAAA") == Snapshot("a", frozenset({2}), latest=True)


def test_paths_with_matches_basename_and_tag_in_this_session(make) -> None:
    store, other = make("s1"), make("s2")
    store.record("/p/src/util.py", "AAAA", "x", [])
    store.record("/p/lib/util.py", "BBBB", "y", [])
    store.record("/p/util.pyc", "AAAA", "z", [])
    other.record("/q/util.py", "AAAA", "x", [])
    assert store.paths_with("util.py", "AAAA") == ["/p/src/util.py"]
    assert store.paths_with("util.py", "CCCC") == []


def test_noop_streak_counts_identical_payloads_per_path(make) -> None:
    store, other = make("s1"), make("s2")
    assert [store.noop_streak("/a", "P") for _ in range(3)] == [1, 2, 3]
    assert store.noop_streak("/a", "Q") == 1  # a different payload starts over
    assert store.noop_streak("/b", "Q") == 1
    assert other.noop_streak("/a", "Q") == 1
    store.clear_noops(["/a"])
    assert store.noop_streak("/a", "Q") == 1


def test_move_replaces_stale_history_at_the_destination(make) -> None:
    store = make()
    store.record("/dest", "AAAA", "old dest", [1])
    store.record("/src", "BBBB", "src", [1])
    store.move("/src", "/dest")
    assert store.get("/dest", "AAAA") is None
    assert store.get("/dest", "BBBB") is not None


@given(st.sets(st.integers(1, 300)))
def test_seen_encoding_round_trips(seen: set[int]) -> None:
    assert decode_seen(encode_seen(seen)) == seen


def test_seen_encoding_is_compact() -> None:
    assert encode_seen([5, 1, 2, 3, 9, 10]) == "1-3,5,9-10"
    assert encode_seen(range(1, 100_001)) == "1-100000"


WORKER = """
import sys, time
from pathlib import Path
from fermix_cli.tools.coding.snapshot_db import SqliteSnapshotStore
from fermix_cli.core.state import StateDB
path, first = sys.argv[1], int(sys.argv[2])
store = SqliteSnapshotStore(StateDB(Path(path)), "shared")
Path(path + f".ready{first}").touch()
while not Path(path + ".go").exists():
    time.sleep(0.005)
for n in range(first, first + 200, 2):
    store.mark_seen("/f", "AAAA", [n])
"""


def test_two_processes_marking_rows_lose_no_update(tmp_path: Path, db: StateDB) -> None:
    SqliteSnapshotStore(db, "shared").record("/f", "AAAA", "text", [])
    target = str(tmp_path / "state.db")
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, target, str(first)], cwd=REPO) for first in (1, 2)
    ]
    while not all(Path(f"{target}.ready{n}").exists() for n in (1, 2)):
        time.sleep(0.01)
    Path(target + ".go").touch()
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    snap = SqliteSnapshotStore(db, "shared").get("/f", "AAAA")
    assert snap is not None and snap.seen == frozenset(range(1, 201))
