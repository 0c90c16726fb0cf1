"""Glob patterns over "/"-separated relative paths: `*`, `?`, `[...]`, `**` and `{a,b}`."""

from __future__ import annotations

import re

from ..errors import ToolError

MAX_BRACE_EXPANSIONS = 64


def _invalid(pattern: str, why: str) -> ToolError:
    return ToolError("invalid_pattern", f"Invalid pattern {pattern!r}: {why}", {"pattern": pattern})


def expand_braces(pattern: str) -> list[str]:
    """`a.{py,pyi}` → [`a.py`, `a.pyi`]; nested braces work; at most 64 results."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                body = pattern[start + 1 : i]
                parts, level, cur = [], 0, ""
                for c in body:
                    if c == "," and level == 0:
                        parts.append(cur)
                        cur = ""
                        continue
                    level += c == "{"
                    level -= c == "}"
                    cur += c
                parts.append(cur)
                if len(parts) < 2:
                    continue
                out: list[str] = []
                for part in parts:
                    out += expand_braces(pattern[:start] + part + pattern[i + 1 :])
                    if len(out) > MAX_BRACE_EXPANSIONS:
                        raise _invalid(pattern, f"expands to more than {MAX_BRACE_EXPANSIONS} patterns")
                return out
    return [pattern]


def _component(comp: str, pattern: str) -> str:
    out, i = "", 0
    while i < len(comp):
        c = comp[i]
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = comp.find("]", i + 2 if comp[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j == -1:
                raise _invalid(pattern, "unclosed [")
            body = comp[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out += "[" + body.replace("\\", "\\\\") + "]"
            i = j
        else:
            out += re.escape(c)
        i += 1
    return out


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching relative paths; refuses absolute patterns and `..` components."""
    if not pattern:
        raise ToolError("missing_pattern", "Missing required parameter: pattern", {})
    if pattern.startswith("/") or pattern.startswith("~"):
        raise _invalid(pattern, "patterns are relative to the search root; pass the directory as `path`")
    alternatives = []
    for alt in expand_braces(pattern):
        comps = alt.split("/")
        if ".." in comps:
            raise _invalid(pattern, "`..` components are not allowed")
        comps = [c for c in comps if c not in ("", ".")]
        rx = ""
        for n, comp in enumerate(comps):
            last = n == len(comps) - 1
            if comp == "**":
                rx += ".*" if last else "(?:[^/]+/)*"
            else:
                rx += _component(comp, pattern) + ("" if last else "/")
        alternatives.append(rx)
    try:
        return re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)
    except re.error as e:
        raise _invalid(pattern, str(e)) from None


def literal_prefix(pattern: str) -> str:
    """The leading directory components without wildcards (where a walk can start)."""
    out: list[str] = []
    comps = pattern.split("/")
    for comp in comps[:-1]:
        if any(ch in comp for ch in "*?[{"):
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
