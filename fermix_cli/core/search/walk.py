"""The one directory walker behind every search tool: ignore files, hidden files, sandbox, bounds.

It walks with `os.scandir` in path order (a directory's contents come right after it, and paths
come out sorted byte-wise), never descends symlinked directories, prunes ignored and denied
directories instead of filtering their contents, and stops at an entry cap or a deadline, saying so.

Ignore rules: `.gitignore`, `.ignore` (which wins over `.gitignore`), `.git/info/exclude`, the
ignore files of ancestors up to the enclosing git work tree, and, when asked, Perforce rule files
(see `p4ignore`). The deepest file with an opinion about a path decides, and `!x` re-includes.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..records import Record, field
from .gitignore import IgnoreRules
from .p4ignore import MAX_RULE_BYTES, P4Rules, read_bounded, translate_rules

if TYPE_CHECKING:
    from ..sandbox import Sandbox

IGNORE_FILES = (".gitignore", ".ignore")
ALWAYS_SKIP = frozenset({".git"})

# Listing kinds, from the directory entry's type (no extra stat call).
DIR, FILE, LINK, OTHER = 0, 1, 2, 3

LISTING_TTL_S = 10.0
LISTING_CACHE_MAX = 4096


class WalkOptions(Record, frozen=True):
    hidden: bool = True  # include names starting with "."
    respect_ignore: bool = True
    perforce: P4Rules | None = None  # apply Perforce rule files and exclusions
    include_dirs: bool = False
    include_files: bool = True
    skip_names: frozenset[str] = ALWAYS_SKIP  # never yielded nor descended
    max_entries: int = 100_000
    deadline: float | None = None  # a time.monotonic() instant
    max_depth: int | None = None
    want_size: bool = True  # stat regular files for Entry.size (0 otherwise)
    count_root: bool = False  # the root itself counts as one visited entry
    cache_listings: bool = False  # reuse directory listings (path + mtime, with a TTL)


class WalkStats(Record):
    entries: int = 0
    denied: int = 0
    ignored: int = 0
    hidden: int = 0
    special: int = 0  # sockets, FIFOs, devices
    errors: int = 0  # unreadable directories, entries whose type could not be read
    stopped: str | None = None  # "max_entries" | "deadline" when the walk did not finish

    @property
    def complete(self) -> bool:
        return self.stopped is None


class Entry(Record, frozen=True):
    path: str  # absolute, as walked (no symlink in the directories above it)
    rel: str  # relative to the walk root, "/"-separated
    is_dir: bool
    depth: int
    canonical: str  # what the sandbox judged (differs from `path` for a symlinked file)
    size: int


# ----- ignore layers ---------------------------------------------------------------------------


class _IgnoreLayer(Record):
    """The rules of one directory. A walk path `rel` maps to `prefix + rel[cut:]` in its terms."""

    rules: IgnoreRules
    prefix: str
    cut: int

    @classmethod
    def build(cls, lines: list[str], prefix: str, cut: int) -> _IgnoreLayer | None:
        rules = IgnoreRules(lines)
        return cls(rules, prefix, cut) if rules else None

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included; None: no opinion."""
        path = self.prefix + rel[self.cut :] if self.cut or self.prefix else rel
        return self.rules.check(path + "/" if is_dir else path)


def _rule_lines(directory: str, names: set[str] | None, p4: P4Rules | None) -> list[str]:
    """Rule lines of one directory, lowest precedence first: Perforce, git exclude, .gitignore, .ignore."""

    def present(name: str) -> bool:
        return name in names if names is not None else os.path.isfile(os.path.join(directory, name))

    lines: list[str] = []
    if p4 is not None:
        for name in p4.ignore_names:
            if present(name):
                text = read_bounded(os.path.join(directory, name), MAX_RULE_BYTES)
                lines += translate_rules(text) if text else []
    if present(".git") or names is None:
        exclude = os.path.join(directory, ".git", "info", "exclude")
        text = read_bounded(exclude, MAX_RULE_BYTES) if os.path.isfile(exclude) else None
        lines += text.splitlines() if text else []
    for name in IGNORE_FILES:
        if present(name):
            text = read_bounded(os.path.join(directory, name), MAX_RULE_BYTES)
            lines += text.splitlines() if text else []
    return lines


def _ancestor_layers(root: str, p4: P4Rules | None) -> list[_IgnoreLayer]:
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
        lead = os.path.relpath(root, directory) + "/"
        layer = _IgnoreLayer.build(_rule_lines(directory, None, p4), lead, 0)
        if layer is not None:
            layers.append(layer)
    return layers


def is_ignored(layers: list[_IgnoreLayer], rel: str, is_dir: bool) -> bool:
    """Deepest ignore file with an opinion wins; a negation (`!x`) re-includes."""
    for layer in reversed(layers):
        v = layer.verdict(rel, is_dir)
        if v is not None:
            return v
    return False


# ----- listings ----------------------------------------------------------------------------------

Listing = list[tuple[str, str, int]]  # (sort key, name, kind), sorted by key
_LISTINGS: dict[str, tuple[float, int, int, int, Listing]] = {}


def _scan(path: str, stats: WalkStats) -> Listing | None:
    out: Listing = []
    try:
        with os.scandir(path) as it:
            for de in it:
                name = de.name
                try:
                    if de.is_symlink():
                        kind = LINK
                    elif de.is_dir(follow_symlinks=False):
                        out.append((name + "/", name, DIR))
                        continue
                    elif de.is_file(follow_symlinks=False):
                        kind = FILE
                    else:
                        kind = OTHER
                except OSError:
                    stats.errors += 1
                    continue
                out.append((name, name, kind))
    except OSError:
        stats.errors += 1
        return None
    out.sort()
    return out


