"""Reading and changing page state: screenshot, pdf, console, dialog, cookies, storage, upload, download."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.paths import make_private_dirs
from .cdp import CDPError
from .interact import element_point, mouse_click, need
from .netrules import check_navigation
from .page import Tab
from .runfiles import read_json, write_json

if TYPE_CHECKING:
    from ..core.context import ToolContext
    from .session import Session

CONSOLE_LIMIT = 200
# A full-page screenshot's longest side in device pixels: Chromium fails past some size (a 3,000,000 px
# page is "Unable to capture screenshot"), and no image reader wants more (JPEG stops at 65,535).
MAX_SHOT_SIDE = 32_768
# RFC 6265 section 4.1.1: a cookie name is a token, a value is cookie-octets (optionally double-quoted).
_TOKEN = frozenset(chr(c) for c in range(0x21, 0x7F)) - frozenset('()<>@,;:\\"/[]?={}')
_COOKIE_OCTETS = frozenset(chr(c) for c in range(0x21, 0x7F)) - frozenset('",;\\')
MAX_COOKIE_BYTES = 4096  # name plus value: what every browser keeps (RFC 6265 section 6.1)


def _media_file(ctx: ToolContext, profile: str, suffix: str) -> Path:
    folder = make_private_dirs(ctx.paths.media / "browser")
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return folder / f"{profile}-{stamp}-{os.urandom(3).hex()}.{suffix}"


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def screenshot(ctx: ToolContext, session: Session, tab: Tab, p: Any) -> dict[str, Any]:
    fmt = p.format or "png"
    if p.quality is not None and fmt != "jpeg":
        raise ToolError("invalid_quality", "quality applies to format=jpeg only", {"format": fmt})
    tab.check_no_dialog()
    view = tab.evaluate(
        "[window.devicePixelRatio, innerWidth, innerHeight,"
        " document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
    )
    dpr, width, height = view[0], view[1], view[2]
    params: dict[str, Any] = {"format": fmt}
    if fmt == "jpeg":
        params["quality"] = p.quality if p.quality is not None else 80
    if p.full_page:
        width, height = max(width, view[3]), max(height, view[4])
        if max(width, height) * dpr > MAX_SHOT_SIDE:
            raise _too_large(width, height, dpr, f"over {MAX_SHOT_SIDE} device pixels a side")
        params["captureBeyondViewport"] = True
        params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
    try:
        data = base64.b64decode(tab.call("Page.captureScreenshot", params)["data"])
    except CDPError as exc:
        if p.full_page:
            raise _too_large(width, height, dpr, f"the browser could not capture it: {exc.message}") from None
        raise
    path = _media_file(ctx, session.files.profile, "jpg" if fmt == "jpeg" else "png")
    _write_new(path, data)
    return {
        "path": str(path),
        "format": fmt,
        "bytes": len(data),
        "css_width": width,
        "css_height": height,
        "device_pixel_ratio": dpr,
        "full_page": bool(p.full_page),
        "url": tab.evaluate("location.href"),
    }


def _too_large(width: float, height: float, dpr: float, why: str) -> ToolError:
    return ToolError(
        "screenshot_too_large",
        f"the page is {width:g}x{height:g} CSS pixels, too large for a full-page screenshot ({why}); "
        "use a viewport screenshot (full_page false), scrolling to the part you need (act press "
        "PageDown, or act hover on an element's ref), or read the page with action=snapshot",
        {"css_width": width, "css_height": height, "device_pixel_ratio": dpr, "max_side": MAX_SHOT_SIDE},
    )


def pdf(ctx: ToolContext, session: Session, tab: Tab, p: Any) -> dict[str, Any]:
    tab.check_no_dialog()
    try:
        result = tab.call("Page.printToPDF", {"printBackground": True})
    except CDPError as exc:
        raise ToolError(
            "unsupported",
            f"this browser cannot print to PDF ({exc.message}); PDF needs a headless browser",
            {},
        ) from None
    data = base64.b64decode(result["data"])
    path = _media_file(ctx, session.files.profile, "pdf")
    _write_new(path, data)
    return {"path": str(path), "bytes": len(data), "url": tab.evaluate("location.href")}


def console(session: Session, tab: Tab) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    with contextlib.suppress(FileNotFoundError), open(session.files.console, encoding="utf-8") as fh:
        for line in fh:
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                # "" marks the proxy's refusals: a connection does not say which tab made it.
                if item.get("target") in (tab.target_id, ""):
                    messages.append({k: item[k] for k in ("level", "text", "ts")})
    total = len(messages)
    return {"tab": tab.target_id, "messages": messages[-CONSOLE_LIMIT:], "total": total}


def dialog(tab: Tab, p: Any) -> dict[str, Any]:
    kind = p.kind or "accept"
    if kind not in ("accept", "dismiss"):
        raise ToolError("invalid_kind", "dialog kind is accept or dismiss", {"kind": kind})
    open_now = tab.open_dialog()
    if open_now is None:
        raise ToolError("not_found", "no JavaScript dialog is open on this tab", {"tab": tab.target_id})
    # Only a session that had the Page domain on before the dialog opened may answer it (enabling it
    # now would wait on the blocked page), so the warden answers on its own session.
    request_id = os.urandom(8).hex()
    write_json(
        tab.files.dialog_request,
        {"id": request_id, "target": tab.target_id, "accept": kind == "accept", "prompt_text": p.text},
    )
    deadline = time.monotonic() + tab.timeout
    while True:
        answer = (read_json(tab.files.warden) or {}).get("answers", {}).get(request_id)
        if answer is not None:
            break
        if time.monotonic() >= deadline:
            raise ToolError("timeout", "the network-guard process did not answer the dialog; retry", {})
        time.sleep(0.01)
    if answer != "ok":
        raise ToolError("not_found", f"the dialog could not be answered ({answer}); it may be gone", {})
    while tab.open_dialog() is not None and time.monotonic() < deadline:
        time.sleep(0.01)  # the warden records the close; later calls must not see it as open
    return {"handled": open_now, "accepted": kind == "accept", "prompt_text": p.text}


def _page_url(tab: Tab) -> str:
    url = str(tab.evaluate("location.href"))
    if not url.startswith(("http://", "https://")):
        raise ToolError("no_page", "cookies and storage need an http(s) page; open one first", {"url": url})
    return url


def cookies(tab: Tab, p: Any) -> dict[str, Any]:
    kind = p.kind or "list"
    url = _page_url(tab)
    if kind == "set":
        name, value = need(p.field, "field", "cookies set"), need(p.value, "value", "cookies set")
        _check_cookie(name, value)
        ok = tab.call("Network.setCookie", {"name": name, "value": value, "url": url}).get("success", True)
        if not ok:
            raise ToolError("invalid_cookie", f"the browser refused cookie {name!r} for {url}", {})
    elif kind == "delete":
        tab.call("Network.deleteCookies", {"name": need(p.field, "field", "cookies delete"), "url": url})
    elif kind == "clear":
        for cookie in tab.call("Network.getCookies", {"urls": [url]})["cookies"]:
            tab.call("Network.deleteCookies", {"name": cookie["name"], "url": url})
    elif kind not in ("list", "get"):
        raise ToolError("invalid_kind", "cookies kind is list, set, delete or clear", {"kind": kind})
    keys = ("name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite")
    found = [
        {k: c.get(k) for k in keys}
        for c in tab.call("Network.getCookies", {"urls": [url]})["cookies"]
        if kind != "get" or p.field is None or c["name"] == p.field
    ]
    return {"url": url, "kind": kind, "cookies": found}


def _check_cookie(name: str, value: str) -> None:
    """Refuse what RFC 6265 does not allow in a Set-Cookie, before the browser sees it."""
    bad_name = sorted({c for c in name if c not in _TOKEN})
    if bad_name:
        raise ToolError(
            "invalid_cookie",
            f"cookie name {name!r} has characters a cookie name cannot hold ({_shown(bad_name)}): a name is "
            'printable ASCII without spaces or ( ) < > @ , ; : \\ " / [ ] ? = { }',
            {"name": name, "characters": bad_name},
        )
    inner = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    bad_value = sorted({c for c in inner if c not in _COOKIE_OCTETS})
    if bad_value:
        raise ToolError(
            "invalid_cookie",
            f"the value of cookie {name!r} has characters a cookie value cannot hold ({_shown(bad_value)}): "
            "percent-encode or base64 it first (spaces, quotes, commas, semicolons, backslashes, control "
            "characters and non-ASCII are not allowed)",
            {"name": name, "characters": bad_value[:20]},
        )
    size = len(name.encode()) + len(value.encode())
    if size > MAX_COOKIE_BYTES:
        raise ToolError(
            "invalid_cookie",
            f"cookie {name!r} is {size} bytes (name plus value); browsers keep at most {MAX_COOKIE_BYTES}. "
            "Store large data with action=storage instead",
            {"name": name, "bytes": size, "max_bytes": MAX_COOKIE_BYTES},
        )


def _shown(chars: list[str]) -> str:
    return ", ".join(repr(c) for c in chars[:10])


def storage(tab: Tab, p: Any) -> dict[str, Any]:
    kind = p.kind or "list"
    _page_url(tab)
    key = json.dumps(p.field)
    if kind == "set":
        need(p.field, "field", "storage set")
        tab.evaluate(f"localStorage.setItem({key}, {json.dumps(need(p.value, 'value', 'storage set'))})")
    elif kind == "delete":
        need(p.field, "field", "storage delete")
        tab.evaluate(f"localStorage.removeItem({key})")
    elif kind == "clear":
        tab.evaluate("localStorage.clear()")
    elif kind == "get":
        need(p.field, "field", "storage get")
        return {"kind": kind, "field": p.field, "value": tab.evaluate(f"localStorage.getItem({key})")}
    elif kind != "list":
        raise ToolError("invalid_kind", "storage kind is list, get, set, delete or clear", {"kind": kind})
    items = tab.evaluate("Object.fromEntries(Object.entries(localStorage))")
    return {"kind": kind, "items": items}


def upload(ctx: ToolContext, tab: Tab, p: Any) -> dict[str, Any]:
    ref = need(p.ref, "ref", "upload")
    raw = need(p.text, "text", "upload (the file's path)")
    path = ctx.sandbox.read_path(raw, tool="browser")
    if not os.path.isfile(path):
        raise ToolError("not_found", f"{raw} is not a file", {"path": raw})
    obj = tab.resolve_ref(ref)
    if (
        tab.call_on(obj, "function() { return this.tagName === 'INPUT' && this.type === 'file'; }")
        is not True
    ):
        raise ToolError("not_file_input", f"element {ref} is not a file input; pick the file input's ref", {})
    tab.call("DOM.setFileInputFiles", {"files": [path], "objectId": obj})
    return {"uploaded": path, "ref": ref}


def download(ctx: ToolContext, session: Session, tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    folder = ctx.sandbox.write_path(os.path.join(str(ctx.paths.workspace), "downloads"), tool="browser")
    make_private_dirs(folder)
    conn = session.conn
    if p.url is not None:
        check_navigation(p.url, session.guard, session.local_ports)
    elif p.ref is None:
        raise ToolError("missing_url", "download needs `url` or the `ref` of a link or button", {})
    # The warden allows downloads (into the workspace only, for this call only) and denies them again:
    # a behaviour set over this call's own connection would fall back to Chromium's default when it
    # closes. This call follows the download through its tab's Page events.
    tab.call("Page.enable")
    _downloads_via_warden(
        session, {"allow": True, "path": folder, "until": time.time() + timeout + 5}, timeout
    )
    try:
        if p.url is not None:
            tab.call("Page.navigate", {"url": p.url})
        else:
            mouse_click(tab, *element_point(tab, tab.resolve_ref(p.ref), p.ref))
        began = conn.wait_event(lambda e: e["method"] == "Page.downloadWillBegin", timeout)
        if began is None:
            raise ToolError(
                "download_blocked",
                "no download started (the URL may be a page, or the guard refused it: see action=console)",
                {},
            )
        guid = began["params"]["guid"]
        done = conn.wait_event(
            lambda e: (
                e["method"] == "Page.downloadProgress"
                and e["params"].get("guid") == guid
                and e["params"].get("state") in ("completed", "canceled")
            ),
            timeout,
        )
    finally:
        _downloads_via_warden(session, {"allow": False}, timeout)
    if done is None or done["params"]["state"] != "completed":
        raise ToolError("download_blocked", "the download was cancelled or did not finish in time", {})
    final = _unique(Path(folder), began["params"].get("suggestedFilename") or guid)
    os.replace(os.path.join(folder, guid), final)
    return {"path": str(final), "bytes": final.stat().st_size, "url": began["params"].get("url", "")}


def _downloads_via_warden(session: Session, request: dict[str, Any], timeout: float) -> None:
    """Ask the warden to allow or deny downloads, and wait until the browser has taken it."""
    request_id = os.urandom(8).hex()
    write_json(session.files.download_request, {"id": request_id, **request})
    deadline = time.monotonic() + max(timeout, 5.0)
    while True:
        answer = (read_json(session.files.warden) or {}).get("answers", {}).get(request_id)
        if answer is not None:
            break
        if time.monotonic() >= deadline:
            raise ToolError(
                "guard_unavailable",
                "the network-guard process did not answer a change of the download policy; retry, or "
                "run action=stop and action=start",
                {},
            )
        time.sleep(0.01)
    if answer != "ok":
        raise ToolError("browser_error", f"the browser refused the download policy: {answer}", {})


def _unique(folder: Path, name: str) -> Path:
    name = os.path.basename(name.replace("\\", "/")).lstrip(".") or "download"
    stem, dot, ext = name.rpartition(".")
    candidate = folder / name
    n = 1
    while candidate.exists():
        candidate = folder / (f"{stem} ({n}).{ext}" if dot else f"{name} ({n})")
        n += 1
    return candidate
