"""A small Tk window the computer_use tests drive: a button, a text field and a drawing pad.

Run as `python testapp.py STATE_FILE`. The window sits at (0, 0) on a display with no window manager,
so its widgets are at fixed screen pixels (see LAYOUT). Every event rewrites STATE_FILE as JSON: the
tests read what the window saw, never the window's pixels.
"""

from __future__ import annotations

import json
import os
import sys

LAYOUT = {
    "button": (20, 20, 100, 30),  # x, y, w, h in screen pixels
    "entry": (20, 70, 200, 25),
    "pad": (20, 120, 300, 150),
}


def main(state_path: str) -> None:
    import tkinter as tk  # here, not above: the tests import LAYOUT where this Python has no tkinter

    state: dict[str, object] = {
        "ready": True,
        "presses": 0,
        "label": "idle",
        "text": "",
        "pad_clicks": [],
        "right_clicks": [],
        "double_clicks": 0,
        "drag": None,
        "scroll": {"up": 0, "down": 0},
        "ctrl_clicks": 0,
    }

    def save() -> None:
        state["text"] = entry.get()
        tmp = state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, state_path)

    root = tk.Tk()
    root.title("fermix test window")
    root.geometry("400x300+0+0")
    label = tk.Label(root, text="idle")
    label.place(x=150, y=20)

    def press() -> None:
        state["presses"] = int(state["presses"]) + 1  # type: ignore[call-overload]
        state["label"] = f"pressed {state['presses']}"
        label.configure(text=str(state["label"]))
        save()

    button = tk.Button(root, text="Press", command=press, bd=0, highlightthickness=0)
    bx, by, bw, bh = LAYOUT["button"]
    button.place(x=bx, y=by, width=bw, height=bh)

    entry = tk.Entry(root, bd=0, highlightthickness=0)
    ex, ey, ew, eh = LAYOUT["entry"]
    entry.place(x=ex, y=ey, width=ew, height=eh)
    entry.bind("<KeyRelease>", lambda e: save())

    pad = tk.Canvas(root, bg="white", bd=0, highlightthickness=0)
    px, py, pw, ph = LAYOUT["pad"]
    pad.place(x=px, y=py, width=pw, height=ph)
    drag: dict[str, object] = {}

    def pad_press(e: tk.Event) -> None:  # type: ignore[type-arg]
        drag.update(start=[e.x, e.y], moved=0)
        if e.state & 0x4:
            state["ctrl_clicks"] = int(state["ctrl_clicks"]) + 1  # type: ignore[call-overload]
        state["pad_clicks"].append([e.x, e.y])  # type: ignore[attr-defined]
        pad.create_rectangle(e.x - 3, e.y - 3, e.x + 3, e.y + 3, fill="black")
        save()

    def pad_motion(e: tk.Event) -> None:  # type: ignore[type-arg]
        drag["moved"] = int(drag.get("moved", 0)) + 1  # type: ignore[call-overload]

    def pad_release(e: tk.Event) -> None:  # type: ignore[type-arg]
        if drag.get("moved"):
            state["drag"] = {"start": drag["start"], "end": [e.x, e.y]}
            save()

    def pad_right(e: tk.Event) -> None:  # type: ignore[type-arg]
        state["right_clicks"].append([e.x, e.y])  # type: ignore[attr-defined]
        save()

    def pad_double(e: tk.Event) -> None:  # type: ignore[type-arg]
        state["double_clicks"] = int(state["double_clicks"]) + 1  # type: ignore[call-overload]
        save()

    def pad_scroll(direction: str) -> None:
        counts = state["scroll"]
        counts[direction] += 1  # type: ignore[index]
        save()

    pad.bind("<ButtonPress-1>", pad_press)
    pad.bind("<B1-Motion>", pad_motion)
    pad.bind("<ButtonRelease-1>", pad_release)
    pad.bind("<Button-3>", pad_right)
    pad.bind("<Double-Button-1>", pad_double)
    pad.bind("<Button-4>", lambda e: pad_scroll("up"))
    pad.bind("<Button-5>", lambda e: pad_scroll("down"))
    root.after(50, save)
    root.mainloop()


if __name__ == "__main__":
    main(sys.argv[1])
