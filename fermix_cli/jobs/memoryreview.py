"""The memory review as `fermix jobs run` runs it: a due-work source, and the confined model turn itself.

The review's reading, prompt and profile writing are the memory domain's (`memory/review.py`); running
its one model turn is a job's kind of work, so it lives here, where a model turn may be started
(`jobs` -> `agent`, `jobs` -> `memory`). Cheap when nothing is due: one indexed read before any config is
loaded, then the config flag; the review (and the model loop) is imported only when one is due. A failed
review is reported, never fatal to the tick.
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
        from ..memory.duework import ANY_NEW_FACT

        try:
            if not ctx.state.query(ANY_NEW_FACT):
                return 0, ReviewReport(None)
            from ..memory.review import review_due

            if not review_due(ctx):
                return 0, ReviewReport(None)
        except ToolError as e:
            # An unreadable config or state is the scheduled jobs' report to make; the review just waits.
            return 0, ReviewReport({"status": "skipped", "error": e.to_dict()}, quiet=True)
        return 0, ReviewReport(run_review(ctx))


DUE_WORK = (MemoryReview(),)


def run_review(ctx: ToolContext, *, provider: str | None = None, model: str | None = None) -> dict[str, Any]:
    """Review the facts stored since the last review; the report says what happened."""
    from ..agent.assemble import Agent, AgentOptions
    from ..core.errors import ToolError
    from ..memory import profiles
    from ..memory.review import (
        REVIEW_SYSTEM,
        claim_review,
        finish_review,
        last_through,
        new_facts,
        parse_profiles,
        record_review_end,
        review_prompt,
    )
    from ..memory.store import timestamp

    cfg = ctx.config.fermix_core.memory_review
    now = timestamp(ctx.now())
    review_id = claim_review(ctx, now)
    if review_id is None:
        return {"status": "busy", "message": "another memory review is running"}
    db = ctx.state.conn
    facts = new_facts(db, last_through(db), cfg.max_facts)
    if not facts:
        finish_review(ctx, review_id, "nothing_new")
        return {"status": "nothing_new", "review_id": review_id, "facts": 0}
    through = max(max(f["updated_at"], f["archived_at"] or "") for f in facts)
    current = profiles.current(db)
    session = f"memory-review-{review_id}"
    child = ctx.derive(origin="scheduled", attended=False, allowed_tools=frozenset(), record_calls=True)
    try:
        options = AgentOptions(
            provider=provider or cfg.provider,
            model=model or cfg.model,
            system=REVIEW_SYSTEM.format(limit=cfg.profile_max_chars),
            tools=[],
            session=session,
            max_iterations=1,
            cap_source="the memory review's fixed cap of 1 model call, with no tools",
        )
        agent = Agent(child, options)
        try:
            result = agent.run(review_prompt(current, facts))
        finally:
            agent.close()
        if result.error is not None:
            raise result.error
        updated = parse_profiles(result.response, cfg.profile_max_chars)
    except ToolError as e:
        finish_review(ctx, review_id, "failed", session_id=session, error=e.to_dict(), facts=len(facts))
        return {"status": "failed", "review_id": review_id, "facts": len(facts), "error": e.to_dict()}
    revisions: dict[str, int] = {}
    seen = {kind: current.get(kind, {}).get("revision") for kind in profiles.KINDS}
    with ctx.state.write() as w:
        # A profile the owner edited while the model worked is not overwritten with a version built
        # on the old one: nothing is written, and the facts wait for the next review, which starts
        # from the edit (`through` is not advanced).
        now_at = profiles.current(w)
        edited = [k for k in profiles.KINDS if now_at.get(k, {}).get("revision") != seen[k]]
        written = timestamp(ctx.now())  # the write's own time: history stays in time order
        if edited:
            error = {
                "code": "profile_edited",
                "message": f"the {' and '.join(edited)} profile changed while the review ran "
                "(an edit or a reset); nothing was written, and the next review starts from it",
                "details": {"profiles": edited},
            }
            record_review_end(
                w, written, review_id, "failed", facts=len(facts), session_id=session, error=error
            )
        else:
            for kind in profiles.KINDS:
                revisions[kind] = profiles.write(w, kind, updated[kind], "review", written, review_id)
            record_review_end(
                w, written, review_id, "ok", through=through, facts=len(facts), session_id=session
            )
    if edited:
        return {"status": "failed", "review_id": review_id, "facts": len(facts), "error": error}
    return {
        "status": "ok",
        "review_id": review_id,
        "facts": len(facts),
        "session_id": session,
        "revisions": revisions,
    }