def list_dir(path: str, stats: WalkStats, *, cache: bool = False) -> Listing | None:
    """A directory's entries in path order; with `cache`, reused while the directory's mtime holds."""
    if not cache:
        return _scan(path, stats)
    try:
        st = os.stat(path)
    except OSError:
        stats.errors += 1
        return None
    now = time.monotonic()
    hit = _LISTINGS.get(path)
    if (
        hit is not None
        and now - hit[0] < LISTING_TTL_S
        and hit[1:4] == (st.st_mtime_ns, st.st_ino, st.st_dev)
    ):
        return hit[4]
    listing = _scan(path, stats)
    if listing is not None:
        if len(_LISTINGS) >= LISTING_CACHE_MAX:
            _LISTINGS.pop(next(iter(_LISTINGS)))
        _LISTINGS[path] = (now, st.st_mtime_ns, st.st_ino, st.st_dev, listing)
    return listing


def clear_listing_cache() -> None:
    _LISTINGS.clear()


# ----- the walk --------------------------------------------------------------------------------


class _Frame(Record):
    path: str
    rel: str
    depth: int
    children: Listing
    layers: list[_IgnoreLayer] = field(default_factory=list)
    checked: bool = True  # entries below need individual sandbox checks
    i: int = 0


def _layers_for(
    directory: str, rel: str, children: Listing, base: list[_IgnoreLayer], p4: P4Rules | None
) -> list[_IgnoreLayer]:
    names = {c[1] for c in children}
    if not (names & {".gitignore", ".ignore", ".git"}) and not (p4 and names & set(p4.ignore_names)):
        return base
    layer = _IgnoreLayer.build(_rule_lines(directory, names, p4), "", len(rel) + 1 if rel else 0)
    return base if layer is None else [*base, layer]


def walk(root: str, sandbox: Sandbox | None, opts: WalkOptions, stats: WalkStats) -> Iterator[Entry]:
    """Yield entries below the canonical directory `root` in path order."""
    p4 = opts.perforce
    skip = opts.skip_names | p4.excluded_names if p4 is not None else opts.skip_names
    if opts.count_root:
        stats.entries += 1
    children = list_dir(root, stats, cache=opts.cache_listings)
    if children is None:
        return
    layers: list[_IgnoreLayer] = []
    if opts.respect_ignore:
        if p4 is not None and p4.global_files:
            lines: list[str] = []
            for path in p4.global_files:
                text = read_bounded(path, MAX_RULE_BYTES)
                lines += translate_rules(text) if text else []
            layer = _IgnoreLayer.build(lines, "", 0)
            layers += [layer] if layer is not None else []
        layers += _ancestor_layers(root, p4)
        layers = _layers_for(root, "", children, layers, p4)
    needs = sandbox.needs_checks_below(root) if sandbox is not None else False
    deny: Callable[[str], bool] = (
        (lambda p: not sandbox.allows(p)) if sandbox is not None else (lambda p: False)
    )
    base = root.rstrip("/")
    stack = [_Frame(base, "", 0, children, layers, needs)]
    deadline = opts.deadline
    max_entries = opts.max_entries
    hidden = opts.hidden
    visited = 0
    while stack:
        frame = stack[-1]
        if frame.i >= len(frame.children):
            stack.pop()
            continue
        _, name, kind = frame.children[frame.i]
        frame.i += 1
        visited += 1
        if deadline is not None and visited % 256 == 1 and time.monotonic() > deadline:
            stats.stopped = "deadline"
            return
        if stats.entries >= max_entries:
            stats.stopped = "max_entries"
            return
        stats.entries += 1
        if name in skip:
            continue
        if not hidden and name[0] == ".":
            stats.hidden += 1
            continue
        if kind == OTHER:
            stats.special += 1
            continue
        is_dir = kind == DIR
        rel = f"{frame.rel}/{name}" if frame.rel else name
        if frame.layers and is_ignored(frame.layers, rel, is_dir):
            stats.ignored += 1
            continue
        full = f"{frame.path}/{name}"
        canonical = full
        size = 0
        if kind == LINK:
            if sandbox is None:
                continue
            from ..pathcanon import canonicalize

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
        elif kind == FILE and sandbox is not None and sandbox.is_link_to_protected(full):
            # A second name for a protected file (a hard link): one lstat per file to know.
            stats.denied += 1
            continue
        depth = frame.depth + 1
        if is_dir:
            if opts.include_dirs:
                yield Entry(full, rel, True, depth, full, 0)
            if opts.max_depth is None or depth < opts.max_depth:
                sub = list_dir(full, stats, cache=opts.cache_listings)
                if sub is None:
                    continue
                sub_layers = (
                    _layers_for(full, rel, sub, frame.layers, p4) if opts.respect_ignore else frame.layers
                )
                checked = frame.checked and sandbox is not None and sandbox.needs_checks_below(full)
                stack.append(_Frame(full, rel, depth, sub, sub_layers, checked))
        elif opts.include_files:
            if kind == FILE and opts.want_size:
                try:
                    size = os.stat(full, follow_symlinks=False).st_size
                except OSError:
                    stats.errors += 1
                    continue
            yield Entry(full, rel, False, depth, canonical, size)
