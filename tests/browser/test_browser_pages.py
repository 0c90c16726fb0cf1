"""The browser tool against real headless Chromium: pages served on 127.0.0.1 by the test."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.browser.browser_world import BrowserWorld, Site, html, needs_chromium, ref_of

pytestmark = needs_chromium

FORM = html(
    """
<style>.toggle input { position: absolute; width: 0; height: 0; opacity: 0; }
.toggle span { display: inline-block; width: 40px; height: 20px; background: #ccc; }</style>
<form id="f">
  <label for="email">Email</label> <input id="email" name="email" value="old">
  <label class="toggle" for="agree"><input type="checkbox" id="agree" name="agree"><span></span>I agree</label>
  <select id="size" name="size" aria-label="Size"><option>Small</option><option>Large</option></select>
  <button type="submit">Send</button>
</form>
<p id="out"></p>
<script>document.getElementById('f').addEventListener('submit', e => { e.preventDefault();
  const f = e.target; document.getElementById('out').textContent =
    'sent ' + f.email.value + ' ' + f.agree.checked + ' ' + f.size.value; });</script>
""",
    "Form",
)

CANVAS = html(
    """<div style="height: 150px">spacer</div>
<canvas id="c" width="300" height="200" style="margin-left: 40px"></canvas><p id="out"></p>
<script>document.getElementById('c').addEventListener('click', e => {
  document.getElementById('out').textContent = 'hit ' + e.offsetX + ',' + e.offsetY; });</script>""",
    "Canvas",
)

DIALOGS = html(
    """<button onclick="alert('hello there'); document.getElementById('out').textContent='after alert'">Alert</button>
<button onclick="document.getElementById('out').textContent='confirm ' + confirm('sure?')">Confirm</button>
<button onclick="document.getElementById('out').textContent='prompt ' + prompt('name?', 'x')">Prompt</button>
<p id="out"></p>""",
    "Dialogs",
)

SPA = html(
    """<div id="app"><h1>Home</h1><button id="go">Go to settings</button></div>
<script>document.getElementById('go').addEventListener('click', () => {
  history.pushState({}, '', '/spa/settings');
  document.getElementById('app').innerHTML = '<h1>Settings</h1><button>Save settings</button>'; });</script>""",
    "SPA",
)

LONG = html(
    """<div style="height: 3000px">tall</div><button onclick="document.getElementById('out').textContent='low clicked'">Low button</button>
<p id="out"></p>""",
    "Long",
)

UPLOAD = html(
    """<input type="file" id="file" aria-label="Attachment"><p id="out"></p>
<script>document.getElementById('file').addEventListener('change', async e => {
  const f = e.target.files[0]; document.getElementById('out').textContent = f.name + ' ' + (await f.text()); });</script>""",
    "Upload",
)

LEAK = html(
    """<p id="out">waiting</p><script>
fetch('http://127.0.0.2:{port}/secret').then(() => { document.getElementById('out').textContent = 'leaked'; })
  .catch(() => { document.getElementById('out').textContent = 'refused'; });</script>""",
    "Leak",
)


KEYS = html(
    """<input id="k" aria-label="Keys"><p id="out"></p><div id="late"></div>
<button id="hov" onmouseover="document.getElementById('out').textContent='hovered'">Hover me</button>
<script>document.getElementById('k').addEventListener('keydown', e => {
  document.getElementById('out').textContent += e.key + (e.ctrlKey ? '+ctrl' : '') + ' '; });
setTimeout(() => { document.getElementById('late').innerHTML = '<b class="late">late</b>'; }, 300);</script>""",
    "Keys",
)


@pytest.fixture(scope="module")
def site(page_server: Any) -> Site:
    pages = {
        "/form": FORM,
        "/canvas": CANVAS,
        "/dialogs": DIALOGS,
        "/spa": SPA,
        "/long": LONG,
        "/upload": UPLOAD,
        "/file.txt": (200, {"Content-Type": "text/plain", "Content-Disposition": 'attachment; filename="report.txt"'},
                      b"the report body\n"),
        "/downloads": html('<a href="/file.txt">Get report</a>', "Downloads"),
        "/redirect": (302, {"Location": "http://127.0.0.2:{port}/secret"}, b""),
        "/secret": html("secret", "Secret"),
        "/other": html("<h1>Other page</h1>", "Other"),
        "/keys": KEYS,
    }  # fmt: skip
    made: Site = page_server(pages)
    # The leak page names the server's own port on the refused address.
    body = LEAK[2].replace(b"{port}", str(made.port).encode())
    made.pages["/leak"] = (200, {}, body)
    return made


def open_and_snapshot(world: BrowserWorld, url: str, **options: Any) -> dict[str, Any]:
    world.call({"action": "navigate", "url": url})
    return dict(world.call({"action": "snapshot", **options}))


def text_of(world: BrowserWorld, selector: str) -> str:
    return str(world.call({"action": "act", "kind": "get", "field": "text", "selector": selector})["value"])


def test_two_cli_processes_share_one_browser_and_one_ref(browser_world: BrowserWorld, site: Site) -> None:
    opened = browser_world.cli({"action": "navigate", "url": site.url("/form")})
    assert opened.returncode == 0, opened.stderr
    shot = browser_world.cli({"action": "snapshot"})
    assert shot.returncode == 0, shot.stderr
    snap = json.loads(shot.stdout)
    assert snap["ready_state"] == "complete"
    ref = ref_of(snap["snapshot"], "textbox", "Email")
    filled = browser_world.cli({"action": "act", "kind": "fill", "ref": ref, "text": "ada@example.com"})
    assert filled.returncode == 0, filled.stderr
    assert json.loads(filled.stdout)["value"] == "ada@example.com"
    # The second process used the same browser: the first one's page holds the value.
    assert browser_world.call({"action": "act", "kind": "get", "field": "url"})["value"] == site.url("/form")
    status = browser_world.call({"action": "status"})
    assert status["running"] is True and status["responding"] is True
    doctor = browser_world.call({"action": "doctor"})
    assert (
        doctor["ok"] is True and "Chromium" in {c["name"]: c["detail"] for c in doctor["checks"]}["version"]
    )


def test_form_labels_and_a_hidden_styled_checkbox(browser_world: BrowserWorld, site: Site) -> None:
    snap = open_and_snapshot(browser_world, site.url("/form"))["snapshot"]
    checkbox = ref_of(snap, "checkbox", "I agree")
    refused = browser_world.error({"action": "act", "kind": "click", "ref": checkbox})
    assert refused.code == "no_box"
    assert "label" in refused.message and "click_coords" in refused.message
    label = ref_of(snap, "label", "I agree")
    browser_world.call({"action": "act", "kind": "click", "ref": label})
    browser_world.call(
        {"action": "act", "kind": "type", "ref": ref_of(snap, "textbox", "Email"), "text": "+new"}
    )
    browser_world.call(
        {"action": "act", "kind": "fill", "ref": ref_of(snap, "combobox", "Size"), "text": "Large"}
    )
    browser_world.call({"action": "act", "kind": "submit", "ref": ref_of(snap, "button", "Send")})
    assert text_of(browser_world, "#out") == "sent old+new true Large"


def test_canvas_through_get_rect_and_click_coords(browser_world: BrowserWorld, site: Site) -> None:
    browser_world.call({"action": "navigate", "url": site.url("/canvas")})
    rect = browser_world.call({"action": "act", "kind": "get", "field": "rect", "selector": "#c"})["value"]
    assert rect["width"] == 300 and rect["height"] == 200
    browser_world.call({"action": "act", "kind": "click_coords", "x": rect["x"] + 25, "y": rect["y"] + 70})
    assert text_of(browser_world, "#out") == "hit 25,70"
    missing = browser_world.error({"action": "act", "kind": "get", "field": "rect", "selector": "#nope"})
    assert missing.code == "not_found"


def test_alert_confirm_and_prompt(browser_world: BrowserWorld, site: Site) -> None:
    snap = open_and_snapshot(browser_world, site.url("/dialogs"))["snapshot"]
    clicked = browser_world.call({"action": "act", "kind": "click", "ref": ref_of(snap, "button", "Alert")})
    assert clicked["dialog"]["type"] == "alert" and clicked["dialog"]["message"] == "hello there"
    blocked = browser_world.error({"action": "snapshot"})
    assert blocked.code == "dialog_open" and "action=dialog" in blocked.message
    browser_world.call({"action": "dialog"})
    assert text_of(browser_world, "#out") == "after alert"

    browser_world.call({"action": "act", "kind": "click", "ref": ref_of(snap, "button", "Confirm")})
    browser_world.call({"action": "dialog", "kind": "dismiss"})
    assert text_of(browser_world, "#out") == "confirm false"

    browser_world.call({"action": "act", "kind": "click", "ref": ref_of(snap, "button", "Prompt")})
    browser_world.call({"action": "dialog", "kind": "accept", "text": "Grace"})
    assert text_of(browser_world, "#out") == "prompt Grace"
    assert browser_world.error({"action": "dialog"}).code == "not_found"


def test_spa_route_change_then_snapshot(browser_world: BrowserWorld, site: Site) -> None:
    snap = open_and_snapshot(browser_world, site.url("/spa"))["snapshot"]
    go = ref_of(snap, "button", "Go to settings")
    browser_world.call({"action": "act", "kind": "click", "ref": go})
    browser_world.call({"action": "act", "kind": "wait", "wait_until": "url", "url": "/spa/settings"})
    # The button the old ref named was swapped out: the ref is refused, never re-aimed.
    stale = browser_world.error({"action": "act", "kind": "click", "ref": go})
    assert stale.code == "stale_ref" and "snapshot" in stale.message
    after = browser_world.call({"action": "snapshot"})
    assert 'heading "Settings"' in after["snapshot"] and "Go to settings" not in after["snapshot"]
    shallow = browser_world.call({"action": "snapshot", "depth": 0, "compact": True})["snapshot"]
    assert shallow and all(line.startswith("- ") for line in shallow.splitlines())
    assert after["url"].endswith("/spa/settings")
    save = ref_of(after["snapshot"], "button", "Save settings")
    assert browser_world.call({"action": "act", "kind": "click", "ref": save})["clicked"] == save


def test_stale_ref_after_navigation(browser_world: BrowserWorld, site: Site) -> None:
    snap = open_and_snapshot(browser_world, site.url("/form"))["snapshot"]
    ref = ref_of(snap, "button", "Send")
    browser_world.call({"action": "navigate", "url": site.url("/other")})
    stale = browser_world.error({"action": "act", "kind": "click", "ref": ref})
    assert stale.code == "stale_ref" and "snapshot" in stale.message


def test_refs_hold_across_snapshots_of_one_document(browser_world: BrowserWorld, site: Site) -> None:
    first = open_and_snapshot(browser_world, site.url("/spa"))["snapshot"]
    go = ref_of(first, "button", "Go to settings")
    interactive = browser_world.call({"action": "snapshot", "interactive": True})["snapshot"]
    assert ref_of(interactive, "button", "Go to settings") == go  # the same element keeps its ref
    heading = ref_of(first, "heading", "Home")
    # The heading is not in the interactive snapshot, so its ref ended with it: never re-aimed.
    assert browser_world.error({"action": "act", "kind": "hover", "ref": heading}).code == "stale_ref"
    browser_world.call({"action": "act", "kind": "click", "ref": go})
    after = browser_world.call({"action": "snapshot"})["snapshot"]
    assert f"[ref={go}]" not in after and f"[ref={heading}]" not in after  # new elements, new numbers


def test_element_below_the_fold(browser_world: BrowserWorld, site: Site) -> None:
    snap = open_and_snapshot(browser_world, site.url("/long"), interactive=True)["snapshot"]
    browser_world.call({"action": "act", "kind": "click", "ref": ref_of(snap, "button", "Low button")})
    assert text_of(browser_world, "#out") == "low clicked"


def test_upload_and_download_through_the_sandbox(browser_world: BrowserWorld, site: Site) -> None:
    source = browser_world.project / "note.txt"
    source.write_text("hello upload")
    snap = open_and_snapshot(browser_world, site.url("/upload"))["snapshot"]
    field = next(line.split("[ref=")[1].split("]")[0] for line in snap.splitlines() if "Attachment" in line)
    browser_world.call({"action": "upload", "ref": field, "text": str(source)})
    browser_world.call({"action": "act", "kind": "wait", "wait_until": "text", "text": "note.txt"})
    assert text_of(browser_world, "#out") == "note.txt hello upload"
    outside = browser_world.error({"action": "upload", "ref": field, "text": "/etc/passwd"})
    assert outside.code in ("protected_path", "outside_root", "blocked_root")

    snap = open_and_snapshot(browser_world, site.url("/downloads"), include_urls=True)["snapshot"]
    assert 'link "Get report" [ref=' in snap and f"url={site.url('/file.txt')}" in snap
    got = browser_world.call({"action": "download", "ref": ref_of(snap, "link", "Get report")})
    path = Path(got["path"])
    assert path.name == "report.txt" and path.read_text() == "the report body\n"
    assert path.parent == browser_world.fermix_home / "workspace" / "downloads"


def test_a_page_fetching_a_private_address_is_refused(browser_world: BrowserWorld, site: Site) -> None:
    browser_world.call({"action": "navigate", "url": site.url("/leak")})
    browser_world.call({"action": "act", "kind": "wait", "wait_until": "text", "text": "refused"})
    assert "/secret" not in site.seen  # the request never reached the server
    console = browser_world.call({"action": "console"})
    assert any(m["level"] == "blocked" and "127.0.0.2" in m["text"] for m in console["messages"])


def test_redirects_and_schemes_are_refused(browser_world: BrowserWorld, site: Site) -> None:
    before = site.seen.count("/secret")
    redirected = browser_world.cli({"action": "navigate", "url": site.url("/redirect")})
    assert redirected.returncode == 3, redirected.stderr
    assert json.loads(redirected.stderr)["error"]["code"] == "navigation_blocked"
    assert site.seen.count("/secret") == before
    for url in (
        "file:///etc/passwd",
        "chrome://settings",
        "javascript:alert(1)",
        site.url("/x", "127.0.0.2"),
    ):
        assert browser_world.error({"action": "navigate", "url": url}).code == "navigation_blocked", url


def test_screenshot_pdf_cookies_storage(browser_world: BrowserWorld, site: Site) -> None:
    browser_world.call({"action": "navigate", "url": site.url("/form")})
    shot = browser_world.call({"action": "screenshot", "full_page": True})
    data = Path(shot["path"]).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and shot["device_pixel_ratio"] == 1
    assert Path(shot["path"]).parent == browser_world.fermix_home / "media" / "browser"
    jpeg = browser_world.call({"action": "screenshot", "format": "jpeg", "quality": 30})
    assert Path(jpeg["path"]).read_bytes()[:3] == b"\xff\xd8\xff"
    pdf = browser_world.call({"action": "pdf"})
    assert Path(pdf["path"]).read_bytes()[:5] == b"%PDF-"

    browser_world.call({"action": "cookies", "kind": "set", "field": "flavour", "value": "oat"})
    names = {c["name"]: c["value"] for c in browser_world.call({"action": "cookies"})["cookies"]}
    assert names == {"flavour": "oat"}
    browser_world.call({"action": "storage", "kind": "set", "field": "k", "value": "v"})
    assert browser_world.call({"action": "storage", "kind": "get", "field": "k"})["value"] == "v"
    assert (
        browser_world.call({"action": "act", "kind": "get", "field": "count", "selector": "option"})["value"]
        == 2
    )


def test_tab_cap_closes_the_oldest_tab(browser_world: BrowserWorld, site: Site) -> None:
    for _ in range(5):
        browser_world.call({"action": "open", "url": site.url("/other")})
    tabs = browser_world.call({"action": "tabs"})
    assert tabs["count"] == 4 and sum(t["active"] for t in tabs["tabs"]) == 1
    active = next(t["tab"] for t in tabs["tabs"] if t["active"])
    closed = browser_world.call({"action": "close", "tab": active[:8]})
    assert closed["closed"] == active and closed["remaining"] == 3


def test_bad_input_is_typed(browser_world: BrowserWorld) -> None:
    assert browser_world.error({"action": "act"}).code == "missing_kind"
    assert browser_world.error({"action": "act", "kind": "get"}).code == "missing_field"
    assert browser_world.error({"action": "focus", "tab": "zzzz"}).code == "not_found"
    assert browser_world.error({"action": "act", "kind": "click", "ref": "e999"}).code == "stale_ref"
    assert os.environ.get("FERMIX_HOME") is None  # the module never leaks its home into the process


def test_human_cli_open_snapshot_shot_status(browser_world: BrowserWorld, site: Site) -> None:
    import subprocess
    import sys

    def fermix(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fermix_cli", "browser", *args],
            capture_output=True,
            text=True,
            env=browser_world.env,
            cwd=browser_world.project,
            timeout=60,
        )

    opened = fermix("open", site.url("/form"))
    assert opened.returncode == 0 and "Form (complete)" in opened.stdout, opened.stderr
    snap = fermix("snapshot", "--interactive")
    assert 'textbox "Email" [ref=e1]' in snap.stdout, snap.stderr
    shot = fermix("shot")
    assert Path(shot.stdout.strip()).read_bytes()[:4] == b"\x89PNG"
    status = fermix("status")
    assert "running" in status.stdout and "tab(s) of 4" in status.stdout
    refused = fermix("open", "http://169.254.169.254/latest/meta-data/")
    assert refused.returncode == 3 and "navigation_blocked" in refused.stderr


def test_press_hover_and_waits(browser_world: BrowserWorld, site: Site) -> None:
    snap = open_and_snapshot(browser_world, site.url("/keys"))["snapshot"]
    field = ref_of(snap, "textbox", "Keys")
    browser_world.call({"action": "act", "kind": "press", "ref": field, "key": "x"})
    browser_world.call({"action": "act", "kind": "press", "key": "Enter"})
    browser_world.call({"action": "act", "kind": "press", "key": "Control+a"})
    assert text_of(browser_world, "#out") == "x Enter a+ctrl"
    assert browser_world.call({"action": "act", "kind": "get", "field": "html", "selector": "#k"})[
        "value"
    ].startswith("<input")
    assert browser_world.error({"action": "act", "kind": "press", "key": "Hyper+x"}).code == "invalid_key"
    waited = browser_world.call(
        {"action": "act", "kind": "wait", "wait_until": "element", "selector": "b.late"}
    )
    assert waited["waited_for"] == "element"
    slow = browser_world.error(
        {"action": "act", "kind": "wait", "wait_until": "text", "text": "never there", "timeout_ms": 300}
    )
    assert slow.code == "timeout" and "snapshot" in slow.message
    browser_world.call({"action": "act", "kind": "hover", "ref": ref_of(snap, "button", "Hover me")})
    assert text_of(browser_world, "#out") == "hovered"


LOCKED = html(
    """<form id="f">
  <input id="ro" aria-label="Read only" value="keep me" readonly>
  <input id="dis" aria-label="Disabled" value="keep too" disabled>
  <fieldset disabled><input id="inset" aria-label="In fieldset" value="inside"></fieldset>
  <input id="email" name="email" type="email" aria-label="Email" required>
  <input id="age" name="age" type="number" min="18" aria-label="Age" value="3">
  <button type="submit">Send</button>
</form>
<form id="g" novalidate><input name="n" required aria-label="Loose"><button>Loose send</button></form>
<button onclick="document.getElementById('out').textContent =
  ['ro', 'dis', 'inset'].map(i => document.getElementById(i).value).join('|')">Show</button>
<p id="out"></p>
<script>for (const f of document.forms) f.addEventListener('submit', e => { e.preventDefault();
  document.getElementById('out').textContent = 'submitted ' + e.target.id; });</script>""",
    "Locked",
)


def test_read_only_and_disabled_fields_are_refused_untouched(browser_world: BrowserWorld, site: Site) -> None:
    site.pages["/locked"] = LOCKED
    snap = open_and_snapshot(browser_world, site.url("/locked"))["snapshot"]
    for name in ("Read only", "Disabled", "In fieldset"):
        ref = ref_of(snap, "textbox", name)
        for kind in ("fill", "type"):
            refused = browser_world.error({"action": "act", "kind": kind, "ref": ref, "text": "new"})
            assert refused.code == "not_editable" and "nothing was changed" in refused.message, name
    # The live values (not only the attributes) are as the page set them.
    browser_world.call({"action": "act", "kind": "click", "ref": ref_of(snap, "button", "Show")})
    assert text_of(browser_world, "#out") == "keep me|keep too|inside"


def test_submit_blocked_by_validation_names_the_fields(browser_world: BrowserWorld, site: Site) -> None:
    site.pages["/locked"] = LOCKED
    snap = open_and_snapshot(browser_world, site.url("/locked"))["snapshot"]
    refused = browser_world.error({"action": "act", "kind": "submit", "ref": ref_of(snap, "button", "Send")})
    assert refused.code == "form_invalid" and "not submitted" in refused.message
    names = {f["name"] for f in refused.details["invalid"]}
    assert names == {"email", "age"} and all(f["message"] for f in refused.details["invalid"])
    assert text_of(browser_world, "#out") == ""  # nothing was submitted
    browser_world.call(
        {"action": "act", "kind": "fill", "ref": ref_of(snap, "textbox", "Email"), "text": "a@b.c"}
    )
    browser_world.call(
        {"action": "act", "kind": "fill", "ref": ref_of(snap, "spinbutton", "Age"), "text": "30"}
    )
    done = browser_world.call({"action": "act", "kind": "submit", "ref": ref_of(snap, "button", "Send")})
    assert done == {"submitted": ref_of(snap, "button", "Send"), "by": "form"}
    assert text_of(browser_world, "#out") == "submitted f"
    # A form that opts out of validation (novalidate) is submitted as the page asks.
    browser_world.call({"action": "act", "kind": "submit", "ref": ref_of(snap, "button", "Loose send")})
    assert text_of(browser_world, "#out") == "submitted g"


def test_click_coords_outside_the_viewport_is_refused(browser_world: BrowserWorld, site: Site) -> None:
    browser_world.call({"action": "navigate", "url": site.url("/canvas")})
    for x, y in ((5000, 10), (10, 5000)):
        refused = browser_world.error({"action": "act", "kind": "click_coords", "x": x, "y": y})
        assert refused.code == "outside_viewport" and "get field=rect" in refused.message
        viewport = refused.details["viewport"]
        assert viewport["width"] > 100 and viewport["height"] > 100
    # Negative, huge or non-finite coordinates never reach the browser: the schema refuses them.
    for x in (-5, 5_000_000, 3.5e38):
        bad = browser_world.cli({"action": "act", "kind": "click_coords", "x": x, "y": 10})
        assert bad.returncode == 2, bad.stderr
    # Input still works on the tab afterwards.
    rect = browser_world.call({"action": "act", "kind": "get", "field": "rect", "selector": "#c"})["value"]
    browser_world.call({"action": "act", "kind": "click_coords", "x": rect["x"] + 5, "y": rect["y"] + 6})
    assert text_of(browser_world, "#out") == "hit 5,6"


def test_browser_refusals_are_typed_not_internal(browser_world: BrowserWorld, site: Site) -> None:
    site.pages["/tall"] = html('<div style="height: 3000000px">very tall</div>', "Tall")
    site.pages["/big"] = html("<p id='big'>" + "word " * 300_000 + "</p>", "Big")
    browser_world.call({"action": "navigate", "url": site.url("/tall")})
    shot = browser_world.cli({"action": "screenshot", "full_page": True})
    assert shot.returncode == 1, shot.stderr
    error = json.loads(shot.stderr)["error"]
    assert error["code"] == "screenshot_too_large" and "full_page false" in error["message"]
    assert browser_world.call({"action": "screenshot"})["full_page"] is False  # the viewport still works

    browser_world.call({"action": "navigate", "url": site.url("/form")})
    for name, value in (("a;b", "x"), ("ok", "nul\u0000byte"), ("ok", "semi;colon"), ("ok", "x" * 5000)):
        bad = browser_world.cli({"action": "cookies", "kind": "set", "field": name, "value": value})
        assert bad.returncode == 2, bad.stderr  # invalid_cookie: the caller's input, not a crash
        assert json.loads(bad.stderr)["error"]["code"] == "invalid_cookie"
    assert browser_world.call({"action": "cookies", "kind": "set", "field": "fine", "value": "a%3Bb"})

    browser_world.call({"action": "navigate", "url": site.url("/big")})
    whole = browser_world.call({"action": "act", "kind": "get", "field": "html"})
    assert whole["truncated"] is True and whole["total_chars"] > 1_500_000
    assert len(whole["value"]) <= 200_000 and "TRUNCATED" in whole["note"]
    small = browser_world.call({"action": "act", "kind": "get", "field": "html", "selector": "title"})
    assert small == {"field": "html", "value": "<title>Big</title>"}
