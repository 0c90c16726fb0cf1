"""The `computer_use` tool (seed "Computer use"): one GUI action per call on the Linux X11 desktop."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs

Action = Literal[
    "screenshot",
    "inspect",
    "elements",
    "windows",
    "wait_for_change",
    "mouse_move",
    "wait",
    "left_click",
    "right_click",
    "double_click",
    "left_click_drag",
    "scroll",
    "type",
    "paste",
    "key",
]
Coord = Annotated[int, Field(ge=0, le=100_000)]


class Point(Params):
    x: Coord
    y: Coord


class Region(Params):
    x: Annotated[int, Field(ge=0, le=100_000, description="Left edge, in full-screen pixels")]
    y: Annotated[int, Field(ge=0, le=100_000, description="Top edge, in full-screen pixels")]
    w: Annotated[int, Field(ge=1, le=100_000, description="Width in full-screen pixels")]
    h: Annotated[int, Field(ge=1, le=100_000, description="Height in full-screen pixels")]


ACTION_DOC = (
    "GUI action. Read-only: screenshot, inspect, elements, windows, wait_for_change, mouse_move, wait. "
    "Mutating: left_click, right_click, double_click, left_click_drag, scroll, type, paste, key. Posture "
    "follows the sandbox mode: strict is look-only (every mutating action is refused); standard acts, but "
    "the owner confirms anything irreversible (Enter, Delete, save/close/quit chords, text with a newline) and "
    "you must ask the owner before clicking anything that sends, buys or deletes; open acts, and only "
    "catastrophic input is confirmed. inspect, elements and marks need AT-SPI and are refused on Linux"
)

# `from` is a Python keyword, so the parameters are declared as a class built from a namespace.
ComputerUseParams: type[Params] = type(
    "ComputerUseParams",
    (Params,),
    {
        "__module__": __name__,
        "__annotations__": {
            "action": Annotated[Action, Field(description=ACTION_DOC)],
            "x": Annotated[
                Coord | None,
                Field(
                    description="X pixel for click/move/scroll, from the latest screenshot (crop pixels after a zoom)"
                ),
            ],
            "y": Annotated[
                Coord | None, Field(description="Y pixel for click/move/scroll, from the latest screenshot")
            ],
            "display": Annotated[
                int | None,
                Field(
                    ge=1,
                    le=16,
                    description="Monitor index from 1; defaults to [fermix_core.computer_use] monitor",
                ),
            ],
            "modifiers": Annotated[
                list[Annotated[str, Field(max_length=16)]] | None,
                Field(max_length=4, description='Held modifier keys for a click, e.g. ["ctrl"] or ["shift"]'),
            ],
            "from": Annotated[Point | None, Field(description="Drag start point {x, y}")],
            "to": Annotated[Point | None, Field(description="Drag end point {x, y}")],
            "direction": Annotated[
                Literal["up", "down", "left", "right"] | None, Field(description="Scroll direction")
            ],
            "amount": Annotated[int | None, Field(ge=1, le=50, description="Scroll clicks (default 3)")],
            "text": Annotated[
                str | None,
                Field(max_length=20_000, description="Text to type or paste (action type / paste)"),
            ],
            "chord": Annotated[
                str | None,
                Field(
                    max_length=64,
                    description='Key chord for action=key, e.g. "ctrl+s", "alt+f4", "enter", "f5"',
                ),
            ],
            "ms": Annotated[
                int | None, Field(ge=0, le=60_000, description="Milliseconds to wait (action=wait)")
            ],
            "timeout_ms": Annotated[
                int | None,
                Field(
                    ge=0,
                    le=120_000,
                    description="Max ms to wait for a change (wait_for_change; default 10000)",
                ),
            ],
            "poll_ms": Annotated[
                int | None,
                Field(ge=20, le=10_000, description="Check interval in ms (wait_for_change; default 250)"),
            ],
            "region": Annotated[
                Region | None,
                Field(
                    description="Zoom rectangle {x, y, w, h} in full-screen pixels. On screenshot it returns a "
                    "magnified crop; pass the same region with every follow-up action that uses coordinates read "
                    "from that crop"
                ),
            ],
            "confirm_grid": Annotated[
                bool | None,
                Field(
                    description="Re-send an action refused as ambiguous_grid after re-reading the magnified image "
                    "and confirming x, y are pixels of that image"
                ),
            ],
            "marks": Annotated[
                bool | None, Field(description="Badge accessibility click targets (needs AT-SPI)")
            ],
            "mark": Annotated[
                int | None, Field(ge=1, le=10_000, description="Act on a numbered mark (needs AT-SPI)")
            ],
        },
        **dict.fromkeys(
            (
                "x",
                "y",
                "display",
                "modifiers",
                "from",
                "to",
                "direction",
                "amount",
                "text",
                "chord",
                "ms",
                "timeout_ms",
                "poll_ms",
                "region",
                "confirm_grid",
                "marks",
                "mark",
            )
        ),
    },
)


def live_schema(ctx: ToolContext, schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with the posture in force now folded into `action`'s description."""
    from .actions import POSTURE_TEXT
    from .posture import posture_of

    action = dict(schema["properties"]["action"])
    action["description"] = f"{action['description']}. Posture now: {POSTURE_TEXT[posture_of(ctx)]}"
    return {**schema, "properties": {**schema["properties"], "action": action}}


