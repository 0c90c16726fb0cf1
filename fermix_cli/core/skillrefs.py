"""`skill://` read targets: a discovered skill's SKILL.md, or a reference file inside its directory.

Skills are discovered at `<root>/*/SKILL.md` for each skill root; the skill's name is its frontmatter
`name` (`core/skillfile.py` parses it). References must be relative,
contain no `..`, and must be a regular, non-symlink file that stays under the canonical skill
directory. Size and encoding are checked by the caller, like any read.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ToolError
from .pathcanon import canonicalize, is_inside
from .records import Record, field
from .skillfile import SKILL_FILE, SKILL_NAME, SkillDef, load_skill, skill_error
from .toolsets import MCP_PREFIX

if TYPE_CHECKING:
    from .context import ToolContext
    from .paths import FermixPaths
    from .sandbox import Sandbox

__all__ = [
    "SKILL_FILE",
    "SKILL_NAME",
    "Discovery",
    "SkillFile",
    "SkillRoot",
    "discover",
    "discover_skills",
    "protected_skill_file",
    "refuse_protected_skill_file",
    "reserved_name",
    "root_problem",
    "roots_of",
    "shadowed_error",
    "skill_roots",
]

_BUNDLED = Path(__file__).resolve().parent.parent / "agent" / "skills" / "bundled"


class SkillFile(Record, frozen=True):
    """A resolved skill target: its display form (`skill://…`) and the canonical file to read."""

    display: str
    path: str


class SkillRoot(Record, frozen=True):
    """A directory whose `*/SKILL.md` are skills, and where it comes from (`home`, `config`, `bundled`).

    `entry` is the `[fermix_core.skills] roots` entry as written, for a `config` root.
    """

    path: str
    origin: str
    entry: str | None = None


class Discovery(Record):
    """Every skill the roots hold (name -> skill), and the skills that failed to load (path -> error).

    `shadowed` names the skills skipped because a built-in tool has their name, or because it is in the
    MCP servers' namespace (`mcp_...`) (name -> SKILL.md path).
    """

    skills: dict[str, SkillDef] = field(default_factory=dict)
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    shadowed: dict[str, str] = field(default_factory=dict)


def shadowed_error(name: str) -> ToolError:
    """The refusal of a skill that a capability of the same name shadows, whichever way it is asked for."""
    if name.startswith(MCP_PREFIX):
        why = f"is in the MCP servers' namespace ({MCP_PREFIX}SERVER_TOOL), so an MCP tool shadows it"
    else:
        why = "is shadowed by a built-in tool of that name"
    return ToolError(
        "unknown_skill", f"skill {name} {why} and cannot be used; rename the skill", {"skill": name}
    )


def reserved_name(name: str) -> str | None:
    """Why no skill may be called `name` whatever is installed (an MCP tool's name), or None."""
    if name.startswith(MCP_PREFIX):
        return (
            f"names starting with {MCP_PREFIX} belong to MCP servers' tools ({MCP_PREFIX}SERVER_TOOL), "
            "and no skill shadows one"
        )
    return None


def skill_roots(ctx: ToolContext) -> list[SkillRoot]:
    """Where skills are found, first match of a name wins: `<home>/skills`, config roots, the bundled ones."""
    return roots_of(ctx.paths, ctx.config)


def roots_of(paths: FermixPaths, config: Any) -> list[SkillRoot]:
    """The skill roots of `paths` and `config`, each directory once (its first place wins).

    Extra roots come from `[fermix_core.skills] roots` (declared by the skills domain; read here by name
    so the kernel imports no domain). A relative entry is taken from the directory of config.toml (the
    fermix home with FERMIX_HOME), never from the working directory; `~` is the user's home.
    """
    roots = [SkillRoot(str(paths.skills), "home")]
    section = getattr(config.fermix_core, "skills", None)
    for extra in getattr(section, "roots", None) or ():
        path = os.path.abspath(os.path.join(paths.config_dir, os.path.expanduser(str(extra))))
        roots.append(SkillRoot(path, "config", str(extra)))
    roots.append(SkillRoot(str(_BUNDLED), "bundled"))
    unique: dict[str, SkillRoot] = {}
    for root in roots:  # the same directory reached by another path (a symlink) is the same root
        unique.setdefault(os.path.realpath(root.path), root)
    return list(unique.values())


def _unreadable(root: SkillRoot, error: OSError) -> str | None:
    """Why no skill can be found in `root`; None for `<home>/skills` not made yet (it is made on demand)."""
    if isinstance(error, FileNotFoundError):
        if root.origin == "home":
            return None
        why = "does not exist"
    elif isinstance(error, NotADirectoryError):
        why = "is not a directory"
    else:
        why = f"cannot be read ({error.strerror or error})"
    if root.origin == "config":
        entry = str(root.entry)
        relative = "" if os.path.isabs(os.path.expanduser(entry)) else ", taken from config.toml's directory"
        return (
            f"skill root {root.path} ([fermix_core.skills] roots entry {entry!r}{relative}) {why}; "
            "fix or remove the entry"
        )
    if root.origin == "home":
        return (
            f"skill root {root.path} (the home's skills directory) {why}; move it away or make it a directory"
        )
    return f"skill root {root.path} (bundled with fermix) {why}; reinstall fermix"


def root_problem(root: SkillRoot) -> str | None:
    """Why skills cannot be found in `root` (a message saying what to do), or None when they can."""
    try:
        with os.scandir(root.path):
            return None
    except OSError as e:
        return _unreadable(root, e)


def protected_skill_file(sandbox: Sandbox, canonical: str, directory: str) -> bool:
    """Whether the skill file `canonical` is a protected file, or a hard link to one (a second name the
    symlink checks cannot see), as the sandbox judges it for `file_read`.

    A skill directory that itself lies under a protected entry (the bundled skills of a system install
    under /usr, a root beside config.toml) is where the owner installed skills, so only a file protected
    on its own, or a hard link to a protected file, is refused there.
    """
    if sandbox.is_link_to_protected(canonical):
        return True
    return sandbox.is_protected(canonical) and not sandbox.is_protected(directory)


def refuse_protected_skill_file(ctx: ToolContext, canonical: str, directory: str, *, tool: str) -> None:
    """Raise `protected_path` (as `file_read` does) for a skill file `protected_skill_file` refuses."""
    if protected_skill_file(ctx.sandbox, canonical, directory):
        from .sandbox import Decision

        raise ctx.sandbox.denial(Decision(False, "protected_path", canonical), tool=tool, write=False)


def _load_failure(skill_md: str, error: Exception) -> str:
    """The report of a skill that failed to load in a way the parser did not foresee; the traceback is logged."""
    from .logs import logger

    logger("fermix.skills").warning("skill %s failed to load", skill_md, exc_info=error)
    return (
        f"{skill_md}:1: the skill cannot be loaded ({type(error).__name__}: {str(error)[:200]}); it is skipped. "
        "Check its frontmatter; details are in the fermix log"
    )


def discover_in(roots: Sequence[SkillRoot], sandbox: Sandbox | None = None) -> Discovery:
    """Load every `<root>/*/SKILL.md`; a bad skill is recorded in `errors` and skipped, never fatal.

    With `sandbox`, a SKILL.md that is a protected file or a hard link to one is skipped unread
    (`protected_path`): its text would reach a model as the skill's instructions.
    """
    found = Discovery()
    for root in roots:
        try:
            entries = sorted(os.scandir(root.path), key=lambda e: e.name)
        except OSError as e:
            problem = _unreadable(root, e)
            if problem is not None:  # a bad root is reported like a bad skill, never fatal
                found.errors[root.path] = {
                    "code": "invalid_skill_root",
                    "message": problem,
                    "root": root.origin,
                }
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                linked_md = posixpath.join(entry.path, SKILL_FILE)
                if entry.is_symlink() and os.path.isdir(entry.path) and os.path.lexists(linked_md):
                    found.errors[linked_md] = {
                        "code": "symlink_refused",
                        "message": skill_error(
                            "symlink_refused",
                            linked_md,
                            1,
                            f"the skill directory {entry.path} is a symbolic link; skills must be real directories",
                        ).message,
                        "root": root.origin,
                    }
                continue
            directory = canonicalize(entry.path)
            skill_md = posixpath.join(directory, SKILL_FILE)
            if not os.path.lexists(skill_md):
                # In the home's own root every directory is a skill (skill_create's); one without its
                # SKILL.md was left half made, and hiding it leaves its name refused with no reason.
                if root.origin == "home" and not entry.name.startswith("."):
                    found.errors[skill_md] = {
                        "code": "incomplete_skill",
                        "message": f"{directory} has no {SKILL_FILE}, so it is not a skill (a skill_create "
                        f"that did not finish leaves this). Remove the directory and create the skill "
                        f"again, or write its {SKILL_FILE}.",
                        "root": root.origin,
                    }
                continue
            try:
                if os.path.islink(skill_md):
                    raise skill_error("symlink_refused", skill_md, 1, "SKILL.md cannot be a symbolic link")
                if sandbox is not None and protected_skill_file(sandbox, skill_md, directory):
                    raise skill_error(
                        "protected_path",
                        skill_md,
                        1,
                        "SKILL.md is a protected file or a hard link to one, so it is not read; "
                        "replace it with a file of its own. Run: fermix sandbox explain",
                    )
                skill = load_skill(skill_md, directory)
            except ToolError as e:
                found.errors[skill_md] = {"code": e.code, "message": e.message, "root": root.origin}
                continue
            except Exception as e:  # a bug in loading one skill must not cost the others (or the run)
                found.errors[skill_md] = {
                    "code": "invalid_skill",
                    "message": _load_failure(skill_md, e),
                    "root": root.origin,
                }
                continue
            if skill.name in found.skills:
                other = found.skills[skill.name].path
                found.errors[skill_md] = {
                    "code": "duplicate_skill",
                    "message": f"{skill_md}: skill {skill.name} is already loaded from {other}",
                    "root": root.origin,
                }
                continue
            found.skills[skill.name] = skill.replace(metadata={**skill.metadata, "_root": root.origin})
    return found


def discover_skills(ctx: ToolContext) -> Discovery:
    """The skills of `ctx`'s roots; one named like a built-in tool, or in the MCP tools' namespace
    (`mcp_...`), is skipped and reported (`name_taken`).

    Every way to reach a skill (skill_run, its own tool, skill_view, `read skill://`, jobs, the CLI) goes
    through here, so no skill shadows a built-in or MCP tool on any of them. The MCP namespace is judged
    by name alone: no server is started to list skills.
    """
    from .registry import registry_of

    found = discover_in(skill_roots(ctx), ctx.sandbox)
    registry = registry_of(ctx)
    for name in list(found.skills):
        reserved = reserved_name(name)
        if reserved is None and registry.find(name) is None:
            continue
        skill = found.skills.pop(name)
        found.shadowed[name] = skill.path
        why = f"{reserved}; rename it" if reserved is not None else "a built-in tool has that name"
        found.errors[skill.path] = {
            "code": "name_taken",
            "message": f"{skill.path}: skill {name} is skipped: {why}",
            "root": skill.metadata.get("_root"),
        }
    return found


def discover(ctx: ToolContext) -> dict[str, str]:
    """Skill name -> canonical skill directory, for every skill that loads."""
    return {name: skill.directory for name, skill in discover_skills(ctx).skills.items()}


def resolve_skill_target(ctx: ToolContext, target: str) -> SkillFile:
    """Resolve `skill://<name>` or `skill://<name>/<reference>` to a file inside the skill."""
    rest = target[len("skill://") :]
    name, _, reference = rest.partition("/")
    found = discover_skills(ctx)
    if name in found.shadowed:
        raise shadowed_error(name)
    skills = {n: skill.directory for n, skill in found.skills.items()}
    if name not in skills:
        known = ", ".join(sorted(skills)) or "none"
        raise ToolError(
            "not_found",
            f"Unknown skill: {name or '(empty)'}. read takes skill://<name> for a discovered skill "
            f"(discovered: {known}).",
            {"skill": name},
        )
    directory = skills[name]
    if not reference:
        # Checked again here, not only at discovery: the file may have been swapped since.
        skill_md = posixpath.join(directory, SKILL_FILE)
        refuse_protected_skill_file(ctx, skill_md, directory, tool="read")
        return SkillFile(target, skill_md)
    parts = reference.split("/")
    if reference.startswith("/") or ".." in parts or "" in parts or "\x00" in reference:
        raise ToolError(
            "invalid_path",
            f'Skill reference must be a relative path inside the skill without "..": {reference}',
            {"skill": name, "reference": reference},
        )
    lexical = posixpath.join(directory, *parts)
    try:
        st = os.lstat(lexical)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError("not_found", f"File not found: {target}", {"path": target}) from None
    if stat.S_ISLNK(st.st_mode):
        raise ToolError(
            "symlink_refused",
            f"read refuses {target}: skill references cannot be symbolic links.",
            {"path": target},
        )
    canonical = canonicalize(lexical)
    if not is_inside(canonical, directory):
        raise ToolError(
            "outside_root",
            f"Skill reference {reference} resolves outside the skill directory {directory}.",
            {"path": canonical},
        )
    refuse_protected_skill_file(ctx, canonical, directory, tool="read")
    return SkillFile(target, canonical)
