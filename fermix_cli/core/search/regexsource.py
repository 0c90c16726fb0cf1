"""Reading regex sources as text: the common repairs grep applies before handing a pattern to rg.

Pure functions over pattern strings (no matching happens here).
"""

from __future__ import annotations

import re

META = re.compile(r"[.^$*+?{}\[\]\\|()]")
# Rust's regex syntax allows spaces inside a counted repetition: `x{1, 2}`.
_QUANTIFIER = re.compile(r"\{ *\d+ *(?:, *\d* *)?\}")


def _class_end(p: str, i: int) -> int | None:
    """Index of the `]` closing the character class that opens at `i`, or None. Rust's classes nest
    (`[a-z&&[^aeiou]]`, `[[a-c][x-z]]`): a `[` inside one opens another, except in `[:name:]`."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p):
        c = p[j]
        if c == "\\":
            j += 2
            continue
        if p.startswith("[:", j):
            k = p.find(":]", j + 2)
            if k != -1:
                j = k + 2
                continue
        if c == "[":
            inner = _class_end(p, j)
            if inner is None:
                return None
            j = inner + 1
            continue
        if c == "]":
            return j
        j += 1
    return None


def repair_regex(pattern: str) -> str:
    """Escape what would not compile or would mean something else by accident.

    Unbalanced `(`/`)`, `[` without a closing `]`, a stray `]`, and every `{`/`}` that is not part
    of a `{n}`, `{n,}` or `{n,m}` quantifier become literals. A trailing lone backslash is escaped.
    """
    out: list[str] = []
    opens: list[int] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern[i + 1 : i + 2] in ("p", "P", "x", "u") and pattern[i + 2 : i + 3] == "{":
                close = pattern.find("}", i + 3)
                if close != -1:  # \p{Greek}, \x{1F600}: one escape, braces included
                    out.append(pattern[i : close + 1])
                    i = close + 1
                    continue
            out.append(pattern[i : i + 2] if i + 1 < n else "\\\\")
            i += 2
            continue
        if c == "[":
            j = _class_end(pattern, i)
            if j is None:
                out.append("\\[")
                i += 1
            else:
                out.append(pattern[i : j + 1])
                i = j + 1
            continue
        if c == "(":
            opens.append(len(out))
            out.append("(")
        elif c == ")":
            if opens:
                opens.pop()
                out.append(")")
            else:
                out.append("\\)")
        elif c == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m:
                out.append(m.group())
                i = m.end()
                continue
            out.append("\\{")
        elif c in "]}":
            out.append("\\" + c)
        else:
            out.append(c)
        i += 1
    for idx in opens:
        out[idx] = "\\("
    return "".join(out)


def unnamed_groups(pattern: str) -> str:
    """`pattern` with each named capture group (`(?P<name>…)`, `(?<name>…)`) a plain one (`(…)`): the
    same matches, and no name to clash with another pattern's when rg joins them into one regex."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[":
            j = _class_end(pattern, i)
            if j is not None:
                out.append(pattern[i : j + 1])
                i = j + 1
                continue
        if c == "(" and (pattern.startswith("(?P<", i) or pattern.startswith("(?<", i)):
            close = pattern.find(">", i)
            if close != -1:
                out.append("(")
                i = close + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)
