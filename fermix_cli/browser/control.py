"""Session control: start, stop, status, doctor."""

from __future__ import annotations

import os
import subprocess
import time
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from .cdp import CDPConnection, ConnectionLost
from .launcher import (
    browser_alive,
    find_executable,
    live_record,
    settled_record,
    start_browser,
    stop_browser,
)
from .runfiles import ProfileFiles, process_alive, profile_lock, read_json

if TYPE_CHECKING:
    from ..core.context import ToolContext
    from .config import BrowserConfig


def allowed_hosts(ctx: ToolContext) -> list[str]:
    return [str(h) for h in ctx.config.fermix_core.net.allowed_private_hosts]


def start(ctx: ToolContext, cfg: BrowserConfig, files: ProfileFiles, headless: bool | None) -> dict[str, Any]:
    executable = find_executable(cfg.executable)
    # One start (or stop) of a profile at a time: a second call waits, then finds the first's browser.
    with profile_lock(files, cfg.start_timeout_ms / 1000 + 15):
        record = live_record(files)
        if record is not None:
            return {"started": False, "already_running": True, **describe(record)}
        if read_json(files.launch) is not None:
            stop_browser(files)  # a dead or half-dead browser: clear it before starting again
        record = start_browser(
            files,
            executable=executable,
            headless=default_headless(cfg, files.profile) if headless is None else headless,
            allowed_private_hosts=allowed_hosts(ctx),
            idle_minutes=cfg.idle_minutes,
            timeout_ms=cfg.start_timeout_ms,
        )
    return {"started": True, "already_running": False, **describe(record)}


def default_headless(cfg: BrowserConfig, profile: str) -> bool:
    """The reference's named profiles choose their mode; any other follows the config."""
    return {"fermix_visible": False, "fermix_headless": True}.get(profile, cfg.headless)


def describe(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "profile": record["profile"],
        "pid": record["pid"],
        "port": record["port"],
        "proxy_port": record.get("proxy_port"),
        "endpoint": record["ws_url"],
        "headless": record["headless"],
        "user_data_dir": record["user_data_dir"],
        "warden_pid": record.get("warden_pid"),
    }


def stop(files: ProfileFiles) -> dict[str, Any]:
    return {"profile": files.profile, "stopped": stop_browser(files)}


def status(files: ProfileFiles, cfg: BrowserConfig) -> dict[str, Any]:
    record = settled_record(files)
    if record is None:
        return {"profile": files.profile, "running": False}
    if not browser_alive(record) or not process_alive(int(record.get("warden_pid", 0))):
        stop_browser(files)
        return {
            "profile": files.profile,
            "running": False,
            "lost": True,
            "recovery": "the browser (or its network guard) died; run action=start to launch a fresh one",
        }
    tabs: int | None = None
    try:
        conn = CDPConnection(str(record["ws_url"]), open_timeout=1.0)
        try:
            infos = conn.call("Target.getTargets", timeout=2.0)["targetInfos"]
            tabs = sum(1 for t in infos if t.get("type") == "page")
        finally:
            conn.close()
    except (ConnectionLost, ToolError):
        tabs = None
    try:
        idle = time.time() - files.session.stat().st_mtime
    except FileNotFoundError:
        idle = time.time() - float(record.get("started_at", time.time()))
    return {
        "running": True,
        "responding": tabs is not None,
        "tabs": tabs,
        "max_tabs": cfg.max_tabs,
        "idle_seconds": round(idle, 1),
        "idle_minutes_limit": cfg.idle_minutes,
        **describe(record),
    }


def probe_proxy(port: int) -> tuple[bool, str]:
    """Whether the warden's guarding proxy answers on `port` (a request it must refuse, logged nowhere)."""
    import socket

    if not port:
        return False, "no guarding proxy recorded: run action=stop, then action=start"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
            sock.settimeout(2.0)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: probe\r\n\r\n")  # origin-form: a 400, not a refusal
            answer = sock.recv(4096)
    except OSError as exc:
        return (
            False,
            f"the guarding proxy on 127.0.0.1:{port} does not answer ({exc}): run action=stop, then action=start",
        )
    if answer.startswith(b"HTTP/1.1 400 ") and b"X-Fermix-Guard:" in answer:
        return True, f"127.0.0.1:{port} answers"
    return False, f"127.0.0.1:{port} is not the guarding proxy: run action=stop, then action=start"


def doctor(ctx: ToolContext, cfg: BrowserConfig, files: ProfileFiles) -> dict[str, Any]:
    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append({"name": name, "ok": ok, "detail": detail})

    try:
        exe = find_executable(cfg.executable)
        check("executable", True, exe)
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=15)
            check("version", out.returncode == 0, (out.stdout or out.stderr).strip().splitlines()[-1:][0])
        except (OSError, subprocess.TimeoutExpired, IndexError) as exc:
            check("version", False, f"{exe} --version failed: {exc}")
    except ToolError as exc:
        check("executable", False, exc.message)
    files.ensure()
    check("profile_dir", os.access(files.user_data, os.W_OK), str(files.user_data))
    state = status(files, cfg)
    check("running", True, "running" if state["running"] else "not running (start it with action=start)")
    if state["running"]:
        check("guard_proxy", *probe_proxy(int(state.get("proxy_port") or 0)))
    hosts = allowed_hosts(ctx)
    check("allowed_private_hosts", True, ", ".join(hosts) if hosts else "none: private addresses refused")
    return {"ok": all(c["ok"] for c in checks), "checks": checks, "status": state}
