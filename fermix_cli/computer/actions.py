"""One computer_use call: refuse what the rules refuse, perform the action, then look again.

Every action that changes something (and mouse_move and wait) returns a fresh screenshot, of the same
region when the action carried one, and that screenshot becomes the session's latest view. A pointer
action whose pointer did not end up where it was sent, or that xdotool reports as failed, is returned
with `delivered: false` instead of success.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ExitClass, ToolError
from .geometry import Rect, View, aim, plan_view
from .keys import modifier, parse_chord
from .posture import check_posture, posture_of, severity
from .session import check_not_paused, latest_view, remember_view
from .x11 import TYPE_CHUNK, Desktop, display_of

SCROLL_BUTTONS = {"up": "4", "down": "5", "left": "6", "right": "7"}
BUTTONS = {"left_click": "1", "right_click": "3", "double_click": "1"}
POSTURE_TEXT = {
    "look_only": "look-only (sandbox strict): input is refused",
    "confirm_irreversible": "standard: acts; the owner confirms anything irreversible",
    "act": "open: acts; the owner confirms only catastrophic input",
}
ACCESSIBILITY = (
    "needs an accessibility source (AT-SPI), which fermix does not read on Linux X11; use screenshot with a "
    "region to zoom on small targets and windows to crop to an app"
)


def run_action(p: Any, ctx: ToolContext) -> dict[str, Any]:
    action: str = p.action
    if action in ("inspect", "elements") or p.marks or p.mark is not None:
        what = action if action in ("inspect", "elements") else ("marks" if p.marks else "mark")
        raise ToolError(
            "unsupported_on_platform",
            f"{what} {ACCESSIBILITY}.",
            {"action": action, "platform": "linux-x11"},
        )
    check_not_paused(ctx, action)
    _require(p)
    chord = parse_chord(p.chord) if action == "key" else None
    mods = tuple(modifier(m) for m in (p.modifiers or ()))
    if mods and action not in BUTTONS:
        raise ToolError(
            "invalid_input", "modifiers apply to clicks only; for keys use chord", {"action": action}
        )
    summary = _summary(action, p, chord)
    check_posture(ctx, action, summary, severity(action, chord, p.text))
    display = display_of(ctx)
    if display is None:
        raise ToolError(
            "no_display",
            'no X display: set DISPLAY, or [fermix_core.computer_use] display (e.g. ":0")',
            {},
        )
    desk = Desktop(display)
    try:
        return _run(ctx, desk, p, action, chord, mods)
    finally:
        desk.close()


def _run(
    ctx: ToolContext, desk: Desktop, p: Any, action: str, chord: tuple[str, ...] | None, mods: tuple[str, ...]
) -> dict[str, Any]:
    index = p.display or ctx.config.fermix_core.computer_use.monitor
    monitor = desk.monitor(index)
    region = Rect.of(p.region.model_dump()) if p.region is not None else None
    out: dict[str, Any] = {"action": action, "posture": posture_of(ctx)}
    if action == "windows":
        out["windows"] = _windows(desk, monitor, index)
        return out
    if action == "screenshot":
        out["screenshot"] = _look(ctx, desk, plan_view(monitor, region), index)
        return out
    if action == "wait_for_change":
        return _wait_for_change(ctx, desk, plan_view(monitor, region), index, p, out)
    if action == "wait":
        time.sleep((p.ms or 0) / 1000)
        out["waited_ms"] = p.ms
    else:
        out.update(_act(ctx, desk, monitor, region, p, chord, mods))
    # The check screenshot is of the space the model acted in: the same region, or the whole monitor.
    out["screenshot"] = _look(ctx, desk, plan_view(monitor, region), index)
    return out


# ----- validation ----------------------------------------------------------------------------------

_NEEDS = {
    "left_click": ("point",),
    "right_click": ("point",),
    "double_click": ("point",),
    "mouse_move": ("point",),
    "left_click_drag": ("from", "to"),
    "scroll": ("direction",),
    "type": ("text",),
    "paste": ("text",),
    "key": ("chord",),
    "wait": ("ms",),
}


def _require(p: Any) -> None:
    for need in _NEEDS.get(p.action, ()):
        if need == "point":
            missing = [n for n in ("x", "y") if getattr(p, n) is None]
        else:
            missing = [need] if getattr(p, need) is None else []
        if missing:
            raise ToolError(
                f"missing_{missing[0]}",
                f"action {p.action} needs {' and '.join(missing)}",
                {"action": p.action, "missing": missing},
            )
    if p.action == "scroll" and (p.x is None) != (p.y is None):
        raise ToolError(
            "missing_coordinate", "scroll takes both x and y, or neither (scroll where the pointer is)", {}
        )


def _summary(action: str, p: Any, chord: tuple[str, ...] | None) -> str:
    if action == "key" and chord:
        return f"press {'+'.join(chord)}"
    if action in ("type", "paste"):
        text = p.text or ""
        shown = text if len(text) <= 60 else text[:57] + "..."
        return f"{action} {shown!r}"
    return action.replace("_", " ")


# ----- looking ---------------------------------------------------------------------------------------


def _look(ctx: ToolContext, desk: Desktop, view: View, index: int) -> dict[str, Any]:
    image = desk.capture(view)
    path = _save(ctx, image)
    remember_view(ctx, view, path)
    return _shot_json(view, index, path)


def _shot_json(view: View, index: int, path: str) -> dict[str, Any]:
    r = view.region
    if r is None:
        maps = "screen pixel = image pixel" if view.scale == 1 else f"screen = image / {view.scale:g}"
    else:
        maps = f"screen x = {r.x} + x / {view.scale:g}, screen y = {r.y} + y / {view.scale:g}"
    return {
        "path": path,
        "media_type": "image/png",
        "width": view.width,
        "height": view.height,
        "region": r.to_json() if r else None,
        "scale": view.scale,
        "display": index,
        "screen": {"width": view.monitor.w, "height": view.monitor.h},
        "mapping": maps,
    }


def _save(ctx: ToolContext, image: Any) -> str:
    folder = ctx.paths.ensure_dir(ctx.paths.media / "computer_use")
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = folder / f"screen-{stamp}-{uuid.uuid4().hex[:8]}.png"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        image.save(f, "PNG", compress_level=1)
    _prune(folder, ctx.config.fermix_core.computer_use.keep_screenshots)
    return str(path)


def _prune(folder: Any, keep: int) -> None:
    shots = sorted(
        (e for e in os.scandir(folder) if e.name.startswith("screen-") and e.name.endswith(".png")),
        key=lambda e: (e.stat().st_mtime_ns, e.name),
    )
    for entry in shots[: max(0, len(shots) - keep)]:
        with contextlib.suppress(OSError):  # another process removed it first
            os.unlink(entry.path)


def _windows(desk: Desktop, monitor: Rect, index: int) -> list[dict[str, Any]]:
    """Each window's bounds clipped to the monitor, shaped as a region for screenshot and follow-ups."""
    out = []
    for w in desk.windows():
        b: Rect = w["bounds"]
        x0, y0 = max(b.x, monitor.x), max(b.y, monitor.y)
        x1, y1 = min(b.x + b.w, monitor.x + monitor.w), min(b.y + b.h, monitor.y + monitor.h)
        if x1 <= x0 or y1 <= y0:
            continue
        region = Rect(x0 - monitor.x, y0 - monitor.y, x1 - x0, y1 - y0)
        out.append({"id": w["id"], "title": w["title"], "region": region.to_json(), "display": index})
    return out


