"""The browser's lifecycle across processes: a killed browser, a dead warden, idle closing, no Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.browser.browser_world import BrowserWorld, make_world, needs_chromium
from tests.conftest import processes_with


@pytest.fixture
def world(tmp_path: Path) -> BrowserWorld:
    return make_world(tmp_path, "[fermix_core.browser]\nidle_minutes = 5\n")


def launch_record(world: BrowserWorld, profile: str = "fermix") -> dict[str, object]:
    path = world.fermix_home / "run" / "browser" / f"{profile}.json"
    return dict(json.loads(path.read_text()))


def gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            if state in ("Z", "X"):
                return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    return False


@needs_chromium
@pytest.mark.slow  # four Chromium starts
def test_killed_browser_dead_warden_and_idle_profile_are_reported_not_waited_on(world: BrowserWorld) -> None:
    try:
        # A browser killed between two CLI calls: the next call says so at once, with the recovery.
        started = world.cli({"action": "start"})
        assert started.returncode == 0, started.stderr
        pid = int(json.loads(started.stdout)["pid"])
        assert world.cli({"action": "tabs"}).returncode == 0
        os.kill(pid, signal.SIGKILL)
        assert gone(pid)
        began = time.monotonic()
        lost = world.cli({"action": "snapshot"})
        assert time.monotonic() - began < 10
        assert lost.returncode == 1
        error = json.loads(lost.stderr)["error"]
        assert error["code"] == "host_lost" and "action=start" in error["message"]
        assert world.call({"action": "status"})["running"] is False

        # The network guard's process died: the browser is closed rather than driven unguarded.
        world.call({"action": "start"})
        record = launch_record(world)
        os.kill(int(str(record["warden_pid"])), signal.SIGKILL)
        assert gone(int(str(record["warden_pid"])))
        assert world.error({"action": "tabs"}).code == "host_lost"
        assert gone(int(str(record["pid"])))

        # A profile idle past idle_minutes is closed by its warden ...
        world.call({"action": "start"})
        record = launch_record(world)
        session = world.fermix_home / "run" / "browser" / "fermix.session.json"
        past = time.time() - 6 * 60
        os.utime(session, (past, past))
        assert gone(int(str(record["pid"])), within=15)
        assert world.error({"action": "tabs"}).code == "not_running"

        # ... or, when the warden cannot (here: frozen), by `fermix jobs run`.
        world.call({"action": "start"})
        record = launch_record(world)
        warden = int(str(record["warden_pid"]))
        os.kill(warden, signal.SIGSTOP)
        try:
            os.utime(session, (past, past))
            ran = subprocess.run(
                [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"],
                capture_output=True, text=True, env=world.env, timeout=60,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr
            assert json.loads(ran.stdout)["due_work"]["browser"]["closed_idle"] == ["fermix"]
            assert gone(int(str(record["pid"])))
        finally:
            os.kill(warden, signal.SIGCONT)
    finally:
        world.call({"action": "stop"})


def test_missing_chromium_is_a_typed_error(world: BrowserWorld) -> None:
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.browser]\nexecutable = "/nonexistent/chromium"\n'
    )
    failed = world.cli({"action": "start"})
    assert failed.returncode == 1
    error = json.loads(failed.stderr)["error"]
    assert error["code"] == "chrome_missing" and "executable" in error["message"]
    assert world.call({"action": "status"}) == {"profile": "fermix", "running": False}
    assert world.error({"action": "snapshot"}).code == "not_running"
    assert world.call({"action": "stop"}) == {"profile": "fermix", "stopped": False}
    doctor = world.call({"action": "doctor"})
    assert doctor["ok"] is False
    assert {c["name"]: c["ok"] for c in doctor["checks"]}["executable"] is False


def test_a_machine_call_for_another_tool_does_not_import_websockets(world: BrowserWorld) -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom fermix_cli.__main__ import main\n"
        "try:\n    main(['tool', 'browser', '--json', '{\"action\":\"status\"}'])\nexcept SystemExit:\n    pass\n"
        "print('websockets' in sys.modules, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=world.env, timeout=60
    )
    assert proc.stderr.strip().endswith("False"), proc.stderr  # status of a stopped browser needs no CDP
    schema = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; import fermix_cli.browser.tools; print('websockets' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        env=world.env,
        timeout=60,
    )
    assert schema.stdout.strip() == "False"


def user_data(world: BrowserWorld) -> Path:
    return world.fermix_home / "browser" / "profiles" / "fermix"


def browsers_of(world: BrowserWorld) -> list[int]:
    """Chromium processes (any of its helpers too) running on the world's profile."""
    return processes_with(f"--user-data-dir={user_data(world)}")


