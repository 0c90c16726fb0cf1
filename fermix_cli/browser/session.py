"""An attached browser for the length of one call: its tabs, the active one, and the guard's rules."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from .cdp import CDPError
from .launcher import connect
from .page import Tab
from .runfiles import ProfileFiles, read_json, write_json

if TYPE_CHECKING:
    from ..core.net.guard import HostGuard
    from .config import BrowserConfig

GUARD_WAIT = 3.0  # seconds a new tab may take to come under the warden's interception


class Session:
    def __init__(self, files: ProfileFiles, cfg: BrowserConfig, timeout: float) -> None:
        self.files = files
        self.cfg = cfg
        self.timeout = timeout
        self.record, self.conn = connect(files, cfg.idle_minutes)
        self._guard: HostGuard | None = None
        self.state: dict[str, Any] = read_json(files.session) or {"active": None, "opened": [], "refs": {}}
        self.touch()

    @property
    def guard(self) -> HostGuard:
        """The network guard's host rules, as the browser was started with them (built on first use)."""
        if self._guard is None:
            from ..core.net.guard import HostGuard

            self._guard = HostGuard(self.record.get("allowed_private_hosts", []))
        return self._guard

    @property
    def local_ports(self) -> frozenset[int]:
        """The browser's DevTools and proxy ports, which no page may reach on this machine."""
        return frozenset(int(self.record.get(key) or 0) for key in ("port", "proxy_port")) - {0}

    def close(self) -> None:
        self.conn.close()

    def touch(self) -> None:
        """Record a use (the session file's mtime is what idle closing reads)."""
        write_json(self.files.session, self.state)

    def save(self) -> None:
        write_json(self.files.session, self.state)

    def pages(self) -> list[dict[str, Any]]:
        infos = self.conn.call("Target.getTargets", timeout=self.timeout)["targetInfos"]
        return [t for t in infos if t.get("type") == "page"]

    def find_tab(self, wanted: str) -> str:
        """The target id a `tabs` id (or a unique prefix of one) names; `not_found` otherwise."""
        ids = [p["targetId"] for p in self.pages()]
        hits = [t for t in ids if t.lower().startswith(wanted.lower())]
        if len(hits) != 1:
            raise ToolError(
                "not_found" if not hits else "not_unique",
                f"no single tab matches {wanted!r}; list the tabs with action=tabs and use one's id",
                {"tab": wanted, "tabs": ids},
            )
        return hits[0]

    def active_id(self) -> str:
        pages = self.pages()
        ids = [p["targetId"] for p in pages]
        active = self.state.get("active")
        if active in ids:
            return str(active)
        if ids:
            self.state["active"] = ids[0]
            return ids[0]
        created = self.conn.call("Target.createTarget", {"url": "about:blank"}, timeout=self.timeout)
        self.state["active"] = created["targetId"]
        return str(created["targetId"])

    def tab(self, target_id: str | None = None) -> Tab:
        """A session on the tab (default: the active one). The recorded active tab is attached to
        directly, without listing targets first: one round trip less on every call."""
        recorded = self.state.get("active")
        target = target_id or (str(recorded) if recorded else self.active_id())
        try:
            return self._attach(target)
        except CDPError:
            if target_id is not None or target != recorded:
                raise ToolError(
                    "not_found", f"tab {target} is gone; list the tabs with action=tabs", {"tab": target}
                ) from None
        self.state["active"] = None  # the active tab was closed (by the page or by hand)
        return self._attach(self.active_id())

    def _attach(self, target: str) -> Tab:
        # Attaching loads nothing; the tab is used only once the warden guards it.
        attached = self.conn.call(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, timeout=self.timeout
        )
        self.wait_guarded(target)
        return Tab(self.conn, self.files, target, str(attached["sessionId"]), self.timeout)

    def wait_guarded(self, target: str) -> None:
        deadline = time.monotonic() + GUARD_WAIT
        while True:
            state = read_json(self.files.warden) or {}
            if target in state.get("guarded", []):
                return
            if time.monotonic() >= deadline:
                raise ToolError(
                    "guard_unavailable",
                    f"the network guard has not taken tab {target} under control; nothing was loaded. "
                    "Retry; if it persists, run action=stop and action=start",
                    {"tab": target},
                )
            time.sleep(0.01)
