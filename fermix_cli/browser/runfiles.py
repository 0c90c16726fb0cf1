"""What a profile records under `<data>/run/browser/`, so every later CLI call finds its browser.

- `<profile>.json`: the launch record (endpoint, DevTools and proxy ports, pids, user-data dir), written
  once by `start`.
- `<profile>.session.json`: the active tab, the order tabs were opened, and each tab's snapshot refs
  (keyed by target id and loader id, so a ref never outlives its document). Its mtime is "last used".
- `<profile>.warden.json`: written by the warden: the targets it guards and any open JavaScript dialog.
- `<profile>.console.jsonl`: console messages, page errors and refusals the warden saw (target "" for the
  proxy's, which every tab's console lists).
- `<profile>.dialog-request.json`: a call asking the warden to answer a dialog (only a session that had
  the Page domain on before the dialog opened can answer it, and that is the warden's).
- `<profile>.download-request.json`: `action=download` asking the warden to allow downloads into the
  workspace for a while, or to deny them again. The warden owns the download behaviour: one set over a
  short-lived DevTools connection is reset to Chromium's default (the user's ~/Downloads) when it closes.

Every JSON file is replaced atomically (temp file + rename), so a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.paths import FermixPaths, make_private_dirs


class ProfileFiles:
    """The run files and the user-data directory of one profile."""

    def __init__(self, paths: FermixPaths, profile: str) -> None:
        self.profile = profile
        self.run_dir = paths.run_dir / "browser"
        self.launch = self.run_dir / f"{profile}.json"
        self.session = self.run_dir / f"{profile}.session.json"
        self.warden = self.run_dir / f"{profile}.warden.json"
        self.console = self.run_dir / f"{profile}.console.jsonl"
        self.dialog_request = self.run_dir / f"{profile}.dialog-request.json"
        self.download_request = self.run_dir / f"{profile}.download-request.json"
        self.log = self.run_dir / f"{profile}.log"
        self.lock = self.run_dir / f"{profile}.lock"  # held (flock) by a call starting or stopping it
        self.user_data = paths.data_dir / "browser" / "profiles" / profile
        # Where Chromium's own download default points (never the user's ~/Downloads): nothing should
        # land here, since downloads are denied outside action=download, but if one ever does, it stays
        # inside the profile.
        self.quarantine = self.user_data / "fermix-download-quarantine"

    def ensure(self) -> None:
        make_private_dirs(self.run_dir)
        make_private_dirs(self.user_data)
        make_private_dirs(self.quarantine)

    def clear(self) -> None:
        """Forget a browser that is gone: its launch record, session, warden state and console."""
        for path in (
            self.launch,
            self.session,
            self.warden,
            self.console,
            self.dialog_request,
            self.download_request,
        ):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def read_json(path: Path) -> dict[str, Any] | None:
    """A run file's object, or None when it is missing or unreadable (a crash mid-write is impossible)."""
    try:
        data = json.loads(path.read_bytes())
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace a run file atomically, mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(json.dumps(data, separators=(",", ":")).encode())
    os.replace(tmp, path)


def process_alive(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie, killed but not yet reaped, counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): the signal test is all there is
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def process_start(pid: int) -> str:
    """The kernel's start time of `pid` (field 22 of /proc/PID/stat), to tell a reused pid apart; '' if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else ""


# The lock files this thread holds -> depth (a stop inside a start re-enters). Per thread: another
# thread of this process (a subagent worker) opens the file itself, and its flock waits like any other.
_HELD = threading.local()


@contextlib.contextmanager
def profile_lock(files: ProfileFiles, timeout: float) -> Iterator[None]:
    """Hold the profile's start/stop lock (an flock, so a killed holder releases it at once).

    Two calls starting the same profile would launch two browsers on one user-data directory, and one
    call's clean-up would delete the other's launch record: the second call waits here, then finds the
    first one's browser running.
    """
    import fcntl
    import time

    from ..core.errors import ToolError

    key = str(files.lock)
    held: dict[str, int] = _HELD.__dict__.setdefault("depth", {})
    if key in held:
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    make_private_dirs(files.run_dir)
    fd = os.open(files.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ToolError(
                        "busy",
                        f"another call has been starting or stopping the browser of profile {files.profile!r} "
                        f"for {timeout:g} s; retry in a moment (action=status shows what it did)",
                        {"profile": files.profile},
                    ) from None
                time.sleep(0.05)
        held[key] = 1
        try:
            yield
        finally:
            del held[key]
    finally:
        os.close(fd)  # releases the flock
