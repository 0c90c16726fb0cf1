"""Chromium's lifecycle across CLI calls: find it, start it with its warden, attach to it, stop it.

`start` binds the guarding proxy's socket (127.0.0.1, an ephemeral port), launches Chromium behind it
(`--proxy-server`, with `--proxy-bypass-list=<-loopback>` so that nothing, loopback included, bypasses
it) and with remote debugging on 127.0.0.1 and a free port (`--remote-debugging-port=0`; Chromium writes
the port it bound to `DevToolsActivePort` in the user-data directory), records the endpoint, ports and
pids in the profile's launch file, then starts the warden (which inherits the proxy's socket and serves
it) and waits until it guards the browser. A later call reads the launch file and connects straight to
the recorded endpoint: one WebSocket handshake, no discovery. A browser that died is noticed at that connect (the pid is gone, or
nothing listens) and reported as `host_lost` with the recovery, never waited on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from .cdp import CDPConnection, ConnectionLost
from .profiledir import kill_profile_owner, may_hold_profile, write_download_preferences
from .runfiles import ProfileFiles, process_alive, process_start, profile_lock, read_json, write_json

if TYPE_CHECKING:
    import socket
    import subprocess

# Chromium's exit status when another Chromium holds the user-data directory (ProcessSingleton).
PROFILE_IN_USE_STATUS = 21
# How long a call waits for another call's start or stop of the same profile to finish.
LOCK_WAIT_S = 60.0

EXECUTABLE_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# Quiet, deterministic, no phoning home: no first-run UI, no background updates or sync.
CHROMIUM_FLAGS = (
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--disable-dev-shm-usage",
    # Everything through the warden's guarding proxy; Chromium bypasses a proxy for loopback by default.
    "--proxy-bypass-list=<-loopback>",
    # WebRTC sends UDP (STUN, ICE) to any address a page names, past any proxy: only proxied TCP.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)


def find_executable(configured: str) -> str:
    """The Chromium to run: the configured path, else the first known name on PATH; `chrome_missing`."""
    import shutil

    if configured:
        found = shutil.which(configured)
        if found:
            return found
        raise ToolError(
            "chrome_missing",
            f"[fermix_core.browser] executable {configured!r} is not an executable file; fix the path "
            "or remove the key to use chromium from PATH",
            {"executable": configured},
        )
    for name in EXECUTABLE_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ToolError(
        "chrome_missing",
        "no Chromium found on PATH (looked for " + ", ".join(EXECUTABLE_NAMES) + "); install it "
        "(Debian: apt-get install chromium) or set [fermix_core.browser] executable",
        {"looked_for": list(EXECUTABLE_NAMES)},
    )


def host_lost(files: ProfileFiles, record: dict[str, Any], why: str) -> ToolError:
    """The browser is gone: forget its run files and say how to get a new one."""
    files.clear()
    return ToolError(
        "host_lost",
        f"the browser of profile {files.profile!r} (pid {record.get('pid')}) {why}; its tabs and refs are "
        "gone. Run action=start (or open a URL) to launch a fresh one, then take a new snapshot",
        {"profile": files.profile, "pid": record.get("pid")},
    )


def not_running(profile: str, why: str = "is not running") -> ToolError:
    return ToolError(
        "not_running",
        f"the browser of profile {profile!r} {why}; run action=start, or action=open with a url",
        {"profile": profile},
    )


def browser_alive(record: dict[str, Any]) -> bool:
    pid = int(record.get("pid", 0))
    return process_alive(pid) and process_start(pid) == record.get("pid_start", "")


def settled_record(files: ProfileFiles, wait: float = LOCK_WAIT_S) -> dict[str, Any] | None:
    """The launch record, once no call is still starting the browser it names.

    A record marked `starting` is written before Chromium is launched, so that a browser whose starter
    was killed can still be found and closed; while its starter runs (and holds the profile's lock), its
    missing warden means "not yet", not "lost".
    """
    record = read_json(files.launch)
    if record is not None and record.get("starting"):
        with profile_lock(files, wait):
            record = read_json(files.launch)
    return record


def live_record(files: ProfileFiles) -> dict[str, Any] | None:
    """The launch record when its browser and warden are both running; a stale record is cleared."""
    record = settled_record(files)
    if record is None:
        return None
    if browser_alive(record) and process_alive(int(record.get("warden_pid", 0))) and record.get("proxy_port"):
        return record
    return None


def connect(files: ProfileFiles, idle_minutes: int) -> tuple[dict[str, Any], CDPConnection]:
    """Attach to the profile's running browser: its launch record and an open connection."""
    record = settled_record(files)
    if record is None:
        raise not_running(files.profile)
    last_used = _last_used(files, record)
    idle = bool(idle_minutes) and time.time() - last_used > idle_minutes * 60
    if not browser_alive(record):
        if idle:  # closed for idleness a moment ago (by the warden or `fermix jobs run`)
            stop_browser(files)
            raise not_running(files.profile, f"was closed after {idle_minutes} idle minutes")
        raise host_lost(files, record, "is no longer running (it crashed, was killed or closed)")
    if not process_alive(int(record.get("warden_pid", 0))):
        # Without its warden nothing guards the browser's requests: never drive it unguarded.
        stop_browser(files)
        raise host_lost(files, record, "lost its network-guard process and was closed")
    if not record.get("proxy_port"):
        # Started by a fermix before the guarding proxy: its pages' WebSockets are not guarded.
        stop_browser(files)
        raise host_lost(
            files, record, "was started without the guarding proxy (by an older fermix) and was closed"
        )
    if idle:
        stop_browser(files)
        raise not_running(files.profile, f"was closed after {idle_minutes} idle minutes")
    try:
        conn = CDPConnection(str(record["ws_url"]))
    except ConnectionLost:
        kill_browser(record)
        raise host_lost(files, record, "does not answer on its debugging port and was closed") from None
    return record, conn


def _last_used(files: ProfileFiles, record: dict[str, Any]) -> float:
    try:
        return files.session.stat().st_mtime
    except FileNotFoundError:
        return float(record.get("started_at", time.time()))


def start_browser(
    files: ProfileFiles,
    *,
    executable: str,
    headless: bool,
    allowed_private_hosts: list[str],
    idle_minutes: int,
    timeout_ms: int,
) -> dict[str, Any]:
    """Launch Chromium and its warden for a profile; returns the launch record. The caller holds the
    profile's lock (`profile_lock`)."""
    from .guardproxy import listen

    files.ensure()
    files.clear()
    proxy = listen()  # bound first: Chromium must never run without its proxy
    args = (files, proxy, executable, headless, allowed_private_hosts, idle_minutes, timeout_ms)
    try:
        try:
            return _launch(*args)
        except ToolError as exc:
            # A Chromium of ours left holding the profile (its starter was killed before it recorded
            # it) makes every later start fail: close it, then try once more.
            if exc.code != "chrome_start_failed" or exc.details.get("status") != PROFILE_IN_USE_STATUS:
                raise
            if not kill_profile_owner(files):
                raise
        return _launch(*args)
    finally:
        proxy.close()  # the warden holds its own copy


def _launch(
    files: ProfileFiles,
    proxy: socket.socket,
    executable: str,
    headless: bool,
    allowed_private_hosts: list[str],
    idle_minutes: int,
    timeout_ms: int,
) -> dict[str, Any]:
    import subprocess

    port_file = files.user_data / "DevToolsActivePort"
    with contextlib.suppress(FileNotFoundError):
        port_file.unlink()
    write_download_preferences(files)
    proxy_port = int(proxy.getsockname()[1])
    argv = [executable, *CHROMIUM_FLAGS, f"--proxy-server=http://127.0.0.1:{proxy_port}"]
    argv.append(f"--user-data-dir={files.user_data}")
    if headless:
        argv.append("--headless=new")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox on
    argv.append("about:blank")
    with open(files.log, "ab") as log:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True
        )
    # Recorded at once: should this call be killed from here on, the next one finds the browser and
    # closes it, rather than meeting a Chromium that holds the profile with nothing naming it.
    record: dict[str, Any] = {
        "profile": files.profile,
        "pid": proc.pid,
        "pid_start": process_start(proc.pid),
        "port": 0,
        "proxy_port": proxy_port,
        "ws_url": "",
        "user_data_dir": str(files.user_data),
        "executable": executable,
        "headless": headless,
        "started_at": time.time(),
        "allowed_private_hosts": allowed_private_hosts,
        "idle_minutes": idle_minutes,
        "warden_pid": 0,
        "starting": True,
    }
    write_json(files.launch, record)
    try:
        return _await_browser(files, proc, record, proxy, timeout_ms)
    except BaseException:
        _kill_group(proc.pid)  # whatever stopped the start (an error, Ctrl-C), the browser goes too
        kill_browser(record)
        files.clear()
        raise


