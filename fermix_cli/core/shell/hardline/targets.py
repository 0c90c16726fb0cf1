"""Whether a path a command names is a protected root: `/`, the home in any spelling, an OS root."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from enum import Enum

from fermix_cli.core.shell.words import GLOB, Word

from ...records import Record

# The original seven, the reference's additions from the protected-path list, and the usual
# top-level directories of macOS and Linux whose loss breaks the machine.
OS_ROOTS = (
    "/etc", "/usr", "/bin", "/sbin", "/System", "/Library",
    "/boot", "/dev", "/proc", "/sys", "/lib", "/lib32", "/lib64", "/libx32",
    "/var/lib", "/private/etc", "/private/var/db",
    "/Applications", "/Users", "/home", "/root", "/opt", "/var", "/private",
)  # fmt: skip

_SLASHES = re.compile(r"/+")
# What may follow an unknown expansion for the target to be a root once the expansion is empty.
_ROOTISH_REST = frozenset({"", "/", "*", "/*", ".", "/.", "..", "/.."})
# `/proc/<pid>/root` is a link to that process's `/`; `/proc/<pid>/cwd` to a directory we cannot know.
_PROC_LINK = re.compile(r"^/proc/[^/]+/(root|cwd)(?=/|$)", re.IGNORECASE)


class Verdict(Enum):
    """How a target relates to the protected roots."""

    SAFE = "safe"
    PROTECTED = "protected"
    MAY_EXPAND = "may_expand"


class Roots(Record, frozen=True):
    """The protected roots, normalised and case-folded, and the home that `~` stands for."""

    home: str
    protected: frozenset[str]

    @classmethod
    def build(
        cls, home: str, fermix_home: str, extra: Iterable[str] = (), home_aliases: Iterable[str] = ()
    ) -> Roots:
        """Protect `/`, the OS roots, home and fermix home (with their aliases and ancestors), and `extra`."""
        paths = {"/", *OS_ROOTS, *(normalize(p) for p in extra if p.startswith("/"))}
        for anchor in (home, fermix_home, *home_aliases):
            if not anchor.startswith("/"):
                continue
            path = normalize(anchor)
            while path != "/":
                paths.add(path)
                path = posixpath.dirname(path)
        return cls(normalize(home) if home.startswith("/") else home, frozenset(_fold(p) for p in paths))

    def is_protected(self, path: str) -> bool:
        return _fold(path) in self.protected


def normalize(path: str) -> str:
    """Collapse slashes, `.` and `..` lexically; keep a trailing glob intact."""
    collapsed = _SLASHES.sub("/", path)
    out = posixpath.normpath(collapsed) if collapsed else collapsed
    return "/" if out == "//" else out


def judge_path(text: str, roots: Roots, cwd: str | None) -> Verdict:
    """Judge a fully known target; relative ones resolve against `cwd` (None when `cd` made it unknown)."""
    if not text:
        return Verdict.SAFE
    if not text.startswith("/"):
        if cwd is None:
            rel = normalize(text)
            first = rel.split("/", 1)[0]
            escapes = rel in (".", "..") or rel.startswith("../") or bool(GLOB.search(first))
            return Verdict.MAY_EXPAND if escapes else Verdict.SAFE
        text = cwd + "/" + text
    path = normalize(text)
    link = _PROC_LINK.match(path)
    if link is not None:
        if link.group(1).lower() == "cwd":
            return Verdict.MAY_EXPAND
        path = normalize("/" + path[link.end() :])
    glob = GLOB.search(path)
    if glob is not None:
        # A glob is judged by its literal directory prefix: `/e*` by `/`, `~/*` by the home.
        prefix = path[: glob.start()].rsplit("/", 1)[0] or "/"
        return Verdict.PROTECTED if roots.is_protected(normalize(prefix)) else Verdict.SAFE
    return Verdict.PROTECTED if roots.is_protected(path) else Verdict.SAFE


def judge_target(word: Word, roots: Roots, cwd: str | None) -> Verdict:
    """Judge a target word, including what its unknown expansions might turn it into."""
    word = word.with_temps_known()
    if not word.has_unknown:
        return judge_path(word.render(roots.home), roots, cwd)
    if word.starts_unknown:
        rest = _SLASHES.sub("/", word.after_unknown(roots.home))
        while rest.endswith(("/.", "/")) and rest not in ("/", "/."):
            rest = rest[:-2] if rest.endswith("/.") else rest[:-1]
        if rest in _ROOTISH_REST:
            return Verdict.MAY_EXPAND
    for fallback in (False, True):
        candidate = word.render(roots.home, "", use_fallback=fallback)
        if judge_path(candidate, roots, cwd) is not Verdict.SAFE:
            return Verdict.MAY_EXPAND
    return Verdict.SAFE


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """PROTECTED over MAY_EXPAND over SAFE."""
    found = Verdict.SAFE
    for verdict in verdicts:
        if verdict is Verdict.PROTECTED:
            return verdict
        if verdict is Verdict.MAY_EXPAND:
            found = verdict
    return found


def _fold(path: str) -> str:
    # Matching is case-insensitive, as on macOS: `/ETC` is `/etc`.
    return path.casefold()
