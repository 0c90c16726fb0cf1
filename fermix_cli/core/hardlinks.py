"""Hard links to protected files: a second name inside a root must not open a protected file.

Canonicalisation cannot see hard links (a link is just another name for the same inode), so the
sandbox compares inodes. Only a regular file with more than one link can be such a second name,
and only protected files with more than one link can be its target, so the walk below collects
just those, once per sandbox, and only when a linked file is actually asked for.
"""

from __future__ import annotations

import os
import stat

# Past this many entries under the protected paths the set is incomplete: fail closed.
MAX_WALKED = 50_000

FileId = tuple[int, int]


def linked_file_id(path: str) -> FileId | None:
    """(device, inode) of a regular file with more than one link, else None (also when missing)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink <= 1:
        return None
    return (st.st_dev, st.st_ino)


def protected_link_ids(entries: list[str]) -> frozenset[FileId] | None:
    """Ids of the multiply-linked regular files at or below `entries`; None when too many to walk."""
    ids: set[FileId] = set()
    walked = 0
    for entry in entries:
        for path in _walk(entry):
            walked += 1
            if walked > MAX_WALKED:
                return None
            file_id = linked_file_id(path)
            if file_id is not None:
                ids.add(file_id)
    return frozenset(ids)


def _walk(entry: str) -> list[str]:
    if not os.path.isdir(entry) or os.path.islink(entry):
        return [entry]
    found: list[str] = []
    for dirpath, _dirs, files in os.walk(entry, followlinks=False):
        found.extend(os.path.join(dirpath, f) for f in files)
        if len(found) > MAX_WALKED:
            break
    return found
