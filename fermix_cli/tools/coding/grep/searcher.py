"""grep's searcher: plans the patterns for ripgrep, runs the search, and reads context rows.

Patterns: one that has no regex metacharacters is plain text; the others are repaired first (stray
brackets and braces escaped, see `regexsource.repair_regex`) and handed to rg as regexes. When rg
rejects the set, each pattern is checked on its own and the ones rg cannot compile are matched
literally (`literal_fallback`, with rg's error). rg's regex syntax is Rust's (`regex` crate): linear
time, Unicode-aware classes, no look-around or backreferences; the bundled rg has no PCRE2.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from ....core.records import Record
from ....core.search.regexsource import META, repair_regex
from ....core.search.ripgrep import LineMatch, check_pattern

BINARY_PROBE = 8192
CONTEXT_WINDOW = 1 << 16  # bytes read at a time while looking for context lines
CONTEXT_READ_CAP = 4 << 20  # context lines are not looked for further than this from a hit

PlanKind = Literal["literal", "regex", "regex_repaired", "literal_fallback"]
_RUST_META = set("\\.+*?()|[]{}^$#&-~")


class PatternPlan(Record, frozen=True):
    """How one pattern is matched, and the regex rg is given for it."""

    pattern: str
    kind: PlanKind
    source: str
    repaired: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pattern": self.pattern, "kind": self.kind}
        if self.repaired is not None:
            out["repaired"] = self.repaired
        if self.error is not None:
            out["error"] = self.error
        return out


def rust_escape(text: str) -> str:
    """`text` as a Rust regex that matches it literally."""
    return "".join("\\" + c if c in _RUST_META else c for c in text)


def plan(patterns: list[str]) -> list[PatternPlan]:
    """The first plan: every pattern is a regex, repaired when it has metacharacters and rg does not
    take it as written (Rust's syntax has more than the repairs know: nested classes, `x{1, 2}`)."""
    out: list[PatternPlan] = []
    for p in patterns:
        if not META.search(p):
            out.append(PatternPlan(p, "regex", p))  # plain text is the same regex in any syntax
            continue
        source = repair_regex(p)
        if source != p and check_pattern(p) is not None:  # a regex rg takes as written stays as written
            out.append(PatternPlan(p, "regex_repaired", source, repaired=source))
        else:
            out.append(PatternPlan(p, "regex", p))
    return out


def replan(plans: list[PatternPlan]) -> list[PatternPlan]:
    """After rg rejected the set: each regex rg cannot compile is matched literally."""
    out: list[PatternPlan] = []
    for pl in plans:
        if pl.kind in ("regex", "regex_repaired"):
            err = check_pattern(pl.source)
            if err is not None:
                out.append(PatternPlan(pl.pattern, "literal_fallback", rust_escape(pl.pattern), error=err))
                continue
        out.append(pl)
    return out


def line_str(text: bytes) -> str:
    return text.decode("utf-8", "replace")


def _lines_around(path: str, hit: LineMatch, n: int) -> tuple[list[bytes], list[bytes]]:
    """Up to `n` whole lines before and after the hit line, read from the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return [], []
    try:
        # Before: read backwards in windows until n+1 line starts are known (or the file starts).
        start = hit.offset
        buf = b""
        pos = start
        while pos > 0 and buf.count(b"\n") < n + 1 and start - pos < CONTEXT_READ_CAP:
            step = min(CONTEXT_WINDOW, pos)
            pos -= step
            buf = os.pread(fd, step, pos) + buf
        before = buf.split(b"\n")[:-1] if buf else []  # the part after the last \n is empty: hit starts there
        if pos > 0 and before:
            before = before[1:]  # the first piece may be the tail of a longer line
        before = before[-n:] if n else []
        # After: read forwards from just past the hit line.
        after_start = hit.offset + len(hit.text)
        tail = b""
        pos = after_start
        while tail.count(b"\n") < n + 1 and pos - after_start < CONTEXT_READ_CAP:
            chunk = os.pread(fd, CONTEXT_WINDOW, pos)
            if not chunk:
                break
            tail += chunk
            pos += len(chunk)
        # tail starts with the hit line's ending ("\n" or "\r\n").
        nl = tail.find(b"\n")
        rest = tail[nl + 1 :] if nl != -1 else b""
        pieces = rest.split(b"\n")
        complete = pieces[:-1]
        if pieces and pieces[-1] and len(complete) < n and not os.pread(fd, 1, pos):
            complete.append(pieces[-1])  # the last line of a file without a final newline
        return before, complete[:n]
    except OSError:
        return [], []
    finally:
        os.close(fd)


def context_rows(path: str, hit: LineMatch, n: int) -> tuple[tuple[int, str], ...]:
    """Up to `n` lines before and after a hit, as (line, text)."""
    if n <= 0:
        return ()
    before, after = _lines_around(path, hit, n)
    rows: list[tuple[int, str]] = []
    for i, b in enumerate(before):
        rows.append((hit.line - len(before) + i, line_str(b.removesuffix(b"\r"))))
    for i, b in enumerate(after):
        rows.append((hit.line + 1 + i, line_str(b.removesuffix(b"\r"))))
    return tuple(rows)
