"""The one line matcher behind every content search: literal bytes search or a deadline-bound regex.

It searches a whole file buffer at once and maps hits to lines, which is far faster in Python than
testing line by line. Regexes use the `regex` module so a catastrophic pattern stops at the deadline;
they run over the UTF-8 bytes of the file, so `.` and classes see bytes, not characters. A regex
without metacharacters is searched as a literal.

Several patterns are OR-ed. Each one is planned on its own: a plain literal, a regex, a regex after
the common repairs (`repair_regex`), or, when it still does not compile, a literal fallback. The
plans say which, so callers can report it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from ..errors import ToolError
from ..records import Record
from .regexsource import META, as_literal, repair_regex, required_literals

BINARY_PROBE = 4096


class MatchTimeout(Exception):
    """The deadline passed while matching."""


class LineHit(Record, frozen=True):
    line: int  # 1-based
    start: int  # byte offset of the line in the buffer
    end: int  # byte offset just past the line's text (newline excluded)


PlanKind = Literal["literal", "regex", "regex_repaired", "literal_fallback"]


class PatternPlan(Record, frozen=True):
    """How one pattern is matched."""

    pattern: str
    kind: PlanKind
    source: str  # the regex source used (the escaped pattern for literals)
    repaired: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pattern": self.pattern, "kind": self.kind}
        if self.repaired is not None:
            out["repaired"] = self.repaired
        if self.error is not None:
            out["error"] = self.error
        return out


def is_binary(head: bytes, probe: int = BINARY_PROBE) -> bool:
    """A NUL in the first `probe` bytes marks a file as binary."""
    return b"\x00" in head[:probe]


def _compile(source: str, ignore_case: bool) -> Any:
    """A bytes regex (multi-line, version 0). `regex` is imported only here: literals never need it."""
    import regex as re_mod

    flags = re_mod.MULTILINE | re_mod.V0 | (re_mod.IGNORECASE if ignore_case else 0)
    return re_mod.compile(source.encode("utf-8"), flags)


def _error_text(e: Exception) -> str:
    return str(e).split("\n", 1)[0]


def plan_patterns(
    patterns: Sequence[str], *, regex: bool, literal_fallback: bool, repair: bool, ignore_case: bool = False
) -> list[PatternPlan]:
    """Decide, per pattern, how it is matched; raise `invalid_regex` when a regex cannot be used."""
    plans: list[PatternPlan] = []
    for p in patterns:
        if not regex:
            plans.append(PatternPlan(p, "literal", re.escape(p)))
            continue
        source = repair_regex(p) if repair else p
        if not META.search(source) or as_literal(source) is not None:
            # Plain text, or text spelled with escapes (`frozenset\(`): it compiles, so the regex
            # engine is not even imported. Literal plans are searched with bytes.find anyway.
            kind: PlanKind = "regex_repaired" if source != p else "regex"
            plans.append(PatternPlan(p, kind, source, repaired=source if source != p else None))
            continue
        import regex as re_mod

        try:
            _compile(source, ignore_case)
        except re_mod.error as e:
            if not literal_fallback:
                raise ToolError("invalid_regex", f"{e}", {"pattern": p}) from None
            plans.append(PatternPlan(p, "literal_fallback", re.escape(p), error=_error_text(e)))
            continue
        if source != p:
            plans.append(PatternPlan(p, "regex_repaired", source, repaired=source))
        else:
            plans.append(PatternPlan(p, "regex", source))
    return plans


class Matcher:
    """OR of one or more patterns; regex or literal; optionally case-insensitive."""

    def __init__(
        self,
        patterns: Sequence[str],
        *,
        regex: bool = False,
        ignore_case: bool = False,
        literal_fallback: bool = False,
        repair: bool = False,
    ) -> None:
        if not patterns or any(not p for p in patterns):
            raise ToolError("invalid_pattern", "pattern must be a non-empty string", {})
        self.patterns = list(patterns)
        self.plans = plan_patterns(
            patterns, regex=regex, literal_fallback=literal_fallback, repair=repair, ignore_case=ignore_case
        )
        self.fell_back = any(pl.kind == "literal_fallback" for pl in self.plans)
        self._literals: list[bytes] | None = None
        self._regex: Any = None
        self._needed: list[bytes] = []
        texts = [
            pl.pattern if pl.kind in ("literal", "literal_fallback") else as_literal(pl.source)
            for pl in self.plans
        ]
        if all(t is not None for t in texts) and not ignore_case:
            # A regex that only spells out text is a literal; bytes.find beats any regex engine.
            self._literals = list(dict.fromkeys(t.encode("utf-8") for t in texts if t is not None))
            return
        # A file without the texts every match needs is skipped before the regex engine runs.
        if len(self.plans) == 1 and not ignore_case:
            self._needed = [t.encode("utf-8") for t in required_literals(self.plans[0].source)]
        combined = "|".join(f"(?:{pl.source})" for pl in self.plans)
        self._regex = _compile(combined, ignore_case)
        self._line_regex = _compile(f"(?:{combined})[^\n]*", ignore_case)

    @property
    def is_literal(self) -> bool:
        return self._literals is not None

    def lines(self, data: bytes, deadline: float | None = None) -> Iterator[LineHit]:
        """Each matching line once, in order."""
        if self._literals is not None:
            yield from self._literal_lines(data)
        elif all(t in data for t in self._needed):
            yield from self._regex_lines(data, deadline)

    def spans(
        self, data: bytes, start: int, end: int, deadline: float | None = None
    ) -> list[tuple[int, int]]:
        """Match spans inside `data[start:end]`, as offsets relative to `start`."""
        out: list[tuple[int, int]] = []
        if self._literals is not None:
            for lit in self._literals:
                i = data.find(lit, start, end)
                while i != -1:
                    out.append((i - start, min(i + len(lit), end) - start))
                    i = data.find(lit, i + 1, end)
            out.sort()
            return out
        while True:
            try:
                for m in self._regex.finditer(data, start, end, timeout=_slice(deadline)):
                    out.append((m.start() - start, m.end() - start))
            except TimeoutError:
                if _wall_time_left(deadline):
                    out.clear()  # a slice of CPU time ran out, not the deadline: once more
                    continue
                raise MatchTimeout() from None
            return out

    def _literal_lines(self, data: bytes) -> Iterator[LineHit]:
        literals = self._literals or []
        if len(literals) == 1:
            yield from _literal_hits(data, literals[0])
        else:
            yield from _to_lines(data, iter(sorted({o for lit in literals for o in _find_all(data, lit)})))

    def _regex_lines(self, data: bytes, deadline: float | None) -> Iterator[LineHit]:
        # `(?:P)[^\n]*` starts where P's leftmost match starts but runs to the end of the line, so one
        # finditer pass yields each line once and never revisits a line that already matched.
        # Hits are line-oriented: a match that runs across a line break counts only if its line
        # matches on its own, and scanning then restarts where that match could not reach.
        line = 1
        counted = 0
        last_end = -1
        size = len(data)
        if size == 0:
            return  # an empty file has no lines
        pos = 0
        while True:
            timeout = _slice(deadline)
            restart = None
            try:
                for m in self._line_regex.finditer(data, pos, timeout=timeout):
                    hit = m.start()
                    if hit <= last_end:
                        if m.end() > last_end + 1:  # it ran into the next line: look there afresh
                            restart = last_end + 1
                            break
                        continue
                    if hit == size and size and data[size - 1] == 10:
                        return  # an empty match after the final newline is not a line
                    start = data.rfind(b"\n", 0, hit) + 1
                    end = data.find(b"\n", hit)
                    if end == -1:
                        end = size
                    if m.end() > end:
                        restart = hit + 1
                        if self._regex.search(data, start, end, timeout=timeout) is None:
                            break
                        restart = end + 1
                    line += data.count(b"\n", counted, start)
                    counted = start
                    last_end = end
                    yield LineHit(line, start, end)
                    if restart is not None:
                        break
            except TimeoutError:
                if _wall_time_left(deadline):
                    pos = max(pos, last_end + 1)  # a slice of CPU time ran out: go on after the last hit
                    continue
                raise MatchTimeout() from None
            if restart is None or restart > size:
                return
            pos = restart


# The `regex` module's timeout counts CPU time, not wall time: on a busy machine a 10 s budget ran 18-29 s
# of wall time. Matching therefore runs in slices of CPU time, at most SLICE_S and an eighth of what is
# left, with the wall clock read between them: the deadline is overshot by at most one slice, which
# shrinks as the deadline nears.
SLICE_S = 0.25


def _slice(deadline: float | None) -> float | None:
    """The CPU-time budget of the next regex call, or MatchTimeout when the wall-clock deadline has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise MatchTimeout()
    return min(left, SLICE_S, max(left / 8, 0.005))