def _wait_for_change(
    ctx: ToolContext, desk: Desktop, view: View, index: int, p: Any, out: dict[str, Any]
) -> dict[str, Any]:
    timeout_ms = 10_000 if p.timeout_ms is None else p.timeout_ms
    poll_ms = 250 if p.poll_ms is None else p.poll_ms
    start = time.monotonic()
    before = desk.capture(view).tobytes()
    changed = False
    image = None
    while True:
        elapsed = (time.monotonic() - start) * 1000
        if elapsed >= timeout_ms:
            break
        time.sleep(min(poll_ms, timeout_ms - elapsed) / 1000)
        image = desk.capture(view)
        if image.tobytes() != before:
            changed = True
            break
    path = _save(ctx, image if image is not None else desk.capture(view))
    remember_view(ctx, view, path)
    out.update(changed=changed, waited_ms=round((time.monotonic() - start) * 1000))
    out["screenshot"] = _shot_json(view, index, path)
    return out


# ----- acting ----------------------------------------------------------------------------------------


def _act(
    ctx: ToolContext,
    desk: Desktop,
    monitor: Rect,
    region: Rect | None,
    p: Any,
    chord: tuple[str, ...] | None,
    mods: tuple[str, ...],
) -> dict[str, Any]:
    action = p.action
    view = latest_view(ctx)
    if view is not None and view.monitor != monitor:
        raise ToolError(
            "display_mismatch",
            f"the latest screenshot shows another display; take a screenshot of display {p.display or 1} first",
            {},
            exit_class=ExitClass.BAD_INPUT,
        )
    if view is None:  # nothing seen yet: coordinates are read in full-screen space
        view = plan_view(monitor, None)

    def point(x: int, y: int) -> tuple[int, int]:
        return aim(view, region, x, y, confirm_grid=bool(p.confirm_grid))

    if action in BUTTONS or action == "mouse_move":
        target = point(p.x, p.y)
        args = ["mousemove", str(target[0]), str(target[1])]
        if action in BUTTONS:
            for m in mods:
                args[:0] = ["keydown", m]
            args += ["click"] + (["--repeat", "2", "--delay", "80"] if action == "double_click" else [])
            args.append(BUTTONS[action])
            args += [a for m in reversed(mods) for a in ("keyup", m)]
        return _pointer_result(desk, args, target)
    if action == "left_click_drag":
        start, end = point(getattr(p, "from").x, getattr(p, "from").y), point(p.to.x, p.to.y)
        mid = ((start[0] + end[0]) // 2, (start[1] + end[1]) // 2)
        args = ["mousemove", *map(str, start), "mousedown", "1", "sleep", "0.05"]
        args += ["mousemove", *map(str, mid), "sleep", "0.05"]
        args += ["mousemove", *map(str, end), "sleep", "0.05", "mouseup", "1"]
        out = _pointer_result(desk, args, end)
        out["from_point"] = {"x": start[0], "y": start[1]}
        return out
    if action == "scroll":
        amount = p.amount or 3
        args = []
        spot: tuple[int, int] | None = None
        if p.x is not None:
            spot = point(p.x, p.y)
            args = ["mousemove", str(spot[0]), str(spot[1])]
        args += ["click", "--repeat", str(amount), "--delay", "20", SCROLL_BUTTONS[p.direction]]
        result = _pointer_result(desk, args, spot)
        result["amount"] = amount
        return result
    if action == "type":
        return _typed_result(desk, p.text, {})
    if action == "key":
        assert chord is not None
        ok, err = desk.xdotool("key", "--clearmodifiers", "+".join(chord))
        return _keyboard_result(ok, err, {"chord": "+".join(chord)})
    if action == "paste":
        helper = desk.set_clipboard(p.text)
        if helper is None:
            return _typed_result(desk, p.text, {"via": "typed (no xclip or xsel)"})
        ok, err = desk.xdotool("key", "--clearmodifiers", "ctrl+v")
        return _keyboard_result(ok, err, {"characters": len(p.text), "via": f"clipboard ({helper})"})
    raise ToolError("invalid_action", f"unknown action {action!r}", {"action": action})


def _pointer_result(desk: Desktop, args: list[str], target: tuple[int, int] | None) -> dict[str, Any]:
    ok, err, at = desk.act_and_locate(args)
    out: dict[str, Any] = {"delivered": ok}
    if target is not None:
        out["point"] = {"x": target[0], "y": target[1]}
    if not ok:
        out["not_delivered"] = f"xdotool failed: {err[:300] or 'no output'}"
        return out
    if target is not None and at != target:
        out["delivered"] = False
        out["not_delivered"] = (
            f"the pointer is at {at}, not at {target}: the X server did not move it there"
            if at is not None
            else "the pointer position could not be read back"
        )
    return out


def _typed_result(desk: Desktop, text: str, extra: dict[str, Any]) -> dict[str, Any]:
    typed, stopped = desk.type_text(text)
    out: dict[str, Any] = {"delivered": stopped is None, "characters": len(text), **extra}
    if stopped is not None:
        unsure = min(TYPE_CHUNK, len(text) - typed)
        out["typed"] = typed
        out["not_delivered"] = (
            f"{stopped}. The first {typed} of {len(text)} characters were typed, and up to {unsure} after "
            f"them may have been in part; held keys were released. Look at the screenshot and type only "
            f"what is missing (from character {typed}), not the whole text again"
        )
    return out


def _keyboard_result(ok: bool, err: str, extra: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"delivered": ok, **extra}
    if not ok:
        out["not_delivered"] = f"xdotool failed: {err[:300] or 'no output'}"
    return out


def render(result: Any) -> str:
    """The compact text a model reads next to the screenshot image."""
    if not isinstance(result, dict):
        return str(result)
    lines = [f"computer_use {result.get('action')} ({POSTURE_TEXT.get(result.get('posture', ''), '')})"]
    if "delivered" in result:
        where = result.get("point")
        at = f" at screen ({where['x']}, {where['y']})" if where else ""
        lines.append(
            f"delivered{at}" if result["delivered"] else f"NOT delivered{at}: {result.get('not_delivered')}"
        )
    if "changed" in result:
        lines.append(
            f"screen {'changed' if result['changed'] else 'did not change'} after {result['waited_ms']} ms"
        )
    for w in result.get("windows", ()):
        r = w["region"]
        lines.append(
            f'- {w["title"]!r} region {{"x": {r["x"]}, "y": {r["y"]}, "w": {r["w"]}, "h": {r["h"]}}}'
        )
    if "windows" in result:
        lines.insert(1, f"{len(result['windows'])} window(s), front-most first:")
    shot = result.get("screenshot")
    if shot:
        what = f"region {shot['region']}" if shot["region"] else "the whole screen"
        lines.append(
            f"screenshot {shot['width']}x{shot['height']} of {what} on display {shot['display']}, scale "
            f"{shot['scale']:g} ({shot['mapping']}); coordinates for the next action are pixels of this image"
            + (" and need the same region" if shot["region"] else "")
            + f"; file: {shot['path']}"
        )
    return "\n".join(lines)


def images(result: Any) -> tuple[str, ...]:
    shot = result.get("screenshot") if isinstance(result, dict) else None
    return (shot["path"],) if isinstance(shot, dict) and shot.get("path") else ()
