"""Hashline snapshots in state.db: what each printed `[path#TAG]` named, per session, bounded LRU.

A snapshot is the LF text a tag fingerprints plus the row numbers the model was shown. `read`,
`hash_edit` and `write` record them; `hash_edit` looks them up to check tags, recover stale ones and
guard unseen lines. CLI processes are short-lived, so the store lives in state.db and is keyed by the
session id (`--session` / `FERMIX_SESSION`).

Bounds, per session: 30 paths (least recently recorded evicted first), 4 versions per path, 64 MiB
of text. Across all sessions: 256 MiB and 2,000 paths. Snapshots older than 24 h are ignored and
pruned. Every write is one short BEGIN IMMEDIATE transaction, so two processes editing at once
serialise on the database instead of losing updates.
"""

from __future__ import annotations

import hashlib
import posixpath
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...core.records import Record

if TYPE_CHECKING:
    import sqlite3

    from ...core.state import StateDB

MAX_PATHS = 30
MAX_VERSIONS = 4
MAX_BYTES = 64 << 20
MAX_TOTAL_BYTES = 256 << 20
MAX_TOTAL_PATHS = 2000
TTL_SECONDS = 24 * 3600


class Snapshot(Record, frozen=True):
    """What a tag named when it was printed: the LF text (BOM dropped) and the row numbers shown.

    `latest` is true when this is the newest version recorded for its path.
    """

    text: str
    seen: frozenset[int]
    latest: bool = True


def encode_seen(seen: Iterable[int]) -> str:
    """Row numbers as compact ranges, `1-400,402`; a 100,000-line file read in full stays tiny."""
    numbers = sorted(set(seen))
    runs: list[str] = []
    start = prev = None
    for n in [*numbers, None]:
        if n is not None and prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ",".join(runs)


def decode_seen(text: str) -> frozenset[int]:
    """The inverse of `encode_seen`."""
    out: set[int] = set()
    for run in filter(None, text.split(",")):
        first, _, last = run.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return frozenset(out)


class StoreLimits(Record, frozen=True):
    """The store's bounds; tests shrink them to exercise eviction."""

    max_paths: int = MAX_PATHS
    max_versions: int = MAX_VERSIONS
    max_bytes: int = MAX_BYTES
    max_total_bytes: int = MAX_TOTAL_BYTES
    max_total_paths: int = MAX_TOTAL_PATHS
    ttl_seconds: float = TTL_SECONDS


