"""A private X server (Xvfb) with the test window on it, for the computer_use tests."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NEEDED = ("Xvfb", "xdotool", "xwininfo")


def missing_programs() -> list[str]:
    return [p for p in NEEDED if shutil.which(p) is None]


def skip_reason() -> str | None:
    missing = missing_programs()
    if missing:
        return f"no X server can run here: {', '.join(missing)} not installed (apt-get install xvfb xdotool x11-utils)"
    try:
        import tkinter  # noqa: F401
    except ImportError:
        return "this Python has no tkinter, which the test window needs (Debian's python3: apt-get install python3-tk)"
    for module in ("mss", "PIL"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed"
    return None


def free_display() -> int:
    """A display number with no socket and no lock file (another test module may hold others)."""
    rng = random.Random()
    for _ in range(200):
        n = rng.randint(200, 900)
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return n
    raise RuntimeError("no free X display number")


def wait_for(check: Callable[[], Any], timeout: float = 5.0, step: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


class Desktop:
    """Xvfb on a free display (`-noreset`: the server keeps its state between short-lived clients)."""

    def __init__(self, tmp: Path, size: str = "640x480") -> None:
        self.tmp = tmp
        self.size = size
        self.number = free_display()
        self.display = f":{self.number}"
        self.xvfb: subprocess.Popen[bytes] | None = None
        self.app: subprocess.Popen[bytes] | None = None
        self.state_file = tmp / "window-state.json"

    def start(self) -> None:
        self.xvfb = subprocess.Popen(
            ["Xvfb", self.display, "-screen", "0", f"{self.size}x24", "-nolisten", "tcp", "-noreset"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if not wait_for(lambda: os.path.exists(f"/tmp/.X11-unix/X{self.number}")):
            raise RuntimeError(f"Xvfb did not start on {self.display}")
        env = {**os.environ, "DISPLAY": self.display}
        self.app = subprocess.Popen(
            [sys.executable, str(HERE / "testapp.py"), str(self.state_file)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if not wait_for(self.state_file.exists, timeout=10):
            raise RuntimeError("the test window did not come up")

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text())

    def wait_state(self, check: Callable[[dict[str, Any]], Any], timeout: float = 3.0) -> dict[str, Any]:
        """The window's state once `check` holds (or the last state seen, for the assertion to show)."""
        found: dict[str, Any] = {}

        def probe() -> bool:
            found.update(self.state())
            return bool(check(found))

        wait_for(probe, timeout)
        return found

    def pointer(self) -> tuple[int, int]:
        out = subprocess.run(
            ["xdotool", "getmouselocation", "--shell"],
            env={**os.environ, "DISPLAY": self.display},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return int(values["X"]), int(values["Y"])

    def stop(self) -> None:
        for proc in (self.app, self.xvfb):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
