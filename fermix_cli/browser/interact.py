"""act: click, fill, type, submit, press, hover, get, wait and click_coords on the active tab.

Clicks are real input events at the element's box, read after scrolling it into view, in the same
CSS-pixel viewport space `get field=rect` reports and `click_coords` takes.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..core.errors import ToolError
from .cdp import CDPError
from .page import Tab

KEYS = {
    "Enter": (13, "\r"), "Tab": (9, ""), "Escape": (27, ""), "Backspace": (8, ""), "Delete": (46, ""),
    "ArrowLeft": (37, ""), "ArrowUp": (38, ""), "ArrowRight": (39, ""), "ArrowDown": (40, ""),
    "Home": (36, ""), "End": (35, ""), "PageUp": (33, ""), "PageDown": (34, ""), "Space": (32, " "),
}  # fmt: skip
MODIFIERS = {"Alt": 1, "Control": 2, "Ctrl": 2, "Meta": 4, "Cmd": 4, "Shift": 8}
POLL = 0.05
GET_TEXT_CAP = 200_000  # characters act get field=html|text returns; more is cut, and says so


def need(value: Any, name: str, kind: str) -> Any:
    if value is None or value == "":
        raise ToolError(f"missing_{name}", f"act kind={kind} needs `{name}`", {"kind": kind})
    return value


def no_box(ref: str) -> ToolError:
    return ToolError(
        "no_box",
        f"element {ref} has no rendered box to click (typically a visually hidden styled input); click "
        "its visible label's ref instead, or use kind=click_coords with x, y from kind=get field=rect",
        {"ref": ref},
    )


def element_point(tab: Tab, object_id: str, ref: str) -> tuple[float, float]:
    """The centre of the element's first visible box, after scrolling it into view."""
    try:
        tab.call("DOM.scrollIntoViewIfNeeded", {"objectId": object_id})
        quads = tab.call("DOM.getContentQuads", {"objectId": object_id}).get("quads", [])
    except CDPError:
        raise no_box(ref) from None
    for quad in quads:
        xs, ys = quad[0::2], quad[1::2]
        if max(xs) - min(xs) >= 1 and max(ys) - min(ys) >= 1:
            return sum(xs) / 4, sum(ys) / 4
    raise no_box(ref)


def mouse_click(tab: Tab, x: float, y: float) -> dict[str, Any] | None:
    """Press and release the left button at (x, y); the dialog the click opened, if any."""
    try:
        tab.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            tab.call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1},
            )
    except ToolError as exc:
        if exc.code == "dialog_open":
            return dict(exc.details.get("dialog", {}))
        raise
    return None


