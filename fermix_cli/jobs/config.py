"""The scheduled-jobs runtime's config: `[fermix_core.jobs]`."""

from __future__ import annotations

from typing import Annotated, Literal

from ..core.config import Name, Section
from ..core.params import Field


class JobsConfig(Section):
    """`[fermix_core.jobs]`: the scheduled-jobs runtime (`fermix jobs run`) and job defaults."""

    # A recurring run found more than this late is recorded as skipped and its schedule advances.
    run_freshness_window_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] = 3600
    # Scheduled runs in flight at once, across every `fermix jobs run` process; manual runs are not counted.
    max_concurrent_runs: Annotated[int, Field(ge=1, le=64)] = 4
    default_timeout_seconds: Annotated[int, Field(ge=1, le=86400)] = 1800
    default_inactivity_timeout_seconds: Annotated[int, Field(ge=1, le=86400)] = 600
    # Used when schedule_job names neither a mode nor a target; checked at creation, never ignored.
    default_delivery_mode: Literal["none", "origin", "channel", "local"] | None = None
    default_delivery_target: dict[Name, Name | int] | None = None
    # Run history kept per job; older rows (and their output.md) are deleted after each run.
    max_runs_per_job: Annotated[int, Field(ge=1, le=100_000)] = 200
    # A model run that fails on the provider (network, rate limit, provider error) before any tool ran
    # is tried again this many times, after retry_backoff_seconds, then four times that, ...
    transient_retries: Annotated[int, Field(ge=0, le=5)] = 2
    retry_backoff_seconds: Annotated[int, Field(ge=1, le=600)] = 10


CONFIG_SECTIONS = {"fermix_core.jobs": JobsConfig}
