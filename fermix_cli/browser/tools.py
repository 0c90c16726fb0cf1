"""The `browser` tool (seed 000 "browser"): a managed Chromium over CDP, one action per call.

Declared here without importing the engine: the handler imports `dispatch` (and with it `websockets`)
only when the tool runs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ..core.context import ToolContext
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs

Action = Literal[
    "start", "stop", "status", "doctor", "open", "navigate", "tabs", "focus", "close", "snapshot",
    "screenshot", "pdf", "console", "act", "dialog", "cookies", "storage", "upload", "download",
]  # fmt: skip
Kind = Literal[
    "click", "fill", "type", "submit", "press", "hover", "get", "wait", "click_coords",
    "accept", "dismiss", "list", "set", "delete", "clear",
]  # fmt: skip
GetField = Annotated[str, Field(max_length=4096)]


class BrowserParams(Params):
    action: Annotated[Action, Field(description="Browser action to run")]
    url: Annotated[str | None, Field(max_length=2048, description="URL for open, navigate or download")] = (
        None
    )
    kind: Annotated[
        Kind | None,
        Field(
            description="For act: click, fill (replace the value), type (append), submit, press, hover, get, "
            "wait or click_coords. For dialog: accept (default) or dismiss. For cookies and storage: list "
            "(default), get, set, delete or clear"
        ),
    ] = None
    ref: Annotated[
        str | None, Field(max_length=32, description="Element handle from the latest snapshot of this tab")
    ] = None
    selector: Annotated[
        str | None,
        Field(
            max_length=2000,
            description="CSS selector: the element to measure (act get field=rect) or wait for "
            "(act wait wait_until=element); also html, text and count for get",
        ),
    ] = None
    text: Annotated[
        str | None,
        Field(
            max_length=100_000,
            description="Text to fill or type, wait target, dialog prompt input, or the file path for upload",
        ),
    ] = None
    field: Annotated[
        str | None,
        Field(
            max_length=4096,
            description="For get: url, title, html, text, count, ready_state or rect (viewport box of the "
            "first selector match); for cookies and storage: the cookie or key name",
        ),
    ] = None
    value: Annotated[
        str | None, Field(max_length=100_000, description="Value for cookie and storage writes")
    ] = None
    x: Annotated[
        float | None,
        Field(
            ge=0,
            le=100_000,
            description="click_coords x in CSS pixels of the page viewport (what get field=rect returns); "
            "a point outside the viewport is refused",
        ),
    ] = None
    y: Annotated[
        float | None, Field(ge=0, le=100_000, description="click_coords y in CSS pixels of the page viewport")
    ] = None
    wait_until: Annotated[
        Literal["text", "url", "element", "load"] | None,
        Field(
            description="For act wait: text (needs text), url (url or text), element (selector or ref), load"
        ),
    ] = None
    key: Annotated[
        str | None,
        Field(max_length=64, description="Key for press: one character, Enter, Tab, Escape, ArrowDown ...; "
              "modifiers as Control+a"),
    ] = None  # fmt: skip
    full_page: Annotated[bool | None, Field(description="screenshot: capture the whole page")] = None
    format: Annotated[Literal["png", "jpeg"] | None, Field(description="Screenshot format (default png)")] = (
        None
    )
    quality: Annotated[int | None, Field(ge=1, le=100, description="JPEG quality 1-100 (default 80)")] = None
    interactive: Annotated[bool | None, Field(description="snapshot: only interactive elements, flat")] = None
    compact: Annotated[bool | None, Field(description="snapshot: drop unnamed structural containers")] = None
    depth: Annotated[
        int | None, Field(ge=0, le=200, description="snapshot: deepest indentation level shown")
    ] = None
    include_urls: Annotated[bool | None, Field(description="snapshot: show each link's URL")] = None
    profile: Annotated[
        str | None,
        Field(
            pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$", description="Browser profile (default: the configured one)"
        ),
    ] = None
    tab: Annotated[
        str | None,
        Field(max_length=64, description="Tab id (or unique prefix) from action=tabs, for focus and close"),
    ] = None
    headless: Annotated[
        bool | None, Field(description="start (or the first open): headless (default from config) or headed")
    ] = None
    timeout_ms: Annotated[int | None, Field(ge=100, le=300_000, description="Per-action timeout in ms")] = (
        None
    )


def browser(p: BrowserParams, ctx: ToolContext) -> dict[str, Any]:
    from .dispatch import run

    return run(p, ctx)


def render(result: dict[str, Any]) -> str:
    if "snapshot" in result:
        head = f"{result['url']} — {result['title']!r} (ready_state: {result['ready_state']}, tab {result['tab']})"
        tail = "\n[truncated]" if result.get("truncated") else ""
        return f"{head}\n{result['snapshot']}{tail}"
    import json

    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def screenshot_images(result: Any) -> tuple[str, ...]:
    """A screenshot's file, so a model loop sends the picture itself to a model that takes images."""
    if (
        isinstance(result, dict)
        and result.get("format") in ("png", "jpeg")
        and isinstance(result.get("path"), str)
    ):
        return (result["path"],)
    return ()


