"""Where a repository's submodules keep their git directories, so their configs get checked too.

git goes into a submodule more often than its options say: `add` of a directory, `checkout` and
`commit` reporting local changes, and `status`/`diff` when `.gitmodules` sets `ignore = none`, run a
child git there, and that child reads the submodule's own config (a filter or fsmonitor set there
runs). The git directories to check are those under `<gitdir>/modules/` (absorbed submodules, nested
ones included) and the `.git` of every gitlink in the index that is checked out (an embedded
directory, or a `.git` file that can point anywhere).
"""

from __future__ import annotations

import os
import posixpath

_GITFILE_MAX = 1 << 16


class GitlinkListing:
    """Collects the gitlink paths from `git ls-files --stage -z` output, fed in chunks of any size."""

    def __init__(self) -> None:
        self._rest = b""
        self.paths: dict[str, None] = {}  # in index order, each once (an unmerged one has 3 stages)

    def feed(self, chunk: bytes) -> None:
        records = (self._rest + chunk).split(b"\0")
        self._rest = records.pop()
        for record in records:
            if record.startswith(b"160000 "):
                _meta, tab, path = record.partition(b"\t")
                if tab:
                    self.paths.setdefault(path.decode("utf-8", "surrogateescape"))


def read_gitfile(path: str) -> str | None:
    """The directory a `.git` file names (`gitdir: X`, relative to the file's directory), or None when
    `path` is not such a file (git does not take it for a repository either)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_GITFILE_MAX + 1)
    except OSError:
        return None
    if len(raw) > _GITFILE_MAX or not raw.startswith(b"gitdir: "):
        return None
    target = raw[len(b"gitdir: ") :].split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "surrogateescape")
    if not target:
        return None
    return target if target.startswith("/") else posixpath.join(posixpath.dirname(path), target)


def checked_out_git_dir(worktree: str) -> str | None:
    """The git directory of a checked-out submodule at `worktree` (its `.git` directory, or where its
    `.git` file points), symlinks resolved; None when nothing there makes it a repository."""
    dotgit = posixpath.join(worktree, ".git")
    if os.path.isdir(dotgit):
        return os.path.realpath(dotgit)
    if os.path.isfile(dotgit):
        target = read_gitfile(dotgit)
        return os.path.realpath(target) if target is not None else None
    return None


def common_dir(git_dir: str) -> str:
    """Where a git directory keeps its shared parts (config, objects): its `commondir` file's target,
    else itself."""
    try:
        with open(posixpath.join(git_dir, "commondir"), "rb") as f:
            raw = f.read(_GITFILE_MAX)
    except OSError:
        return git_dir
    target = raw.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "surrogateescape")
    if not target:
        return git_dir
    return os.path.realpath(target if target.startswith("/") else posixpath.join(git_dir, target))


def _looks_like_git_dir(path: str) -> bool:
    return any(os.path.exists(posixpath.join(path, n)) for n in ("HEAD", "commondir", "config"))


def module_git_dirs(git_dirs: list[str], *, limit: int, max_visits: int = 4096) -> list[str] | None:
    """The git directories under each `<git_dir>/modules/`, and under theirs (nested submodules),
    symlinks resolved, each once. A submodule's name may hold slashes, so a directory that is not a
    git directory is looked into; a git directory only through its own `modules/`. None when there
    are more than `limit` of them or more than `max_visits` directories to look at: they are not all
    checked, so the caller refuses the repository."""
    found: dict[str, None] = {}
    seen: set[str] = set()
    todo = [posixpath.join(d, "modules") for d in git_dirs]
    while todo:
        here = os.path.realpath(todo.pop())
        if here in seen:
            continue
        seen.add(here)
        if len(seen) > max_visits:
            return None
        try:
            entries = sorted(e.name for e in os.scandir(here) if e.is_dir())
        except OSError:
            continue
        for name in entries:
            path = os.path.realpath(posixpath.join(here, name))
            if _looks_like_git_dir(path):
                if path not in found:
                    found[path] = None
                    if len(found) > limit:
                        return None
                    todo.append(posixpath.join(path, "modules"))
            else:
                todo.append(path)
    return list(found)
