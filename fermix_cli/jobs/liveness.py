"""Who holds a claim, and whether it is still alive.

Every process that claims runs holds an exclusive `flock` on its own lock file,
`<data dir>/run/jobs/<token>.lock`, for as long as it lives; `claimed_by` on a run row is
`host:pid:token`. The kernel drops the lock when the holder dies however it dies (SIGKILL included),
so a later `fermix jobs run` on the same host can tell a dead claimant from a slow one without
trusting pids, which get reused. Claims from another host fall back to their lease.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Literal

from ..core.paths import FermixPaths
from ..core.records import Record

Liveness = Literal["alive", "dead", "remote"]


def hostname() -> str:
    """This machine's name (what socket.gethostname() says, without importing socket)."""
    return os.uname().nodename


def runners_dir(paths: FermixPaths) -> Path:
    return paths.run_dir / "jobs"


def scheduler_lock_path(paths: FermixPaths) -> Path:
    return paths.run_dir / "scheduler.lock"


def _lock_file(paths: FermixPaths, token: str) -> Path:
    return runners_dir(paths) / f"{token}.lock"


class Runner(Record):
    """This process as a claimant: its `claimed_by` string and the held lock that proves it lives."""

    paths: FermixPaths
    token: str
    claimed_by: str
    fd: int | None

    @classmethod
    def start(cls, paths: FermixPaths) -> Runner:
        """A fresh identity with its lock taken. The file is locked under a temporary name and then
        renamed, so no one ever finds it under its real name unlocked (and sweeps it away)."""
        token = os.urandom(16).hex()
        directory = paths.ensure_dir(runners_dir(paths))
        tmp = directory / f".{token}.new"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(tmp, directory / f"{token}.lock")
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        return cls(paths, token, f"{hostname()}:{os.getpid()}:{token}", fd)

    @classmethod
    def adopt(cls, paths: FermixPaths, claimed_by: str, fd: int) -> Runner:
        """Take over an identity whose locked descriptor a parent handed down (run_job_now)."""
        os.set_inheritable(fd, False)
        return cls(paths, claimed_by.rsplit(":", 1)[-1], claimed_by, fd)

    def release(self) -> None:
        """Give up the identity: remove the lock file, then drop the lock."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            _lock_file(self.paths, self.token).unlink()
        os.close(self.fd)
        self.fd = None

    def detach(self) -> None:
        """Close this process's descriptor only; a child that inherited it keeps the lock (and the file)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def split_claimant(claimed_by: str) -> tuple[str, int | None, str]:
    """(host, pid, token) of a `claimed_by` value."""
    host, _, rest = claimed_by.partition(":")
    pid_text, _, token = rest.partition(":")
    return host, int(pid_text) if pid_text.isdigit() else None, token


def liveness(paths: FermixPaths, claimed_by: str) -> Liveness:
    """Whether the claimant of a run still lives: its lock is held (alive) or free or gone (dead)."""
    host, _, token = split_claimant(claimed_by)
    if host != hostname():
        return "remote"
    if not token or "/" in token or token.startswith("."):
        return "dead"
    path = _lock_file(paths, token)
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return "dead"
    except OSError:
        return "alive"  # cannot look: never declare a claimant dead on a guess
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return "alive"
    with contextlib.suppress(OSError):
        path.unlink()
    os.close(fd)
    return "dead"


def sweep_dead(paths: FermixPaths, older_than_seconds: float = 3600.0) -> int:
    """Remove lock files that runners which died without cleaning up left behind; returns how many.

    Only files whose lock is free are removed, and only old ones, so a claimant whose run is still to
    be reconciled is found dead by `liveness` (a missing file means dead too) either way.
    """
    import time

    directory = runners_dir(paths)
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    cutoff = time.time() - older_than_seconds
    removed = 0
    for entry in entries:
        if not entry.name.endswith(".lock") or entry.name.startswith("."):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime > cutoff:
                continue
        except OSError:
            continue
        if liveness(paths, f"{hostname()}:0:{entry.name[: -len('.lock')]}") == "dead":
            removed += 1
    return removed


class SchedulerLock:
    """The single scheduler lock (reference 8.3): a non-blocking flock; a second holder is told no."""

    def __init__(self, paths: FermixPaths) -> None:
        self.path = scheduler_lock_path(paths)
        self.paths = paths
        self.fd: int | None = None

    def try_acquire(self) -> bool:
        if self.fd is not None:
            return True
        self.paths.ensure_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
