"""The memory review's due-work source: `fermix jobs run` consolidates new facts into the profiles.

Cheap when nothing is due: one indexed read before any config is loaded, then the config flag; the review itself (and the model
loop) is imported only when one is due. A failed review is reported, never fatal to the tick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.context import ToolContext


class ReviewReport:
    def __init__(self, outcome: dict[str, Any] | None, *, quiet: bool | None = None) -> None:
        self.outcome = outcome
        self._quiet = quiet

    @property
    def quiet(self) -> bool:
        return self.outcome is None if self._quiet is None else self._quiet

    def as_dict(self) -> dict[str, Any]:
        return self.outcome or {"status": "idle"}


# The owner's own facts: what a review may read (never a guest's notes or a job's memory).
OWN_FACTS = (
    "created_trust = 'operator' AND source_id = 'main' AND scope_type IN ('owner', 'agent', 'conversation')"
)
# Is any of the owner's facts newer than what the last successful review consolidated? One indexed read,
# with no config loaded, so an idle tick stays cheap.
ANY_NEW_FACT = f"""
WITH last AS (SELECT max(through) AS t FROM memory_reviews WHERE status = 'ok')
SELECT 1 FROM memories, last
WHERE {OWN_FACTS} AND (last.t IS NULL OR updated_at > last.t OR (archived_at IS NOT NULL AND archived_at > last.t))
LIMIT 1
"""


class MemoryReview:
    name = "memory_review"

    def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, ReviewReport]:
        from ..core.errors import ToolError

        try:
            if not ctx.state.query(ANY_NEW_FACT):
                return 0, ReviewReport(None)
            from .review import review_due, run_review

            if not review_due(ctx):
                return 0, ReviewReport(None)
        except ToolError as e:
            # An unreadable config or state is the scheduled jobs' report to make; the review just waits.
            return 0, ReviewReport({"status": "skipped", "error": e.to_dict()}, quiet=True)
        return 0, ReviewReport(run_review(ctx))


DUE_WORK = (MemoryReview(),)
