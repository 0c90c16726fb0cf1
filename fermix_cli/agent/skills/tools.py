"""The skill tools: skill_create, skill_reload, skill_list, skill_view, skill_run."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
from typing import Annotated, Any

from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, NoParams, Params, ToolSpec, registry_of, specs
from ...core.skillfile import MAX_SKILL_BYTES, SKILL_FILE, SKILL_NAME, SkillDef
from ...core.skillrefs import Discovery, discover_skills, refuse_protected_skill_file, reserved_name
from ...core.toolsets import TOOLS_CHANGED
from .run import find_skill, run_skill

REFERENCE_NAME = re.compile(r"^[a-z0-9_]{1,64}$")
# skill_create's build directory, `.NAME.tmp-<12 hex>`, as a killed skill_create leaves it.
BUILDING_NAME = re.compile(r"^\.[A-Za-z0-9_-]{1,64}\.tmp-[0-9a-f]{12}$")
# A build directory untouched this long is a killed skill_create's (a live one takes milliseconds).
STALE_BUILD_SECONDS = 600
SkillName = Annotated[
    str, Field(min_length=1, max_length=64, description="Skill name, as skill_list shows it")
]


# ----- what is installed ------------------------------------------------------------------------


def usable_skills(ctx: ToolContext) -> tuple[dict[str, SkillDef], list[dict[str, Any]]]:
    """The loaded skills (none named like a built-in tool), and every load error (such collisions too)."""
    found: Discovery = discover_skills(ctx)
    errors = [{"path": path, **err} for path, err in sorted(found.errors.items())]
    return dict(sorted(found.skills.items())), errors


def _origin(skill: SkillDef) -> str:
    return str(skill.metadata.get("_root", ""))


# ----- skill_list / skill_reload ----------------------------------------------------------------


def skill_list(p: NoParams, ctx: ToolContext) -> dict[str, Any]:
    skills, errors = usable_skills(ctx)
    if ctx.trust != "operator":
        # Names and descriptions only: where skills live on disk and why others failed to load (full
        # paths, file and line) are the owner's business.
        return {"skills": [{"name": s.name, "description": s.description} for s in skills.values()]}
    return {
        "skills": [{**s.summary(), "origin": _origin(s)} for s in skills.values()],
        "errors": errors,
    }


def skill_reload(p: NoParams, ctx: ToolContext) -> dict[str, Any]:
    skills, errors = usable_skills(ctx)
    now = ctx.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with ctx.state.write() as db:
        before = {r[0]: r[1] for r in db.execute("SELECT name, digest FROM skill_index")}
        db.execute("DELETE FROM skill_index")
        db.executemany(
            "INSERT INTO skill_index (name, path, digest, seen_at) VALUES (?,?,?,?)",
            [(s.name, s.path, s.digest, now) for s in skills.values()],
        )
    ctx.extras[TOOLS_CHANGED] = True  # a model run calling this offers the skills as they are now
    return {
        "added": sorted(set(skills) - set(before)),
        "removed": sorted(set(before) - set(skills)),
        "changed": sorted(n for n in set(skills) & set(before) if skills[n].digest != before[n]),
        "skills": len(skills),
        "errors": errors,
    }


# ----- skill_view -------------------------------------------------------------------------------


class ViewParams(Params):
    name: SkillName
    file: Annotated[
        str | None,
        Field(
            max_length=200,
            description="A reference file's name without .md (lowercase letters, digits, _; at most 64) "
            "to load from the skill's references/ instead of its instructions",
        ),
    ] = None


def _references(skill: SkillDef) -> list[str]:
    refs = os.path.join(skill.directory, "references")
    try:
        if stat.S_ISLNK(os.lstat(refs).st_mode):
            return []
        names = os.listdir(refs)
    except OSError:
        return []
    return sorted(n[:-3] for n in names if n.endswith(".md") and REFERENCE_NAME.fullmatch(n[:-3]))


def read_reference(ctx: ToolContext, skill: SkillDef, file: str) -> tuple[str, str]:
    """(path, text) of `references/<file>.md`: no traversal, no symlinks, no protected file or hard link
    to one, at most 64 KiB."""
    from ...core.fsops import read_bytes

    if not REFERENCE_NAME.fullmatch(file):
        raise ToolError(
            "invalid_reference_name",
            f"file {file!r} must be a reference name: lowercase letters, digits and _, at most 64, "
            "without .md or a path",
            {"file": file},
        )
    refs = os.path.join(skill.directory, "references")
    path = os.path.join(refs, f"{file}.md")
    for where, what in ((refs, "the references directory"), (path, f"references/{file}.md")):
        try:
            st = os.lstat(where)
        except FileNotFoundError:
            raise ToolError(
                "reference_not_found",
                f"{skill.name} has no references/{file}.md (it has: {', '.join(_references(skill)) or 'none'})",
                {"skill": skill.name, "file": file},
            ) from None
        if stat.S_ISLNK(st.st_mode):
            raise ToolError(
                "symlink_refused",
                f"{what} of skill {skill.name} is a symbolic link; skill references must be real files",
                {"skill": skill.name, "path": where},
            )
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise ToolError("reference_not_found", f"references/{file}.md is not a regular file", {"path": path})
    refuse_protected_skill_file(ctx, path, skill.directory, tool="skill_view")
    data = read_bytes(path, MAX_SKILL_BYTES)
    if len(data) > MAX_SKILL_BYTES:
        raise ToolError(
            "too_large",
            f"references/{file}.md of {skill.name} is over {MAX_SKILL_BYTES} bytes; it is refused, not truncated",
            {"path": path, "limit": MAX_SKILL_BYTES},
        )
    try:
        return path, data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            "invalid_encoding", f"references/{file}.md is not UTF-8 text", {"path": path}
        ) from None


def skill_view(p: ViewParams, ctx: ToolContext) -> dict[str, Any]:
    skill = find_skill(ctx, p.name)
    if p.file is not None:
        path, text = read_reference(ctx, skill, p.file)
        return {"name": skill.name, "file": p.file, "path": path, "content": text}
    return {
        "name": skill.name,
        "description": skill.description,
        "system_prompt": skill.instructions,
        "allowed_tools": None if skill.allowed_tools is None else list(skill.allowed_tools),
        "unmapped_tools": list(skill.unmapped_tools),
        "policy": None if skill.policy is None else list(skill.policy),
        "model": skill.model,
        "provider": skill.provider,
        "max_iterations": skill.max_iterations,
        "timeout_seconds": skill.timeout_seconds,
        "metadata": {k: v for k, v in skill.metadata.items() if not k.startswith("_")},
        "origin": _origin(skill),
        "path": skill.path,
        "references": _references(skill),
    }


def _render_view(result: dict[str, Any]) -> str:
    if "content" in result:
        return str(result["content"])
    head = {k: v for k, v in result.items() if k != "system_prompt"}
    return json.dumps(head, ensure_ascii=False) + "\n\n" + str(result["system_prompt"])


# ----- skill_run --------------------------------------------------------------------------------


class RunParams(Params):
    name: SkillName
    task: Annotated[
        str, Field(min_length=1, max_length=100_000, description="Work request to pass to the skill")
    ]
    context: Annotated[
        str | None, Field(max_length=100_000, description="Optional parent context for the skill")
    ] = None


def skill_run(p: RunParams, ctx: ToolContext) -> dict[str, Any]:
    return run_skill(ctx, find_skill(ctx, p.name), p.task, p.context)


def render_run(result: dict[str, Any]) -> str:
    if result["status"] == "completed":
        return str(result["output"])
    err = result.get("error") or {}
    head = f"skill_{result['status']}: {err.get('code', result['status'])}: {err.get('message', '')}".rstrip()
    return head + (f"\nOutput so far:\n{result['output']}" if result["output"] else "")


# ----- skill_create -----------------------------------------------------------------------------


class CreateParams(Params):
    name: Annotated[str, Field(min_length=1, max_length=200, description="Skill name (the directory name)")]
    description: Annotated[
        str, Field(min_length=1, max_length=1024, description="Short description of what the skill does")
    ]


STARTER_BODY = """\
Write this skill's instructions here: what it is for, the steps to follow, and what to answer with.
Grant it tools by listing them in allowed_tools above (for example [file_read, glob_search]), then run
skill_reload. Put longer material in references/<name>.md and load it with skill_view."""


# YAML reads a double-quoted scalar like a JSON string, except that it refuses some characters written
# raw (C1 controls, U+FFFE, U+FFFF; libyaml a U+FEFF) and folds the line breaks U+0085, U+2028 and U+2029
# into spaces: those are written as \u escapes, which YAML reads back as the character itself.
_YAML_RAW_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def yaml_string(text: str) -> str:
    """`text` as a YAML double-quoted scalar that reads back exactly as `text`."""
    quoted = json.dumps(text, ensure_ascii=False)  # escapes ", \ and the C0 controls
    return _YAML_RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _sweep_stale_builds(root: str) -> None:
    """Remove the build directories killed skill_creates left in `root` (old ones only: another
    process may be building one now)."""
    import time

    try:
        names = [n for n in os.listdir(root) if BUILDING_NAME.fullmatch(n)]
    except OSError:
        return  # nothing to sweep, or not readable: the create itself reports what is wrong
    cutoff = time.time() - STALE_BUILD_SECONDS
    for name in names:
        path = os.path.join(root, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue  # gone meanwhile
        if stat.S_ISDIR(st.st_mode) and st.st_mtime < cutoff:
            shutil.rmtree(path, ignore_errors=True)  # what stays is tried again by the next create


def skill_create(p: CreateParams, ctx: ToolContext) -> dict[str, Any]:
    from ...core.fsops import atomic_write

    if not SKILL_NAME.fullmatch(p.name):
        raise ToolError(
            "invalid_name",
            f"invalid_name: {p.name!r} must be letters, digits, _ or - (at most 64)",
            {"name": p.name},
        )
    if registry_of(ctx).find(p.name) is not None:
        raise ToolError(
            "name_taken",
            f"{p.name} is a built-in tool's name, and no skill shadows a built-in tool: choose another name",
            {"name": p.name},
        )
    reserved = reserved_name(p.name)
    if reserved is not None:
        raise ToolError("name_taken", f"{p.name}: {reserved}: choose another name", {"name": p.name})
    # Kept as given, but for the ends (SKILL.md's reader trims them too), so skill_view shows it unchanged.
    description = p.description.strip()
    if not description:
        raise ToolError("invalid_input", "description cannot be blank", {"field": "description"})
    root = ctx.paths.ensure_dir(ctx.paths.skills)
    directory = os.path.join(root, p.name)
    exists = ToolError("already_exists", f"already exists: {directory}", {"path": directory, "name": p.name})
    if os.path.lexists(directory):
        raise exists
    skill_md = (
        f"---\nname: {p.name}\ndescription: {yaml_string(description)}\n"
        f"allowed_tools: []\n---\n{STARTER_BODY}\n"
    )
    evals = {
        "skill": p.name,
        "cases": [
            {
                "name": f"selects_{p.name}",
                "prompt": description,
                "expectations": [],
            }
        ],
    }
    _sweep_stale_builds(os.fspath(root))
    # Built whole in a hidden directory beside it, then renamed into place: a full disk or a kill
    # midway leaves no half-made skill under the name (discovery skips names starting with a dot).
    building = os.path.join(root, f".{p.name}.tmp-{os.urandom(6).hex()}")
    os.mkdir(building, 0o700)
    try:
        os.mkdir(os.path.join(building, "evals"), 0o700)
        atomic_write(
            os.path.join(building, "evals", "evals.json"), (json.dumps(evals, indent=2) + "\n").encode()
        )
        atomic_write(os.path.join(building, SKILL_FILE), skill_md.encode())
        try:
            os.rename(building, directory)  # refused (ENOTEMPTY, EEXIST) if a skill took the name meanwhile
        except OSError as e:
            if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise exists from None
            raise
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return {"created": True, "path": directory, "name": p.name}


# ----- the specs --------------------------------------------------------------------------------

_FAILURES = (
    FailureMode("unknown_skill", "no installed skill has that name"),
    FailureMode("invalid_frontmatter", "the skill's SKILL.md does not load; the message names file and line"),
)

TOOLS = specs(
    ToolSpec(
        name="skill_create",
        category="skills",
        policy_class="read_write",
        description=(
            "Scaffold a new local skill at <home>/skills/<name>/ (SKILL.md with an empty allowed-tool list, and "
            "a starter evals/evals.json). Then write its instructions, grant tools in the frontmatter and run "
            "skill_reload. Refuses a name whose directory exists, that a built-in tool has, or that starts "
            "with mcp_ (MCP servers' tools)."
        ),
        params=CreateParams,
        handler=skill_create,
        hints=Hints(),
        examples=(
            Example({"name": "weekly_report", "description": "Draft the weekly status report"}, "scaffold"),
        ),
        failure_modes=(
            FailureMode("invalid_name", "the name is not letters, digits, _ or - (at most 64)"),
            FailureMode("already_exists", "a skill directory of that name exists"),
            FailureMode("name_taken", "a built-in tool has that name, or it starts with mcp_"),
        ),
    ),
    ToolSpec(
        name="skill_reload",
        category="skills",
        policy_class="read_write",
        description=(
            "Re-scan the skill directories and refresh the running agent's skills (a new or changed skill can "
            "be called from the next step): returns the added, removed and changed skill names since the "
            "last reload, and every skill that failed to load (with file and line)."
        ),
        params=NoParams,
        handler=skill_reload,
        hints=Hints(idempotent=True),
        when_to_use="After creating or editing a SKILL.md on disk.",
        failure_modes=(
            FailureMode(
                "invalid_frontmatter", "a skill that does not load is listed under errors, not raised"
            ),
            FailureMode(
                "invalid_skill_root",
                "a skill root that is missing or not a directory is listed under errors, not raised",
            ),
            FailureMode("state_unavailable", "state.db (which remembers the last reload) cannot be opened"),
        ),
    ),
    ToolSpec(
        name="skill_list",
        category="skills",
        policy_class="read_only",
        description=(
            "List installed skills that skill_run can run: name and description, and for the owner where "
            "each lives and the skills that failed to load."
        ),
        params=NoParams,
        handler=skill_list,
        hints=Hints(read_only=True, idempotent=True),
        failure_modes=(
            FailureMode(
                "invalid_frontmatter", "a skill that does not load is listed under errors, not raised"
            ),
            FailureMode(
                "name_taken",
                "a skill named like a built-in tool, or starting with mcp_, is listed under errors and skipped",
            ),
            FailureMode(
                "invalid_skill_root",
                "a skill root that is missing or not a directory is listed under errors, not raised",
            ),
        ),
    ),
    ToolSpec(
        name="skill_view",
        category="skills",
        policy_class="exec",
        description=(
            "Show a skill's system prompt, allowed tools and metadata, or with `file` one of its "
            "references/<file>.md. Each view is capped at 64 KiB: a larger file is refused, not truncated; "
            "path traversal and symlinks are refused."
        ),
        params=ViewParams,
        handler=skill_view,
        render=_render_view,
        hints=Hints(read_only=True, idempotent=True),
        examples=(
            Example({"name": "repo_overview"}, "the instructions"),
            Example(
                {"name": "repo_overview", "file": "checklist"}, "a reference file, references/checklist.md"
            ),
        ),
        failure_modes=(
            *_FAILURES,
            FailureMode("invalid_reference_name", "file is not [a-z0-9_]{1,64}"),
            FailureMode("reference_not_found", "the skill has no such reference"),
            FailureMode("symlink_refused", "references/ or the file is a symbolic link"),
            FailureMode("protected_path", "the file is a protected file or a hard link to one"),
            FailureMode("too_large", "the file is over 64 KiB"),
        ),
    ),
    ToolSpec(
        name="skill_run",
        category="skills",
        policy_class="exec",
        description=(
            "Run an installed skill on a task. It runs as a sub-agent with the skill's instructions as its "
            "system prompt, confined to the skill's allowed tools and policy intersected with yours; runs nest "
            "at most 4 deep."
        ),
        params=RunParams,
        handler=skill_run,
        render=render_run,
        hints=Hints(open_world=True),
        examples=(Example({"name": "repo_overview", "task": "Brief me on this repository"}, "run a skill"),),
        failure_modes=(*_FAILURES, FailureMode("depth_exceeded", "called from a run already 4 levels deep")),
    ),
)
