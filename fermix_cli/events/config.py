"""The events domain's config: `[fermix_core.personalization]` (the owner's zone) and `[fermix_core.events]`."""

from __future__ import annotations

from typing import Annotated

from ..core.config import Section
from ..core.params import Field


class PersonalizationConfig(Section):
    """`[fermix_core.personalization]`: facts about the owner that tools use instead of guessing."""

    # The owner's IANA zone (Europe/Berlin): event times are read in it when the owner names none.
    timezone: Annotated[str | None, Field(min_length=1, max_length=64)] = None


class EventsConfig(Section):
    """`[fermix_core.events]`: the reminder delivery engine driven by `fermix jobs run`."""

    # Reminders claimed and sent per tick; the rest wait for the next tick.
    max_sends_per_tick: Annotated[int, Field(ge=1, le=10_000)] = 200
    # A send that has not reported back after this long is considered lost (never re-sent).
    send_lease_seconds: Annotated[int, Field(ge=30, le=86_400)] = 600


CONFIG_SECTIONS = {"fermix_core.personalization": PersonalizationConfig, "fermix_core.events": EventsConfig}
