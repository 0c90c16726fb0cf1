"""/pause and /resume in `fermix agent`: the owner takes the desktop back and hands it over again."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import Env

pytestmark = pytest.mark.skipif(
    shutil.which("xdotool") is None or shutil.which("xwininfo") is None,
    reason="computer_use is not offered without xdotool and xwininfo (apt-get install xdotool x11-utils)",
)

SCREENSHOT = json.dumps({"tool_calls": [{"name": "computer_use", "arguments": {"action": "screenshot"}}]})


def test_pause_refuses_actions_until_resume(world: Env) -> None:
    world.fermix_home.mkdir()
    # A display nobody serves: once resumed, the call gets as far as opening it.
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.computer_use]\nenabled = true\ndisplay = ":989"\n'
    )
    lines = ["/pause", SCREENSHOT, "/pause", "/resume", SCREENSHOT, "/resume", "/help"]
    r = world.run("agent", "-m", "echo", input="".join(line + "\n" for line in lines))
    out = r.stdout + r.stderr
    assert r.code == 0, out
    assert "computer use paused" in out and "computer use already paused" in out
    assert "computer use resumed" in out and "computer use was not paused" in out
    assert "✗ computer_use (paused)" in out
    assert "✗ computer_use (display_unavailable)" in out
    assert "/pause" in out and "/resume" in out  # /help lists them