def _await_browser(
    files: ProfileFiles,
    proc: subprocess.Popen[bytes],
    record: dict[str, Any],
    proxy: socket.socket,
    timeout_ms: int,
) -> dict[str, Any]:
    port_file = files.user_data / "DevToolsActivePort"
    deadline = time.monotonic() + timeout_ms / 1000
    ws_path = ""
    port = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ToolError(
                "chrome_start_failed",
                f"Chromium exited with status {proc.returncode} while starting; see {files.log}",
                {"log": str(files.log), "tail": _tail(files.log), "status": proc.returncode},
            )
        with contextlib.suppress(FileNotFoundError, ValueError):
            lines = port_file.read_text().splitlines()
            # Only once this Chromium holds the profile is the port file its own: another one still on
            # the profile (about to make this one exit) may have written it.
            if len(lines) >= 2 and may_hold_profile(files, proc.pid):
                port, ws_path = int(lines[0]), lines[1]
                break
        time.sleep(0.02)
    if not ws_path:
        raise ToolError(
            "timeout",
            f"Chromium did not open its debugging port within {timeout_ms} ms; see {files.log}",
            {"log": str(files.log)},
        )
    record.update(port=port, ws_url=f"ws://127.0.0.1:{port}{ws_path}")
    write_json(files.launch, record)
    warden = _start_warden(files, record, proxy, deadline)
    record.update(warden_pid=warden, starting=False)
    write_json(files.launch, record)
    write_json(files.session, {"active": None, "opened": [], "refs": {}})
    return record


