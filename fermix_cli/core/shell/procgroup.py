"""Run one child process in its own process group, with a deadline, an output cap and a clean ending.

Used by shell, bash, the git tools and `[sandbox.env]` helper commands. The ending is the same
whatever stops the child: on a timeout or when the output passes the cap, the whole group gets
SIGTERM, a 200 ms grace, then SIGKILL (also when the caller cancels the call through its
`CancelToken`). A caller may instead let the child run past the cap (`overflow="discard"`: a write
must not be stopped halfway for what it prints); the output past the cap is then read and dropped.
After a normal exit the group gets SIGKILL at once, so no
background grandchild outlives the command. On Linux, processes that left the group (`setsid`,
`setpgid`) but still carry this run's marker in their environment, or stayed in its session, are
swept too. A process that both leaves the session and drops the marker escapes: this is cleanup of
common leftovers, not an OS sandbox.

All of that needs this process alive. For one that is killed outright (SIGKILL, the OOM killer, a crash)
a shell command carries a lifeline (`lifeline=True`, the script wrapped by `with_lifeline`): its stdin is
the read end of a pipe whose write end only this process holds, and before the command runs the shell
starts a watchdog in the command's own process group that waits on that pipe. The kernel closes the
write end however this process ends; the watchdog then reads end of file and SIGKILLs its group (`kill
-9 0`), the command and its grandchildren with it. It is inside the group, so the group's id cannot be
reused while it waits, and it needs no next fermix start. A normal ending kills the watchdog with the
group. PR_SET_PDEATHSIG was the other way: Linux only, it signals only the direct child (not its
group), fires when the spawning thread (not process) ends, and needs a `preexec_fn`, which is unsafe
in a threaded process (`fermix mcp serve`) and costs the fast spawn path.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..procid import pidfd_open
from ..records import Record

if TYPE_CHECKING:
    from ..cancel import CancelToken

MAX_OUTPUT_BYTES = 1024 * 1024
KILL_GRACE_S = 0.2
REDACTED = "«redacted»"
TRUNCATED_EXIT = 124
# Every child fermix starts carries this variable (a fresh id per run). `fermix sandbox confirm`
# looks for it to refuse confirmations coming from a process fermix spawned.
SPAWN_MARKER = "FERMIX_SPAWNED"
_READ_CHUNK = 65536
# With overflow="discard", the end of the output is kept too (where a failing command says why).
DISCARD_TAIL_BYTES = 64 * 1024
_CUT_MARK = b"\n[... output cut here ...]\n"
_DRAIN_S = 0.5


class ProcessOutcome(Record, frozen=True):
    """How a child ended. `output` is redacted and cut to the cap (`truncated` says it was cut).

    `stopped_at_cap`: the output passed the cap and the group was stopped there (`exit_code` 124);
    never with `overflow="discard"`, where the child runs to its end and keeps its own exit code.
    `cancelled`: the caller's cancel token stopped it (its group got SIGTERM, then SIGKILL).
    """

    exit_code: int
    output: bytes
    truncated: bool
    timed_out: bool
    duration_ms: int
    total_bytes: int
    cancelled: bool = False
    stopped_at_cap: bool = False

    def text(self) -> str:
        """The output as text; bytes that are not UTF-8 become U+FFFD (see `undecodable_bytes`)."""
        return self.output.decode("utf-8", "replace")

    def undecodable_bytes(self) -> int:
        """How many output bytes are not UTF-8 (each is lost to a U+FFFD in `text`)."""
        try:
            self.output.decode("utf-8")
        except UnicodeDecodeError:
            # surrogateescape turns exactly one undecodable byte into one lone surrogate.
            return sum(1 for c in self.output.decode("utf-8", "surrogateescape") if "\udc80" <= c <= "\udcff")
        return 0


def new_spawn_id() -> str:
    return secrets.token_hex(16)


# Moves the lifeline (stdin) to fd 9 and stdin to /dev/null, starts the watchdog (a subshell of a
# subshell, so the command's `wait`, `jobs` and `$!` never see it; its redirections keep it off the
# output pipe), then closes fd 9 in the shell that runs the command. One line, so the command keeps its
# line numbers and a syntax error in it still runs nothing.
LIFELINE_PREAMBLE = "exec 9<&0 </dev/null; ( { read -r _ <&9; kill -9 0; } >/dev/null 2>&1 & ); exec 9<&-; "


def with_lifeline(script: str) -> str:
    """`script` for `sh -c`, run behind the watchdog that `run_captured(..., lifeline=True)` needs."""
    return LIFELINE_PREAMBLE + script


def run_captured(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    cap: int = MAX_OUTPUT_BYTES,
    redact: Iterable[str] = (),
    cancel: CancelToken | None = None,
    lifeline: bool = False,
    overflow: Literal["stop", "discard"] = "stop",
    on_output: Callable[[bytes], None] | None = None,
) -> ProcessOutcome:
    """Run `argv` with stdout and stderr merged, stdin from /dev/null, in a new session.

    `env` is used as given; the caller builds it. Values in `redact` are replaced by «redacted»
    before the output is cut to `cap`, so a secret straddling the cut cannot leak in part. When
    `cancel` is set while the child runs, its group is stopped as on a timeout and the outcome says
    `cancelled`. Output past `cap` stops the group (`overflow="stop"`), or is read and dropped while
    the child runs to its end (`"discard"`: the output kept is its beginning and its last 64 KiB, at
    most `cap` bytes in all, with a line where the middle was cut). `on_output` sees every chunk as
    it arrives, unredacted and uncut (for a caller that parses a listing longer than it keeps).
    With `lifeline`, stdin is instead the pipe that ends when this process does: `argv` must be
    `sh -c` of a script wrapped by `with_lifeline`, which moves it off stdin.
    Raises FileNotFoundError / PermissionError when the program cannot be started.
    """
    secrets_b = sorted({s.encode("utf-8", "surrogateescape") for s in redact if s}, key=len, reverse=True)
    # A secret straddling a cut must be whole in what is kept, so it is redacted, not half-shown.
    overlap = max((len(s) for s in secrets_b), default=1) - 1
    keep = cap + overlap
    child_env = dict(env)
    spawn_id = child_env.setdefault(SPAWN_MARKER, new_spawn_id())
    started = time.monotonic()
    deadline = started + max(timeout_s, 0.0)
    # Both ends are close-on-exec here, so no other child inherits the write end; Popen gives the
    # read end to this child alone, as its stdin.
    ends = os.pipe() if lifeline else None
    held = _HeldSignals()
    try:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=child_env,
                stdin=subprocess.DEVNULL if ends is None else ends[0],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        except OSError:
            held.release()
            raise  # the program could not be started: nothing runs
        except BaseException:
            # Something other than a held signal broke Popen after the child started: there is no Popen
            # object to end it with, so find what this run started by its spawn marker.
            held.release()
            _sweep(None, spawn_id)
            raise
        finally:
            if ends is not None:
                os.close(ends[0])
        try:
            # A SIGTERM, SIGHUP or Ctrl-C that arrived while Popen ran is delivered here, where the group
            # is known.
            held.release()
            return _supervise(
                proc, spawn_id, secrets_b, keep, cap, started, deadline, cancel, overflow, on_output, overlap
            )
        except BaseException:
            # SIGTERM becomes SystemExit in the main thread: end the group whatever the supervision had
            # armed by then, never leave it running.
            if proc.returncode is None:
                _kill_group(proc.pid)
                _sweep(proc.pid, spawn_id)
                proc.wait()
            raise
    finally:
        # The group is ended by now (the watchdog with it); were anything of it left, this ends it.
        if ends is not None:
            os.close(ends[1])


class _HeldSignals:
    """Hold SIGTERM, SIGINT and SIGHUP (main thread only) until `release`, which restores and re-delivers
    them.

    The Python handlers for them raise (SystemExit, KeyboardInterrupt), and one raised inside Popen,
    after the child started, would leave it running with no handle on it: on a loaded machine the child
    can exec and start children of its own before Popen returns.
    """

    _HELD = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}
        self._pending: list[int] = []
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in self._HELD:
            handler = signal.getsignal(sig)
            if callable(handler):  # SIG_DFL / SIG_IGN raise nothing in Python: leave them alone
                self._previous[sig] = signal.signal(sig, self._hold)

    def _hold(self, signum: int, _frame: Any) -> None:
        self._pending.append(signum)

    def release(self) -> None:
        previous, self._previous = self._previous, {}
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        pending, self._pending = self._pending, []
        for sig in dict.fromkeys(pending):
            signal.raise_signal(sig)


def _supervise(
    proc: subprocess.Popen[bytes],
    spawn_id: str,
    secrets_b: list[bytes],
    keep: int,
    cap: int,
    started: float,
    deadline: float,
    cancel: CancelToken | None,
    overflow: Literal["stop", "discard"],
    on_output: Callable[[bytes], None] | None,
    overlap: int,
) -> ProcessOutcome:
    """Collect the output of `proc` until it exits, times out, overflows (`overflow="stop"`) or is
    cancelled; end its group."""
    assert proc.stdout is not None
    leader = proc.pid
    stop_at_cap = overflow == "stop"
    buf = bytearray()
    tail_cap = 0 if stop_at_cap else min(DISCARD_TAIL_BYTES, cap // 4)
    tail = bytearray()  # the last bytes past `buf`, when discarding
    total = 0
    timed_out = over_cap = cancelled = False
    out_fd = proc.stdout.fileno()
    os.set_blocking(out_fd, False)
    sel = selectors.DefaultSelector()
    sel.register(out_fd, selectors.EVENT_READ, "out")
    pidfd = pidfd_open(leader)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ, "exit")
    waking = contextlib.ExitStack()
    if cancel is not None:
        sel.register(waking.enter_context(cancel.wake_fd()), selectors.EVENT_READ, "cancel")

    def take(chunk: bytes) -> None:
        nonlocal total
        total += len(chunk)
        if on_output is not None:
            on_output(chunk)
        room = keep - len(buf)
        if room > 0:
            buf.extend(chunk[:room])
            chunk = chunk[room:]
        if chunk and tail_cap:
            tail.extend(chunk)
            if len(tail) > tail_cap + overlap:
                del tail[: len(tail) - tail_cap - overlap]

    try:
        out_open = True
        while True:
            # The leader is left a zombie (WNOWAIT) until its group is killed, so its pid, which
            # is also the group and session id, cannot be reused by an unrelated process meanwhile.
            if _exited(leader):
                break
            if cancel is not None and cancel.cancelled:
                cancelled = True
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            # With a pidfd the selector also wakes when the leader exits; without one, poll.
            wait = remaining if pidfd is not None else min(remaining, 0.02)
            if not sel.get_map():
                time.sleep(wait)
                continue
            for key, _ in sel.select(wait):
                if key.data != "out":
                    continue  # the leader exited or the call was cancelled: the loop's checks see it
                chunk = _read(out_fd)
                if chunk is None:
                    continue
                if not chunk:
                    sel.unregister(out_fd)
                    out_open = False
                    continue
                take(chunk)
            if stop_at_cap and total > cap:
                over_cap = True
                break
        if timed_out or over_cap or cancelled:
            _terminate_group(leader)
        _kill_group(leader)
        _sweep(leader, spawn_id)
        proc.wait()
        if not (over_cap or cancelled):
            # What the children wrote before they ended is still in the pipe.
            end = time.monotonic() + _DRAIN_S
            while out_open and time.monotonic() < end:
                if not sel.select(max(0.0, end - time.monotonic())):
                    break
                chunk = _read(out_fd)
                if chunk is None:
                    continue
                if not chunk:
                    break
                take(chunk)
                if stop_at_cap and total > cap:
                    over_cap = True
                    break
    finally:
        sel.close()
        waking.close()
        if pidfd is not None:
            os.close(pidfd)
        proc.stdout.close()
        if proc.returncode is None:
            _kill_group(leader)
            proc.wait()
    if tail and total == len(buf) + len(tail):
        # Nothing was dropped: redact the output whole (a secret may straddle the two buffers).
        data = _redact(bytes(buf) + bytes(tail), secrets_b)
        last = _cut_utf8_front(data, tail_cap) if len(data) > cap else b""
        truncated = False
    else:
        data = _redact(bytes(buf), secrets_b)
        # The tail's first `overlap` bytes may hold the end of a secret cut in two: left out, with
        # any secret that crosses into the rest.
        last = _cut_utf8_front(_redact_from(bytes(tail), secrets_b, overlap), tail_cap) if tail else b""
        truncated = over_cap or total > len(buf)  # stopped, or bytes past what was kept were dropped
    if last:
        data = _cut_utf8(data, max(0, cap - len(last) - len(_CUT_MARK))) + _CUT_MARK + last
        truncated = True
    if truncated or len(data) > cap:
        # Also when only the redaction made it longer than the cap (the command itself ran to its
        # end, so its exit code stands): what is cut is said to be cut.
        data = _cut_utf8(data, cap)
        truncated = True
    code = proc.returncode
    if over_cap:
        code = TRUNCATED_EXIT
    elif code < 0:
        code = 128 - code
    return ProcessOutcome(
        exit_code=code,
        output=data,
        truncated=truncated,
        timed_out=timed_out,
        duration_ms=int((time.monotonic() - started) * 1000),
        total_bytes=total,
        cancelled=cancelled,
        stopped_at_cap=over_cap,
    )


def _read(fd: int) -> bytes | None:
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None


def _exited(pid: int) -> bool:
    """True once the leader has exited; it stays a zombie (not reaped) until Popen.wait."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None and info.si_pid == pid


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _terminate_group(pgid: int) -> None:
    """SIGTERM the group and give it a short grace to finish."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    end = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < end:
        if not _group_has_live_members(pgid):
            return
        time.sleep(0.01)


def _kill_group(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)


def _group_has_live_members(pgid: int) -> bool:
    if not os.path.isdir("/proc"):
        return _signal_group(pgid, 0)
    return any(pg == pgid and state != "Z" for _pid, _ppid, pg, _sid, state in _proc_table())


def group_members(pgid: int) -> list[int]:
    """The live (not zombie or dead) processes of group `pgid`, this process excluded; empty without /proc."""
    me = os.getpid()
    return [
        pid
        for pid, _ppid, pg, _sid, state in _proc_table()
        if pg == pgid and pid != me and state not in ("Z", "X")
    ]


def marked_processes(spawn_id: str) -> list[int]:
    """The live processes carrying `FERMIX_SPAWNED=spawn_id` in their environment, this one excluded
    (a child fermix started with that marker, found after the process that started it is gone)."""
    marker = f"{SPAWN_MARKER}={spawn_id}".encode()
    me = os.getpid()
    return [
        pid
        for pid, _ppid, _pg, _sid, state in _proc_table()
        if pid != me and state not in ("Z", "X") and _carries_marker(pid, marker)
    ]


def _proc_table() -> list[tuple[int, int, int, int, str]]:
    """(pid, ppid, pgid, sid, state) of every process we can see; empty where /proc is missing."""
    rows: list[tuple[int, int, int, int, str]] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return rows
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may contain spaces or parentheses itself.
        fields = raw[raw.rfind(b")") + 2 :].split()
        try:
            rows.append((int(name), int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode()))
        except (IndexError, ValueError):
            continue
    return rows


def _carries_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def _sweep(leader: int | None, spawn_id: str) -> None:
    """SIGKILL what left the group but stayed in the session, or still carries this run's marker.

    With no `leader` (the child's pid was never known) the marker alone decides, the child included.
    """
    if not os.path.isdir("/proc"):
        return
    marker = f"{SPAWN_MARKER}={spawn_id}".encode()
    me = os.getpid()
    killed: set[int] = set()
    for _ in range(8):
        found = [
            pid
            for pid, _ppid, pgid, sid, state in _proc_table()
            if pid not in (me, leader)
            and state != "Z"
            and pid not in killed
            and ((leader is not None and (sid == leader or pgid == leader)) or _carries_marker(pid, marker))
        ]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.01)


def _redact(data: bytes, secrets_b: list[bytes]) -> bytes:
    for s in secrets_b:
        data = data.replace(s, REDACTED.encode())
    return data


def _redact_from(data: bytes, secrets_b: list[bytes], start: int) -> bytes:
    """`data[start:]` redacted, a secret that begins before `start` and ends after it included."""
    if not secrets_b:
        return data[start:]
    out = bytearray()
    pos = start
    for m in re.finditer(b"|".join(re.escape(x) for x in secrets_b), data):
        if m.end() > pos:
            out += data[pos : max(pos, m.start())] + REDACTED.encode()
            pos = m.end()
    return bytes(out + data[pos:])


def _cut_utf8_front(data: bytes, limit: int) -> bytes:
    """The last `limit` bytes, starting at a character (no UTF-8 continuation byte first)."""
    cut = data[-limit:] if len(data) > limit else data
    skip = 0
    while skip < 3 and skip < len(cut) and (cut[skip] & 0xC0) == 0x80:
        skip += 1
    return cut[skip:] if len(data) > limit else cut


def _cut_utf8(data: bytes, limit: int) -> bytes:
    """The first `limit` bytes, backed off so no UTF-8 sequence is split."""
    if len(data) <= limit:
        return data
    cut = data[:limit]
    back = 0
    while back < 4 and back < len(cut) and (cut[-1 - back] & 0xC0) == 0x80:
        back += 1
    if back < len(cut):
        lead = cut[-1 - back]
        need = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4 if lead >> 3 == 0b11110 else 1
        if lead >= 0xC0 and need > back + 1:
            return cut[: len(cut) - back - 1]
    return cut
