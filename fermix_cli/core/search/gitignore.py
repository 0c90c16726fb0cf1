"""Git's ignore rules: each line of an ignore file becomes a regex, and the rules of one file say
whether a path is ignored (True), re-included by a `!` rule (False), or not mentioned (None).

The semantics are Git's as pathspec's `GitIgnoreSpec` implements them (pathspec is the oracle of
the tests, which compare the two on generated rules and paths):

- Blank lines, `#` comments and a lone `/` are no-ops; so is a line Git would discard (a range
  with no closing `]`, a trailing lone backslash, nothing left after `!`) or one whose range
  matches nothing (`[z-a]`). pathspec raises on the last three; an ignore file is not the place
  to fail a search.
- Trailing spaces are dropped unless escaped; leading spaces are kept.
- A pattern with no slash but a trailing one matches at any depth; one with a slash is anchored
  to the directory of the ignore file.
- `*` and `?` stay within a segment; `**` spans segments; `[...]` and `[!...]` are ranges.
- Paths are relative, `/`-separated, and a directory ends in `/`. The last rule that matches the
  path itself decides; when none does, the last rule that matched through a directory above it.

pathspec itself costs about 18 ms to import (with `dataclasses` and `pathlib`); this costs none.
"""

from __future__ import annotations

import re

# The group that marks a match through a directory above the path (the `/` after it).
_DIR = "d"
_DIR_MARK = f"(?P<{_DIR}>/)"
_DIR_MARK_OPT = f"(?:{_DIR_MARK}|$)"


class _Discard(ValueError):
    """Git drops this line."""


def _glob_segment(seg: str) -> str:
    """The regex of one path segment's glob (`*`, `?`, `[...]`, backslash escapes)."""
    out: list[str] = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        i += 1
        if c == "\\":
            if i >= n:
                raise _Discard("a backslash with nothing to escape")
            out.append(re.escape(seg[i]))
            i += 1
        elif c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i
            if j < n and seg[j] in "!^":
                j += 1
            if j < n and seg[j] == "]":
                j += 1  # a `]` first in the set is a member
            while j < n and seg[j] != "]":
                j += 1
            if j >= n:
                raise _Discard("a range without its closing bracket")
            body = seg[i:j]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
    return "".join(out)


def _segments_regex(is_dir: bool, segs: list[str]) -> str:
    parts: list[str] = []
    need_slash = False
    last = len(segs) - 1
    for i, seg in enumerate(segs):
        if seg == "**":
            if i == 0:
                parts.append("^(?:.+/)?")  # any leading directories
            elif i < last:
                parts.append("(?:/.+)?")  # any directories in between
                need_slash = True
            else:
                parts.append(_DIR_MARK if is_dir else "/")  # anything below
            continue
        if i == 0:
            parts.append("^")
        if need_slash:
            parts.append("/")
        parts.append("[^/]+" if seg == "*" else _glob_segment(seg))
        if i == last:
            parts.append(_DIR_MARK_OPT)  # the path itself, or anything below it
        need_slash = True
    return "".join(parts)


def translate(line: str) -> tuple[str | None, bool | None]:
    """One ignore-file line as (regex source, ignores): None, None for a line that does nothing.

    `ignores` is True for an ignoring rule and False for a `!` rule that re-includes.
    """
    text = line if line.endswith("\\ ") else line.rstrip()
    if not text or text.startswith("#") or text == "/":
        return None, None
    ignores = not text.startswith("!")
    if not ignores:
        text = text[1:]
    segs = text.split("/")
    is_dir = not segs[-1]
    if not segs[0]:
        del segs[0]  # a leading slash anchors the pattern; nothing else to do
    elif (len(segs) == 1 or (len(segs) == 2 and not segs[1])) and segs[0] != "**":
        segs.insert(0, "**")  # one name (maybe with a trailing slash) matches at any depth
    if not segs:
        return None, None
    if not segs[-1]:
        segs[-1] = "**"  # a trailing slash: everything below the directory
    for i in range(len(segs) - 1, 0, -1):
        if segs[i] == "**" and segs[i - 1] == "**":
            del segs[i]
    if segs == ["**"]:
        return (_DIR_MARK if is_dir else "."), ignores
    if segs == ["**", "*"]:
        return ".", ignores
    if segs == ["**", "*", "**"]:
        return (_DIR_MARK if is_dir else "/"), ignores
    try:
        return _segments_regex(is_dir, segs), ignores
    except _Discard:
        return None, None


class IgnoreRules:
    """The rules of one ignore file, in file order."""

    __slots__ = ("_any_ignoring", "_any_reincluding", "_rules")

    def __init__(self, lines: list[str]) -> None:
        rules: list[tuple[re.Pattern[str], bool]] = []
        for line in lines:
            source, ignores = translate(line)
            if source is None or ignores is None:
                continue
            try:
                rules.append((re.compile(source), ignores))
            except re.error:
                continue  # a range such as `[z-a]`, which matches nothing in Git either
        self._rules = rules
        self._any_ignoring = _union([rx.pattern for rx, ign in rules if ign])
        self._any_reincluding = _union([rx.pattern for rx, ign in rules if not ign])

    def __bool__(self) -> bool:
        return bool(self._rules)

    def check(self, path: str) -> bool | None:
        """True: ignored; False: re-included by a `!` rule; None: no rule matches `path`.

        `path` is relative and `/`-separated, with a trailing `/` for a directory.
        """
        ignored = self._any_ignoring is not None and self._any_ignoring.search(path) is not None
        included = self._any_reincluding is not None and self._any_reincluding.search(path) is not None
        if ignored != included:
            return ignored  # only one kind of rule matches: no need to weigh them
        if not ignored:
            return None
        # From the last rule up: the first rule matching the path itself decides; failing that, the
        # last rule that matched through a directory above it.
        verdict: bool | None = None
        for rx, ignores in reversed(self._rules):
            m = rx.search(path)
            if m is None:
                continue
            if not m.groupdict().get(_DIR):
                return ignores
            if verdict is None:
                verdict = ignores
        return verdict


def _union(sources: list[str]) -> re.Pattern[str] | None:
    """One regex that matches where any of `sources` does (group names dropped)."""
    if not sources:
        return None
    return re.compile("|".join(f"(?:{s.replace(_DIR_MARK, '/')})" for s in sources))
