"""Key chords and click modifiers, as the X keysym names xdotool takes (`ctrl+s` -> ctrl+s, `cmd` -> super)."""

from __future__ import annotations

from ..core.errors import ExitClass, ToolError

MODIFIERS = {
    "ctrl": "ctrl",
    "control": "ctrl",
    "alt": "alt",
    "option": "alt",
    "shift": "shift",
    "cmd": "super",
    "command": "super",
    "super": "super",
    "meta": "super",
    "win": "super",
}
NAMED = {
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "space",
    "backspace": "BackSpace",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "page_up": "Prior",
    "pagedown": "Next",
    "page_down": "Next",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "printscreen": "Print",
    "print": "Print",
    "menu": "Menu",
    "sysrq": "Sys_Req",
    "plus": "plus",
    "minus": "minus",
    **{f"f{n}": f"F{n}" for n in range(1, 13)},
}
PUNCTUATION = {
    "-": "minus",
    "=": "equal",
    ",": "comma",
    ".": "period",
    "/": "slash",
    ";": "semicolon",
    "'": "apostrophe",
    "[": "bracketleft",
    "]": "bracketright",
    "\\": "backslash",
    "`": "grave",
}


def _bad(message: str, value: str) -> ToolError:
    return ToolError("invalid_chord", message, {"chord": value}, exit_class=ExitClass.BAD_INPUT)


def modifier(name: str) -> str:
    found = MODIFIERS.get(name.strip().lower())
    if found is None:
        raise ToolError(
            "invalid_modifier",
            f"unknown modifier {name!r}; use ctrl, alt, shift or cmd (super)",
            {"modifier": name},
        )
    return found


def parse_chord(chord: str) -> tuple[str, ...]:
    """`ctrl+shift+t` as keysyms (modifiers first, one key last); refuses what xdotool would misread."""
    parts = [p.strip() for p in chord.split("+")]
    if not chord.strip() or any(not p for p in parts):
        raise _bad(
            f"chord {chord!r} is empty or has an empty part; write keys joined by '+', e.g. ctrl+s", chord
        )
    *mods, key = parts
    out = [modifier(m) for m in mods]
    if len(set(out)) != len(out):
        raise _bad(f"chord {chord!r} repeats a modifier", chord)
    lowered = key.lower()
    if lowered in MODIFIERS and not mods:
        keysym = {"ctrl": "Control_L", "alt": "Alt_L", "shift": "Shift_L", "super": "Super_L"}[
            MODIFIERS[lowered]
        ]
    elif lowered in NAMED:
        keysym = NAMED[lowered]
    elif len(key) == 1 and key.isascii() and key.isalnum():
        keysym = key.lower() if mods else key
    elif key in PUNCTUATION:
        keysym = PUNCTUATION[key]
    else:
        raise _bad(
            f"unknown key {key!r} in chord {chord!r}; use a letter or digit, f1-f12, enter, esc, tab, space, "
            "backspace, delete, home, end, pageup, pagedown, up, down, left, right (type text with action=type)",
            chord,
        )
    return (*out, keysym)
