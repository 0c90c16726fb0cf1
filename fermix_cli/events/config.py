"""The events domain's config: `[fermix_core.personalization]`, the owner's zone."""

from __future__ import annotations

from typing import Annotated

from ..core.config import Section
from ..core.params import Field


class PersonalizationConfig(Section):
    """`[fermix_core.personalization]`: facts about the owner that tools use instead of guessing."""

    # The owner's IANA zone (Europe/Berlin): event times are read in it when the owner names none.
    timezone: Annotated[str | None, Field(min_length=1, max_length=64)] = None


CONFIG_SECTIONS = {"fermix_core.personalization": PersonalizationConfig}
