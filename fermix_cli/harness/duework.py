"""The harness's due-work source: `fermix jobs run` settles vanished runs and delivers job launches' outcomes.

Cheap when idle: one indexed read (an active run, or an outcome pending delivery) before anything loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.context import ToolContext


class Report:
    def __init__(self, body: dict[str, Any] | None) -> None:
        self.body = body

    @property
    def quiet(self) -> bool:
        return self.body is None or not any(
            self.body[k] for k in ("settled", "delivered", "failed", "dead_lettered")
        )

    def as_dict(self) -> dict[str, Any]:
        return {"status": "idle"} if self.body is None else {"status": "ran", **self.body}


class CodingRuns:
    name = "coding_runs"

    def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, Report]:
        busy = ctx.state.query(
            "SELECT 1 FROM coding_runs WHERE status IN ('starting', 'running') OR delivery_state = 'pending' LIMIT 1"
        )
        if not busy:
            return 0, Report(None)
        from .delivery import deliver_due

        body = deliver_due(ctx)
        return (1 if body["failed"] else 0), Report(body)


DUE_WORK = (CodingRuns(),)
