"""The pure rules of computer_use, case by case: views and scales, aiming, key chords, severity, origins."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fermix_cli.computer.geometry import Rect, View, aim, plan_view
from fermix_cli.computer.health import computer_use_health
from fermix_cli.computer.keys import parse_chord
from fermix_cli.computer.posture import origin_refusal, severity
from fermix_cli.computer.tool import available, gate
from fermix_cli.core.errors import ToolError
from tests.conftest import Env

SCREEN = Rect(0, 0, 1920, 1080)


@pytest.mark.parametrize(
    ("monitor", "region", "scale", "size"),
    [
        (Rect(0, 0, 640, 480), None, 1.0, (640, 480)),
        (Rect(0, 0, 3840, 2160), None, 0.4083, (1568, 882)),
        (SCREEN, Rect(0, 0, 64, 32), 8.0, (512, 256)),
        (SCREEN, Rect(100, 100, 200, 100), 5.12, (1024, 512)),
        (SCREEN, Rect(0, 0, 1920, 1080), 1.0, (1920, 1080)),
        (SCREEN, Rect(10, 10, 2, 1), 8.0, (16, 8)),
    ],
)
def test_views(monitor: Rect, region: Rect | None, scale: float, size: tuple[int, int]) -> None:
    view = plan_view(monitor, region)
    assert (view.scale, (view.width, view.height)) == (scale, size)


@pytest.mark.parametrize(
    "region",
    [Rect(1900, 0, 64, 32), Rect(0, 1070, 10, 20), Rect(0, 0, 1921, 1)],
)
def test_a_region_off_the_screen_is_refused(region: Rect) -> None:
    with pytest.raises(ToolError) as e:
        plan_view(SCREEN, region)
    assert e.value.code == "invalid_region" and e.value.exit_class == 2


ZOOM = plan_view(SCREEN, Rect(400, 300, 100, 50))  # scale 8: an 800x400 crop
FULL = plan_view(SCREEN, None)


@pytest.mark.parametrize(
    ("view", "region", "point", "confirm", "expected"),
    [
        (FULL, None, (10, 20), False, (12, 25)),  # a 1920-wide screen is shown at 0.8167
        (ZOOM, Rect(400, 300, 100, 50), (0, 0), False, (400, 300)),
        (ZOOM, Rect(400, 300, 100, 50), (799, 399), False, (499, 349)),
        (ZOOM, Rect(400, 300, 100, 50), (12, 7), False, (401, 300)),
        (ZOOM, None, (10, 10), False, "region_required"),
        (ZOOM, Rect(400, 300, 100, 51), (10, 10), False, "region_mismatch"),
        (FULL, Rect(0, 0, 10, 10), (1, 1), False, "region_mismatch"),
        (ZOOM, Rect(400, 300, 100, 50), (800, 10), False, "outside_image"),
        (FULL, None, (1920, 0), False, "outside_image"),
        (ZOOM, Rect(400, 300, 100, 50), (450, 320), False, "ambiguous_grid"),
        (ZOOM, Rect(400, 300, 100, 50), (450, 320), True, (456, 340)),
        (ZOOM, Rect(400, 300, 100, 50), (399, 320), False, (449, 340)),
    ],
)
def test_aim(view: View, region: Rect | None, point: tuple[int, int], confirm: bool, expected: Any) -> None:
    if isinstance(expected, str):
        with pytest.raises(ToolError) as e:
            aim(view, region, *point, confirm_grid=confirm)
        assert e.value.code == expected and e.value.exit_class == 2
    else:
        assert aim(view, region, *point, confirm_grid=confirm) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rx=st.integers(0, 1800),
    ry=st.integers(0, 1000),
    w=st.integers(1, 120),
    h=st.integers(1, 80),
    fx=st.floats(0, 0.999),
    fy=st.floats(0, 0.999),
)
def test_every_crop_pixel_maps_inside_the_region(
    rx: int, ry: int, w: int, h: int, fx: float, fy: float
) -> None:
    region = Rect(rx, ry, w, h)
    view = plan_view(SCREEN, region)
    x, y = int(fx * view.width), int(fy * view.height)
    sx, sy = aim(view, region, x, y, confirm_grid=True)
    assert region.contains(sx, sy)
    # and the crop pixels showing screen pixel (sx, sy) include (x, y)
    assert round((sx - rx) * view.scale) <= x + 1 and x < round((sx - rx + 1) * view.scale) + 1


def test_ambiguity_spells_out_both_conversions() -> None:
    with pytest.raises(ToolError) as e:
        aim(ZOOM, Rect(400, 300, 100, 50), 450, 320)
    assert "(400 + 450/8, 300 + 320/8) = (456, 340)" in e.value.message
    assert "((450 - 400)*8, (320 - 300)*8) = (400, 160)" in e.value.message
    assert '"confirm_grid": true' in e.value.message


@pytest.mark.parametrize(
    ("chord", "keys"),
    [
        ("ctrl+s", ("ctrl", "s")),
        ("Ctrl+Shift+T", ("ctrl", "shift", "t")),
        ("cmd+q", ("super", "q")),
        ("alt+f4", ("alt", "F4")),
        ("f12", ("F12",)),
        ("enter", ("Return",)),
        ("A", ("A",)),
        ("ctrl+-", ("ctrl", "minus")),
        ("ctrl+plus", ("ctrl", "plus")),
        ("shift", ("Shift_L",)),
        ("pagedown", ("Next",)),
    ],
)
def test_chords(chord: str, keys: tuple[str, ...]) -> None:
    assert parse_chord(chord) == keys


@pytest.mark.parametrize("chord", ["", "ctrl+", "+a", "ctrl+ctrl+a", "hyper+a", "f13", "ctrl+é", "xyzzy"])
def test_bad_chords(chord: str) -> None:
    with pytest.raises(ToolError) as e:
        parse_chord(chord)
    assert e.value.code in ("invalid_chord", "invalid_modifier")


@pytest.mark.parametrize(
    ("action", "chord", "text", "grade"),
    [
        ("key", "enter", None, "irreversible"),
        ("key", "ctrl+s", None, "irreversible"),
        ("key", "alt+f4", None, "irreversible"),
        ("key", "shift+delete", None, "irreversible"),
        ("key", "ctrl+alt+delete", None, "catastrophic"),
        ("key", "ctrl+alt+f2", None, "catastrophic"),
        ("key", "tab", None, None),
        ("key", "ctrl+c", None, None),
        # Extra modifiers on a commit or catastrophic chord never make it milder.
        ("key", "ctrl+shift+s", None, "irreversible"),
        ("key", "ctrl+shift+w", None, "irreversible"),
        ("key", "ctrl+shift+q", None, "irreversible"),
        ("key", "super+shift+q", None, "irreversible"),
        ("key", "alt+shift+f4", None, "irreversible"),
        ("key", "ctrl+alt+shift+delete", None, "catastrophic"),
        ("key", "ctrl+alt+shift+f3", None, "catastrophic"),
        ("key", "super+shift+l", None, "catastrophic"),
        ("key", "ctrl+alt+l", None, "catastrophic"),  # the screen lock of many desktops
        ("key", "sysrq", None, "catastrophic"),
        # ... but a different key is a different chord.
        ("key", "ctrl+shift+t", None, None),
        ("key", "ctrl+l", None, None),
        ("key", "shift+s", None, None),
        ("type", None, "hello", None),
        ("type", None, "hello\n", "irreversible"),
        ("paste", None, "a\r\nb", "irreversible"),
        ("left_click", None, None, None),
    ],
)
def test_severity(action: str, chord: str | None, text: str | None, grade: str | None) -> None:
    assert severity(action, parse_chord(chord) if chord else None, text) == grade


@pytest.mark.parametrize(
    ("ctx_kw", "refused"),
    [
        ({}, False),
        ({"origin": "interactive"}, False),
        ({"origin": "scheduled", "attended": False, "job_id": "j1"}, True),
        ({"origin": "subagent", "depth": 1}, True),
        ({"origin": "interactive", "depth": 1}, True),
        ({"origin": "skill"}, True),
        ({"origin": "mcp"}, True),
        ({"trust": "guest"}, True),
        ({"origin": "cli", "attended": False}, True),
    ],
)
def test_origins(world: Env, ctx_kw: dict[str, Any], refused: bool) -> None:
    ctx = world.context(**ctx_kw)
    try:
        assert (origin_refusal(ctx) is not None) == refused
    finally:
        ctx.close()


def test_a_command_fermix_started_is_refused(world: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from fermix_cli.core.shell.procgroup import SPAWN_MARKER

    monkeypatch.setenv(SPAWN_MARKER, "0" * 32)  # what every child of fermix's shell tool carries
    ctx = world.context()
    try:
        refusal = origin_refusal(ctx)
        assert (
            refusal is not None
            and refusal.code == "not_attended"
            and "fermix itself started" in refusal.message
        )
    finally:
        ctx.close()


def test_off_by_default_and_not_offered(world: Env) -> None:
    ctx = world.context()
    try:
        assert available(ctx) is False
        with pytest.raises(ToolError) as e:
            gate(ctx)
        assert e.value.code == "not_enabled"
    finally:
        ctx.close()


class Section:
    def __init__(self, enabled: bool, display: str | None = None) -> None:
        self.enabled, self.display = enabled, display


def test_doctor_lines() -> None:
    found = {"xdotool": "/usr/bin/xdotool", "xwininfo": "/usr/bin/xwininfo"}.get
    status, detail, _ = computer_use_health(Section(False), {}, found)
    assert status == "n/a" and "enabled = true" in detail
    status, detail, data = computer_use_health(Section(True), {}, lambda p: None)
    assert status == "fail" and "xdotool" in detail and "no X display" in detail
    assert "xdotool" in data["missing"]
    status, detail, _ = computer_use_health(
        Section(True, ":5"), {}, found, probe=lambda d: "unable to open display"
    )
    assert status == "fail" and "display :5 does not answer: unable to open display" in detail
    status, detail, _ = computer_use_health(Section(True), {"DISPLAY": ":7"}, found, probe=lambda d: None)
    assert status == "ok" and "display :7" in detail and "paste is typed" in detail
