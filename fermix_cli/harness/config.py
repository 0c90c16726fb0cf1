"""The harness's config: `[fermix_core.harness]`."""

from __future__ import annotations

from typing import Annotated, Literal

from ..core.config import Section
from ..core.params import Field


class HarnessConfig(Section):
    """`[fermix_core.harness]`: whether the coding-agent tools exist, are advertised, and their bounds."""

    # The tools exist only while this is true and the vendor CLI is on PATH.
    enabled: bool = True
    # The owner's one-time approval; until then no harness tool is advertised to a model. fermix never
    # sets it: `fermix config set` refuses this key from a process fermix started.
    approved: bool = False
    # With both CLIs installed, only this vendor's run tool is advertised (the other stays callable).
    default_vendor: Literal["codex", "claude_code"] | None = None
    # codex_cloud_run and stop_tracking_coding_run are registered only when this is true.
    cloud_enabled: bool = False
    # Runs executing at once, across every fermix process (and always at most one per git worktree).
    max_concurrent_runs: Annotated[int, Field(ge=1, le=16)] = 2
    # A prompt longer than this (UTF-8 bytes) spills to a brief file the CLI is pointed at.
    max_prompt_arg_bytes: Annotated[int, Field(ge=1024, le=1_000_000)] = 200 * 1024
    # Delivery of a finished run's outcome gives up (dead letter) after this many attempts or hours.
    delivery_max_attempts: Annotated[int, Field(ge=1, le=1000)] = 20
    delivery_max_age_hours: Annotated[int, Field(ge=1, le=24 * 30)] = 24
    # Cloud runs (codex_cloud_run) are polled this often, and tracked at most this long after submission.
    cloud_poll_seconds: Annotated[int, Field(ge=10, le=3600)] = 120
    cloud_deadline_minutes: Annotated[int, Field(ge=1, le=24 * 60)] = 90
    # How long one `codex cloud exec|status|diff` call may take.
    cloud_call_timeout_seconds: Annotated[int, Field(ge=5, le=600)] = 60
    # Executables to run; a bare name is looked up on PATH.
    codex_command: Annotated[str, Field(min_length=1, max_length=4096)] = "codex"
    claude_command: Annotated[str, Field(min_length=1, max_length=4096)] = "claude"


CONFIG_SECTIONS = {"fermix_core.harness": HarnessConfig}
