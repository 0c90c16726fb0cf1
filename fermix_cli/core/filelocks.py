"""Per-file mutation locks that hold across processes (`fcntl.flock` on one lock file per path).

Every tool that rewrites a file from what it read (`write`, `hash_edit`, `file_edit`, `file_write`)
takes them, always in sorted canonical-path order so two batches cannot
deadlock. The lock files live in `<data dir>/run/locks` (a protected path), named by a hash of the
canonical path; they are never deleted, because unlinking a lock file another process holds open
would let a third process lock a different inode.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ToolError
from .paths import make_private_dirs

if TYPE_CHECKING:
    from .paths import FermixPaths

LOCK_TIMEOUT_SECONDS = 30.0
_POLL_SECONDS = 0.02


def mutation_lock_dir(paths: FermixPaths) -> Path:
    """The directory holding the per-file mutation locks of a home."""
    return paths.run_dir / "locks"


def lock_file_for(lock_dir: Path, path: str) -> Path:
    """The lock file that guards canonical `path`."""
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return lock_dir / f"{digest}.lock"


def _acquire(lock: Path, path: str, deadline: float) -> int:
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ToolError(
                        "locked",
                        f"{path} is being changed by another fermix process; retry in a moment.",
                        {"path": path},
                    ) from None
                time.sleep(_POLL_SECONDS)
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def mutation_locks(
    lock_dir: Path, paths: Iterable[str], *, timeout: float = LOCK_TIMEOUT_SECONDS
) -> Iterator[None]:
    """Hold the mutation lock of every path (sorted, de-duplicated) for the duration of the block."""
    deadline = time.monotonic() + timeout
    held: list[int] = []
    try:
        try:
            make_private_dirs(lock_dir)
            for path in sorted(set(paths)):
                held.append(_acquire(lock_file_for(lock_dir, path), path, deadline))
        except OSError as e:
            # Without the lock a concurrent edit could be lost, so nothing is changed.
            raise ToolError(
                "lock_failed",
                f"cannot take the file lock in {lock_dir} ({e.strerror or e}); nothing was changed. "
                "Check that the fermix home is writable.",
                {"lock_dir": str(lock_dir)},
            ) from None
        yield
    finally:
        for fd in reversed(held):
            os.close(fd)
