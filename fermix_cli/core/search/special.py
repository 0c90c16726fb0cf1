"""Files that are neither a directory nor a regular file (a FIFO, a socket, a device). Named as a
search's `path`: skipped at once and reported, never handed to rg, which would block on a FIFO until
the deadline and read a device without end. Met in a directory: rg's walk passes over them, its log
names them (`RunStats.special`), and the answer counts them."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

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


def walked_special_omission(paths: list[str], tool: str, show: Callable[[str], str] = str) -> Omission | None:
    """The `special` entry for the FIFOs, sockets and devices a walk passed over, or None."""
    if not paths:
        return None
    n = len(paths)
    sample = ", ".join(show(p) for p in sorted(paths)[:3])
    what = "is a FIFO, socket or device" if n == 1 else "are FIFOs, sockets or devices"
    return Omission(
        "special",
        n,
        "file",
        f"{n:,} {what}, not regular files, so {'it was' if n == 1 else 'they were'} not read ({tool} reads "
        f"regular files only: a FIFO or device can block or never end) (e.g. {sample})",
    )
