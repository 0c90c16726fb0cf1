"""Files parsed once per version: a parse kept for a path until the file changes.

Skill files, subagent agent files and mock provider scripts are read again by every run (a fan-out's
workers each load them); what they parse to is read-only, so an unchanged file is not parsed again. A
file's version is its device, inode, size, modification and change times: an edit (even to the same
size, with its mtime put back, which moves the ctime), a replacement or a touch is read again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


def file_version(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class ParsedFiles(Generic[T]):
    """Parses kept by key (usually the path) with the version of the file they came from."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[tuple[int, ...], T]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, st: os.stat_result, parse: Callable[[], T]) -> T:
        """The parse kept for `key` if the file is still at version `st` (the caller's `os.stat` of
        it, taken before reading), else `parse()`, kept. A parse that raises keeps nothing."""
        version = file_version(st)
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and kept[0] == version:
            return kept[1]
        value = parse()
        with self._lock:
            self._kept[key] = (version, value)
        return value
