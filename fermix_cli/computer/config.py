"""`[fermix_core.computer_use]`: the enable gate and the X display."""

from __future__ import annotations

from typing import Annotated

from ..core.config import Section
from ..core.params import Field


class ComputerUseConfig(Section):
    """Off unless `enabled`; `display` is the X display (`:0`), else DISPLAY from the environment."""

    enabled: bool = False
    display: Annotated[str | None, Field(pattern=r"^[A-Za-z0-9._-]*:[0-9]+(\.[0-9]+)?$", max_length=64)] = (
        None
    )
    # The monitor a call addresses when it names none (mss numbering: 1 is the first monitor).
    monitor: Annotated[int, Field(ge=1, le=16)] = 1
    # Screenshots kept in media/computer_use/ (the oldest are removed after each new one).
    keep_screenshots: Annotated[int, Field(ge=1, le=10_000)] = 200


CONFIG_SECTIONS = {"fermix_core.computer_use": ComputerUseConfig}
