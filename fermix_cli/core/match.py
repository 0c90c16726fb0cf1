"""The one line matcher behind every content search: literal bytes search or a deadline-bound regex.

It searches a whole file buffer at once and maps hits to lines, which is far faster in Python than
testing line by line. Regexes use the `regex` module so a catastrophic pattern stops at the deadline;
they run over the UTF-8 bytes of the file, so `.` and classes see bytes, not characters.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ToolError


class MatchTimeout(Exception):
    """The deadline passed while matching."""


@dataclass(frozen=True)
class LineHit:
    line: int  # 1-based
    start: int  # byte offset of the line in the buffer
    end: int  # byte offset just past the line's text (newline excluded)


def is_binary(head: bytes) -> bool:
    """A NUL in the first 4096 bytes marks a file as binary."""
    return b"\x00" in head[:4096]


class Matcher:
    """OR of one or more patterns; regex or literal; optionally case-insensitive."""

    def __init__(
        self,
        patterns: Sequence[str],
        *,
        regex: bool = False,
        ignore_case: bool = False,
        literal_fallback: bool = False,
    ) -> None:
        if not patterns or any(not p for p in patterns):
            raise ToolError("invalid_pattern", "pattern must be a non-empty string", {})
        self.patterns = list(patterns)
        self.fell_back = False
        self._literals: list[bytes] | None = None
        self._regex: Any = None
        if not regex and not ignore_case:
            self._literals = [p.encode("utf-8") for p in patterns]
            return
        import regex as re_mod

        sources = list(patterns) if regex else [re_mod.escape(p) for p in patterns]
        flags = re_mod.MULTILINE | re_mod.V0 | (re_mod.IGNORECASE if ignore_case else 0)
        try:
            self._regex = re_mod.compile("|".join(f"(?:{s})" for s in sources).encode(), flags)
        except re_mod.error as e:
            if not literal_fallback:
                raise ToolError(
                    "invalid_regex", f"{e}", {"pattern": patterns[0] if len(patterns) == 1 else patterns}
                ) from None
            self.fell_back = True
            if ignore_case:
                escaped = "|".join(f"(?:{re_mod.escape(p)})" for p in patterns)
                self._regex = re_mod.compile(escaped.encode(), flags)
            else:
                self._literals = [p.encode("utf-8") for p in patterns]

    def lines(self, data: bytes, deadline: float | None = None) -> Iterator[LineHit]:
        """Each matching line once, in order."""
        if self._literals is not None:
            yield from self._literal_lines(data)
        else:
            yield from self._regex_lines(data, deadline)

    def _literal_lines(self, data: bytes) -> Iterator[LineHit]:
        if len(self._literals or ()) == 1:
            offsets: Iterator[int] = _find_all(data, self._literals[0])  # type: ignore[index]
        else:
            offsets = iter(sorted({o for lit in self._literals or () for o in _find_all(data, lit)}))
        yield from _to_lines(data, offsets)

    def _regex_lines(self, data: bytes, deadline: float | None) -> Iterator[LineHit]:
        pos = 0
        line = 1
        counted = 0
        size = len(data)
        while pos <= size:
            timeout = None
            if deadline is not None:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    raise MatchTimeout()
            try:
                m = self._regex.search(data, pos, timeout=timeout)
            except TimeoutError:
                raise MatchTimeout() from None
            if m is None:
                return
            hit = m.start()
            start = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", hit)
            if end == -1:
                end = size
            line += data.count(b"\n", counted, start)
            counted = start
            yield LineHit(line, start, end)
            pos = end + 1


def _find_all(data: bytes, needle: bytes) -> Iterator[int]:
    i = data.find(needle)
    while i != -1:
        yield i
        i = data.find(needle, i + 1)


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
