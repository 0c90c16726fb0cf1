"""The profile's user-data directory as Chromium sees it: its download preferences, and who holds it.

Chromium keeps one browser per user-data directory (ProcessSingleton): a second one started on it exits
with status 21, and the holder's `<host>-<pid>` is the target of the directory's `SingletonLock` symlink.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from ..core.paths import make_private_dirs
from .runfiles import ProfileFiles, process_alive, write_json


def write_download_preferences(files: ProfileFiles) -> None:
    """Point the profile's download directory at its quarantine folder, never prompting.

    The warden denies downloads over DevTools for the browser's whole life and `action=download` allows
    them only into the workspace for its own duration; this is the layer under both, for whatever
    escapes them (a moment before the warden connects): Chromium's default is the user's ~/Downloads.
    """
    import json

    prefs_file = files.user_data / "Default" / "Preferences"
    try:
        prefs = json.loads(prefs_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        prefs = {}  # a new profile (or one Chromium left unreadable): start from nothing
    if not isinstance(prefs, dict):
        prefs = {}
    folder = str(files.quarantine)
    for section, values in (
        ("download", {"default_directory": folder, "prompt_for_download": False, "directory_upgrade": True}),
        ("savefile", {"default_directory": folder}),
    ):
        kept = prefs.get(section)
        prefs[section] = {**(kept if isinstance(kept, dict) else {}), **values}
    make_private_dirs(prefs_file.parent)
    write_json(prefs_file, prefs)


def profile_owner(files: ProfileFiles) -> int | None:
    """The pid of the Chromium on this host holding the profile (its `SingletonLock`), or None."""
    import socket

    try:
        owner = os.readlink(files.user_data / "SingletonLock")
    except OSError:
        return None
    host, _, pid_text = owner.rpartition("-")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    return int(pid_text)


def may_hold_profile(files: ProfileFiles, pid: int) -> bool:
    """Whether the Chromium launched as `pid` holds the profile: its lock names it (or a process it
    started, should a wrapper fork rather than exec), or no lock names anyone (a build without one)."""
    owner = profile_owner(files)
    for _ in range(8):
        if owner is None or owner == pid:
            return True
        owner = _parent(owner)
    return False


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
        parent = int(raw[raw.rfind(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return -1  # unknown: not a descendant
    return parent if parent > 1 else -1


def kill_profile_owner(files: ProfileFiles) -> bool:
    """Kill the Chromium that holds the profile's user-data directory, if it is one fermix started for it.

    The owner is killed only when it runs on this host with exactly this profile's `--user-data-dir`.
    """
    pid = profile_owner(files)
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except OSError:
        return False
    if f"--user-data-dir={files.user_data}".encode() not in argv:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(pid) == pid:  # launched by fermix: its own session, helpers included
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not process_alive(pid)