BROWSER = ToolSpec(
    name="browser",
    category="web",
    policy_class="network",
    description=(
        "Drive a supervised local Chromium over the DevTools protocol, one action per call; the browser stays "
        "up between calls. Target elements by the `ref` handles of a `snapshot` (an accessibility-tree view "
        "with ready_state); refs stay valid across calls until the document changes. A CSS selector is used "
        "by act get field=rect (the viewport box click_coords clicks in) and act wait wait_until=element. "
        "Ref clicks scroll into view first. Every navigation, redirect and request is judged by the network "
        "guard: private, loopback, link-local and metadata addresses are refused unless listed in "
        "[fermix_core.net] allowed_private_hosts; only http(s) and about:blank load. Screenshots and PDFs go "
        "to the media directory, downloads to the workspace."
    ),
    params=BrowserParams,
    handler=browser,
    render=render,
    images=screenshot_images,
    hints=Hints(open_world=True),
    when_to_use=(
        "JavaScript-rendered or interactive pages (forms, logins, single-page apps). For a plain public page "
        "use web_fetch; for the desktop use computer_use."
    ),
    examples=(
        Example(
            {"action": "open", "url": "https://example.com/"}, "open a tab (starts the browser on first use)"
        ),
        Example({"action": "snapshot", "interactive": True}, "the clickable and editable elements with refs"),
        Example({"action": "act", "kind": "click", "ref": "e3"}, "click an element from the latest snapshot"),
        Example({"action": "act", "kind": "fill", "ref": "e5", "text": "ada@example.com"}, "replace a field"),
        Example({"action": "act", "kind": "get", "field": "rect", "selector": "canvas"}, "a canvas's box"),
        Example(
            {"action": "screenshot", "full_page": True}, "capture the whole page into the media directory"
        ),
    ),
    failure_modes=(
        FailureMode("chrome_missing", "no Chromium on PATH or at [fermix_core.browser] executable"),
        FailureMode("not_running", "no browser for this profile: run action=start or open a URL"),
        FailureMode("host_lost", "the browser crashed or was killed; run action=start for a fresh one"),
        FailureMode("navigation_blocked", "a URL, redirect or address refused by the network guard (exit 3)"),
        FailureMode("stale_ref", "the ref is not from this document's latest snapshot: take a new snapshot"),
        FailureMode("dialog_open", "a JavaScript dialog blocks the page: answer it with action=dialog"),
        FailureMode("no_box", "the element has no rendered box: click its label's ref or use click_coords"),
        FailureMode("not_found", "a selector matched nothing, or no such tab or dialog"),
        FailureMode("download_blocked", "no download started or it did not complete"),
        FailureMode("timeout", "the page or the wait condition did not answer within timeout_ms"),
    ),
)

TOOLS = specs(BROWSER)