def _wall_time_left(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() < deadline


def _find_all(data: bytes, needle: bytes) -> Iterator[int]:
    i = data.find(needle)
    while i != -1:
        yield i
        # The rest of this line is already a hit; continue from the next line.
        nl = data.find(b"\n", i + len(needle))
        if nl == -1:
            return
        i = data.find(needle, nl + 1)


def _literal_hits(data: bytes, needle: bytes) -> Iterator[LineHit]:
    """The lines containing `needle`, in one tight loop (the hot path of a literal search)."""
    find, rfind, count = data.find, data.rfind, data.count
    size = len(data)
    line = 1
    counted = 0
    i = find(needle)
    while i != -1:
        start = rfind(b"\n", 0, i) + 1
        end = find(b"\n", i)
        if end == -1:
            end = size
        line += count(b"\n", counted, start)
        counted = start
        yield LineHit(line, start, end)
        if end >= size:
            return
        i = find(needle, end + 1)


def _to_lines(data: bytes, offsets: Iterator[int]) -> Iterator[LineHit]:
    line = 1
    counted = 0
    last_end = -1
    for off in offsets:
        if off <= last_end:
            continue
        start = data.rfind(b"\n", 0, off) + 1
        end = data.find(b"\n", off)
        if end == -1:
            end = len(data)
        line += data.count(b"\n", counted, start)
        counted = start
        last_end = end
        yield LineHit(line, start, end)


def line_text(data: bytes, hit: LineHit) -> str:
    """The matched line as text, right-trimmed, invalid UTF-8 replaced."""
    return data[hit.start : hit.end].decode("utf-8", "replace").rstrip()