def none_left(world: BrowserWorld, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while browsers_of(world):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def starter(world: BrowserWorld) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "tool", "browser", "--json", '{"action":"start"}'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=world.env, cwd=world.project,
    )  # fmt: skip


def kill_all(world: BrowserWorld) -> None:
    for pid in browsers_of(world):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@needs_chromium
@pytest.mark.slow  # five Chromium starts
def test_concurrent_and_interrupted_starts_never_strand_a_browser(world: BrowserWorld) -> None:
    try:
        # Two starts at once: one browser, both calls see it, and a stop closes it.
        first, second = starter(world), starter(world)
        outs = [json.loads(p.communicate(timeout=90)[0] or "null") for p in (first, second)]
        assert first.returncode == 0 and second.returncode == 0, outs
        assert outs[0]["pid"] == outs[1]["pid"]
        assert sorted(o["started"] for o in outs) == [False, True]
        assert world.call({"action": "stop"})["stopped"] is True
        assert none_left(world)

        # The starting call killed once Chromium runs: the next start closes the stray one and starts.
        for sig in (signal.SIGKILL, signal.SIGINT):
            for _ in range(5):  # on a loaded machine the start can finish before the signal lands
                proc = starter(world)
                deadline = time.monotonic() + 30
                while not browsers_of(world) and time.monotonic() < deadline:
                    time.sleep(0.005)
                if proc.poll() is None:
                    proc.send_signal(sig)
                proc.communicate(timeout=30)
                if proc.returncode != 0:
                    break  # the start was cut short
                assert world.call({"action": "stop"})["stopped"] is True
                assert none_left(world), sig
            else:
                pytest.fail(f"five starts all finished before {sig.name} could cut one short")
            again = world.cli({"action": "start"})
            assert again.returncode == 0, (sig, again.stderr)
            assert json.loads(again.stdout)["started"] is True
            status = world.call({"action": "status"})
            assert status["running"] is True and status["responding"] is True
            assert world.call({"action": "stop"})["stopped"] is True
            assert none_left(world), sig
    finally:
        world.cli({"action": "stop"})
        kill_all(world)


@needs_chromium
@pytest.mark.slow  # three Chromium starts
def test_a_stray_browser_on_the_profile_is_closed_and_a_forgotten_one_closes_itself(
    world: BrowserWorld,
) -> None:
    import shutil

    from fermix_cli.browser.launcher import CHROMIUM_FLAGS

    exe = next(p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p)
    try:
        # A Chromium on the profile that no launch record names (its starter died before writing one).
        user_data(world).mkdir(parents=True, exist_ok=True)
        argv = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={user_data(world)}", "--headless=new", "about:blank"]
        if os.geteuid() == 0:
            argv.append("--no-sandbox")
        stray = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        lock = user_data(world) / "SingletonLock"
        deadline = time.monotonic() + 30
        while not lock.is_symlink() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = world.cli({"action": "start"})
        assert started.returncode == 0, started.stderr
        assert stray.wait(timeout=10) is not None  # closed to free the profile

        # A browser whose launch record vanished (deleted by hand, or by a call that lost a race) is
        # closed by its own warden: nothing else would ever close it.
        record = launch_record(world)
        (world.fermix_home / "run" / "browser" / "fermix.json").unlink()
        assert gone(int(str(record["pid"])), within=15)
        assert gone(int(str(record["warden_pid"])), within=5)
        assert world.cli({"action": "start"}).returncode == 0
    finally:
        world.cli({"action": "stop"})
        kill_all(world)
