"""The coding tools' path rules, on top of the sandbox (hashline.md §3 "Paths", §10).

- A relative path resolves from the working directory and cannot leave it, neither lexically (`../x`)
  nor through a symlink.
- An absolute path outside the working directory is allowed only while
  `capabilities.tools.<tool>.absolute_paths` is true (the default).
- The cwd rules are checked first, so a relative path that leaves cwd is told to pass the absolute path
  (which then meets the sandbox) rather than to grant a root it could not use anyway.
- Then the sandbox decides, as for every tool: protected, blocked, outside the roots, `.git`.
- Paths are shown cwd-relative with `/` inside the working directory and absolute outside it.

Mutating tools never follow the final component: `resolve_target` keys the path on its real parent
plus the literal last name and reports what is there (`lstat`), so callers can refuse a symlink.
"""

from __future__ import annotations

import os
import posixpath
import stat
from typing import TYPE_CHECKING

from ...core.errors import ToolError, world_error
from ...core.fsops import non_directory_ancestor, trailing_slash_error
from ...core.pathcanon import canonicalize, is_inside, refused_by_directory
from ...core.records import Record
from ...core.sandbox import Decision

if TYPE_CHECKING:
    from ...core.context import ToolContext


class ToolPath(Record, frozen=True):
    """A path a coding tool may use: `path` canonical, `display` as the model sees it, `cwd` it is shown from."""

    path: str
    display: str
    cwd: str


class Target(Record, frozen=True):
    """A mutation target: the path (final component not followed) and what `lstat` found there."""

    where: ToolPath
    lstat: os.stat_result | None

    @property
    def is_symlink(self) -> bool:
        return self.lstat is not None and stat.S_ISLNK(self.lstat.st_mode)

    @property
    def is_regular(self) -> bool:
        return self.lstat is not None and stat.S_ISREG(self.lstat.st_mode)

    @property
    def is_dir(self) -> bool:
        return self.lstat is not None and stat.S_ISDIR(self.lstat.st_mode)


def display_path(canonical: str, cwd: str) -> str:
    """`canonical` relative to `cwd` with `/` when inside it (`.` for cwd itself), else absolute."""
    if canonical == cwd:
        return "."
    if is_inside(canonical, cwd):
        # Both are canonical (absolute, normalised), so the relative path is what follows cwd's prefix.
        return canonical[len(cwd) :].lstrip("/")
    return canonical


def absolute_paths_allowed(ctx: ToolContext, tool: str) -> bool:
    """`capabilities.tools.<tool>.absolute_paths` (default true, also for tools without a section)."""
    section = getattr(ctx.config.capabilities.tools, tool, None)
    return bool(getattr(section, "absolute_paths", True))


def _is_relative(raw: str) -> bool:
    return not (raw.startswith("/") or raw == "~" or raw.startswith("~/"))


def _check_cwd(ctx: ToolContext, raw: str, anchored: str, canonical: str, tool: str, cwd: str) -> None:
    inside = is_inside(canonical, cwd)
    if _is_relative(raw):
        if not inside or not is_inside(posixpath.normpath(anchored), cwd):
            raise ToolError(
                "outside_cwd",
                f"Relative path {raw} leaves the working directory {cwd} (it resolves to {canonical}). "
                "Relative paths cannot escape the working directory; pass the absolute path instead.",
                {"path": canonical, "cwd": cwd},
            )
    elif not inside and not absolute_paths_allowed(ctx, tool):
        raise ToolError(
            "absolute_path_denied",
            f"{canonical} is outside the working directory {cwd}, and capabilities.tools.{tool}.absolute_paths "
            "is false. Use a path inside the working directory.",
            {"path": canonical, "cwd": cwd},
        )


def resolve_source(ctx: ToolContext, raw: str, *, tool: str) -> ToolPath:
    """A path to read: symlinks followed, the cwd rules, then the sandbox read check."""
    sandbox = ctx.sandbox
    anchored = sandbox.anchor(raw)
    cwd = sandbox.turn_cwd()
    _check_cwd(ctx, raw, anchored, canonicalize(anchored), tool, cwd)
    canonical = sandbox.read_path(anchored, tool=tool)
    return ToolPath(canonical, display_path(canonical, cwd), cwd)


def resolve_target(ctx: ToolContext, raw: str, *, tool: str) -> Target:
    """A path to create, replace, move or delete, without following its final component.

    A symlink found there is only checked for where it sits (its target is never judged or used);
    anything else gets the full sandbox write check, `.git` included. A trailing `/` is refused: it
    names a directory, never the file to write.
    """
    sandbox = ctx.sandbox
    anchored = sandbox.anchor(raw)
    parent, name = posixpath.split(anchored)
    if name in ("", ".", ".."):
        leaf = canonicalize(anchored)
    else:
        leaf = posixpath.join(canonicalize(parent or "/"), name)
    try:
        st: os.stat_result | None = os.lstat(leaf)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except PermissionError:
        raise refused_by_directory(leaf, posixpath.dirname(leaf)) from None
    except OSError as e:
        raise world_error("invalid_path", f"Cannot inspect {leaf}: {e.strerror}", {"path": leaf}) from None
    cwd = sandbox.turn_cwd()
    _check_cwd(ctx, raw, anchored, leaf, tool, cwd)
    if st is not None and stat.S_ISLNK(st.st_mode):
        decision = sandbox.decide(leaf)
        if not decision.allowed:
            raise sandbox.denial(decision, tool=tool, write=True)
        if any(part.lower() == ".git" for part in leaf.split("/")):
            raise sandbox.denial(Decision(False, "protected_path", leaf), tool=tool, write=True, git_dir=True)
    else:
        leaf = sandbox.write_path(leaf, tool=tool)
    display = display_path(leaf, cwd)
    if raw.endswith("/"):
        raise trailing_slash_error(display, st, dir_code="is_directory")
    return Target(ToolPath(leaf, display, cwd), st)


def check_parents(path: str, display: str) -> None:
    """Refuse a new file whose nearest existing ancestor is not a directory (it could never hold it)."""
    parent = non_directory_ancestor(path)
    if parent is not None:
        raise ToolError(
            "not_a_directory",
            f"Cannot create {display}: {parent} exists and is not a directory.",
            {"path": display, "parent": parent},
        )
