"""Desktop notifications: `org.freedesktop.Notifications` on the session bus, text only.

Sent with `notify-send` when it is installed, else with `gdbus` (GLib's D-Bus tool). Only where a
session bus exists: with no `DBUS_SESSION_BUS_ADDRESS` (cron, ssh, a headless box) the channel says it is
unavailable, permanently, instead of failing somewhere inside D-Bus. The address of a desktop target
(`{"platform": "desktop", "recipient": "owner"}`) only names it; the notification goes to this session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import Capability, ChannelError, Sent

SUMMARY_MAX = 120
BODY_MAX = 1000  # notification servers show a few lines at most
TIMEOUT = 10.0


def unavailable_reason(env: Mapping[str, str]) -> str | None:
    """Why desktop notifications cannot be sent from this environment, or None when they can."""
    if not env.get("DBUS_SESSION_BUS_ADDRESS", "").strip():
        return (
            "desktop notifications need a session bus, and DBUS_SESSION_BUS_ADDRESS is not set here "
            "(cron and ssh sessions have none). Deliver to the inbox or Telegram instead, or set "
            "DBUS_SESSION_BUS_ADDRESS for the runner."
        )
    if not (shutil.which("notify-send", path=env.get("PATH")) or shutil.which("gdbus", path=env.get("PATH"))):
        return "desktop notifications need notify-send (libnotify) or gdbus (GLib) on PATH; install one."
    return None


def notify_command(summary: str, body: str, env: Mapping[str, str]) -> list[str]:
    """The command that shows one notification."""
    notify_send = shutil.which("notify-send", path=env.get("PATH"))
    if notify_send:
        return [notify_send, "--app-name=fermix", "--", summary, body]
    gdbus = shutil.which("gdbus", path=env.get("PATH")) or "gdbus"
    return [
        gdbus, "call", "--session",
        "--dest", "org.freedesktop.Notifications",
        "--object-path", "/org/freedesktop/Notifications",
        "--method", "org.freedesktop.Notifications.Notify",
        "fermix", "0", "", summary, body, "[]", "{}", "-1",
    ]  # fmt: skip


class DesktopChannel:
    platform = "desktop"
    capabilities: frozenset[Capability] = frozenset({"text"})
    max_text = BODY_MAX

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        reason = unavailable_reason(self.env)
        if reason is not None:
            raise ChannelError(reason, code="unavailable", permanent=True)
        title = str(
            meta.get("title") or (f"fermix: {meta['job_name']}" if meta.get("job_name") else "fermix")
        )
        body = text if len(text) <= BODY_MAX else text[: BODY_MAX - 1] + "…"
        command = notify_command(title[:SUMMARY_MAX], body, self.env)
        try:
            done = subprocess.run(
                command, env=self.env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ChannelError(f"{Path(command[0]).name} failed: {e}", code="unavailable") from None
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split())[:300]
            raise ChannelError(
                f"{Path(command[0]).name} exited {done.returncode}: {said or 'no message'} (is a notification "
                "daemon running in this session?)",
                code="unavailable",
            )
        return Sent(self.platform, address, {"via": Path(command[0]).name})

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        raise ChannelError(
            "desktop notifications carry text only; use the inbox or Telegram for files.",
            code="unsupported",
            permanent=True,
        )
