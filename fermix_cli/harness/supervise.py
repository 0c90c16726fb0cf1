"""The supervisor of one coding run: started detached, it runs the vendor CLI and records how it ended.

This module uses the standard library only and is run as `python -I -c <this source> RUN_DIR`, so it
does not need fermix importable (the child environment carries no PYTHONPATH) and works from the
zipapp. It is the leader of its own session and process group; the vendor CLI and everything it forks
stay in that group, so `cancel_coding_run` ends the whole tree with one `killpg`. When the CLI exits
(or its time is up) the supervisor ends whatever the CLI left behind in the group, then writes
`exit.json` atomically. A run directory with no `exit.json` whose supervisor is gone was lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

GRACE_S = 1.0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _group_members(pgid: int) -> list[int]:
    # core.shell.group_members does this for fermix; this script runs without fermix importable.
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def _end_group() -> None:
    """SIGTERM to every other member of this group, then SIGKILL to those still there after the grace."""
    pgid = os.getpgid(0)
    if pgid != os.getpid():  # not the leader of a group of our own: never touch the caller's group
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    members = _group_members(pgid)
    for pid in members:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while members and time.monotonic() < deadline:
        time.sleep(0.02)
        members = _group_members(pgid)
    for pid in members:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _write_exit(run_dir: str, record: dict[str, object]) -> None:
    tmp = os.path.join(run_dir, f".exit.json.{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(run_dir, "exit.json"))


def main(run_dir: str) -> int:
    with open(os.path.join(run_dir, "spec.json"), encoding="utf-8") as f:
        spec = json.load(f)
    started = _now()
    with (
        open(os.path.join(run_dir, "stdout.log"), "ab") as out,
        open(os.path.join(run_dir, "stderr.log"), "ab") as err,
    ):
        try:
            proc = subprocess.Popen(
                spec["argv"],
                cwd=spec["cwd"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                close_fds=True,
            )
        except OSError as e:
            _write_exit(
                run_dir, {"exit_code": None, "spawn_error": str(e), "started_at": started, "ended_at": _now()}
            )
            return 0
        timed_out = False
        try:
            code = proc.wait(timeout=float(spec["timeout_s"]))
        except subprocess.TimeoutExpired:
            timed_out = True
            _end_group()
            code = proc.wait()
        else:
            _end_group()
    record: dict[str, object] = {
        "exit_code": code,
        "timed_out": timed_out,
        "started_at": started,
        "ended_at": _now(),
    }
    if code is not None and code < 0:
        record["signal"] = -code
    _write_exit(run_dir, record)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
