"""Files that are neither a directory nor a regular file (a FIFO, a socket, a device) named as a
search's `path`: skipped at once and reported, never handed to rg, which would block on a FIFO until
the deadline and read a device without end. (rg's own walk skips such files in a directory.)"""

from __future__ import annotations

import os
import stat

from .report import Omission

_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def special_kind(path: str) -> str | None:
    """What `path` is when it is neither a directory nor a regular file ("a FIFO", ...), else None
    (also when it cannot be looked at: the search reports that as it finds it)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def special_omission(shown: str, kind: str, tool: str) -> Omission:
    """The `special` entry for the file `shown` (as the answer names it), which is `kind`."""
    return Omission(
        "special",
        1,
        "file",
        f"{shown} is {kind}, not a regular file, so it was not read ({tool} reads regular files only: "
        "a FIFO or device can block or never end)",
    )