def act(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    kind = need(p.kind, "kind", "act")
    if kind not in HANDLERS:
        raise ToolError(
            "invalid_kind",
            f"act kind {kind!r} is not one of: " + ", ".join(HANDLERS),
            {"kind": kind},
        )
    if kind != "wait":
        tab.check_no_dialog()
    return HANDLERS[kind](tab, p, timeout)


def _clicked(result: dict[str, Any], dialog: dict[str, Any] | None) -> dict[str, Any]:
    if dialog is not None:
        result["dialog"] = dialog
        result["next"] = "a JavaScript dialog opened; answer it with action=dialog"
    return result


def click(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    ref = need(p.ref, "ref", "click")
    x, y = element_point(tab, tab.resolve_ref(ref), ref)
    return _clicked({"clicked": ref, "x": round(x, 1), "y": round(y, 1)}, mouse_click(tab, x, y))


def click_coords(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    if p.x is None or p.y is None:
        raise ToolError(
            f"missing_{'x' if p.x is None else 'y'}", "act kind=click_coords needs `x` and `y`", {}
        )
    x, y = float(p.x), float(p.y)
    # A point off the viewport hits nothing (and a huge one wedges the tab's input): refused up front.
    width, height = tab.evaluate("[innerWidth, innerHeight]")
    if not (0 <= x < width and 0 <= y < height):
        raise ToolError(
            "outside_viewport",
            f"({x:g}, {y:g}) is outside the tab's viewport ({width}x{height} CSS pixels, x from 0 to "
            f"{width - 1}, y from 0 to {height - 1}); take x, y from act get field=rect, scrolling the "
            "element into view first",
            {"x": x, "y": y, "viewport": {"width": width, "height": height}},
        )
    return _clicked({"clicked": None, "x": p.x, "y": p.y}, mouse_click(tab, x, y))


def hover(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    ref = need(p.ref, "ref", "hover")
    x, y = element_point(tab, tab.resolve_ref(ref), ref)
    tab.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    return {"hovered": ref, "x": round(x, 1), "y": round(y, 1)}


FOCUS_CLEAR = """function(clear) {
  // A read-only or disabled control is refused before anything changes: the page does not let a person
  // type there, and clearing it first would erase a value the page never meant to be edited.
  if (this.matches(':disabled')) return 'disabled';
  if (this.readOnly === true) return 'readonly';
  this.scrollIntoView({block: 'center'});
  this.focus();
  if (this.tagName === 'SELECT') return 'select';
  if (!('value' in this) && !this.isContentEditable) return 'none';
  if (clear) {
    if ('value' in this) { this.value = ''; } else { this.textContent = ''; }
  } else if (typeof this.setSelectionRange === 'function') {
    try { const n = this.value.length; this.setSelectionRange(n, n); } catch (e) {}
  }
  return 'text';
}"""

SELECT_OPTION = """function(text) {
  const opt = [...this.options].find(o => o.value === text || o.label === text || o.text.trim() === text);
  if (!opt) return false;
  this.value = opt.value;
  this.dispatchEvent(new Event('input', {bubbles: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
  return true;
}"""

CHANGED = (
    "function() { this.dispatchEvent(new Event('change', {bubbles: true})); return this.value ?? null; }"
)


def _enter_text(tab: Tab, p: Any, clear: bool) -> dict[str, Any]:
    kind = "fill" if clear else "type"
    ref = need(p.ref, "ref", kind)
    text = p.text if p.text is not None else need(p.value, "text", kind)
    obj = tab.resolve_ref(ref)
    mode = tab.call_on(obj, FOCUS_CLEAR, clear)
    if mode in ("readonly", "disabled"):
        raise ToolError(
            "not_editable",
            f"element {ref} is {'read-only' if mode == 'readonly' else 'disabled'}, so the page does not "
            "take text there; nothing was changed. Pick an editable field's ref from the snapshot",
            {"ref": ref, "state": mode},
        )
    if mode == "none":
        raise ToolError(
            "not_editable",
            f"element {ref} does not take text; pick a textbox ref from the snapshot",
            {"ref": ref},
        )
    if mode == "select":
        if not tab.call_on(obj, SELECT_OPTION, text):
            raise ToolError("not_found", f"select {ref} has no option {text!r}", {"ref": ref, "text": text})
        return {kind: ref, "value": text}
    if text:
        tab.call("Input.insertText", {"text": text})
    value = tab.call_on(obj, CHANGED)
    return {kind: ref, "value": value}


def fill(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    return _enter_text(tab, p, True)


def type_text(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    return _enter_text(tab, p, False)


SUBMIT = """function() {
  const form = this.tagName === 'FORM' ? this : (this.form || this.closest('form'));
  if (!form) return {found: false};
  const submitter = (this.form === form && this.type === 'submit') ? this : null;
  const skip = form.noValidate || (submitter !== null && submitter.formNoValidate);
  if (!skip && !form.checkValidity()) {
    const invalid = [...form.elements].filter(e => e.willValidate && !e.validity.valid).map(e => ({
      name: e.name || e.id || (e.labels && e.labels[0] ? e.labels[0].innerText.trim() : '') || e.tagName.toLowerCase(),
      message: e.validationMessage,
    }));
    form.reportValidity();  // what a person would see: the page's own validation bubble
    return {found: true, invalid: invalid};
  }
  if (typeof form.requestSubmit === 'function') form.requestSubmit(submitter); else form.submit();
  return {found: true, invalid: []};
}"""


def submit(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    if p.ref is None:
        press_key(tab, "Enter")
        return {"submitted": None, "by": "Enter"}
    obj = tab.resolve_ref(p.ref)
    try:
        outcome = tab.call_on(obj, SUBMIT)
    except ToolError as exc:
        if exc.code == "dialog_open":
            return _clicked({"submitted": p.ref}, dict(exc.details.get("dialog", {})))
        raise
    if not isinstance(outcome, dict) or not outcome.get("found"):
        raise ToolError("not_found", f"element {p.ref} is not in a form; click its submit button's ref", {})
    invalid = list(outcome.get("invalid") or [])
    if invalid:
        listed = "; ".join(f"{f.get('name')}: {f.get('message')}" for f in invalid[:10])
        raise ToolError(
            "form_invalid",
            f"the form was not submitted: the page's validation blocks it ({listed}). Fill those fields "
            "(act fill), then submit again",
            {"ref": p.ref, "invalid": invalid[:50]},
        )
    return {"submitted": p.ref, "by": "form"}


def press_key(tab: Tab, combo: str) -> None:
    *mods, key = combo.split("+") if combo != "+" else [combo]
    mask = 0
    for mod in mods:
        if mod not in MODIFIERS:
            raise ToolError("invalid_key", f"unknown modifier {mod!r} in {combo!r}", {"key": combo})
        mask |= MODIFIERS[mod]
    if key in KEYS:
        code, text = KEYS[key]
        name = " " if key == "Space" else key
    elif len(key) == 1:
        code, text, name = ord(key.upper()), key, key
    else:
        raise ToolError(
            "invalid_key",
            f"unknown key {key!r}; use one character or one of " + ", ".join(KEYS),
            {"key": combo},
        )
    if mask & ~8:
        text = ""  # a shortcut, not typing
    base = {"key": name, "windowsVirtualKeyCode": code, "modifiers": mask}
    down = {**base, "type": "keyDown" if text else "rawKeyDown"}
    if text:
        down["text"] = text
    tab.call("Input.dispatchKeyEvent", down)
    tab.call("Input.dispatchKeyEvent", {**base, "type": "keyUp"})


def press(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    key = need(p.key, "key", "press")
    if p.ref is not None:
        obj = tab.resolve_ref(p.ref)
        tab.call_on(obj, "function() { this.focus(); }")
    try:
        press_key(tab, key)
    except ToolError as exc:
        if exc.code == "dialog_open":
            return _clicked({"pressed": key}, dict(exc.details.get("dialog", {})))
        raise
    return {"pressed": key}


RECT = """function() {
  const r = this.getBoundingClientRect();
  return {x: r.x, y: r.y, width: r.width, height: r.height};
}"""


def _target_object(tab: Tab, p: Any) -> str | None:
    if p.ref is not None:
        return tab.resolve_ref(p.ref)
    if p.selector is not None:
        obj = tab.resolve_selector(p.selector)
        if obj is None:
            raise ToolError(
                "not_found",
                f"no element matches {p.selector!r}; check the selector against action=snapshot or get field=html",
                {"selector": p.selector},
            )
        return obj
    return None


# The first GET_TEXT_CAP characters and the whole length; never a cut between a surrogate pair's halves.
CUT = (
    f"(s) => {{ let n = Math.min(s.length, {GET_TEXT_CAP}); "
    "if (n < s.length && (s.charCodeAt(n - 1) & 0xFC00) === 0xD800) n -= 1; return [s.slice(0, n), s.length]; }"
)


def get(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    field = need(p.field, "field", "get")
    if field in ("url", "title", "ready_state"):
        expression = {"url": "location.href", "title": "document.title", "ready_state": "document.readyState"}
        return {"field": field, "value": tab.evaluate(expression[field])}
    if field == "count":
        selector = need(p.selector, "selector", "get field=count")
        value = tab.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length")
        return {"field": field, "selector": selector, "value": value}
    if field in ("html", "text"):
        obj = _target_object(tab, p)
        prop = "outerHTML" if field == "html" else "innerText"
        # Cut in the page, so a huge document never crosses the DevTools socket whole.
        if obj is None:
            whole = (
                "document.documentElement.outerHTML"
                if field == "html"
                else "(document.body ? document.body.innerText : '')"
            )
            got = tab.evaluate(f"({CUT})({whole})")
        else:
            got = tab.call_on(
                obj, f"function() {{ return ({CUT})(String(this.{prop} ?? this.textContent ?? '')); }}"
            )
        value, total = got[0], int(got[1])
        out: dict[str, Any] = {"field": field, "value": value}
        if total > len(value):
            out.update(
                truncated=True,
                total_chars=total,
                note=f"TRUNCATED: the first {len(value)} of {total} characters; narrow it with `selector` "
                "or `ref`, or use action=snapshot",
            )
        return out
    if field == "rect":
        if p.ref is None and p.selector is None:
            raise ToolError("missing_selector", "get field=rect needs `selector` (or `ref`)", {})
        obj = _target_object(tab, p)
        assert obj is not None
        return {"field": field, "value": tab.call_on(obj, RECT)}
    raise ToolError(
        "invalid_field",
        f"get field {field!r} is not one of: url, title, html, text, count, ready_state, rect",
        {"field": field},
    )


def wait(tab: Tab, p: Any, timeout: float) -> dict[str, Any]:
    until = need(p.wait_until, "wait_until", "wait")
    if until == "text":
        target = need(p.text, "text", "wait wait_until=text")
        expression = f"!!document.body && document.body.innerText.includes({json.dumps(target)})"
    elif until == "url":
        target = need(p.url or p.text, "url", "wait wait_until=url")
        expression = f"location.href.includes({json.dumps(target)})"
    elif until == "element":
        if p.selector is None and p.ref is None:
            raise ToolError("missing_selector", "wait wait_until=element needs `selector` or `ref`", {})
        target = p.selector or p.ref
        expression = f"!!document.querySelector({json.dumps(p.selector)})" if p.selector else ""
    else:
        target = "complete"
        expression = "document.readyState === 'complete'"
    deadline = time.monotonic() + timeout
    started = time.monotonic()
    while True:
        tab.check_no_dialog()
        if expression:
            try:
                met = bool(tab.evaluate(expression, timeout=max(0.5, deadline - time.monotonic())))
            except ToolError as exc:
                if exc.code != "script_error":
                    raise
                met = False  # the document was replaced mid-evaluation: try again
        else:
            try:
                tab.resolve_ref(str(p.ref))
                met = True
            except ToolError as exc:
                if exc.code != "stale_ref":
                    raise
                met = False
        if met:
            return {"waited_for": until, "target": target, "ms": round((time.monotonic() - started) * 1000)}
        if time.monotonic() >= deadline:
            raise ToolError(
                "timeout",
                f"{until} {target!r} did not appear within {timeout * 1000:.0f} ms; check the page with "
                "action=snapshot, or raise timeout_ms",
                {"wait_until": until, "target": target},
            )
        time.sleep(POLL)


HANDLERS = {
    "click": click,
    "fill": fill,
    "type": type_text,
    "submit": submit,
    "press": press,
    "hover": hover,
    "get": get,
    "wait": wait,
    "click_coords": click_coords,
}
