"""computer_use against a real X server (Xvfb) and a real Tk window: looks, clicks, typing, drags, zoom
aiming, the posture of each sandbox mode and the origin rules."""

from __future__ import annotations

import os
import shutil
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.computer.desktop import Desktop, skip_reason, wait_for
from tests.computer.testapp import LAYOUT
from tests.conftest import Env

REASON = skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desktop]:
    d = Desktop(tmp_path_factory.mktemp("x11"))
    d.start()
    try:
        yield d
    finally:
        d.stop()


def configure(world: Env, desktop: Desktop, mode: str = "standard", enabled: bool = True) -> None:
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nmode = "{mode}"\n\n[fermix_core.computer_use]\nenabled = {str(enabled).lower()}\n'
        f'display = "{desktop.display}"\n'
    )


@pytest.fixture
def use(world: Env, desktop: Desktop) -> Callable[..., Any]:
    """computer_use in-process, as the owner at the terminal unless context fields say otherwise."""
    configure(world, desktop)

    def call(args: dict[str, Any], **ctx_kw: Any) -> Any:
        ctx = world.context(**ctx_kw)
        try:
            return default_registry().invoke("computer_use", args, ctx)
        finally:
            ctx.close()

    return call


def centre(name: str) -> tuple[int, int]:
    x, y, w, h = LAYOUT[name]
    return x + w // 2, y + h // 2


def png_size(path: str) -> tuple[int, int]:
    head = Path(path).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_screenshot_is_a_png_of_the_whole_screen(use: Callable[..., Any]) -> None:
    out = use({"action": "screenshot"})
    shot = out["screenshot"]
    assert (shot["width"], shot["height"], shot["scale"], shot["region"]) == (640, 480, 1.0, None)
    assert png_size(shot["path"]) == (640, 480)
    assert Path(shot["path"]).stat().st_mode & 0o777 == 0o600


def test_click_a_button_and_see_the_change(use: Callable[..., Any], desktop: Desktop) -> None:
    before = desktop.state()["presses"]
    use({"action": "screenshot"})
    x, y = centre("button")
    out = use({"action": "left_click", "x": x, "y": y})
    assert out["delivered"] is True and out["point"] == {"x": x, "y": y}
    state = desktop.wait_state(lambda s: s["presses"] == before + 1)
    assert state["presses"] == before + 1 and state["label"] == f"pressed {before + 1}"
    # The fresh screenshot after the click is a new file of the whole screen.
    assert out["screenshot"]["region"] is None and Path(out["screenshot"]["path"]).exists()


def test_type_into_the_text_field(use: Callable[..., Any], desktop: Desktop) -> None:
    x, y = centre("entry")
    use({"action": "left_click", "x": x, "y": y})
    use({"action": "key", "chord": "ctrl+a"})
    use({"action": "key", "chord": "ctrl+k"})
    out = use({"action": "type", "text": "hello fermix"})
    assert out["delivered"] is True and out["characters"] == 12
    state = desktop.wait_state(lambda s: s["text"] == "hello fermix")
    assert state["text"] == "hello fermix"


def clear_entry(use: Callable[..., Any]) -> None:
    x, y = centre("entry")
    use({"action": "left_click", "x": x, "y": y})
    use({"action": "key", "chord": "ctrl+a"})
    use({"action": "key", "chord": "ctrl+k"})


def test_a_longer_text_is_typed_in_pieces_without_loss(use: Callable[..., Any], desktop: Desktop) -> None:
    clear_entry(use)
    text = "".join(f"{n:03d}," for n in range(60))  # 240 characters: three xdotool calls
    out = use({"action": "type", "text": text})
    assert out["delivered"] is True and out["characters"] == 240 and "typed" not in out
    state = desktop.wait_state(lambda s: s["text"] == text, timeout=10)
    assert state["text"] == text


