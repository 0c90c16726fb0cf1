"""The skills domain's config: `[fermix_core.skills]`, extra directories to find skills in."""

from __future__ import annotations

from typing import Annotated

from ...core.config import Section
from ...core.params import Field


class SkillsConfig(Section):
    """`[fermix_core.skills]`: `roots` are extra directories of `<name>/SKILL.md` skills (after <home>/skills).

    Point one at a folder of skills written for another agent: they load unchanged, and the tool names
    such agents use map to fermix's where an exact equivalent exists.
    """

    roots: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(max_length=32)] = []


CONFIG_SECTIONS = {"fermix_core.skills": SkillsConfig}
