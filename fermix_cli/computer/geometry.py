"""The aiming rules (seed "Computer use"), as pure functions over what the last look showed.

A look is a `View`: the monitor it shows, the `region` it is a crop of (None for the whole monitor) and
the `scale` from screen pixels to image pixels. Coordinates an action carries are pixels of that image;
`aim` turns them into screen pixels, or refuses them when they cannot be read safely:

- after a zoomed look, an action without that same `region` (`region_required`), or with another one
  (`region_mismatch`);
- a point outside the image (`outside_image`);
- while the view is a crop, a point that is also inside the region's on-screen rectangle, so it could be
  a full-screen pixel as well as a crop pixel (`ambiguous_grid`), unless `confirm_grid`.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.errors import ExitClass, ToolError
from ..core.records import Record

# A full-monitor screenshot wider or taller than this is downscaled to fit (vision models read
# about this many pixels on the long side; more only costs tokens).
FULL_LONG_SIDE = 1568
# A region is magnified until its long side reaches this, at most ZOOM_MAX times.
ZOOM_LONG_SIDE = 1024
ZOOM_MAX = 8.0


class Rect(Record, frozen=True):
    x: int
    y: int
    w: int
    h: int

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.x + self.w and self.y <= y < self.y + self.h

    def to_json(self) -> dict[str, int]:
        return {"x": self.x, "y": self.y, "w": self.w, "h": self.h}

    @classmethod
    def of(cls, data: Any) -> Rect:
        return cls(int(data["x"]), int(data["y"]), int(data["w"]), int(data["h"]))


class View(Record, frozen=True):
    """One look: `monitor` in absolute X coordinates, `region` inside it, the image's size and scale."""

    monitor: Rect
    region: Rect | None
    scale: float
    width: int
    height: int

    def to_json(self) -> dict[str, Any]:
        return {
            "monitor": self.monitor.to_json(),
            "region": self.region.to_json() if self.region else None,
            "scale": self.scale,
            "width": self.width,
            "height": self.height,
        }

    @classmethod
    def of(cls, data: Any) -> View:
        region = data.get("region")
        return cls(
            Rect.of(data["monitor"]),
            Rect.of(region) if region else None,
            float(data["scale"]),
            int(data["width"]),
            int(data["height"]),
        )


def scale_for(area: Rect, zoomed: bool) -> float:
    """Image pixels per screen pixel: a full monitor shrinks to FULL_LONG_SIDE, a region is magnified."""
    long_side = max(area.w, area.h)
    if not zoomed:
        return min(1.0, round(FULL_LONG_SIDE / long_side, 4))
    return max(1.0, min(ZOOM_MAX, round(ZOOM_LONG_SIDE / long_side, 4)))


def plan_view(monitor: Rect, region: Rect | None) -> View:
    """The view a screenshot of `region` (or the whole monitor) will be; refuses a region off the monitor."""
    area = region or Rect(0, 0, monitor.w, monitor.h)
    if region is not None:
        check_region(region, monitor)
    scale = scale_for(area, region is not None)
    width, height = max(1, round(area.w * scale)), max(1, round(area.h * scale))
    return View(monitor, region, scale, width, height)


def check_region(region: Rect, monitor: Rect) -> None:
    if region.w < 1 or region.h < 1 or region.x < 0 or region.y < 0:
        raise _bad("invalid_region", f"region {_rect(region)} needs x, y >= 0 and w, h >= 1", region)
    if region.x + region.w > monitor.w or region.y + region.h > monitor.h:
        raise _bad(
            "invalid_region",
            f"region {_rect(region)} extends past the {monitor.w}x{monitor.h} screen; keep x + w <= "
            f"{monitor.w} and y + h <= {monitor.h}",
            region,
        )


def aim(view: View, region: Rect | None, x: int, y: int, *, confirm_grid: bool = False) -> tuple[int, int]:
    """The absolute screen pixel that image pixel (x, y) of `view` shows, or a refusal (module docstring)."""
    if view.region is not None and region is None:
        raise ToolError(
            "region_required",
            f"the latest screenshot is a zoomed crop of region {_rect(view.region)}; coordinates read from it "
            f'only make sense with that region. Re-send the action with "region": {_json(view.region)}, '
            "or take a full screenshot first to act in full-screen pixels.",
            {"region": view.region.to_json()},
            exit_class=ExitClass.BAD_INPUT,
        )
    if region is not None and region != view.region:
        latest = f"region {_rect(view.region)}" if view.region else "the whole screen"
        raise ToolError(
            "region_mismatch",
            f"region {_rect(region)} is not the latest look ({latest}). Take a screenshot with this region "
            "first, then act on coordinates read from that image"
            + (f', or re-send with "region": {_json(view.region)}' if view.region else "")
            + ".",
            {"region": region.to_json(), "latest_region": view.region.to_json() if view.region else None},
            exit_class=ExitClass.BAD_INPUT,
        )
    if not (0 <= x < view.width and 0 <= y < view.height):
        raise ToolError(
            "outside_image",
            f"({x}, {y}) is outside the latest screenshot, which is {view.width}x{view.height} pixels "
            f"(x 0..{view.width - 1}, y 0..{view.height - 1}).",
            {"x": x, "y": y, "width": view.width, "height": view.height},
            exit_class=ExitClass.BAD_INPUT,
        )
    sx, sy = _to_screen(view, x, y)
    if view.region is not None and view.region.contains(x, y) and not confirm_grid:
        r, s = view.region, view.scale
        cx, cy = round((x - r.x) * s), round((y - r.y) * s)
        raise ToolError(
            "ambiguous_grid",
            f"({x}, {y}) fits both grids: as pixels of the {s:g}x crop it is screen pixel ({r.x} + {x}/{s:g}, "
            f"{r.y} + {y}/{s:g}) = ({sx}, {sy}); as full-screen pixels inside the region it would be crop "
            f"pixel (({x} - {r.x})*{s:g}, ({y} - {r.y})*{s:g}) = ({cx}, {cy}). Re-read the magnified image; "
            'if (x, y) are pixels of that image, re-send with "confirm_grid": true, otherwise send the crop '
            f"pixel ({cx}, {cy}).",
            {
                "as_crop_pixel_screen": {"x": sx, "y": sy},
                "as_screen_pixel_crop": {"x": cx, "y": cy},
                "region": r.to_json(),
                "scale": s,
            },
            exit_class=ExitClass.BAD_INPUT,
        )
    return view.monitor.x + sx, view.monitor.y + sy


def _to_screen(view: View, x: int, y: int) -> tuple[int, int]:
    """Monitor-relative screen pixel under image pixel (x, y): the pixel whose span holds its centre."""
    ox, oy = (view.region.x, view.region.y) if view.region else (0, 0)
    limit_w = view.region.w if view.region else view.monitor.w
    limit_h = view.region.h if view.region else view.monitor.h
    px = min(limit_w - 1, math.floor((x + 0.5) / view.scale))
    py = min(limit_h - 1, math.floor((y + 0.5) / view.scale))
    return ox + px, oy + py


def _rect(r: Rect) -> str:
    return f"{{x {r.x}, y {r.y}, w {r.w}, h {r.h}}}"


def _json(r: Rect) -> str:
    return f'{{"x": {r.x}, "y": {r.y}, "w": {r.w}, "h": {r.h}}}'


def _bad(code: str, message: str, region: Rect) -> ToolError:
    return ToolError(code, message, {"region": region.to_json()}, exit_class=ExitClass.BAD_INPUT)
