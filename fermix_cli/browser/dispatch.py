"""The `browser` tool's handler: one action per call against the profile's running browser."""

from __future__ import annotations

from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from .cdp import CDPError
from .runfiles import ProfileFiles, read_json
from .session import Session

CONTROL = ("start", "stop", "status", "doctor")
STARTS_BROWSER = ("open", "navigate")


def run(p: Any, ctx: ToolContext) -> dict[str, Any]:
    cfg = ctx.config.fermix_core.browser
    files = ProfileFiles(ctx.paths, p.profile or cfg.profile)
    timeout = (p.timeout_ms or cfg.timeout_ms) / 1000
    action = p.action
    if action in CONTROL or action in STARTS_BROWSER:
        from . import control  # launching code (subprocess, shutil) only when it may launch
    if action == "start":
        return control.start(ctx, cfg, files, p.headless)
    if action == "stop":
        return control.stop(files)
    if action == "status":
        return control.status(files, cfg)
    if action == "doctor":
        return control.doctor(ctx, cfg, files)
    if action in STARTS_BROWSER and read_json(files.launch) is None:
        control.start(ctx, cfg, files, p.headless)  # first use starts the browser
    session = Session(files, cfg, timeout)
    try:
        return _page_action(ctx, session, p, timeout)
    except CDPError as exc:
        # The browser refused a command: a typed failure with its own words, never an internal error.
        raise ToolError(
            "browser_error",
            f"the browser refused {exc.method}: {exc.message} ({exc.code}). Check the input, or the page "
            "with action=snapshot; retrying the same call will fail the same way",
            {"method": exc.method, "cdp_code": exc.code, "cdp_message": exc.message},
        ) from None
    finally:
        session.close()


def _need_url(p: Any) -> str:
    if not p.url:
        raise ToolError("missing_url", f"action={p.action} needs `url`", {"action": p.action})
    return str(p.url)


def _page_action(ctx: ToolContext, session: Session, p: Any, timeout: float) -> dict[str, Any]:
    action = p.action
    if action in ("open", "tabs", "focus", "close", "navigate"):
        from . import navigation
    if action == "open":
        return navigation.open_tab(session, _need_url(p), timeout)
    if action == "tabs":
        return navigation.list_tabs(session)
    if action == "focus":
        if not p.tab:
            raise ToolError("missing_tab", "action=focus needs `tab` (an id from action=tabs)", {})
        return navigation.focus_tab(session, p.tab)
    if action == "close":
        return navigation.close_tab(session, p.tab)
    tab = session.tab()
    session.save()
    if action == "navigate":
        return navigation.navigate_tab(session, tab, _need_url(p), timeout)
    if action == "snapshot":
        from .snapshot import take_snapshot

        return take_snapshot(
            session,
            tab,
            interactive=bool(p.interactive),
            compact=bool(p.compact),
            depth=p.depth,
            include_urls=bool(p.include_urls),
        )
    if action == "act":
        from .interact import act

        return act(tab, p, timeout)
    from . import pagestate

    if action == "screenshot":
        return pagestate.screenshot(ctx, session, tab, p)
    if action == "pdf":
        return pagestate.pdf(ctx, session, tab, p)
    if action == "console":
        return pagestate.console(session, tab)
    if action == "dialog":
        return pagestate.dialog(tab, p)
    if action == "cookies":
        return pagestate.cookies(tab, p)
    if action == "storage":
        return pagestate.storage(tab, p)
    if action == "upload":
        return pagestate.upload(ctx, tab, p)
    if action == "download":
        return pagestate.download(ctx, session, tab, p, timeout)
    raise ToolError("invalid_action", f"unknown action {action!r}", {"action": action})
