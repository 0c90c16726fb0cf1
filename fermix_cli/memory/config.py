"""The memory domain's config: `[fermix_core.memory_review]`, the background review of stored facts."""

from __future__ import annotations

from typing import Annotated

from ..core.config import Name, Section
from ..core.params import Field


class MemoryReviewConfig(Section):
    """`[fermix_core.memory_review]`: how often `fermix jobs run` consolidates new facts into the profiles.

    `provider`/`model` pick the review's model (default: the main agent's). `profile_max_chars` caps each
    profile, and so what the profiles add to every ask/agent system prompt.
    """

    enabled: bool = True
    interval_hours: Annotated[float, Field(gt=0, le=24 * 30)] = 24.0
    max_facts: Annotated[int, Field(ge=1, le=2000)] = 200
    profile_max_chars: Annotated[int, Field(ge=200, le=20_000)] = 2000
    provider: Name | None = None
    model: Name | None = None


CONFIG_SECTIONS = {"fermix_core.memory_review": MemoryReviewConfig}
