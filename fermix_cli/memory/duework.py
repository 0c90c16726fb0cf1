"""The memory review's due-work source: `fermix jobs run` consolidates new facts into the profiles.

Cheap when nothing is due: the config flag, then two indexed reads; the review itself (and the model
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


class MemoryReview:
    name = "memory_review"

    def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, ReviewReport]:
        from ..core.errors import ToolError
        from .review import review_due, run_review

        try:
            if not review_due(ctx):
                return 0, ReviewReport(None)
        except ToolError as e:
            # An unreadable config or state is the scheduled jobs' report to make; the review just waits.
            return 0, ReviewReport({"status": "skipped", "error": e.to_dict()}, quiet=True)
        return 0, ReviewReport(run_review(ctx))


DUE_WORK = (MemoryReview(),)
