"""Reading regex sources as text: the common repairs, and the literal text a regex spells or needs.

Pure functions over pattern strings (no matching happens here), shared by the matcher.
"""

from __future__ import annotations

import re

META = re.compile(r"[.^$*+?{}\[\]\\|()]")
_QUANTIFIER = re.compile(r"\{\d+(?:,\d*)?\}")


def _class_end(p: str, i: int) -> int | None:
    """Index of the `]` closing the character class that opens at `i`, or None."""
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
        if c == "]":
            return j
        j += 1
    return None


def as_literal(source: str) -> str | None:
    """The text a regex matches when it is a plain literal (`frozenset\\(` is `frozenset(`), else None."""
    out: list[str] = []
    i = 0
    while i < len(source):
        c = source[i]
        if c == "\\":
            nxt = source[i + 1 : i + 2]
            if not nxt or nxt.isalnum() or nxt == "_" or not nxt.isascii():
                return None  # \w, \d, \b, \1, ... are not literals
            out.append(nxt)
            i += 2
            continue
        if META.match(c):
            return None
        out.append(c)
        i += 1
    return "".join(out)


def _literal_runs(source: str) -> list[str] | None:
    """The top-level literal runs every match must contain, read conservatively, or None.

    An alternation, inline flags, a backreference or an escape taking arguments give None. A
    character followed by a quantifier is dropped from its run (it may repeat or vanish).
    """
    if "|" in source or any(f in source for f in ("(?i", "(?x", "(?s", "(?m")):
        return None
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    i = 0

    def close() -> None:
        if run:
            runs.append("".join(run))
            run.clear()

    while i < len(source):
        c = source[i]
        if c == "\\":
            nxt = source[i + 1 : i + 2]
            if nxt.isdigit() or nxt in ("x", "u", "U", "N", "p", "P", "g", "k"):
                return None
            if nxt and not (nxt.isalnum() or nxt == "_") and nxt.isascii() and depth == 0:
                run.append(nxt)
            else:
                close()
            i += 2
        elif c == "[":
            close()
            j = _class_end(source, i)
            if j is None:
                return None
            i = j + 1
        elif c in "*+?{":
            if run:
                run.pop()
            close()
            if c == "{":
                m = _QUANTIFIER.match(source, i)
                if m is None:
                    return None
                i = m.end()
            else:
                i += 1
        elif c in "().^$":
            close()
            depth += 1 if c == "(" else -1 if c == ")" else 0
            i += 1
        else:
            if depth == 0:
                run.append(c)
            i += 1
    close()
    return runs


def required_literals(source: str) -> list[str]:
    """Every text of 3+ characters that each match of the regex `source` must contain."""
    return [r for r in dict.fromkeys(_literal_runs(source) or []) if len(r) >= 3]


def required_literal(source: str) -> str | None:
    """The longest of `required_literals`, or None."""
    return max(required_literals(source), key=len, default=None)


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
