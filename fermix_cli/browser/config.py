"""The browser domain's config: `[fermix_core.browser]`."""

from __future__ import annotations

from typing import Annotated

from ..core.config import Section
from ..core.params import Field

ProfileName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$")]


class BrowserConfig(Section):
    """`[fermix_core.browser]`: which Chromium, how it runs, and when idle profiles close.

    Private hosts the browser may reach come from `[fermix_core.net] allowed_private_hosts`, the one
    bypass of the network guard.
    """

    # A Chromium or Chrome executable; empty: `chromium`, `chromium-browser`, `google-chrome` on PATH.
    executable: Annotated[str, Field(max_length=4096)] = ""
    headless: bool = True
    profile: ProfileName = "fermix"
    max_tabs: Annotated[int, Field(ge=1, le=100)] = 10
    # A profile nobody used for this long is closed by its warden (0: never).
    idle_minutes: Annotated[int, Field(ge=0, le=10_080)] = 30
    start_timeout_ms: Annotated[int, Field(ge=1000, le=120_000)] = 20_000
    timeout_ms: Annotated[int, Field(ge=100, le=300_000)] = 10_000


CONFIG_SECTIONS = {"fermix_core.browser": BrowserConfig}