def test_a_stuck_type_is_stopped_its_keys_released_and_the_count_told(
    use: Callable[..., Any], desktop: Desktop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An xdotool that presses a key and then hangs (as one killed between press and release leaves it):
    the call ends within its deadline, says how much was typed, and no key stays down repeating."""
    real = shutil.which("xdotool")
    fake = tmp_path / "bin"
    fake.mkdir()
    script = f'#!/bin/sh\nif [ "$1" = type ]; then exec {real} keydown a sleep 60; fi\nexec {real} "$@"\n'
    (fake / "xdotool").write_text(script)
    (fake / "xdotool").chmod(0o755)
    clear_entry(use)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    from fermix_cli.computer import x11

    monkeypatch.setattr(x11, "chunk_timeout", lambda characters: 1.5)  # 5.05 s for five characters
    began = time.monotonic()
    out = use({"action": "type", "text": "hello"})
    assert time.monotonic() - began < 10
    assert out["delivered"] is False and out["typed"] == 0 and out["characters"] == 5
    assert "from character 0" in out["not_delivered"] and "released" in out["not_delivered"]
    settled = desktop.state()["text"]
    time.sleep(1.0)  # a key still down would keep repeating into the field
    assert desktop.state()["text"] == settled


def test_paste_goes_through_the_clipboard(use: Callable[..., Any], desktop: Desktop) -> None:
    x, y = centre("entry")
    use({"action": "left_click", "x": x, "y": y})
    use({"action": "key", "chord": "ctrl+a"})
    use({"action": "key", "chord": "ctrl+k"})
    out = use({"action": "paste", "text": "pasted text"})
    assert out["delivered"] is True
    state = desktop.wait_state(lambda s: s["text"] == "pasted text")
    assert state["text"] == "pasted text", out


def test_drag_on_the_pad(use: Callable[..., Any], desktop: Desktop) -> None:
    px, py, _, _ = LAYOUT["pad"]
    out = use(
        {
            "action": "left_click_drag",
            "from": {"x": px + 10, "y": py + 20},
            "to": {"x": px + 150, "y": py + 90},
        }
    )
    assert out["delivered"] is True
    state = desktop.wait_state(lambda s: s["drag"] == {"start": [10, 20], "end": [150, 90]})
    assert state["drag"] == {"start": [10, 20], "end": [150, 90]}


def test_right_double_ctrl_click_and_scroll(use: Callable[..., Any], desktop: Desktop) -> None:
    px, py, _, _ = LAYOUT["pad"]
    before = desktop.state()
    use({"action": "right_click", "x": px + 5, "y": py + 6})
    use({"action": "double_click", "x": px + 40, "y": py + 40})
    use({"action": "left_click", "x": px + 60, "y": py + 60, "modifiers": ["ctrl"]})
    use({"action": "scroll", "x": px + 60, "y": py + 60, "direction": "down", "amount": 2})
    state = desktop.wait_state(lambda s: s["scroll"]["down"] == before["scroll"]["down"] + 2)
    assert state["right_clicks"][-1] == [5, 6]
    assert state["double_clicks"] == before["double_clicks"] + 1
    assert state["ctrl_clicks"] == before["ctrl_clicks"] + 1
    assert state["scroll"]["down"] == before["scroll"]["down"] + 2


def test_zoomed_region_click_maps_back_to_the_right_pixel(use: Callable[..., Any], desktop: Desktop) -> None:
    px, py, _, _ = LAYOUT["pad"]
    region = {"x": px + 100, "y": py + 50, "w": 64, "h": 32}
    look = use({"action": "screenshot", "region": region})
    shot = look["screenshot"]
    assert shot["scale"] == 8.0 and (shot["width"], shot["height"]) == (512, 256)
    assert png_size(shot["path"]) == (512, 256)
    # Crop pixel (37, 203) is screen pixel (x + 37/8, y + 203/8) = (x + 4, y + 25): pad pixel (104, 75).
    out = use({"action": "left_click", "x": 37, "y": 203, "region": region})
    assert out["delivered"] is True and out["point"] == {"x": px + 104, "y": py + 75}
    assert desktop.wait_state(lambda s: s["pad_clicks"][-1] == [104, 75])["pad_clicks"][-1] == [104, 75]
    # The check screenshot is of the same magnified region.
    assert out["screenshot"]["region"] == region and out["screenshot"]["scale"] == 8.0


def test_after_a_zoom_a_click_without_the_region_is_refused(
    use: Callable[..., Any], desktop: Desktop
) -> None:
    region = {"x": 100, "y": 100, "w": 80, "h": 40}
    use({"action": "screenshot", "region": region})
    clicks = len(desktop.state()["pad_clicks"])
    with pytest.raises(ToolError) as e:
        use({"action": "left_click", "x": 30, "y": 30})
    assert e.value.code == "region_required" and e.value.details["region"] == region
    assert '"region": {"x": 100, "y": 100, "w": 80, "h": 40}' in e.value.message
    with pytest.raises(ToolError) as e:
        use({"action": "left_click", "x": 30, "y": 30, "region": {"x": 0, "y": 0, "w": 80, "h": 40}})
    assert e.value.code == "region_mismatch"
    assert len(desktop.state()["pad_clicks"]) == clicks


def test_coordinates_on_both_grids_need_confirm_grid(use: Callable[..., Any], desktop: Desktop) -> None:
    px, py, _, _ = LAYOUT["pad"]
    region = {"x": px, "y": py, "w": 200, "h": 100}  # scale 5.12: the crop is 1024x512
    use({"action": "screenshot", "region": region})
    clicks = len(desktop.state()["pad_clicks"])
    # (30, 140) lies inside the region's on-screen rectangle: it could be a screen pixel too.
    with pytest.raises(ToolError) as e:
        use({"action": "left_click", "x": 30, "y": 140, "region": region})
    assert e.value.code == "ambiguous_grid"
    assert "= (25, 147)" in e.value.message and "(51, 102)" in e.value.message  # both conversions spelled out
    assert len(desktop.state()["pad_clicks"]) == clicks
    out = use({"action": "left_click", "x": 30, "y": 140, "region": region, "confirm_grid": True})
    assert out["point"] == {"x": px + 5, "y": py + 27}
    assert desktop.wait_state(lambda s: s["pad_clicks"][-1] == [5, 27])["pad_clicks"][-1] == [5, 27]


def test_windows_front_most_first_with_regions(use: Callable[..., Any]) -> None:
    out = use({"action": "windows"})
    titles = [w["title"] for w in out["windows"]]
    assert "fermix test window" in titles
    window = next(w for w in out["windows"] if w["title"] == "fermix test window")
    assert window["region"] == {"x": 0, "y": 0, "w": 400, "h": 300}


def test_windows_follow_the_stacking_order(use: Callable[..., Any], desktop: Desktop) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "DISPLAY": desktop.display}
    script = "import tkinter as t; r = t.Tk(); r.title('second'); r.geometry('100x50+500+400'); r.mainloop()"
    other = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)
    try:

        def titles() -> list[str]:
            return [w["title"] for w in use({"action": "windows"})["windows"]]

        assert wait_for(lambda: "second" in titles(), timeout=10)
        assert titles()[:2] == ["second", "fermix test window"]
        assert next(w for w in use({"action": "windows"})["windows"] if w["title"] == "second")["region"] == {
            "x": 500,
            "y": 400,
            "w": 100,
            "h": 50,
        }
        subprocess.run(
            ["xdotool", "search", "--name", "^fermix test window$", "windowraise"], env=env, check=True
        )
        assert titles()[:2] == ["fermix test window", "second"]
    finally:
        other.terminate()
        other.wait(timeout=5)


def test_wait_for_change_times_out_on_a_still_screen(use: Callable[..., Any]) -> None:
    out = use(
        {
            "action": "wait_for_change",
            "timeout_ms": 150,
            "poll_ms": 50,
            "region": {"x": 400, "y": 400, "w": 20, "h": 20},
        }
    )
    assert out["changed"] is False and 150 <= out["waited_ms"] < 2000


def test_wait_for_change_sees_the_label_change(use: Callable[..., Any], desktop: Desktop) -> None:
    import os
    import subprocess
    import threading

    x, y = centre("button")
    env = {**os.environ, "DISPLAY": desktop.display}
    press = ["xdotool", "mousemove", str(x), str(y), "sleep", "0.02", "click", "1"]
    timer = threading.Timer(0.3, lambda: subprocess.run(press, env=env, check=False))
    timer.start()
    try:
        out = use(
            {
                "action": "wait_for_change",
                "timeout_ms": 8000,
                "poll_ms": 50,
                "region": {"x": 150, "y": 15, "w": 120, "h": 30},
            }
        )
    finally:
        timer.join()
    assert out["changed"] is True and out["waited_ms"] < 8000
    assert out["screenshot"]["region"] == {"x": 150, "y": 15, "w": 120, "h": 30}


def test_strict_is_look_only(world: Env, desktop: Desktop, use: Callable[..., Any]) -> None:
    configure(world, desktop, mode="strict")
    presses = desktop.state()["presses"]
    assert use({"action": "screenshot"})["posture"] == "look_only"
    x, y = centre("button")
    with pytest.raises(ToolError) as e:
        use({"action": "left_click", "x": x, "y": y})
    assert e.value.code == "look_only" and e.value.exit_class == 3
    with pytest.raises(ToolError):
        use({"action": "type", "text": "x"})
    assert desktop.state()["presses"] == presses


def test_standard_asks_the_owner_before_enter(world: Env, desktop: Desktop, use: Callable[..., Any]) -> None:
    asked: list[str] = []

    def decline(question: str, details: Any) -> bool:
        asked.append(question)
        return False

    model_turn = {"origin": "interactive", "extras": {"call_id": "c1", "confirm": decline}}
    with pytest.raises(ToolError) as e:
        use({"action": "key", "chord": "enter"}, **model_turn)
    assert e.value.code == "declined" and asked == ["Let the agent press Return on your desktop?"]
    # Nobody to ask (a model run with no owner at a terminal): refused, not performed.
    with pytest.raises(ToolError) as e:
        use({"action": "type", "text": "line\n"}, extras={"call_id": "c2"})
    assert e.value.code == "needs_confirmation"
    # Reversible input goes ahead without a question.
    use({"action": "key", "chord": "tab"}, **model_turn)
    assert len(asked) == 1


def test_scheduled_and_subagent_callers_are_refused(use: Callable[..., Any]) -> None:
    with pytest.raises(ToolError) as e:
        use({"action": "screenshot"}, origin="scheduled", attended=False, job_id="j_1")
    assert e.value.code == "not_attended" and "scheduled" in e.value.message
    with pytest.raises(ToolError) as e:
        use({"action": "screenshot"}, origin="subagent", depth=1)
    assert e.value.code == "not_attended" and "subagent" in e.value.message
    with pytest.raises(ToolError) as e:
        use({"action": "screenshot"}, trust="guest")
    assert e.value.code in ("policy_denied", "not_attended")


def test_pause_refuses_every_action_until_resume(world: Env, use: Callable[..., Any]) -> None:
    from fermix_cli.computer.session import set_paused

    ctx = world.context()
    try:
        set_paused(ctx, True)
        with pytest.raises(ToolError) as e:
            use({"action": "screenshot"})
        assert e.value.code == "paused"
        set_paused(ctx, False)
    finally:
        ctx.close()
    assert use({"action": "screenshot"})["screenshot"]["width"] == 640


def test_accessibility_actions_are_unsupported(use: Callable[..., Any]) -> None:
    for args in (
        {"action": "inspect", "x": 1, "y": 1},
        {"action": "elements"},
        {"action": "screenshot", "marks": True},
    ):
        with pytest.raises(ToolError) as e:
            use(args)
        assert e.value.code == "unsupported_on_platform"


def test_the_cli_prints_json_and_refuses_with_exit_codes(world: Env, desktop: Desktop) -> None:
    configure(world, desktop)
    r = world.tool("computer_use", {"action": "screenshot", "region": {"x": 0, "y": 0, "w": 100, "h": 50}})
    assert r.code == 0, r.stderr
    assert r.json()["screenshot"]["scale"] == 8.0
    r = world.tool("computer_use", {"action": "left_click", "x": 5, "y": 5})
    assert r.code == 2 and r.error()["code"] == "region_required"
    configure(world, desktop, enabled=False)
    r = world.tool("computer_use", {"action": "screenshot"})
    assert r.code == 1 and r.error()["code"] == "not_enabled"


def test_a_model_run_sees_the_screenshot_as_an_image(world: Env, desktop: Desktop) -> None:
    """`fermix ask`'s loop: the model asks for a screenshot and the next request carries it as an image."""
    import base64

    from fermix_cli.agent.assemble import Agent, AgentOptions
    from tests.agent.model_server import ModelServer, text, tools

    server = ModelServer()
    try:
        world.fermix_home.mkdir(exist_ok=True)
        (world.fermix_home / "config.toml").write_text(
            f'[fermix_core.computer_use]\nenabled = true\ndisplay = "{desktop.display}"\n\n'
            f'[fermix_core.providers.local]\ntype = "anthropic"\nbase_url = "{server.base}"\ndefault_model = "m"\n\n'
            '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
        )
        server.queue(tools(("computer_use", {"action": "screenshot"})), text("a window"))
        ctx = world.context()
        agent = Agent(ctx, AgentOptions(provider="local"))
        try:
            result = agent.run("what is on the screen?")
        finally:
            agent.close()
            ctx.close()
        assert result.status == "ok", result.error
        assert server.violations == []
        tool = next(t for t in server.seen[0].body["tools"] if t["name"] == "computer_use")
        action = tool["input_schema"]["properties"]["action"]["description"]
        assert action.endswith("Posture now: standard: acts; the owner confirms anything irreversible")
        blocks = [
            b for m in server.seen[1].body["messages"] for b in m["content"] if b.get("type") == "tool_result"
        ]
        image = blocks[0]["content"][1]
        assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
        assert base64.b64decode(image["source"]["data"])[:8] == b"\x89PNG\r\n\x1a\n"
        assert "scale 1" in blocks[0]["content"][0]["text"]
    finally:
        server.close()
