"""Due work: background work that `fermix jobs run` drives on every tick, found through the catalog.

A family or domain with background work declares `DUE_WORK`, a tuple of sources, in a cheap module of
its own (nothing heavy at import: a tick imports every declaring module). A source needs no import
from here; it only has to look like `DueWorkSource`: a `name`, and `tick(ctx, use_lock=...)` that
checks cheaply whether anything is due and, if so, claims it in a transaction, runs it and records the
outcome, returning (exit code, report). The scheduled-jobs runner is the first source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the shapes are for readers and mypy; a tick does not pay for building Protocols
    from ..core.catalog import Catalog
    from ..core.context import ToolContext
    from .tick import Summary

    class Report(Protocol):
        """What a source's tick reports: whether anything happened, and the JSON to print."""

        @property
        def quiet(self) -> bool: ...

        def as_dict(self) -> dict[str, Any]: ...

    class DueWorkSource(Protocol):
        name: str

        def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, Report]: ...


class ScheduledJobs:
    """The scheduled jobs of `schedule_job`: claimed per slot, run in workers, recorded in job_runs."""

    name = "scheduled_jobs"

    def tick(self, ctx: ToolContext, *, use_lock: bool) -> tuple[int, Summary]:
        from .conductor import run_tick

        return run_tick(ctx, use_lock=use_lock)


DUE_WORK = (ScheduledJobs(),)
STOPPED_CODES = (129, 130, 143)  # a source's exit code when SIGHUP, SIGINT or SIGTERM ended its tick


class TickOutput:
    """Every source's report: the scheduled jobs' at the top level (as ever; else the first source's), the
    others' under `due_work` by name."""

    def __init__(self, reports: list[tuple[str, Report]]) -> None:
        self.reports = reports

    @property
    def quiet(self) -> bool:
        return all(report.quiet for _name, report in self.reports)

    def as_dict(self) -> dict[str, Any]:
        if not self.reports:
            return {"status": "idle"}
        # The scheduled jobs' report stays at the top level wherever their module sorts in the catalog.
        first = next((i for i, (name, _r) in enumerate(self.reports) if name == ScheduledJobs.name), 0)
        (_first, report), others = self.reports[first], self.reports[:first] + self.reports[first + 1 :]
        out = report.as_dict()
        if others:
            out["due_work"] = {name: r.as_dict() for name, r in others}
        return out


def run_due_work(
    ctx: ToolContext, *, use_lock: bool = True, catalog: Catalog | None = None
) -> tuple[int, TickOutput]:
    """One `fermix jobs run`: tick every declared source in catalog order; the exit code is the worst."""
    from ..core.catalog import default_catalog
    from .ownersend import lend_owner_send

    catalog = catalog or default_catalog()
    lend_owner_send(ctx)  # sources that report to the owner send through the jobs' channels
    code = 0
    reports: list[tuple[str, Report]] = []
    for _module, sources in catalog.declared("DUE_WORK", catalog.due_work_modules):
        for source in sources:
            source_code, report = source.tick(ctx, use_lock=use_lock)
            code = max(code, source_code)
            reports.append((source.name, report))
            if source_code in STOPPED_CODES:  # a stop signal: the other sources wait for the next tick
                return code, TickOutput(reports)
    return code, TickOutput(reports)
