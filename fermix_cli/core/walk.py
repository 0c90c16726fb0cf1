"""The one directory walker behind every search tool: ignore files, hidden files, sandbox, bounds.

It walks with `os.scandir`, never descends symlinked directories, prunes ignored and denied
directories instead of filtering their contents, and stops at an entry cap or a deadline, saying so.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sandbox import Sandbox

IGNORE_FILES = (".gitignore", ".ignore")
ALWAYS_SKIP = frozenset({".git"})


@dataclass(frozen=True)
class WalkOptions:
    hidden: bool = True
    respect_ignore: bool = True
    include_dirs: bool = False
    include_files: bool = True
    max_entries: int = 100_000
    deadline: float | None = None  # a time.monotonic() instant
    max_depth: int | None = None


@dataclass
class WalkStats:
    entries: int = 0
    denied: int = 0
    ignored: int = 0
    stopped: str | None = None  # "max_entries" | "deadline" when the walk did not finish

    @property
    def complete(self) -> bool:
        return self.stopped is None


@dataclass(frozen=True)
class Entry:
    path: str  # absolute, as walked (no symlink in the directories above it)
    rel: str  # relative to the walk root, "/"-separated
    is_dir: bool
    depth: int
    canonical: str  # what the sandbox judged (differs from `path` for a symlinked file)
    size: int


@dataclass
class _IgnoreLayer:
    base: str
    spec: Any  # pathspec.GitIgnoreSpec


@dataclass
class _Frame:
    path: str
    rel: str
    depth: int
    layers: list[_IgnoreLayer] = field(default_factory=list)
    checked: bool = True  # entries below need individual sandbox checks


def _load_layer(directory: str) -> list[_IgnoreLayer]:
    lines: list[str] = []
    for name in IGNORE_FILES:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as f:
                lines += f.read().splitlines()
        except OSError:
            continue
    if directory and os.path.isfile(os.path.join(directory, ".git", "info", "exclude")):
        try:
            with open(
                os.path.join(directory, ".git", "info", "exclude"), encoding="utf-8", errors="replace"
            ) as f:
                lines = f.read().splitlines() + lines
        except OSError:
            pass
    if not any(ln.strip() and not ln.lstrip().startswith("#") for ln in lines):
        return []
    import pathspec

    return [_IgnoreLayer(directory, pathspec.GitIgnoreSpec.from_lines(lines))]


def _ancestor_layers(root: str) -> list[_IgnoreLayer]:
    """Ignore files above the walk root, up to the enclosing git work tree's top."""
    chain: list[str] = []
    d = os.path.dirname(root)
    probe = root
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            break
        if d == probe:
            return []
        chain.append(d)
        probe, d = d, os.path.dirname(d)
    layers: list[_IgnoreLayer] = []
    for directory in reversed(chain):
        layers += _load_layer(directory)
    return layers


def is_ignored(layers: list[_IgnoreLayer], path: str, is_dir: bool) -> bool:
    """Deepest ignore file with an opinion wins; a negation (`!x`) re-includes."""
    for layer in reversed(layers):
        rel = os.path.relpath(path, layer.base)
        if is_dir:
            rel += "/"
        res = layer.spec.check_file(rel)
        if res.include is not None:
            return bool(res.include)
    return False


def walk(root: str, sandbox: Sandbox | None, opts: WalkOptions, stats: WalkStats) -> Iterator[Entry]:
    """Yield entries below the canonical directory `root`, depth-first in sorted order."""
    layers = _ancestor_layers(root) if opts.respect_ignore else []
    if opts.respect_ignore:
        layers = layers + _load_layer(root)
    needs = sandbox.needs_checks_below(root) if sandbox is not None else False
    stack = [_Frame(root, "", 0, layers, needs)]
    deny: Callable[[str], bool] = (
        (lambda p: not sandbox.allows(p)) if sandbox is not None else (lambda p: False)
    )
    while stack:
        frame = stack.pop()
        try:
            with os.scandir(frame.path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[_Frame] = []
        for de in entries:
            if opts.deadline is not None and stats.entries % 256 == 0 and time.monotonic() > opts.deadline:
                stats.stopped = "deadline"
                return
            if stats.entries >= opts.max_entries:
                stats.stopped = "max_entries"
                return
            stats.entries += 1
            name = de.name
            if name in ALWAYS_SKIP or (not opts.hidden and name.startswith(".")):
                continue
            try:
                is_link = de.is_symlink()
                is_dir = de.is_dir(follow_symlinks=False)
            except OSError:
                continue
            full = de.path
            canonical = full
            size = 0
            if is_link:
                if sandbox is None:
                    continue
                from .pathcanon import canonicalize

                try:
                    canonical = canonicalize(full)
                    st = os.stat(canonical)
                except Exception:
                    stats.denied += 1
                    continue
                if not stat.S_ISREG(st.st_mode) or deny(canonical):
                    stats.denied += 1  # symlinked directories are never descended
                    continue
                size = st.st_size
            elif frame.checked and sandbox is not None and deny(full):
                stats.denied += 1
                continue
            if frame.layers and is_ignored(frame.layers, full, is_dir):
                stats.ignored += 1
                continue
            rel = f"{frame.rel}/{name}" if frame.rel else name
            if is_dir:
                if opts.include_dirs:
                    yield Entry(full, rel, True, frame.depth + 1, full, 0)
                if opts.max_depth is None or frame.depth + 1 < opts.max_depth:
                    sub_layers = frame.layers + _load_layer(full) if opts.respect_ignore else frame.layers
                    checked = frame.checked and sandbox is not None and sandbox.needs_checks_below(full)
                    subdirs.append(_Frame(full, rel, frame.depth + 1, sub_layers, checked))
            elif opts.include_files and (is_link or de.is_file(follow_symlinks=False)):
                if not is_link:
                    try:
                        size = de.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
                yield Entry(full, rel, False, frame.depth + 1, canonical, size)
        stack.extend(reversed(subdirs))
