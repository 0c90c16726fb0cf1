"""grep's searcher: reads candidate files within the per-file, per-call, file-count and time budgets,
skips binary and non-UTF-8 text, and extracts hit and context lines.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable

from ....core.errors import ToolError
from ....core.fsops import FileReader
from ....core.records import Record
from ....core.search.match import LineHit, Matcher, MatchTimeout, is_binary

FILE_CAP = 4 * 1024 * 1024
CALL_BYTES_CAP = 128 * 1024 * 1024
MAX_FILES = 10_000
BINARY_PROBE = 8192


class ScanStats(Record):
    files_scanned: int = 0
    files_matched: int = 0
    bytes_scanned: int = 0
    files_truncated: int = 0
    binary: int = 0
    invalid_utf8: int = 0
    special: int = 0
    unreadable: int = 0
    recovery_skips: int = 0
    stop: str | None = None  # file_cap | byte_cap | deadline | lookahead


def line_str(data: bytes, start: int, end: int) -> str:
    text = data[start:end].decode("utf-8", "replace")
    return text[:-1] if text.endswith("\r") else text


def context_rows(data: bytes, hit: LineHit, n: int) -> tuple[tuple[int, str], ...]:
    """Up to `n` lines before and after a hit, as (line, text)."""
    if n <= 0:
        return ()
    before: list[tuple[int, str]] = []
    pos, line = hit.start, hit.line
    while len(before) < n and pos > 0:
        prev_start = data.rfind(b"\n", 0, pos - 1) + 1
        line -= 1
        before.append((line, line_str(data, prev_start, pos - 1)))
        pos = prev_start
    before.reverse()
    after: list[tuple[int, str]] = []
    pos, line, size = hit.end, hit.line, len(data)
    while len(after) < n and pos < size - 1:
        nxt = data.find(b"\n", pos + 1)
        if nxt == -1:
            nxt = size
        line += 1
        after.append((line, line_str(data, pos + 1, nxt)))
        pos = nxt
    return (*before, *after)


def valid_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Searcher:
    """Reads candidate files within the per-file, per-call, file-count and time budgets."""

    def __init__(self, matcher: Matcher, deadline: float) -> None:
        self.matcher = matcher
        self.deadline = deadline
        self.stats = ScanStats()
        self.reader = FileReader()

    def load(self, path: str) -> bytes | None:
        """The searchable bytes of a file, or None (skipped, counted). Sets `stats.stop` on a budget."""
        s = self.stats
        if s.files_scanned >= MAX_FILES:
            s.stop = "file_cap"
            return None
        room = CALL_BYTES_CAP - s.bytes_scanned
        if room <= 0:
            s.stop = "byte_cap"
            return None
        if time.monotonic() > self.deadline:
            s.stop = "deadline"
            return None
        try:
            data, longer = self.reader.read(path, min(FILE_CAP, room))
        except FileNotFoundError:
            s.recovery_skips += 1
            return None
        except IsADirectoryError:
            s.special += 1
            return None
        except ToolError as e:
            if e.details.get("path") == path and "regular" in e.message:
                s.special += 1
            else:
                s.recovery_skips += 1  # the path changed under us (a symlink appeared)
            return None
        except OSError:
            s.unreadable += 1
            return None
        s.files_scanned += 1
        s.bytes_scanned += len(data)
        if is_binary(data, BINARY_PROBE):
            s.binary += 1
            return None
        if longer:
            s.files_truncated += 1
            if room < FILE_CAP:
                s.stop = "byte_cap"
            # The cut line is searched as far as it was read: a match in a line longer than the cap
            # (at its byte 0, say) is still found; the result says the file was not read to its end.
        return data

    def hits(self, data: bytes) -> list[LineHit] | None:
        """Matching lines of a loaded buffer; None when the file turns out not to be UTF-8 text."""
        try:
            found = list(self.matcher.lines(data, self.deadline))
        except MatchTimeout:
            self.stats.stop = "deadline"
            return []
        if found and not valid_utf8(data):
            self.stats.invalid_utf8 += 1
            return None
        return found

    def scan(self, targets: Iterable[tuple[str, str]]) -> Generator[tuple[str, bytes, list[LineHit]]]:
        """(shown path, bytes, hits) of each file with hits, in order, until the targets or a budget end."""
        for shown, canonical in targets:
            data = self.load(canonical)
            if data is not None:
                found = self.hits(data)
                if found:
                    self.stats.files_matched += 1
                    yield shown, data, found
            if self.stats.stop:
                return
