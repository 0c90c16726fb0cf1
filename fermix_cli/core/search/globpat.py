"""Glob patterns over "/"-separated relative paths, in rg's syntax: `*`, `?`, `[...]`, `**`, `{a,b}`, `\\x`."""

from __future__ import annotations

import re

from ..errors import ToolError

MAX_BRACE_EXPANSIONS = 64


def _invalid(pattern: str, why: str) -> ToolError:
    return ToolError("invalid_pattern", f"Invalid pattern {pattern!r}: {why}", {"pattern": pattern})


def _class_end(text: str, i: int) -> int:
    """The index of the `]` closing the character class opened at `text[i]` (`[`), or -1. A `]` right
    after `[` or `[!`/`[^` is a member, and a backslash in a class is itself, as in rg's globs."""
    j = i + 1
    if text[j : j + 1] in ("!", "^"):
        j += 1
    if text[j : j + 1] == "]":
        j += 1
    return text.find("]", j)


def expand_braces(pattern: str) -> list[str]:
    r"""`a.{py,pyi}` → [`a.py`, `a.pyi`]; nested braces work; at most 64 results. As in rg's globs, a
    group of one (`*.{py}`) is that one, `\{` and `[{]` are a literal brace, a `}` that closes no
    group is dropped, and a group left open is an error."""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "}":
            return expand_braces(pattern[:i] + pattern[i + 1 :])
        if ch == "{":
            parts, close = _group(pattern, i)
            out: list[str] = []
            for part in parts:
                out += expand_braces(pattern[:i] + part + pattern[close + 1 :])
                if len(out) > MAX_BRACE_EXPANSIONS:
                    raise _invalid(pattern, f"expands to more than {MAX_BRACE_EXPANSIONS} patterns")
            return out
        i = _next(pattern, i)
    return [pattern]


def _next(pattern: str, i: int) -> int:
    """Where a scan for braces goes on after `pattern[i]`: past an escaped character or a whole
    character class (braces and commas in them are literal), else at the next character."""
    if pattern[i] == "\\":
        return i + 2
    if pattern[i] == "[":
        j = _class_end(pattern, i)
        if j > 0:
            return j + 1
    return i + 1


def _group(pattern: str, start: int) -> tuple[list[str], int]:
    """The alternatives of the brace group opened at `pattern[start]`, and where it closes."""
    parts: list[str] = []
    depth, cur, i = 0, start + 1, start + 1
    while i < len(pattern):
        ch = pattern[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return [*parts, pattern[cur:i]], i
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(pattern[cur:i])
            cur = i + 1
        i = _next(pattern, i)
    raise _invalid(pattern, "unclosed {; a literal brace is written \\{ or [{]")


def _component(comp: str, pattern: str) -> str:
    """One path component of a glob as a regex: `*`, `?`, `[...]` (`[!...]` or `[^...]` negated, never
    matching `/`), and `\\x` for a literal `x`; anything else stands for itself."""
    out, i = "", 0
    while i < len(comp):
        c = comp[i]
        if c == "\\":
            if i + 1 == len(comp):
                raise _invalid(
                    pattern, "dangling \\ at the end of a component; a literal one is written \\\\"
                )
            out += re.escape(comp[i + 1])
            i += 1
        elif c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = _class_end(comp, i)
            if j < 0:
                raise _invalid(pattern, "unclosed character class; missing ]")
            body = comp[i + 1 : j]
            negated = body[:1] in ("!", "^")
            if negated:
                body = body[1:]
            members = "".join(
                ch if ch == "-" and 0 < k < len(body) - 1 else re.escape(ch) for k, ch in enumerate(body)
            )
            out += f"[^/{members}]" if negated else f"[{members}]"
            i = j
        else:
            out += re.escape(c)
        i += 1
    return out


def component_regex(comp: str) -> str:
    """One path component of a glob as a regex source; ValueError when it is malformed."""
    try:
        return _component(comp, comp)
    except ToolError as e:
        raise ValueError(e.message) from None


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching relative paths of files; refuses absolute patterns and `..` components. A
    pattern that ends with `/` names directories only, so it matches no file."""
    if not pattern:
        raise ToolError("missing_pattern", "Missing required parameter: pattern", {})
    if pattern.startswith("/") or pattern.startswith("~"):
        raise _invalid(pattern, "patterns are relative to the search root; pass the directory as `path`")
    alternatives = []
    for alt in expand_braces(pattern):
        comps = alt.split("/")
        if ".." in comps:
            raise _invalid(pattern, "`..` components are not allowed")
        files_only = not alt.endswith("/")
        comps = [c for c in comps if c not in ("", ".")]
        rx = ""
        for n, comp in enumerate(comps):
            last = n == len(comps) - 1
            if comp == "**":
                rx += ".*" if last else "(?:[^/]+/)*"
            else:
                rx += _component(comp, pattern) + ("" if last else "/")
        if files_only:
            alternatives.append(rx)
    try:
        return re.compile("(?:" + "|".join(alternatives) + r")\Z" if alternatives else "(?!)", re.DOTALL)
    except re.error as e:
        raise _invalid(pattern, f"{e.msg} in a character class" if "range" in e.msg else e.msg) from None


def literal_prefix(pattern: str) -> str:
    """The leading directory components without wildcards (where a walk can start)."""
    out: list[str] = []
    comps = pattern.split("/")
    for comp in comps[:-1]:
        if any(ch in comp for ch in "*?[{}\\"):
            break
        if comp not in ("", "."):
            out.append(comp)
    return "/".join(out)


def max_depth(pattern: str) -> int | None:
    """How deep a match can lie, or None when `**` makes it unbounded."""
    depth = 0
    for alt in expand_braces(pattern):
        comps = [c for c in alt.split("/") if c not in ("", ".")]
        if "**" in comps:
            return None
        depth = max(depth, len(comps))
    return depth


_SAFE_NAME = re.compile(r"[A-Za-z0-9._+@%=~ *-]+")  # literal characters rg's globs read the same way, and *


def basename_globs(pattern: str) -> list[str] | None:
    """Globs for the last path component that every match of `pattern` satisfies, for rg to filter
    file names by (`--type-add`), or None when the last components are not simple enough to be sure
    (`**`, `?`, `[...]`, escapes): a prefilter must never drop a path the full match keeps."""
    out: list[str] = []
    for alt in expand_braces(pattern):
        last = alt.rstrip("/").rpartition("/")[2]
        if not last or "**" in last or not _SAFE_NAME.fullmatch(last):
            return None
        if last not in out:
            out.append(last)
    return out
