"""What `fermix doctor` says about computer_use: the enable gate, the display and the helpers."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from .x11 import CLIPBOARD_PROGRAMS, REQUIRED_PROGRAMS, missing_helpers


def probe_display(display: str, env: Mapping[str, str], which: Callable[[str], str | None]) -> str | None:
    """None when the X display answers (xwininfo -root), else why not."""
    program = which("xwininfo")
    if program is None:
        return "xwininfo is not installed, so the display cannot be checked"
    try:
        proc = subprocess.run(
            [program, "-root"],
            env={**env, "DISPLAY": display},
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"xwininfo failed: {e}"
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["no answer"])[-1]


def computer_use_health(
    section: Any,
    env: Mapping[str, str],
    which: Callable[[str], str | None],
    probe: Callable[[str], str | None] | None = None,
) -> tuple[str, str, dict[str, Any]]:
    """(status, detail, data) for the doctor line: n/a when off, fail when on but unusable."""
    display = section.display or env.get("DISPLAY", "").strip() or None
    missing = missing_helpers(which)
    clipboard = [p for p in CLIPBOARD_PROGRAMS if which(p)]
    data: dict[str, Any] = {
        "enabled": bool(section.enabled),
        "display": display,
        "missing": missing,
        "clipboard": clipboard,
        "helpers": {p: which(p) for p in REQUIRED_PROGRAMS},
    }
    if not section.enabled:
        return "n/a", "off (experimental; [fermix_core.computer_use] enabled = true turns it on)", data
    problems = []
    if missing:
        problems.append(
            f"missing {', '.join(missing)} (apt-get install xdotool x11-utils; pip install mss pillow)"
        )
    if display is None:
        problems.append("no X display: set DISPLAY or [fermix_core.computer_use] display")
    else:
        why = (probe or (lambda d: probe_display(d, env, which)))(display)
        if why is not None:
            problems.append(f"display {display} does not answer: {why}")
    if problems:
        return "fail", "enabled but unusable: " + "; ".join(problems), data
    paste = f"paste via {clipboard[0]}" if clipboard else "paste is typed (no xclip or xsel)"
    return "ok", f"enabled on display {display}; xdotool and xwininfo found; {paste}", data
