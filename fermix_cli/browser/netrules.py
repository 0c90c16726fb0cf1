"""Which URLs the browser may load: the network guard's rules applied to navigations and requests."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import ExitClass, ToolError

if TYPE_CHECKING:
    from ..core.net.guard import HostGuard

# Loaded by the page without a network request: never sent to a host, so nothing to judge.
LOCAL_SCHEMES = ("data:", "blob:", "about:")


def judge(url: str, guard: HostGuard) -> str | None:
    """Why the browser must not fetch `url` (a ToolError message), or None when it may."""
    lowered = url[:16].lower()
    if lowered.startswith(LOCAL_SCHEMES):
        return None
    from ..core.net.guard import check_url

    try:
        checked = check_url(url)
        guard.addresses(checked.host)
    except ToolError as exc:
        return exc.message
    return None


def check_navigation(url: str, guard: HostGuard) -> None:
    """Refuse a navigation target before the browser sees it: only http(s) to allowed hosts and about:blank."""
    if url == "about:blank":
        return
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https"):
        raise ToolError(
            "navigation_blocked",
            f"the browser opens only http://, https:// and about:blank URLs, not {scheme or 'this'}:",
            {"url": url[:200], "reason": "unsupported_scheme"},
            exit_class=ExitClass.REFUSED,
        )
    why = judge(url, guard)
    if why is not None:
        raise navigation_blocked(url, why)


def navigation_blocked(url: str, why: str) -> ToolError:
    return ToolError(
        "navigation_blocked",
        f"navigation to {url[:200]} refused by the network guard: {why}",
        {"url": url[:200]},
        exit_class=ExitClass.REFUSED,
    )
