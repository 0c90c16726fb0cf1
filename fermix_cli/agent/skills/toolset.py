"""The skills toolset: each installed skill as a tool of kind `skill`, named after it.

Calling the tool runs the skill (as `skill_run` does) on a `task`. A skill whose name is a built-in
tool's is skipped (and reported by skill_list and skill_reload), so no skill can shadow `shell`; the
built-ins also come first in every combined toolset. Skills are re-read from disk when listed, so an
edited SKILL.md takes effect on the next run.
"""

from __future__ import annotations

from typing import Annotated, Any

from ...core.context import ToolContext
from ...core.params import Field
from ...core.registry import Params, ToolSpec
from ...core.skillfile import SkillDef
from ...core.toolsets import Toolset


class SkillTaskParams(Params):
    task: Annotated[str, Field(min_length=1, max_length=100_000, description="Work request for the skill")]
    context: Annotated[
        str | None, Field(max_length=100_000, description="Optional context for the skill")
    ] = None


class SkillToolset(Toolset):
    """Every usable skill as a tool; specs are kept per (name, digest) so their schemas are built once."""

    def __init__(self) -> None:
        self._specs: dict[tuple[str, str], ToolSpec] = {}

    def _spec(self, skill: SkillDef) -> ToolSpec:
        key = (skill.name, skill.digest)
        spec = self._specs.get(key)
        if spec is None:
            name = skill.name

            def handler(p: SkillTaskParams, ctx: ToolContext) -> dict[str, Any]:
                from .tools import RunParams, skill_run

                # a context left out stays left out: RunParams refuses an explicit null
                extra = {} if p.context is None else {"context": p.context}
                return skill_run(RunParams(name=name, task=p.task, **extra), ctx)

            from .tools import render_run

            spec = ToolSpec(
                name=name,
                category="skills",
                policy_class="exec",
                description=f"Skill: {skill.description}",
                params=SkillTaskParams,
                handler=handler,
                render=render_run,
                kind="skill",
                toolsets=frozenset({"fermix"}),
            )
            self._specs[key] = spec
        return spec

    def tools(self, ctx: ToolContext) -> list[ToolSpec]:
        from .tools import usable_skills

        skills, _ = usable_skills(ctx)
        return [self._spec(s) for _, s in sorted(skills.items())]

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        from ...core.skillfile import SKILL_NAME

        if not SKILL_NAME.fullmatch(name):
            return None
        from .tools import usable_skills

        skill = usable_skills(ctx)[0].get(name)
        return None if skill is None else self._spec(skill)


TOOLSETS = (SkillToolset,)
