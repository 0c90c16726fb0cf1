"""The process runner: process group endings, the output cap, redaction before the cut."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from fermix_cli.core.shell.procgroup import MAX_OUTPUT_BYTES, REDACTED, SPAWN_MARKER, _cut_utf8, run_captured

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
linux_only = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")


def run(script: str, timeout: float = 10, **kw):
    return run_captured(["/bin/sh", "-c", script], cwd="/", env=ENV, timeout_s=timeout, **kw)


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] != b"Z"


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def pids_in(output: bytes) -> list[int]:
    return [int(w) for w in output.split() if w.isdigit()]


def test_merged_output_and_exit_code() -> None:
    out = run("echo out; echo err >&2; exit 7")
    assert out.exit_code == 7
    assert out.output == b"out\nerr\n"
    assert not out.truncated and not out.timed_out


def test_stdin_is_empty() -> None:
    assert run("cat; echo done").output == b"done\n"


def test_signal_death_reports_128_plus_signal() -> None:
    assert run("kill -TERM $$").exit_code == 128 + 15


@linux_only
def test_sleeping_grandchild_is_killed_after_a_normal_exit() -> None:
    out = run("sleep 30 & echo $!")
    assert out.exit_code == 0
    (pid,) = pids_in(out.output)
    assert wait_gone(pid), f"grandchild {pid} survived the command"


@linux_only
def test_sleeping_grandchild_is_killed_on_timeout() -> None:
    t0 = time.monotonic()
    out = run("sleep 30 & echo $!; sleep 30", timeout=1.5)  # time for a loaded machine to start sh
    assert out.timed_out
    assert time.monotonic() - t0 < 10
    (pid,) = pids_in(out.output)
    assert wait_gone(pid)


@linux_only
def test_grandchild_that_left_the_group_is_swept() -> None:
    # setsid leaves both group and session; the spawn marker in its environment gives it away.
    out = run("setsid sleep 30 & echo $!; sleep 0.1")
    (pid,) = pids_in(out.output)
    assert wait_gone(pid)


@linux_only
def test_grandchild_that_changed_its_group_but_kept_the_session_is_swept() -> None:
    code = "import os,time; os.setpgid(0,0); print(os.getpid(), flush=True); time.sleep(30)"
    out = run_captured(
        ["/bin/sh", "-c", f'env -u {SPAWN_MARKER} "{sys.executable}" -c "{code}" & sleep 0.5'],
        cwd="/",
        env=ENV,
        timeout_s=10,
    )
    (pid,) = pids_in(out.output)
    assert wait_gone(pid)


def test_term_is_sent_first_then_kill() -> None:
    # The deadline leaves a loaded machine time to start sh and set its trap; the bounds are far below
    # the 30 s the sleeps would take, so a group that was not killed cannot pass.
    t0 = time.monotonic()
    out = run("trap 'echo got-term; exit 3' TERM; sleep 30 & wait", timeout=1.5)
    assert out.timed_out
    assert b"got-term" in out.output
    t1 = time.monotonic()
    out2 = run("trap '' TERM; sleep 30 & wait; sleep 30", timeout=1.5)
    assert out2.timed_out
    assert time.monotonic() - t1 < 10, "a group ignoring SIGTERM is SIGKILLed after the grace"
    assert t1 - t0 < 10


def test_output_cap_truncates_kills_and_reports_124() -> None:
    t0 = time.monotonic()
    out = run("yes 0123456789abcdef", timeout=20)
    assert out.truncated and out.exit_code == 124
    assert len(out.output) == MAX_OUTPUT_BYTES
    assert out.total_bytes > MAX_OUTPUT_BYTES
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize(
    ("script", "undecodable"),
    [
        ("printf 'plain'", 0),
        ("printf '\\357\\277\\275'", 0),  # U+FFFD itself, well encoded
        ("printf 'a\\000b'", 0),  # NUL is UTF-8
        ("printf '\\377\\376abc'", 2),
        ("printf '\\342\\202'", 2),  # a sequence cut short
        ("printf '\\300\\200'", 2),  # an overlong encoding
    ],
)
def test_undecodable_bytes_are_counted(script: str, undecodable: int) -> None:
    out = run(script)
    assert out.undecodable_bytes() == undecodable
    assert (out.text().count("\ufffd") > 0) == (undecodable > 0 or b"\xef\xbf\xbd" in out.output)


def test_small_cap_is_exact() -> None:
    out = run("printf 'abcdefghij'", cap=4)
    assert out.output == b"abcd" and out.truncated and out.exit_code == 124 and out.stopped_at_cap


def test_discard_lets_the_child_finish_past_the_cap(tmp_path) -> None:
    """overflow="discard": the output past the cap is dropped, the child runs to its end (the file it
    writes after printing exists) and its own exit code stands."""
    done = tmp_path / "done"
    seen: list[bytes] = []
    out = run(
        f"head -c 300000 /dev/zero | tr '\\0' x; printf END; touch '{done}'; exit 3",
        cap=1000,
        overflow="discard",
        on_output=seen.append,
    )
    assert done.exists()
    assert out.exit_code == 3 and out.truncated and not out.stopped_at_cap and not out.timed_out
    # Its beginning and its end (where a failing command says why), a quarter of the cap for the end.
    mark = b"\n[... output cut here ...]\n"
    assert out.output == b"x" * (750 - len(mark)) + mark + b"x" * 247 + b"END"
    assert out.total_bytes == 300003
    assert b"".join(seen) == b"x" * 300000 + b"END"
    small = run("printf abc", cap=1000, overflow="discard")
    assert small.output == b"abc" and not small.truncated and small.exit_code == 0


@pytest.mark.parametrize(
    ("before", "after"),
    [(b, 3000) for b in (0, 7, 600, 995, 1000, 1010, 1021, 1500)]
    + [(3000, a) for a in (0, 5, 100, 240, 249, 250, 255, 265, 271, 272, 280)]
    + [(990, 60), (1010, 50), (1015, 200), (1020, 260)],
)
def test_discard_never_shows_part_of_a_secret(before: int, after: int) -> None:
    """Wherever a secret falls (in the beginning, across its end, across the cut, in the end kept, or
    across the two when nothing was dropped), what is shown holds no piece of it."""
    secret = "S3CRET-value-0123456789"
    out = run(
        f"head -c {before} /dev/zero | tr '\\0' a; printf '%s' '{secret}';"
        f" head -c {after} /dev/zero | tr '\\0' b",
        cap=1000,
        overflow="discard",
        redact=[secret],
    )
    assert out.truncated and len(out.output) <= 1000
    shown = out.output.decode()
    for n in range(6, len(secret) + 1):
        for i in range(len(secret) - n + 1):
            assert secret[i : i + n] not in shown, (before, secret[i : i + n])


def test_redaction_happens_before_truncation() -> None:
    secret = "S3CRET-value-123"
    # The secret straddles the cap: cut first and its first bytes would leak.
    cap = 100
    prefix = "a" * (cap - 5)
    out = run(f"printf '%s' '{prefix}{secret}tail'", cap=cap, redact=[secret])
    assert out.truncated
    text = out.output.decode()
    assert "S3CR" not in text and "S3C" not in text
    assert text.startswith(prefix)
    assert len(out.output) <= cap
    assert REDACTED.encode()[:5] == out.output[cap - 5 : cap]


def test_redaction_in_full_output() -> None:
    out = run("echo key=abcdefgh123; echo again abcdefgh123", redact=["abcdefgh123"])
    assert out.output == f"key={REDACTED}\nagain {REDACTED}\n".encode()


def test_cut_never_splits_a_utf8_sequence() -> None:
    data = ("x" * 9 + "é€😀").encode()
    for limit in range(len(data) + 1):
        cut = _cut_utf8(data, limit)
        assert len(cut) <= limit
        cut.decode("utf-8")  # raises if split
        assert data.startswith(cut)


def test_children_carry_a_fresh_spawn_marker(tmp_path: Path) -> None:
    a = run(f"echo ${SPAWN_MARKER}").output.strip()
    b = run(f"echo ${SPAWN_MARKER}").output.strip()
    assert len(a) == 32 and a != b


def test_missing_program_raises() -> None:
    with pytest.raises(FileNotFoundError):
        run_captured(["/nonexistent/prog"], cwd="/", env=ENV, timeout_s=1)


# ----- cancellation ------------------------------------------------------------------------------


@linux_only
def test_cancel_stops_the_whole_group_at_once() -> None:
    from fermix_cli.core.cancel import CancelToken

    token = CancelToken()
    timer = threading.Timer(0.3, token.cancel, ("the test gave up",))
    timer.start()
    t0 = time.monotonic()
    try:
        out = run("sleep 30 & echo $!; sleep 30", timeout=60, cancel=token)
    finally:
        timer.cancel()
    assert out.cancelled and not out.timed_out
    assert time.monotonic() - t0 < 3, "a cancel must not wait for the timeout"
    assert out.exit_code == 128 + 15  # SIGTERM first, as on a timeout
    (pid,) = pids_in(out.output)
    assert wait_gone(pid), "the background grandchild survived the cancel"
    assert token.reason == "the test gave up"


def test_a_token_cancelled_before_the_start_stops_the_child_at_once() -> None:
    from fermix_cli.core.cancel import CancelToken

    token = CancelToken()
    token.cancel()
    t0 = time.monotonic()
    out = run("sleep 30", timeout=60, cancel=token)
    assert out.cancelled and time.monotonic() - t0 < 3


def test_an_uncancelled_token_changes_nothing() -> None:
    from fermix_cli.core.cancel import CancelToken

    out = run("echo fine", cancel=CancelToken())
    assert out.exit_code == 0 and out.output == b"fine\n" and not out.cancelled


def test_cancel_token_wakes_every_waiter_once() -> None:
    import select

    from fermix_cli.core.cancel import CancelToken

    token = CancelToken()
    with token.wake_fd() as a, token.wake_fd() as b:
        assert select.select([a, b], [], [], 0)[0] == []
        token.cancel("first")
        token.cancel("second")  # idempotent: the first reason stays
        assert sorted(select.select([a, b], [], [], 1)[0]) == sorted([a, b])
    assert token.cancelled and token.reason == "first" and token.wait(0)


def _wait_for_pid_in(pidfile: Path) -> None:
    """Until the child wrote its grandchild's pid (its loop is far shorter than the safety net)."""
    end = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < end, "the child never started its grandchild"
        time.sleep(0.01)