def enabled(ctx: ToolContext) -> bool:
    return bool(ctx.config.fermix_core.computer_use.enabled)


def available(ctx: ToolContext) -> bool:
    """Offered to a model only when enabled, the helpers are installed and the origin may use it."""
    from .posture import origin_refusal
    from .x11 import missing_helpers

    return enabled(ctx) and origin_refusal(ctx) is None and not missing_helpers()


def gate(ctx: ToolContext) -> None:
    from .posture import origin_refusal
    from .x11 import missing_helpers

    refusal = origin_refusal(ctx)
    if refusal is not None:
        raise refusal
    if not enabled(ctx):
        raise ToolError(
            "not_enabled",
            "computer_use is off. It controls the real desktop with no undo; to turn it on set "
            "[fermix_core.computer_use] enabled = true (fermix config set fermix_core.computer_use.enabled true)",
            {},
        )
    missing = missing_helpers()
    if missing:
        raise ToolError(
            "helper_missing",
            f"computer_use needs {', '.join(missing)}; install them (apt-get install xdotool x11-utils; "
            "pip install mss pillow) and check fermix doctor",
            {"missing": missing},
        )


def computer_use(p: Any, ctx: ToolContext) -> dict[str, Any]:
    from .actions import run_action

    return run_action(p, ctx)


def _render(result: Any) -> str:
    from .actions import render

    return render(result)


def _images(result: Any) -> tuple[str, ...]:
    from .actions import images

    return images(result)


TOOLS = specs(
    ToolSpec(
        name="computer_use",
        category="computer",
        policy_class="gui_control",
        owner_only=True,
        description=(
            "Drive the host desktop (Linux X11) by screenshot and mouse/keyboard, one action per call. Take a "
            "screenshot, then act with pixel coordinates of the latest screenshot; every action that changes "
            "something returns a fresh screenshot to verify it. For a small target zoom: screenshot with a "
            "region returns a magnified crop (its scale stated), and the follow-up click must carry the same "
            "region. windows lists open windows front-most first, each with its bounds as a region. Experimental, "
            "off by default, operator-only; never for subagents or scheduled runs. Web pages: use browser."
        ),
        params=ComputerUseParams,
        handler=computer_use,
        hints=Hints(destructive=True, open_world=True),
        when_to_use="The owner asks for something only a desktop app can do, and no API, file or browser tool fits.",
        examples=(
            Example({"action": "screenshot"}, "look at the whole screen"),
            Example(
                {"action": "screenshot", "region": {"x": 400, "y": 300, "w": 200, "h": 120}},
                "zoom on a small target",
            ),
            Example(
                {
                    "action": "left_click",
                    "x": 512,
                    "y": 300,
                    "region": {"x": 400, "y": 300, "w": 200, "h": 120},
                },
                "click a pixel read in that zoomed crop",
            ),
            Example({"action": "key", "chord": "ctrl+s"}, "press a chord"),
        ),
        failure_modes=(
            FailureMode("not_enabled", "[fermix_core.computer_use] enabled is not set"),
            FailureMode("helper_missing", "xdotool, xwininfo, mss or Pillow is not installed"),
            FailureMode("not_attended", "a guest, subagent, skill, MCP, scheduled or cron caller"),
            FailureMode("look_only", "the sandbox mode is strict: every mutating action is refused"),
            FailureMode(
                "needs_confirmation", "standard/open want the owner to confirm and nobody can be asked"
            ),
            FailureMode("declined", "the owner said no to an irreversible action"),
            FailureMode("paused", "the owner paused computer use with /pause"),
            FailureMode(
                "region_required", "the latest look was a zoomed crop and the action carries no region"
            ),
            FailureMode("region_mismatch", "the action's region is not the latest look's"),
            FailureMode(
                "ambiguous_grid", "the point fits both the crop and the full-screen grid; confirm_grid"
            ),
            FailureMode("outside_image", "the point is outside the latest screenshot"),
            FailureMode("unsupported_on_platform", "inspect, elements, marks and mark need AT-SPI"),
            FailureMode("no_display", "no DISPLAY and no configured display"),
            FailureMode("display_unavailable", "the X display cannot be opened"),
            FailureMode("invalid_chord", "a key name xdotool would not understand"),
        ),
        available=available,
        gate=gate,
        render=_render,
        images=_images,
        live_schema=live_schema,
    ),
)