class SqliteSnapshotStore:
    """The hashline `SnapshotStore` for one session, persisted in state.db."""

    def __init__(
        self,
        state: StateDB,
        session: str,
        *,
        limits: StoreLimits | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._state = state
        self.session = session
        self.limits = limits or StoreLimits()
        self._clock = clock

    def _cutoff(self) -> float:
        return self._clock() - self.limits.ttl_seconds

    # ----- the SnapshotStore protocol -------------------------------------------------------

    def get(self, path: str, tag: str) -> Snapshot | None:
        """The most recently recorded live snapshot with this tag, or None (unknown, expired, evicted)."""
        with self._state.read() as db:  # one consistent view for both queries
            versions = db.execute(
                "SELECT id, tag FROM hashline_snapshots"
                " WHERE session_id = ? AND path = ? AND recorded_at >= ? ORDER BY seq DESC",
                (self.session, path, self._cutoff()),
            ).fetchall()
            match = next((i for i, v in enumerate(versions) if v["tag"] == tag), None)
            if match is None:
                return None
            row = db.execute(
                "SELECT text, seen FROM hashline_snapshots WHERE id = ?", (versions[match]["id"],)
            ).fetchone()
        return Snapshot(row["text"], decode_seen(row["seen"]), latest=match == 0)

    def record(self, path: str, tag: str, text: str, seen: Iterable[int]) -> None:
        """Record a version as the newest for `path`; identical text under one tag unions `seen`."""
        seen = frozenset(seen)
        now = self._clock()
        with self._state.write() as db:
            seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM hashline_snapshots").fetchone()[0])
            row = db.execute(
                "SELECT id, seen FROM hashline_snapshots"
                " WHERE session_id = ? AND path = ? AND tag = ? AND text = ? AND recorded_at >= ?"
                " ORDER BY seq DESC LIMIT 1",
                (self.session, path, tag, text, now - self.limits.ttl_seconds),
            ).fetchone()
            if row is not None:
                merged = decode_seen(row["seen"]) | seen
                db.execute(
                    "UPDATE hashline_snapshots SET seen = ?, seq = ?, recorded_at = ? WHERE id = ?",
                    (encode_seen(merged), seq, now, row["id"]),
                )
            else:
                db.execute(
                    "INSERT INTO hashline_snapshots"
                    " (session_id, path, tag, text, bytes, seen, seq, recorded_at) VALUES (?,?,?,?,?,?,?,?)",
                    (self.session, path, tag, text, len(text.encode("utf-8")), encode_seen(seen), seq, now),
                )
            self._evict(db, path, now)

    def mark_seen(self, path: str, tag: str, seen: Iterable[int]) -> None:
        """Add rows to the seen set of the snapshot `get(path, tag)` returns, keeping its recency."""
        with self._state.write() as db:
            row = db.execute(
                "SELECT id, seen FROM hashline_snapshots"
                " WHERE session_id = ? AND path = ? AND tag = ? AND recorded_at >= ?"
                " ORDER BY seq DESC LIMIT 1",
                (self.session, path, tag, self._cutoff()),
            ).fetchone()
            if row is not None:
                merged = decode_seen(row["seen"]) | frozenset(seen)
                db.execute(
                    "UPDATE hashline_snapshots SET seen = ? WHERE id = ?", (encode_seen(merged), row["id"])
                )

    # ----- what the tools need beyond the protocol -------------------------------------------

    def move(self, source: str, dest: str) -> None:
        """Carry `source`'s history to `dest` after an MV, so its tags stay valid there."""
        with self._state.write() as db:
            db.execute(
                "DELETE FROM hashline_snapshots WHERE session_id = ? AND path = ?", (self.session, dest)
            )
            db.execute(
                "UPDATE hashline_snapshots SET path = ? WHERE session_id = ? AND path = ?",
                (dest, self.session, source),
            )
            db.execute("DELETE FROM hashline_noops WHERE session_id = ? AND path = ?", (self.session, source))

    def paths_with(self, basename: str, tag: str) -> list[str]:
        """Paths of this session with a live snapshot under `tag` whose last component is `basename`."""
        rows = self._state.query(
            "SELECT DISTINCT path FROM hashline_snapshots WHERE session_id = ? AND tag = ? AND recorded_at >= ?",
            (self.session, tag, self._cutoff()),
        )
        return sorted(r["path"] for r in rows if posixpath.basename(r["path"]) == basename)

    def noop_streak(self, path: str, payload: str) -> int:
        """Count one no-op edit of `path`; the result is how many byte-identical no-ops ran in a row."""
        digest = hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()
        now = self._clock()
        with self._state.write() as db:
            db.execute("DELETE FROM hashline_noops WHERE updated_at < ?", (now - self.limits.ttl_seconds,))
            row = db.execute(
                "SELECT payload_sha, count FROM hashline_noops WHERE session_id = ? AND path = ?",
                (self.session, path),
            ).fetchone()
            count = row["count"] + 1 if row is not None and row["payload_sha"] == digest else 1
            db.execute(
                "INSERT OR REPLACE INTO hashline_noops (session_id, path, payload_sha, count, updated_at)"
                " VALUES (?,?,?,?,?)",
                (self.session, path, digest, count, now),
            )
        return count

    def clear_noops(self, paths: Iterable[str]) -> None:
        """End the no-op streak of paths an edit changed."""
        paths = list(paths)
        if not paths:
            return
        with self._state.write() as db:
            db.executemany(
                "DELETE FROM hashline_noops WHERE session_id = ? AND path = ?",
                [(self.session, p) for p in paths],
            )

    # ----- bounds -----------------------------------------------------------------------------

    def _evict(self, db: sqlite3.Connection, path: str, now: float) -> None:
        limits = self.limits
        db.execute("DELETE FROM hashline_snapshots WHERE recorded_at < ?", (now - limits.ttl_seconds,))
        db.execute(
            "DELETE FROM hashline_snapshots WHERE session_id = ? AND path = ? AND id NOT IN"
            " (SELECT id FROM hashline_snapshots WHERE session_id = ? AND path = ? ORDER BY seq DESC LIMIT ?)",
            (self.session, path, self.session, path, limits.max_versions),
        )
        # Paths of this session, most recently recorded first, with their text size.
        mine = db.execute(
            "SELECT path, SUM(bytes) AS size FROM hashline_snapshots WHERE session_id = ?"
            " GROUP BY path ORDER BY MAX(seq) DESC",
            (self.session,),
        ).fetchall()
        drop = _over_budget(
            [(self.session, r["path"], r["size"]) for r in mine], limits.max_paths, limits.max_bytes
        )
        everyone = db.execute(
            "SELECT session_id, path, SUM(bytes) AS size FROM hashline_snapshots"
            " GROUP BY session_id, path ORDER BY MAX(seq) DESC"
        ).fetchall()
        kept = [
            (r["session_id"], r["path"], r["size"])
            for r in everyone
            if (r["session_id"], r["path"]) not in drop
        ]
        drop |= _over_budget(kept, limits.max_total_paths, limits.max_total_bytes)
        db.executemany("DELETE FROM hashline_snapshots WHERE session_id = ? AND path = ?", sorted(drop))


def _over_budget(paths: list[tuple[str, str, int]], max_paths: int, max_bytes: int) -> set[tuple[str, str]]:
    """The (session, path) keys to evict from a most-recent-first list so both bounds hold.

    Least recently used paths go first: the newest prefix that fits is kept, and the newest path is
    always kept, even when it alone exceeds the byte budget (it was just recorded).
    """
    total = 0
    for index, (_session, _path, size) in enumerate(paths):
        if index and (index >= max_paths or total + size > max_bytes):
            return {(session, path) for session, path, _size in paths[index:]}
        total += size
    return set()
