"""The snapshot store contract hashline reads and edits rely on, and an in-memory implementation."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol

from fermix_cli.tools.coding.snapshot_db import Snapshot

from ...core.records import Record, field

__all__ = ["MemorySnapshotStore", "Snapshot", "SnapshotRecord", "SnapshotStore"]


class SnapshotRecord(Record, frozen=True):
    """A snapshot for the caller to record once its effect is committed (for a read: at once)."""

    path: str
    tag: str
    text: str
    seen: frozenset[int]


class SnapshotStore(Protocol):
    """Per-session snapshots keyed by canonical path and tag (see hashline.md §1)."""

    def get(self, path: str, tag: str) -> Snapshot | None:
        """The most recently recorded snapshot with this tag, or None (unknown, expired, evicted)."""
        ...

    def record(self, path: str, tag: str, text: str, seen: Iterable[int]) -> None:
        """Record a version as the newest for `path`; identical text under one tag unions `seen`."""
        ...

    def mark_seen(self, path: str, tag: str, seen: Iterable[int]) -> None:
        """Add rows to the seen set of the snapshot `get(path, tag)` returns, keeping its recency."""
        ...


class _Version(Record):
    tag: str
    text: str
    seen: set[int] = field(default_factory=set)


class MemorySnapshotStore:
    """A `SnapshotStore` in memory: LRU of 30 paths, 4 versions per path, 64 MiB of text in total."""

    def __init__(self, max_paths: int = 30, max_versions: int = 4, max_bytes: int = 64 << 20) -> None:
        self._paths: OrderedDict[str, list[_Version]] = OrderedDict()
        self._max_paths = max_paths
        self._max_versions = max_versions
        self._max_bytes = max_bytes

    def get(self, path: str, tag: str) -> Snapshot | None:
        versions = self._paths.get(path, [])
        for index in range(len(versions) - 1, -1, -1):
            version = versions[index]
            if version.tag == tag:
                return Snapshot(version.text, frozenset(version.seen), index == len(versions) - 1)
        return None

    def record(self, path: str, tag: str, text: str, seen: Iterable[int]) -> None:
        versions = self._paths.setdefault(path, [])
        self._paths.move_to_end(path)
        match = next((v for v in versions if v.tag == tag and v.text == text), None)
        if match is None:
            match = _Version(tag, text)
        else:
            versions.remove(match)
        match.seen.update(seen)
        versions.append(match)
        del versions[: -self._max_versions]
        self._evict()

    def mark_seen(self, path: str, tag: str, seen: Iterable[int]) -> None:
        for version in reversed(self._paths.get(path, [])):
            if version.tag == tag:
                version.seen.update(seen)
                return

    def move(self, source: str, dest: str) -> None:
        """Carry `source`'s history to `dest` after an MV, so its tags stay valid there."""
        versions = self._paths.pop(source, None)
        if versions is not None:
            self._paths[dest] = versions

    def _evict(self) -> None:
        while len(self._paths) > self._max_paths:
            self._paths.popitem(last=False)
        total = sum(len(v.text.encode()) for vs in self._paths.values() for v in vs)
        while total > self._max_bytes and self._paths:
            _, versions = self._paths.popitem(last=False)
            total -= sum(len(v.text.encode()) for v in versions)
