"""Canonical paths: symlinks resolved component by component with lstat, at most 64 hops."""

from __future__ import annotations

import os
import posixpath
import stat

from .errors import ToolError, world_error

MAX_SYMLINK_HOPS = 64


def _too_many(path: str) -> ToolError:
    return ToolError(
        "too_many_symlinks",
        f"Path resolved through too many symlinks: {path}. Point it at a real file or directory.",
        {"path": path},
    )


def refused_by_directory(path: str, directory: str) -> ToolError:
    """`unreadable`: `directory` would not let its entries be looked up (no search permission), so
    nothing below it, `path` included, can be reached; not an invalid path."""
    return ToolError(
        "unreadable",
        f"Cannot reach {path}: permission denied by the directory {directory} (a directory must be "
        f"searchable to reach anything inside it); fix its permissions (chmod u+rx {directory}) or use "
        "another path",
        {"path": path, "directory": directory},
    )


def canonicalize(path: str, max_hops: int = MAX_SYMLINK_HOPS) -> str:
    """Resolve an absolute path the way the kernel would, without requiring the leaf to exist.

    A missing component ends resolution and the rest is appended lexically, so a new file can be
    checked. A `..` after a missing component restarts resolution on the lexically normalised path,
    so `/a/missing/../link/x` cannot slip past a symlink named `link`.
    """
    if not path.startswith("/"):
        raise ValueError("canonicalize needs an absolute path")
    return _resolve("/", [p for p in path.split("/") if p], path, max_hops)


def canonicalize_many(paths: list[str], max_hops: int = MAX_SYMLINK_HOPS) -> list[str | None]:
    """`canonicalize` of each absolute path (None where it fails), each parent directory resolved once.

    Paths that share directories (a home's many dotfiles) cost one lstat per new component instead of
    one per component of every path: a path's canonical form is its parent's, resolved on by its name,
    and below a directory that does not exist nothing does (the name is appended, as `canonicalize`
    appends the rest of a path once a component is missing).
    """
    memo: dict[str, tuple[str | None, bool]] = {}  # path -> (canonical, whether it exists)

    def canon(path: str) -> tuple[str | None, bool]:
        if path in memo:
            return memo[path]
        parent, name = posixpath.split(path)
        try:
            if not name or name in (".", "..") or parent == path or not parent.startswith("/"):
                found = canonicalize(path, max_hops)
                result: tuple[str | None, bool] = (found, os.path.lexists(found))
            else:
                base, exists = canon(parent.rstrip("/") or "/")
                if base is None:
                    result = (None, False)
                elif not exists:
                    result = (posixpath.join(base, name), False)
                else:
                    found = _resolve(base, [name], path, max_hops)
                    result = (found, os.path.lexists(found))
        except (ToolError, ValueError):
            result = (None, False)
        memo[path] = result
        return result

    return [canon(p)[0] for p in paths]


def _resolve(resolved: str, pending: list[str], path: str, max_hops: int) -> str:
    """Resolve `pending` components below the canonical directory `resolved` (`path`: for messages)."""
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = posixpath.join(resolved, part)
        try:
            st = os.lstat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            rest = [part, *pending]
            if ".." in rest:
                hops += 1
                if hops > max_hops:
                    raise _too_many(path) from None
                pending = [p for p in posixpath.normpath(posixpath.join(resolved, *rest)).split("/") if p]
                resolved = "/"
                continue
            return posixpath.join(resolved, *rest)
        except PermissionError:
            raise refused_by_directory(path, resolved) from None
        except OSError as e:
            raise world_error(
                "invalid_path", f"Cannot resolve path {path}: {e.strerror}", {"path": path}
            ) from None
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > max_hops:
                raise _too_many(path)
            try:
                target = os.readlink(candidate)
            except OSError as e:
                raise ToolError(
                    "invalid_path", f"Cannot read symlink {candidate}: {e.strerror}", {"path": path}
                ) from None
            if target.startswith("/"):
                resolved = "/"
            pending = [p for p in target.split("/") if p] + pending
            continue
        if pending and not stat.S_ISDIR(st.st_mode):
            # A file used as a directory: nothing below it exists; treat the rest like a missing part.
            if ".." in pending:
                hops += 1
                if hops > max_hops:
                    raise _too_many(path)
                pending = [p for p in posixpath.normpath(posixpath.join(candidate, *pending)).split("/") if p]
                resolved = "/"
                continue
            return posixpath.join(candidate, *pending)
        resolved = candidate
    return resolved


def is_inside(path: str, root: str) -> bool:
    """Equal to the root, or below it (`/allowed-evil` is not inside `/allowed`)."""
    if root == "/":
        return path.startswith("/")
    return path == root or path.startswith(root + "/")
