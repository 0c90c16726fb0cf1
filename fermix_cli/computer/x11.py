"""The X11 desktop: screenshots through mss (Xlib, in-process), input through xdotool, windows through
xwininfo/xprop, the clipboard through xclip or xsel. mss and Pillow are imported only here, on use.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from .geometry import Rect, View

if TYPE_CHECKING:
    from PIL.Image import Image

    from ..core.context import ToolContext

REQUIRED_PROGRAMS = ("xdotool", "xwininfo")
CLIPBOARD_PROGRAMS = ("xclip", "xsel")
PYTHON_MODULES = {"mss": "mss", "PIL": "pillow"}
HELPER_TIMEOUT_S = 15.0
# Text is typed in pieces, each with a deadline for its length: one xdotool call for a long text would
# outlive any fixed deadline (about 10 ms a character), and a call killed between a key's press and its
# release leaves the key held, repeating for ever.
TYPE_CHUNK = 100
TYPE_DELAY_MS = 8
MODIFIER_KEYSYMS = ("shift", "ctrl", "alt", "super", "Shift_L", "Shift_R", "Control_L", "Control_R",
                    "Alt_L", "Alt_R", "Super_L", "Super_R", "ISO_Level3_Shift")  # fmt: skip


def chunk_timeout(characters: int) -> float:
    """Seconds one xdotool call may take to type `characters` (ten times the usual pace, plus start-up)."""
    return 5.0 + characters * TYPE_DELAY_MS * 10 / 1000


MAX_WINDOWS = 40


def missing_helpers(which: Callable[[str], str | None] = shutil.which) -> list[str]:
    """What the enable gate lacks: programs not on PATH and Python packages not installed."""
    missing = [p for p in REQUIRED_PROGRAMS if which(p) is None]
    missing += [pkg for mod, pkg in PYTHON_MODULES.items() if importlib.util.find_spec(mod) is None]
    return missing


def display_of(ctx: ToolContext) -> str | None:
    configured = ctx.config.fermix_core.computer_use.display
    return configured or os.environ.get("DISPLAY", "").strip() or None


def pointer_in(text: str) -> tuple[int, int] | None:
    """The last X=/Y= pair of `xdotool getmouselocation --shell` output."""
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    try:
        return int(values["X"]), int(values["Y"])
    except (KeyError, ValueError):
        return None


def _release_held_keys(display: str) -> list[int]:
    """Query the keymap (XQueryKeymap) and send a release (XTest) for each key that is down."""
    import ctypes
    import ctypes.util

    x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
    xtst = ctypes.CDLL(ctypes.util.find_library("Xtst") or "libXtst.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XQueryKeymap.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
    connection = x11.XOpenDisplay(display.encode())
    if not connection:
        raise OSError(f"cannot open X display {display}")
    try:
        keymap = ctypes.create_string_buffer(32)
        x11.XQueryKeymap(connection, keymap)
        held = [i * 8 + bit for i, byte in enumerate(keymap.raw) for bit in range(8) if byte >> bit & 1]
        for keycode in held:
            xtst.XTestFakeKeyEvent(connection, keycode, 0, 0)
        x11.XSync(connection, 0)
    finally:
        x11.XCloseDisplay(connection)
    return held


class _Borrowed:
    """A shared mss connection used in a `with` block without closing it."""

    def __init__(self, sct: Any) -> None:
        self.sct = sct

    def __enter__(self) -> Any:
        return self.sct

    def __exit__(self, *exc: object) -> None:
        pass


class Desktop:
    """One X display. Every helper runs with DISPLAY set to it, in its own session, with a deadline."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.env = {**os.environ, "DISPLAY": display}
        self._sct: Any = None

    def close(self) -> None:
        if self._sct is not None:
            self._sct.close()
            self._sct = None

    # ----- looking -----------------------------------------------------------------------------

    def _open(self) -> Any:
        import mss

        factory = getattr(mss, "MSS", None) or mss.mss
        try:
            return factory(display=self.display)
        except Exception as e:  # mss raises its own ScreenShotError when the display cannot be opened
            raise ToolError(
                "display_unavailable",
                f"cannot open X display {self.display}: {e}. Check DISPLAY or [fermix_core.computer_use] "
                "display, and that the X server lets this user connect (fermix doctor).",
                {"display": self.display},
            ) from None

    def _mss(self) -> Any:
        """One mss connection per Desktop (a call asks for the monitors, then grabs)."""
        if self._sct is None:
            self._sct = self._open()
        return _Borrowed(self._sct)

    def monitors(self) -> list[Rect]:
        """The monitors in mss's numbering (index 0 here is monitor 1), in absolute X coordinates."""
        with self._mss() as sct:
            return [Rect(m["left"], m["top"], m["width"], m["height"]) for m in sct.monitors[1:]]

    def monitor(self, index: int) -> Rect:
        found = self.monitors()
        if not 1 <= index <= len(found):
            raise ToolError(
                "invalid_display",
                f"display {index} does not exist; this X screen has {len(found)} monitor(s), numbered from 1",
                {"display": index, "monitors": len(found)},
            )
        return found[index - 1]

    def capture(self, view: View) -> Image:
        """The pixels `view` shows, scaled to its image size."""
        from PIL import Image as PILImage

        area = view.region or Rect(0, 0, view.monitor.w, view.monitor.h)
        box = {
            "left": view.monitor.x + area.x,
            "top": view.monitor.y + area.y,
            "width": area.w,
            "height": area.h,
        }
        with self._mss() as sct:
            shot = sct.grab(box)
        image = PILImage.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")
        if (view.width, view.height) != image.size:
            resample = PILImage.Resampling.LANCZOS if view.scale < 1 else PILImage.Resampling.NEAREST
            image = image.resize((view.width, view.height), resample)
        return image

    # ----- helpers -----------------------------------------------------------------------------

    def run(self, argv: Sequence[str], timeout_s: float = HELPER_TIMEOUT_S) -> tuple[int, str]:
        """(exit code, output) of a helper; a missing program or a timeout is a ToolError."""
        from ..core.shell.procgroup import run_captured

        try:
            out = run_captured(argv, cwd="/", env=self.env, timeout_s=timeout_s, cap=1 << 20)
        except (FileNotFoundError, PermissionError):
            raise ToolError(
                "helper_missing",
                f"{argv[0]} cannot be run; install it (apt-get install {argv[0]}) and check fermix doctor",
                {"program": argv[0]},
            ) from None
        if out.timed_out:
            raise ToolError("timeout", f"{argv[0]} did not finish in {timeout_s:g} s", {"program": argv[0]})
        return out.exit_code, out.text()

    def xdotool(self, *args: str) -> tuple[bool, str]:
        code, text = self.run(["xdotool", *args])
        return code == 0, text.strip()

    def type_text(self, text: str) -> tuple[int, str | None]:
        """Type `text` piece by piece: (characters typed for certain, None or why it stopped).

        After a piece fails or runs out of time, every key still held is released, so nothing repeats.
        """
        typed = 0
        try:
            for start in range(0, len(text), TYPE_CHUNK):
                piece = text[start : start + TYPE_CHUNK]
                limit = chunk_timeout(len(piece))
                try:
                    code, out = self.run(
                        ["xdotool", "type", "--delay", str(TYPE_DELAY_MS), "--clearmodifiers", "--", piece],
                        timeout_s=limit,
                    )
                except ToolError as exc:
                    if exc.code != "timeout":
                        raise
                    self.release_keys()
                    return (
                        typed,
                        f"xdotool did not type {len(piece)} characters within {limit:g} s and was stopped",
                    )
                if code != 0:
                    self.release_keys()
                    return typed, f"xdotool failed: {out.strip()[:300] or 'no output'}"
                typed += len(piece)
        except BaseException:
            self.release_keys()  # interrupted mid-piece: never leave a key down
            raise
        return typed, None

    def release_keys(self) -> list[int]:
        """Release every key the X server has down (a killed xdotool may have left one); their keycodes."""
        try:
            return _release_held_keys(self.display)
        except (OSError, AttributeError) as exc:  # no libX11/libXtst to load: release the modifiers at least
            import logging

            logging.getLogger(__name__).warning(
                "cannot read the X keymap (%s); releasing modifiers only", exc
            )
            self.run(["xdotool", "keyup", *MODIFIER_KEYSYMS])
            return []

    def act_and_locate(self, args: Sequence[str]) -> tuple[bool, str, tuple[int, int] | None]:
        """Run an xdotool chain, then read the pointer back in the same connection (a round trip, so the
        position is the server's after it processed the chain)."""
        ok, text = self.xdotool(*args, "getmouselocation", "--shell")
        return ok, text, pointer_in(text) if ok else None

    def set_clipboard(self, text: str) -> str | None:
        """Put `text` on the CLIPBOARD selection, read back to be sure it is served; the helper's name,
        or None when no helper is installed (or none could take the selection)."""
        helpers = (
            ("xclip", ["-selection", "clipboard", "-in"], ["-selection", "clipboard", "-out"]),
            ("xsel", ["--clipboard", "--input"], ["--clipboard", "--output"]),
        )
        for program, put, get in helpers:
            path = shutil.which(program)
            if path is None:
                continue
            # The helper forks a small server that owns the selection until another client takes it; that
            # server keeps any pipe it inherits open, so neither output is a pipe to wait on.
            try:
                proc = subprocess.run(
                    [path, *put],
                    input=text.encode("utf-8"),
                    env=self.env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=HELPER_TIMEOUT_S,
                    start_new_session=True,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                continue
            if proc.returncode == 0 and self._clipboard_holds(path, get, text):
                return program
        return None

    def _clipboard_holds(self, path: str, get: list[str], text: str) -> bool:
        """Whether the selection serves `text` yet (the helper's server takes it a moment after forking)."""
        import time

        for _ in range(40):
            code, out = self.run([path, *get])
            if code == 0 and out == text:
                return True
            time.sleep(0.025)
        return False

    # ----- windows -----------------------------------------------------------------------------

    def windows(self) -> list[dict[str, Any]]:
        """Viewable top-level windows, front-most first, each with its absolute bounds."""
        ids = self._stacking() or self._root_children()
        out: list[dict[str, Any]] = []
        for wid in ids:
            info = self._window_info(wid)
            if info is not None:
                out.append(info)
            if len(out) >= MAX_WINDOWS:
                break
        return out

    def _stacking(self) -> list[str]:
        """The window manager's client list, top first (empty without a window manager)."""
        code, text = (
            self.run(["xprop", "-root", "_NET_CLIENT_LIST_STACKING"]) if shutil.which("xprop") else (1, "")
        )
        if code != 0 or "#" not in text:
            return []
        return list(reversed(re.findall(r"0x[0-9a-fA-F]+", text.split("#", 1)[1])))

    def _root_children(self) -> list[str]:
        """The root window's children as xwininfo lists them: top of the stack first."""
        code, text = self.run(["xwininfo", "-root", "-children"])
        if code != 0:
            raise ToolError("display_unavailable", f"xwininfo failed: {text.strip()[:300]}", {})
        return re.findall(r"^\s+(0x[0-9a-fA-F]+) ", text, re.MULTILINE)

    def _window_info(self, wid: str) -> dict[str, Any] | None:
        code, text = self.run(["xwininfo", "-id", wid])
        if code != 0 or "Map State: IsViewable" not in text:
            return None
        title = re.search(r'Window id: 0x[0-9a-fA-F]+ "(.*)"\s*$', text, re.MULTILINE)
        if title is None:
            return None  # unnamed: a toolkit's helper window, not something to aim at

        def num(label: str) -> int:
            found = re.search(rf"{label}:\s+(-?\d+)", text)
            return int(found.group(1)) if found else 0

        bounds = Rect(num("Absolute upper-left X"), num("Absolute upper-left Y"), num("Width"), num("Height"))
        if bounds.w < 2 or bounds.h < 2:
            return None
        return {"id": wid, "title": title.group(1), "bounds": bounds}
