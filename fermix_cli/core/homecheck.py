"""Whether the fermix home a process opened is still the one on disk.

A home deleted (or replaced) while a call runs leaves the process writing into an unlinked state.db:
SQLite reports every commit as a success and the work is gone. The home directory's and state.db's
device and inode are taken when they are opened and compared with what the paths name now before
anything is committed or reported as done; a difference is `home_vanished` (exit 1). The home
directory is held open meanwhile (state.db is, by SQLite): an inode in use is never handed to a new
file, so a home deleted and created again cannot pass for the old one.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ToolError
from .records import Record

FileId = tuple[int, int]


def file_id(path: Path) -> FileId | None:
    """(device, inode) of `path` (not following a final symlink), or None if nothing is there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class HomeIdentity(Record):
    """The home directory (and optionally its state.db) as they were when this process opened them."""

    home: Path
    home_id: FileId
    db: Path | None = None
    db_id: FileId | None = None
    fd: int | None = None

    @classmethod
    def capture(cls, home: Path, db: Path | None = None) -> HomeIdentity | None:
        """The identity now, the home held open; None if the home does not exist (nothing to lose yet)."""
        try:
            fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        st = os.fstat(fd)
        return cls(home, (st.st_dev, st.st_ino), db, None if db is None else file_id(db), fd)

    def release(self) -> None:
        """Let go of the home directory's descriptor."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def problem(self) -> str | None:
        """What changed since capture, or None if the home (and its state.db) are still the same."""
        now = file_id(self.home)
        if now is None:
            return f"the fermix home {self.home} was deleted while this call ran"
        if now != self.home_id:
            return f"the fermix home {self.home} was replaced by another directory while this call ran"
        if self.db is not None and self.db_id is not None:
            db_now = file_id(self.db)
            if db_now is None:
                return f"{self.db} was deleted while this call ran"
            if db_now != self.db_id:
                return f"{self.db} was replaced by another file while this call ran"
        return None

    def check(self) -> None:
        """Raise `home_vanished` if the home (or its state.db) is no longer the one opened."""
        why = self.problem()
        if why is not None:
            raise ToolError(
                "home_vanished",
                f"{why}; what it wrote went to a file no longer in the home and is lost, so this call "
                "is not reported as done. Check FERMIX_HOME and run the call again.",
                {"home": str(self.home)},
            )