@linux_only
def test_a_signal_before_supervision_starts_still_ends_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (SystemExit in the main thread) landing between Popen and the watch loop ends the group."""
    from fermix_cli.core.shell import procgroup

    pidfile = tmp_path / "grandchild"

    def term_arrives(pid: int) -> int | None:
        # By now the child runs; let it start a grandchild, then deliver the "signal".
        _wait_for_pid_in(pidfile)
        raise SystemExit(143)

    monkeypatch.setattr(procgroup, "pidfd_open", term_arrives)
    with pytest.raises(SystemExit):
        run(f"sleep 30 & echo $! > {pidfile}; sleep 30")
    grandchild = int(pidfile.read_text())
    assert wait_gone(grandchild), f"grandchild {grandchild} survived a SIGTERM during start-up"


@linux_only
def test_a_signal_inside_popen_after_the_child_started_still_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine the child can exec and fork before Popen returns; SIGTERM landing there
    leaves no Popen object to clean up with, so the run's spawn marker finds what it started."""
    import subprocess

    pidfile = tmp_path / "grandchild"
    real = subprocess.Popen._execute_child

    def started_then_signalled(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        real(self, *args, **kwargs)
        _wait_for_pid_in(pidfile)
        raise SystemExit(143)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", started_then_signalled)
    with pytest.raises(SystemExit):
        run(f"sleep 30 & echo $! > {pidfile}; sleep 30")
    grandchild = int(pidfile.read_text())
    assert wait_gone(grandchild), f"grandchild {grandchild} survived a SIGTERM inside Popen"


@linux_only
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_real_stop_signal_inside_popen_is_held_and_delivered_once_the_group_is_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signame: str
) -> None:
    """A real SIGTERM or SIGHUP sent while Popen runs: the handler's SystemExit comes once Popen returned,
    and the whole group (the grandchild too) is ended by the supervision's cleanup."""
    import signal
    import subprocess

    sig = getattr(signal, signame)
    pidfile = tmp_path / "grandchild"
    real = subprocess.Popen._execute_child
    raised: list[str] = []

    def on_term(signum: int, _frame: object) -> None:
        raised.append("handler")
        raise SystemExit(128 + signum)

    def started_then_signalled(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        real(self, *args, **kwargs)
        _wait_for_pid_in(pidfile)
        os.kill(os.getpid(), sig)
        time.sleep(0.05)  # a handler that was not held would have raised by now
        raised.append("popen returns")

    previous = signal.signal(sig, on_term)
    try:
        monkeypatch.setattr(subprocess.Popen, "_execute_child", started_then_signalled)
        with pytest.raises(SystemExit) as exc:
            run(f"sleep 30 & echo $! > {pidfile}; sleep 30")
    finally:
        assert signal.getsignal(sig) is on_term, "the held handler was not restored"
        signal.signal(sig, previous)
    assert exc.value.code == 128 + sig
    assert raised == ["popen returns", "handler"]
    grandchild = int(pidfile.read_text())
    assert wait_gone(grandchild), f"grandchild {grandchild} survived a {signame} inside Popen"


# ----- the lifeline: a killed runner's command does not outlive it ------------------------------------


def run_with_lifeline(script: str, timeout: float = 10, **kw):
    from fermix_cli.core.shell.procgroup import with_lifeline

    argv = ["/bin/sh", "-c", with_lifeline(script)]
    return run_captured(argv, cwd="/", env=ENV, timeout_s=timeout, lifeline=True, **kw)


def test_the_lifeline_is_invisible_to_the_command() -> None:
    """stdin still reads as empty, no extra descriptor is open, `wait` and `$!` know only the command's
    own jobs, its exit code and output are its own, and a syntax error still runs nothing."""
    t0 = time.monotonic()
    out = run_with_lifeline('cat; echo "[$!]"; ls /proc/self/fd/ | tr "\\n" " "; sleep 0.1 & wait; exit 5')
    assert time.monotonic() - t0 < 5, "`wait` waited for the watchdog"
    assert out.exit_code == 5
    assert out.output == b"[]\n0 1 2 3 "  # 3: the directory ls itself reads
    bad = run_with_lifeline("echo ran; if then")
    assert bad.exit_code == 2 and b"ran" not in bad.output


@linux_only
def test_a_runner_killed_outright_takes_its_command_s_group_with_it(tmp_path: Path) -> None:
    """SIGKILL of the process running a command (nothing in it can run any more): the watchdog in the
    command's group sees the lifeline end and kills the whole group, grandchildren included."""
    import signal
    import subprocess

    pidfile = tmp_path / "leader"
    code = (
        "import os; from fermix_cli.core.shell.procgroup import run_captured, with_lifeline\n"
        f"script = 'echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; sleep 60 & sleep 60'\n"
        "run_captured(['/bin/sh', '-c', with_lifeline(script)], cwd='/', env={'PATH': os.environ['PATH']},"
        " timeout_s=120, lifeline=True)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[3])
    try:
        end = time.monotonic() + 30
        while not pidfile.exists() and time.monotonic() < end:
            time.sleep(0.02)
        leader = int(pidfile.read_text())
        end = time.monotonic() + 10
        while len(group(leader)) < 4 and time.monotonic() < end:  # sh, its watchdog, two sleeps
            time.sleep(0.02)
        members = group(leader)
        assert len(members) >= 4, members
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    left = [pid for pid in members if not wait_gone(pid, 5.0)]
    for pid in left:  # what a failure left is not left running
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert left == []


def group(pgid: int) -> list[int]:
    from fermix_cli.core.shell import group_members

    return group_members(pgid)
