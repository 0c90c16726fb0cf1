"""The git tools' config: `[fermix_core.tools.git]`."""

from __future__ import annotations

from typing import Annotated

from ...core.config import Name, Section
from ...core.params import Field


class GitToolConfig(Section):
    """`[fermix_core.tools.git]`: what the hardened git tools may use besides the repository."""

    allow_hooks: bool = False  # hooks run code; off unless the owner turns them on
    credential_helpers: list[Annotated[str, Field(min_length=1, max_length=256)]] = []
    user_name: Name | None = None
    user_email: Name | None = None


CONFIG_SECTIONS = {"fermix_core.tools.git": GitToolConfig}
