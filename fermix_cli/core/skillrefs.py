"""`skill://` read targets: a discovered skill's SKILL.md, or a reference file inside its directory.

Skills are discovered at `<skills dir>/*/SKILL.md`; the skill's name is the frontmatter `name`
(falling back to the directory name when the frontmatter has none). References must be relative,
contain no `..`, and must be a regular, non-symlink file that stays under the canonical skill
directory. Size and encoding are checked by the caller, like any read.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from pathlib import Path

from .errors import ToolError
from .fsops import open_regular_file
from .pathcanon import canonicalize, is_inside
from .records import Record

SKILL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SKILL_FILE = "SKILL.md"
_FRONTMATTER_BYTES = 65_536


class SkillFile(Record, frozen=True):
    """A resolved skill target: its display form (`skill://…`) and the canonical file to read."""

    display: str
    path: str


def _frontmatter_name(path: str) -> str | None:
    try:
        fd = open_regular_file(path)
    except (OSError, ToolError):
        return None
    with os.fdopen(fd, "rb") as f:
        head = f.read(_FRONTMATTER_BYTES).decode("utf-8", "replace").splitlines()
    if not head or head[0].strip() != "---":
        return None
    for line in head[1:]:
        if line.strip() == "---":
            break
        key, sep, value = line.partition(":")
        if sep and key.strip() == "name":
            return value.strip().strip('"') or None
    return None


def discover(skills_dir: Path) -> dict[str, str]:
    """Skill name → canonical skill directory, for every `*/SKILL.md` under `skills_dir`."""
    found: dict[str, str] = {}
    try:
        entries = sorted(os.scandir(skills_dir), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        directory = canonicalize(entry.path)
        skill_md = posixpath.join(directory, SKILL_FILE)
        if not os.path.isfile(skill_md) or os.path.islink(skill_md):
            continue
        name = _frontmatter_name(skill_md) or entry.name
        if SKILL_NAME.fullmatch(name) and name not in found:
            found[name] = directory
    return found


def resolve_skill_target(skills_dir: Path, target: str) -> SkillFile:
    """Resolve `skill://<name>` or `skill://<name>/<reference>` to a file inside the skill."""
    rest = target[len("skill://") :]
    name, _, reference = rest.partition("/")
    skills = discover(skills_dir)
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
        return SkillFile(target, posixpath.join(directory, SKILL_FILE))
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
    return SkillFile(target, canonical)