def _start_warden(files: ProfileFiles, record: dict[str, Any], proxy: socket.socket, deadline: float) -> int:
    import subprocess

    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    with open(files.log, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fermix_cli.browser.warden", str(files.launch), str(proxy.fileno())],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            pass_fds=(proxy.fileno(),),
            env=env,
            # `-m` puts the working directory first on sys.path: a project holding its own fermix_cli
            # (a fermix checkout) must not supply the warden's code.
            cwd=files.run_dir,
        )
    while time.monotonic() < deadline + 5:
        state = read_json(files.warden)
        if state and state.get("pid") == proc.pid and state.get("ready"):
            return proc.pid
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    kill_browser(record)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    files.clear()
    raise ToolError(
        "chrome_start_failed",
        f"the browser's network-guard process did not come up; nothing was left running. See {files.log}",
        {"log": str(files.log), "tail": _tail(files.log)},
    )


def _tail(path: os.PathLike[str] | str, size: int = 2000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - size))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_browser(record: dict[str, Any]) -> None:
    """Kill the recorded browser's process group (it is its own session leader) and its warden."""
    if browser_alive(record):
        _kill_group(int(record["pid"]))
    warden = int(record.get("warden_pid", 0))
    if warden and process_alive(warden):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(warden, signal.SIGTERM)


def stop_browser(files: ProfileFiles, grace: float = 5.0) -> bool:
    """Close the profile's browser (politely, then by force) and forget it; False if none was recorded."""
    with profile_lock(files, LOCK_WAIT_S):
        return _stop_browser(files, grace)


def _stop_browser(files: ProfileFiles, grace: float) -> bool:
    record = read_json(files.launch)
    if record is None:
        return False
    if browser_alive(record):
        try:
            conn = CDPConnection(str(record["ws_url"]), open_timeout=1.0)
            conn.send("Browser.close")
            conn.close()
        except ConnectionLost:
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and browser_alive(record):
            time.sleep(0.02)
    kill_browser(record)
    files.clear()
    return True
