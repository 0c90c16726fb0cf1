"""grep's searcher: plans the patterns for ripgrep, runs the search, and reads context rows.

Patterns: one that has no regex metacharacters is plain text; the others are repaired first (stray
brackets and braces escaped, see `regexsource.repair_regex`) and handed to rg as regexes. When rg
rejects the set, each pattern is checked on its own and the ones rg cannot compile are matched
literally (`literal_fallback`, with rg's error). rg's regex syntax is Rust's (`regex` crate): linear
time, Unicode-aware classes, no look-around or backreferences; the bundled rg has no PCRE2.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

from ....core.records import Record
from ....core.search.regexsource import META, repair_regex, unnamed_groups
from ....core.search.ripgrep import LineMatch, check_pattern, check_patterns

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


def plan(patterns: list[str], *, ignore_case: bool = False) -> list[PatternPlan]:
    """The first plan: every pattern is a regex, repaired when it has metacharacters and rg does not
    take it as written (Rust's syntax has more than the repairs know: nested classes, `x{1, 2}`)."""
    out: list[PatternPlan] = []
    for p in patterns:
        if not META.search(p):
            out.append(PatternPlan(p, "regex", p))  # plain text is the same regex in any syntax
            continue
        source = repair_regex(p)
        if (
            source != p and check_pattern(p, ignore_case=ignore_case) is not None
        ):  # a regex rg takes as written stays as written
            out.append(PatternPlan(p, "regex_repaired", source, repaired=source))
        else:
            out.append(PatternPlan(p, "regex", p))
    return out


def replan(plans: list[PatternPlan], *, ignore_case: bool = False) -> list[PatternPlan]:
    """After rg rejected the set: each regex rg cannot compile is matched literally, and so is each
    one that compiles alone but not together with the regexes before it (rg searches them as one
    regex: two capture groups of one name clash)."""
    out: list[PatternPlan] = []
    for pl in plans:
        if pl.kind in ("regex", "regex_repaired"):
            err = check_pattern(pl.source, ignore_case=ignore_case)
            if err is not None:
                out.append(PatternPlan(pl.pattern, "literal_fallback", rust_escape(pl.pattern), error=err))
                continue
        out.append(pl)
    if check_patterns([pl.source for pl in out], ignore_case=ignore_case) is None:
        return out
    # Two capture groups of one name clash only once the patterns are one regex: without the names
    # (nothing here reads a group) every pattern matches as written.
    plain = [
        pl
        if pl.kind not in ("regex", "regex_repaired") or unnamed_groups(pl.source) == pl.source
        else PatternPlan(
            pl.pattern, "regex_repaired", unnamed_groups(pl.source), repaired=unnamed_groups(pl.source)
        )
        for pl in out
    ]
    if check_patterns([pl.source for pl in plain], ignore_case=ignore_case) is None:
        return plain
    together: list[PatternPlan] = []
    for pl in out:
        if pl.kind in ("regex", "regex_repaired"):
            err = check_patterns([*(q.source for q in together), pl.source], ignore_case=ignore_case)
            if err is not None:
                why = f"cannot be searched together with the patterns before it: {err}"
                pl = PatternPlan(pl.pattern, "literal_fallback", rust_escape(pl.pattern), error=why)
        together.append(pl)
    return together


def line_str(text: bytes) -> str:
    return text.decode("utf-8", "replace")


def is_utf8_file(path: str) -> bool:
    """Whether the whole file is valid UTF-8 (then rg read no line that is not); False when it cannot
    be read. Read in 1 MiB chunks, so a big file costs no more memory than that."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        while chunk := os.read(fd, 1 << 20):
            # An ASCII chunk is valid by itself (a fast byte scan); the decoder runs on the others, and
            # on any chunk after one that ended inside a character.
            if not chunk.isascii() or decoder.getstate()[0]:
                decoder.decode(chunk)
        decoder.decode(b"", True)
        return True
    except (OSError, UnicodeDecodeError):
        return False
    finally:
        os.close(fd)


_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}

Reader = Callable[[int, int], bytes]  # (size, offset) -> up to size bytes at offset; b"" at the end


class ContextReader:
    """The context rows of one grep call's hits, read from each file as rg read it (`_stream`)."""

    def __init__(self, n: int) -> None:
        self.n = n  # lines on each side
        self._utf16: tuple[str, bytes] | None = None  # the last UTF-16 file transcoded, for its next hits
        # Hits shown with fewer context lines than the file has: a line next to them is longer than
        # CONTEXT_READ_CAP, or the file could not be read again. (path, line) each.
        self.short: dict[tuple[str, int], int] = {}  # -> how many lines were left out

    def rows(self, path: str, hit: LineMatch) -> tuple[tuple[int, str], ...]:
        """Up to `n` lines before and after a hit, as (line, text)."""
        if self.n <= 0:
            return ()
        before, after, missing = self._lines_around(path, hit)
        if missing:
            self.short[(path, hit.line)] = missing
        rows: list[tuple[int, str]] = []
        for i, b in enumerate(before):
            rows.append((hit.line - len(before) + i, line_str(b.removesuffix(b"\r"))))
        for i, b in enumerate(after):
            rows.append((hit.line + 1 + i, line_str(b.removesuffix(b"\r"))))
        return tuple(rows)

    def _stream(self, fd: int, path: str) -> Reader:
        """The file as rg reads it, which its `absolute_offset`s point into.

        rg sniffs a BOM: after a UTF-8 one it reads the bytes as they are, the BOM left out; a UTF-16
        file (little or big endian) it transcodes to UTF-8, with U+FFFD for what does not decode.
        Anything else it reads as is. A UTF-16 file is transcoded once for all its hits on a page
        (they come one file after another).
        """
        head = os.pread(fd, 3, 0)
        if head == _UTF8_BOM:
            return lambda size, pos: os.pread(fd, size, pos + 3)
        codec = _UTF16_BOMS.get(head[:2])
        if codec is None:
            return lambda size, pos: os.pread(fd, size, pos)
        if self._utf16 is None or self._utf16[0] != path:
            data = bytearray()
            while chunk := os.pread(fd, 1 << 20, 2 + len(data)):
                data += chunk
            self._utf16 = (path, bytes(data).decode(codec, "replace").encode("utf-8"))
        text = self._utf16[1]
        return lambda size, pos: text[pos : pos + size]

    def _lines_around(self, path: str, hit: LineMatch) -> tuple[list[bytes], list[bytes], int]:
        """Up to `n` whole lines before and after the hit line, and how many were left out."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return [], [], 2 * self.n
        try:
            return _lines_around(self._stream(fd, path), hit, self.n)
        except OSError:
            return [], [], 2 * self.n
        finally:
            os.close(fd)


def _lines_around(read: Reader, hit: LineMatch, n: int) -> tuple[list[bytes], list[bytes], int]:
    """Up to `n` whole lines before and after the hit line, from the stream `read` reads, and how many
    of those the CONTEXT_READ_CAP left out (a line next to the hit longer than it; at most `n` a side)."""
    # Before: read backwards in windows until n+1 line starts are known (or the file starts).
    start = hit.offset
    buf = b""
    pos = start
    while pos > 0 and buf.count(b"\n") < n + 1 and start - pos < CONTEXT_READ_CAP:
        step = min(CONTEXT_WINDOW, pos)
        pos -= step
        buf = read(step, pos) + buf
    before = buf.split(b"\n")[:-1] if buf else []  # the part after the last \n is empty: hit starts there
    if pos > 0 and before:
        before = before[1:]  # the first piece may be the tail of a longer line
    before = before[-n:] if n else []
    missing = n - len(before) if pos > 0 else 0  # stopped by the cap, not by the file's start
    # After: read forwards from just past the hit line.
    after_start = hit.offset + len(hit.text)
    tail = b""
    pos = after_start
    end = False
    while tail.count(b"\n") < n + 1 and pos - after_start < CONTEXT_READ_CAP:
        chunk = read(CONTEXT_WINDOW, pos)
        if not chunk:
            end = True
            break
        tail += chunk
        pos += len(chunk)
    # tail starts with the hit line's ending ("\n" or "\r\n").
    nl = tail.find(b"\n")
    rest = tail[nl + 1 :] if nl != -1 else b""
    pieces = rest.split(b"\n")
    complete = pieces[:-1]
    if pieces and pieces[-1] and len(complete) < n and not read(1, pos):
        complete.append(pieces[-1])  # the last line of a file without a final newline
        end = True
    after = complete[:n]
    if len(after) < n and not end and read(1, pos):
        missing += n - len(after)
    return before, after, missing
