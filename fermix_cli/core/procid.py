"""Which process owns a record, and whether that process still lives.

A record a process keeps open while it works (a delegated or interactive model run, a harness run)
names its owner as `host:pid:start`, where `start` is the kernel's boot id and the process's start time
(field 22 of /proc/PID/stat), so a pid the kernel handed to a new process is not taken for the old
one. A later process on the same host can then tell an owner that died (SIGKILL, a crash, a reboot)
from one that is still at work, and close what it left open.
"""

from __future__ import annotations

import os


def process_start(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot) with the boot id, or None if the
    process is gone or a zombie (or there is no /proc to ask)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return f"{boot}:{fields[19].decode()}"


def owner_identity() -> str:
    """This process as an owner: `host:pid:start` (start empty where /proc is not there)."""
    pid = os.getpid()
    return f"{os.uname().nodename}:{pid}:{process_start(pid) or ''}"


_CURRENT: dict[int, str] = {}


def current_owner() -> str:
    """`owner_identity()`, computed once per process."""
    pid = os.getpid()
    found = _CURRENT.get(pid)
    if found is None:
        found = _CURRENT[pid] = owner_identity()
    return found


def owner_gone(owner: str) -> bool:
    """Whether the process `owner` names has ended. Only ever True on the owner's own host, and only
    when that is certain: no such process, or one started later under the same pid."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != os.uname().nodename or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if start:
        return process_start(pid) != start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def pidfd_open(pid: int) -> int | None:
    """A pidfd for the child `pid` (readable once it has exited), or None where the system has none
    (not Linux, a kernel before 5.3, a sandbox that refuses the call). The caller closes it."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd
