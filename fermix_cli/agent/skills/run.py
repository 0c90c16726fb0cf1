"""Running a skill: a delegated model loop inside the skill's confinement.

The skill's `allowed_tools` are intersected with what the caller may run, its `policy` with the caller's
classes, and a run at depth 4 cannot start another (`depth_exceeded`). The skill's instructions are the
system prompt; the task (and the caller's context) is the prompt. A tool the skill names but its caller
lacks is withheld, and refused at execution if the skill's model calls it anyway.
"""

from __future__ import annotations

from typing import Any

from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.skillfile import DEFAULT_MAX_ITERATIONS, SkillDef
from ...core.skillrefs import discover_skills, shadowed_error

MAX_DEPTH = 4


def find_skill(ctx: ToolContext, name: str) -> SkillDef:
    """The skill `name`; its load error, `shadowed_error` or `unknown_skill` when it cannot be used."""
    found = discover_skills(ctx)
    skill = found.skills.get(name)
    if name in found.shadowed:
        raise shadowed_error(name)
    if skill is None:
        import os

        for path, err in found.errors.items():
            if err["code"] != "invalid_skill_root" and os.path.basename(os.path.dirname(path)) == name:
                raise ToolError(err["code"], err["message"], {"skill": name, "path": path})
        raise ToolError(
            "unknown_skill",
            f"Unknown skill: {name}. Run skill_list for the installed skills.",
            {"skill": name, "known": sorted(found.skills)},
        )
    return skill


def skill_prompt(task: str, context: str | None) -> str:
    if context:
        return f"Task:\n{task}\n\nContext from the caller:\n{context}"
    return f"Task:\n{task}"


def run_skill(ctx: ToolContext, skill: SkillDef, task: str, context: str | None = None) -> dict[str, Any]:
    """Run `skill` on `task` in a confined child loop; the result says how it ended and what it used."""
    from ..delegate import Delegation, run_delegated

    if ctx.depth >= MAX_DEPTH:
        raise ToolError(
            "depth_exceeded",
            f"skill_run cannot start {skill.name}: runs nest at most {MAX_DEPTH} deep and this call is at "
            f"depth {ctx.depth}. Do the work here instead of delegating it again.",
            {"depth": ctx.depth, "max_depth": MAX_DEPTH, "skill": skill.name},
        )
    # The skill's tools as the run's toolset names them (`Read` is `file_read` there, or coding's `read`).
    declared = skill.tools_in(ctx.toolset or ctx.config.fermix_core.agent.toolset)
    tools, unmapped = (None, ()) if declared is None else declared
    run = run_delegated(
        ctx,
        Delegation(
            origin="skill",
            label=f"skill-{skill.name}",
            prompt=skill_prompt(task, context),
            system=skill.instructions,
            tools=tools,
            policy_ceiling=None if skill.policy is None else frozenset(skill.policy),
            provider=skill.provider,
            model=skill.model,
            max_iterations=skill.max_iterations,
            cap_source=f"max_iterations in the SKILL.md frontmatter of {skill.name}, {DEFAULT_MAX_ITERATIONS} "
            "when absent, at most 100",
            timeout_seconds=skill.timeout_seconds,
            toolset=ctx.toolset,
        ),
    )
    if run.status == "failed" and run.iterations == 0 and run.error is not None:
        # The run never started (no provider, an unreadable script ...): a failure of this call.
        raise ToolError(
            run.error["code"], run.error["message"], {**run.error["details"], "skill": skill.name}
        )
    out: dict[str, Any] = {
        "skill": skill.name,
        "status": run.status,
        "output": run.output,
        "session_id": run.session_id,
        "iterations": run.iterations,
        "duration_ms": run.duration_ms,
        "depth": ctx.depth + 1,
        "tools": run.tools,
    }
    if run.withheld_tools or unmapped:
        out["withheld_tools"] = [*run.withheld_tools, *unmapped]
    if run.error is not None:
        out["error"] = run.error
    return out
