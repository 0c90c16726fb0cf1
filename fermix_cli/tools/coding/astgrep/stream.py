"""The ast-grep CLI's `--json=stream` output, counted whole and kept only as far as an answer can show.

A tree scan can print millions of matches (a line of JSON each, about 400 bytes); an answer shows at
most `limit` of them, the first by path and byte offset. So every line is counted against its file,
and only a line that could be among the first `keep` (of its language) is decoded: the file name and the byte range are
read straight from the line (the CLI prints `text`, `range`, `file` first, and a key such as
`"file":"` cannot occur inside a JSON string, where every quote is escaped), and a full `json.loads`
happens for the first line of each file (its language) and for candidates to keep. The kept matches
are pruned to `keep` whenever they reach twice that, so memory is bounded by the limit, not the tree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

_RANGE = re.compile(rb'"range":\{"byteOffset":\{"start":(\d+),"end":(\d+)\}')
_FILE_KEY = b',"file":"'


class FileTally:
    """One file's matches: how many, and what becomes of them (`fate`)."""

    __slots__ = ("count", "fate", "language", "oversized", "rel")

    def __init__(self, rel: str, fate: str, language: str) -> None:
        self.rel = rel  # the listed name (relative to the scan's root)
        self.fate = fate  # "ok" (shown, or counted as left out), or why not: refused | unnamed
        self.language = language  # fermix's name of the file's language, from the CLI
        self.count = 0
        self.oversized = 0  # matches whose replacement is over the preview's cap: counted, never kept


# (CLI file name, the line decoded) -> the file's tally; called once per file with matches.
Judge = Callable[[str, dict[str, Any]], FileTally]


class _First:
    """The first `keep` matches (by key) of those offered, pruned whenever they reach twice that."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.kept: list[tuple[tuple[str, int, int, int], dict[str, Any]]] = []
        self.bound: tuple[str, int, int, int] | None = None  # a key at or past it is not kept

    def prune(self) -> None:
        self.kept.sort(key=lambda pair: pair[0])
        del self.kept[self.keep :]
        if len(self.kept) == self.keep:
            self.bound = self.kept[-1][0]


class MatchStream:
    """Feed it the CLI's stdout lines; it counts every match per file and keeps, for each language, the
    first `keep` matches (by listed path, byte start, byte end, then order of arrival) of the files
    whose fate is "ok". Per language, because the caller may yet refuse a language (a pattern that
    does not compile for it): the first `keep` of the others are then still at hand."""

    def __init__(self, keep: int, judge: Judge, rewrite: str | None, replacement_cap: int) -> None:
        self.keep = max(keep, 1)
        self.judge = judge
        self.files: dict[str, FileTally] = {}
        self.first: dict[str, _First] = {}  # by language
        self.seq = 0
        # A replacement the preview would not show (the reference's estimate: the template plus four
        # bytes per character filled in, over the cap); a line shorter than this cannot hold one.
        self.rewrite_bytes = len(rewrite.encode("utf-8")) if rewrite is not None else None
        self.replacement_cap = replacement_cap

    def add(self, line: bytes) -> None:
        name = _file_name(line)
        decoded: dict[str, Any] | None = None
        if name is None:  # an escape in the name, or a shape not expected: decode the line
            decoded = json.loads(line)
            name = str(decoded.get("file", ""))
        tally = self.files.get(name)
        if tally is None:
            if decoded is None:
                decoded = json.loads(line)
            tally = self.files[name] = self.judge(name, decoded)
        tally.count += 1
        if tally.fate != "ok":
            return
        if self.rewrite_bytes is not None and self.rewrite_bytes + 4 * len(line) > self.replacement_cap:
            decoded = decoded if decoded is not None else json.loads(line)
            if self.rewrite_bytes + 4 * len(str(decoded.get("replacement", ""))) > self.replacement_cap:
                tally.oversized += 1
                return
        first = self.first.get(tally.language)
        if first is None:
            first = self.first[tally.language] = _First(self.keep)
        bound = first.bound
        if bound is not None and tally.rel > bound[0]:
            return
        self.seq += 1
        span = _RANGE.search(line) if decoded is None else None
        if span is not None:
            key = (tally.rel, int(span.group(1)), int(span.group(2)), self.seq)
        else:
            decoded = decoded if decoded is not None else json.loads(line)
            offsets = decoded["range"]["byteOffset"]
            key = (tally.rel, offsets["start"], offsets["end"], self.seq)
        if bound is not None and key >= bound:
            return
        first.kept.append((key, decoded if decoded is not None else json.loads(line)))
        if len(first.kept) >= 2 * self.keep:
            first.prune()

    def kept(self, language: str) -> list[tuple[tuple[str, int, int, int], dict[str, Any]]]:
        """The first `keep` matches of one language, in order, with their keys."""
        first = self.first.get(language)
        if first is None:
            return []
        first.prune()
        return first.kept


def _file_name(line: bytes) -> str | None:
    """The `file` field of one match line, read without decoding the line; None when it holds an
    escape (or the line is not of the shape expected), for `json.loads` to read."""
    if not line.startswith(b'{"text":'):
        return None
    at = line.find(_FILE_KEY)
    if at < 0:
        return None
    start = at + len(_FILE_KEY)
    end = line.find(b'"', start)
    if end < 0:
        return None
    name = line[start:end]
    return None if b"\\" in name else name.decode("utf-8", "replace")
