"""The browser's due work: `fermix jobs run` closes idle profiles and forgets browsers that died.

The warden closes its own browser when the profile is idle; this is the second line, for a warden that
is stopped or gone. Cheap when no browser was started: one directory listing.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.context import ToolContext


class BrowserReport:
    def __init__(self, closed: list[str], lost: list[str]) -> None:
        self.closed = closed
        self.lost = lost

    @property
    def quiet(self) -> bool:
        return not (self.closed or self.lost)

    def as_dict(self) -> dict[str, Any]:
        if self.quiet:
            return {"status": "idle"}
        return {"status": "ok", "closed_idle": self.closed, "forgot_lost": self.lost}


def launch_records(run_dir: str) -> list[str]:
    """Profiles with a launch record (`<profile>.json`; the other run files have a second dot)."""
    try:
        names = os.listdir(run_dir)
    except FileNotFoundError:
        return []
    return sorted(n[:-5] for n in names if n.endswith(".json") and n.count(".") == 1)


class IdleBrowsers:
    name = "browser"

    def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, BrowserReport]:
        profiles = launch_records(str(ctx.paths.run_dir / "browser"))
        closed: list[str] = []
        lost: list[str] = []
        if not profiles:
            return 0, BrowserReport(closed, lost)
        import time

        from ..core.errors import ToolError
        from .launcher import browser_alive, settled_record, stop_browser
        from .runfiles import ProfileFiles, process_alive

        for profile in profiles:
            files = ProfileFiles(ctx.paths, profile)
            try:
                record = settled_record(files, wait=0.0)
            except ToolError:
                continue  # a call is starting or stopping it right now: its business, not idle
            if record is None:
                continue
            if not browser_alive(record):
                files.clear()
                lost.append(profile)
                continue
            idle_minutes = int(record.get("idle_minutes", 0))
            try:
                last = files.session.stat().st_mtime
            except FileNotFoundError:
                last = float(record.get("started_at", 0))
            warden_gone = not process_alive(int(record.get("warden_pid", 0)))
            if warden_gone or (idle_minutes and time.time() - last > idle_minutes * 60):
                stop_browser(files)
                closed.append(profile)
        return 0, BrowserReport(closed, lost)


DUE_WORK = (IdleBrowsers(),)
