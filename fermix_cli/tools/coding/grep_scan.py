"""grep's searcher: reads candidate files within the per-file, per-call, file-count and time budgets,
skips binary and non-UTF-8 text, and extracts hit and context lines.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from ...core.errors import ToolError
from ...core.fsops import FileReader
from ...core.records import Record
from ...core.search.forkmap import ordered_map
from ...core.search.match import LineHit, Matcher, MatchTimeout, is_binary

FILE_CAP = 4 * 1024 * 1024
CALL_BYTES_CAP = 128 * 1024 * 1024
MAX_FILES = 10_000
BINARY_PROBE = 8192


class ScanStats(Record):
    _fields = (
        "files_scanned", "files_matched", "bytes_scanned", "files_truncated", "binary", "invalid_utf8",
        "special", "unreadable", "recovery_skips", "stop",
    )  # fmt: skip
    __slots__ = _fields
    files_scanned: int
    files_matched: int
    bytes_scanned: int
    files_truncated: int
    binary: int
    invalid_utf8: int
    special: int
    unreadable: int
    recovery_skips: int
    stop: str | None  # file_cap | byte_cap | deadline | lookahead

    def __init__(
        self,
        files_scanned: int = 0,
        files_matched: int = 0,
        bytes_scanned: int = 0,
        files_truncated: int = 0,
        binary: int = 0,
        invalid_utf8: int = 0,
        special: int = 0,
        unreadable: int = 0,
        recovery_skips: int = 0,
        stop: str | None = None,
    ) -> None:
        self.files_scanned = files_scanned
        self.files_matched = files_matched
        self.bytes_scanned = bytes_scanned
        self.files_truncated = files_truncated
        self.binary = binary
        self.invalid_utf8 = invalid_utf8
        self.special = special
        self.unreadable = unreadable
        self.recovery_skips = recovery_skips
        self.stop = stop


# The ScanStats counters a probe reports, in this order.
_COUNTERS = (
    "files_scanned",
    "bytes_scanned",
    "files_truncated",
    "binary",
    "invalid_utf8",
    "special",
    "unreadable",
    "recovery_skips",
)


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
        self.probed_bytes = 0  # read by this process's probes: past the call cap, probes stop reading

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
            data = data[: data.rfind(b"\n") + 1]  # drop the trailing partial line
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

    # ----- a whole scan ----------------------------------------------------------------------------

    def scan(self, targets: Iterable[tuple[str, str]]) -> Iterator[tuple[str, bytes, list[LineHit]]]:
        """(shown path, bytes, hits) of each file with hits, in order, until the targets or a budget end.

        Each file is first probed on its own (`probe`: read and matched as if it were the first
        file of the call), which lets `ordered_map` probe the second half of each batch in a forked
        child. A probe is then accounted here exactly as the plain loop would; a file that the
        budgets left would have read differently (a byte cap cutting it shorter) is read again here.
        """
        results = ordered_map(targets, lambda t: self.probe(t[1]))
        try:
            for (shown, canonical), probe in results:
                usable, found = self._account(probe)
                if not usable:  # read it again, against the budgets that are really left
                    data = self.load(canonical)
                    hits = self.hits(data) if data is not None else None
                    found = (data, hits) if data is not None and hits else None
                if found is not None:
                    self.stats.files_matched += 1
                    yield shown, found[0], [LineHit(*h) for h in found[1]]
                if self.stats.stop:
                    return
        finally:
            results.close()

    def probe(self, path: str) -> int | tuple[Any, ...] | None:
        """Load and match one file against fresh budgets.

        The common outcome, a whole text file read without a hit, is just its size; anything else
        is the counters, the stop and the (bytes, hits). None: not probed, because this process has
        already probed a whole call's worth of bytes, so the call cannot get to this file on what
        it read before (a child probing ahead must not read or hold more than the call may).
        """
        if self.probed_bytes >= CALL_BYTES_CAP:
            return None
        saved, self.stats = self.stats, ScanStats()
        try:
            payload = None
            data = self.load(path)
            if data is not None:
                found = self.hits(data)
                if found:
                    payload = (data, [tuple(h) for h in found])
            s = self.stats
            self.probed_bytes += s.bytes_scanned
            plain = s.files_scanned == 1 and not (s.files_truncated or s.binary or s.invalid_utf8)
            if plain and payload is None and s.stop is None:
                return s.bytes_scanned
            return (*(getattr(s, c) for c in _COUNTERS), s.stop, payload)
        finally:
            self.stats = saved

    def _account(self, probe: int | tuple[Any, ...] | None) -> tuple[bool, tuple[bytes, list[Any]] | None]:
        """Add a probe to the stats. Returns whether it was usable, and its (bytes, hits) if any."""
        s = self.stats
        room = CALL_BYTES_CAP - s.bytes_scanned
        if s.files_scanned >= MAX_FILES:
            s.stop = "file_cap"
            return True, None
        if room <= 0:
            s.stop = "byte_cap"
            return True, None
        if time.monotonic() > self.deadline:
            s.stop = "deadline"
            return True, None
        if probe is None:
            return False, None
        if isinstance(probe, int):  # a whole text file without hits
            if probe > room:
                return False, None
            s.files_scanned += 1
            s.bytes_scanned += probe
            return True, None
        counts, stop, payload = probe[: len(_COUNTERS)], probe[-2], probe[-1]
        read, truncated = counts[1], counts[2]
        if stop not in (None, "deadline") or (read > room if not truncated else room < FILE_CAP):
            return False, None
        for name, n in zip(_COUNTERS, counts, strict=True):
            if n:
                setattr(s, name, getattr(s, name) + n)
        if stop:
            s.stop = stop
        return True, payload
