"""Tabs and navigation: open, navigate, tabs, focus, close. Every target URL is judged first."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from ..core.errors import ToolError
from .cdp import CDPError
from .netrules import check_navigation, navigation_blocked
from .page import Tab
from .session import Session


def navigate_tab(session: Session, tab: Tab, url: str, timeout: float) -> dict[str, Any]:
    """Load `url` in `tab` and wait for it; the warden judges the redirects and subresources."""
    check_navigation(url, session.guard, session.local_ports)
    tab.check_no_dialog()
    result = tab.call("Page.navigate", {"url": url})
    error = str(result.get("errorText", ""))
    if "ERR_BLOCKED_BY_CLIENT" in error:
        raise navigation_blocked(url, "a redirect led to a refused address (see action=console)")
    if error and "ERR_ABORTED" not in error:
        raise ToolError(
            "navigation_failed", f"the browser could not load {url[:200]}: {error}", {"url": url[:200]}
        )
    ready = tab.wait_loaded(result.get("loaderId"), timeout)
    info = tab.evaluate("[location.href, document.title]")
    session.state.setdefault("refs", {}).pop(tab.target_id, None)
    session.save()
    return {"tab": tab.target_id, "url": info[0], "title": info[1], "ready_state": ready}


def open_tab(session: Session, url: str, timeout: float) -> dict[str, Any]:
    check_navigation(url, session.guard, session.local_ports)
    closed = enforce_tab_cap(session, session.cfg.max_tabs - 1)
    created = session.conn.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout)
    target = str(created["targetId"])
    session.state["active"] = target
    session.state.setdefault("opened", []).append(target)
    session.save()
    result = navigate_tab(session, session.tab(target), url, timeout)
    result["closed_tabs"] = closed
    return result


def enforce_tab_cap(session: Session, keep: int) -> list[str]:
    """Close the oldest tabs that are not active until at most `keep` remain; their ids."""
    pages = [p["targetId"] for p in session.pages()]
    order = session.state.get("opened", [])
    active = session.state.get("active")
    # Tabs fermix did not open (the first blank tab) count as oldest.
    candidates = sorted((t for t in pages if t != active), key=lambda t: order.index(t) if t in order else -1)
    closed: list[str] = []
    while len(pages) - len(closed) > keep and candidates:
        victim = candidates.pop(0)
        with contextlib.suppress(CDPError):  # already gone
            session.conn.call("Target.closeTarget", {"targetId": victim}, timeout=session.timeout)
        closed.append(victim)
        forget_tab(session, victim)
    return closed


def forget_tab(session: Session, target: str) -> None:
    session.state.setdefault("refs", {}).pop(target, None)
    if target in session.state.get("opened", []):
        session.state["opened"].remove(target)
    if session.state.get("active") == target:
        session.state["active"] = None
    session.save()


def list_tabs(session: Session) -> dict[str, Any]:
    active = session.active_id()
    session.save()
    tabs = [
        {
            "tab": p["targetId"],
            "url": p.get("url", ""),
            "title": p.get("title", ""),
            "active": p["targetId"] == active,
        }
        for p in session.pages()
    ]
    return {"tabs": tabs, "count": len(tabs), "max_tabs": session.cfg.max_tabs}


def focus_tab(session: Session, wanted: str) -> dict[str, Any]:
    target = session.find_tab(wanted)
    session.conn.call("Target.activateTarget", {"targetId": target}, timeout=session.timeout)
    session.state["active"] = target
    session.save()
    return {"tab": target, "active": True}


def close_tab(session: Session, wanted: str | None) -> dict[str, Any]:
    target = session.find_tab(wanted) if wanted else session.active_id()
    session.conn.call("Target.closeTarget", {"targetId": target}, timeout=session.timeout)
    forget_tab(session, target)
    deadline = time.monotonic() + 2.0
    while (remaining := [p["targetId"] for p in session.pages()]) and target in remaining:
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)  # closing is asynchronous: the count must not include the closed tab
    return {"closed": target, "remaining": len(remaining)}
