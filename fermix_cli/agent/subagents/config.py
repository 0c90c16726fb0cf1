"""The subagents domain's config: `[fermix_core.subagents]`, extra directories of subagent identities."""

from __future__ import annotations

from typing import Annotated

from ...core.config import Section
from ...core.params import Field


class SubagentsConfig(Section):
    """`[fermix_core.subagents]`: `roots` are extra directories of `NAME.md` subagent identities (after
    <home>/agents).

    Point one at a folder of agent files written for another agent (Claude Code's `.claude/agents/`):
    they load unchanged, and the tool names such agents use map to fermix's where an exact equivalent
    exists.
    """

    roots: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(max_length=32)] = []


CONFIG_SECTIONS = {"fermix_core.subagents": SubagentsConfig}
