"""The memory review's due-work source: `fermix jobs run` consolidates new facts into the profiles.

Cheap when nothing is due: the config flag, then two indexed reads; the review itself (and the model
loop) is imported only when one is due. A failed review is reported, never fatal to the tick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.context import ToolContext


class ReviewReport:
    def __init__(self, outcome: dict[str, Any] | None) -> None:
        self.outcome = outcome

    @property
    def quiet(self) -> bool:
        return self.outcome is None

    def as_dict(self) -> dict[str, Any]:
        return self.outcome or {"status": "idle"}


class MemoryReview:
    name = "memory_review"

    def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, ReviewReport]:
        from .review import review_due, run_review

        if not review_due(ctx):
            return 0, ReviewReport(None)
        outcome = run_review(ctx)
        return 0, ReviewReport(outcome)


DUE_WORK = (MemoryReview(),)
