"""grep's ranked mode: one label per hit, the top hits of a file, and the order of files.

Labels look at one line (bytes, so offsets agree with the matcher's spans):
- `import`: after indentation the line starts an import (`import `, `from X import`, `#include`,
  `use `, `using `, `require(`, `extern crate`), assigns from `require(`, or is `export … from`;
- `def-like`: a match overlaps the name a definition keyword introduces (modifiers such as `pub`,
  `export` or `async` may come first), or the name in `NAME = function`, `NAME = (…) =>`,
  `NAME := func`;
- `match`: anything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ....core.records import Record, field
from ....core.search.ripgrep import LineMatch as LineHit

DEF_LIKE, MATCH, IMPORT = "def-like", "match", "import"
RANK = {DEF_LIKE: 0, MATCH: 1, IMPORT: 2}
PER_FILE_CAP = 5

_MODIFIERS = (
    rb"(?:(?:pub(?:\([^)\n]*\))?|export|default|async|static|public|private|protected|final|abstract"
    rb"|override|unsafe|inline)\s+)*"
)
_KEYWORDS = (
    rb"(?:def|class|fn|func|function\*?|struct|enum|trait|impl|interface|type|mod|module|macro_rules!"
    rb"|object|record|protocol|extension|val|var|let|const)"
)
# An identifier; bytes from 0x80 up are the UTF-8 of letters beyond ASCII (`ñame`, `名前`), which
# Python, Rust, JavaScript and Go all allow in names (the lines are matched as bytes).
_NAME = rb"(?P<name>[A-Za-z_$\x80-\xff][\w$\x80-\xff]*+)"
# All matched at a line start (re.match with pos/endpos, so no `^` is needed). Possessive
# quantifiers keep a failing line from backtracking: labels are computed for many hits.
_DEF = re.compile(
    rb"[ \t]*+" + _MODIFIERS + _KEYWORDS + rb"(?:[ \t]*<[^>\n]*>)?[ \t]++(?:\([^)\n]*\)[ \t]*+)?" + _NAME
)
_ASSIGN = re.compile(
    rb"[ \t]*+(?:(?:export|const|let|var)[ \t]++)*(?P<name>[A-Za-z_$\x80-\xff][\w$.\x80-\xff]*+)[ \t]*+"
    rb"(?::=[ \t]*+func\b|=[ \t]*+(?:async[ \t]++)?function\b|=[ \t]*+(?:async[ \t]++)?\([^)\n]*\)[ \t]*+=>)"
)
_ASSIGN_HINT = re.compile(rb"function|=>|:=")
_IMPORT = re.compile(
    rb"[ \t]*+(?:import[ \t]|from[ \t]++\S++[ \t]++import\b|\#[ \t]*+include\b|use[ \t]|using[ \t]"
    rb"|require\(|extern[ \t]++crate\b)"
)
_REQUIRE_ASSIGN = re.compile(rb"[ \t]*+(?:(?:const|let|var)[ \t]++)?[\w$.{}, \t]++=[ \t]*+require\(")
_EXPORT_FROM = re.compile(rb"[ \t]*+export\b[^\n]*\bfrom\b")
# Text that every line `definition_name` finds a name in holds (a keyword of _KEYWORDS, or what
# _ASSIGN_HINT looks for): a line without any cannot be def-like. None of it is escaped in JSON, so it
# may be looked for in a line as rg's JSON message has it, before the line is decoded.
DEF_HINT = re.compile(  # def class fn func struct enum ... grouped by first letter: a faster scan
    rb"d(?:ef)|c(?:lass|onst)|f(?:n|unc)|s(?:truct)|e(?:num|xtension)|t(?:rait|ype)|i(?:mpl|nterface)"
    rb"|m(?:od|acro_rules)|o(?:bject)|r(?:ecord)|p(?:rotocol)|v(?:a[lr])|let|=>|:="
)
# Likewise for `is_import`: a line without any of these is no import.
IMPORT_HINT = re.compile(rb"import|include|use|require|extern|export")


def definition_name(data: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The span (relative to `start`) of the name a definition on this line introduces, if any."""
    m = _DEF.match(data, start, end)
    if m is None and _ASSIGN_HINT.search(data, start, end) is not None:
        m = _ASSIGN.match(data, start, end)
    if m is None:
        return None
    return m.start("name") - start, m.end("name") - start


def is_import(data: bytes, start: int, end: int) -> bool:
    if _IMPORT.match(data, start, end) is not None:
        return True
    if data.find(b"require(", start, end) != -1 and _REQUIRE_ASSIGN.match(data, start, end) is not None:
        return True
    return data.find(b"from", start, end) != -1 and _EXPORT_FROM.match(data, start, end) is not None


def overlaps(spans: Sequence[tuple[int, int]], name: tuple[int, int]) -> bool:
    """Does any match span touch the name span? An empty match counts when it sits inside the name."""
    ns, ne = name
    return any(s < ne and (e > ns or (s == e and ns <= s)) for s, e in spans)


def is_def_like(data: bytes, start: int, end: int, spans: Callable[[], Sequence[tuple[int, int]]]) -> bool:
    """A match overlaps the defined name, and the line is not an import."""
    name = definition_name(data, start, end)
    return name is not None and overlaps(spans(), name) and not is_import(data, start, end)


def label_for(data: bytes, start: int, end: int, spans: Callable[[], Sequence[tuple[int, int]]]) -> str:
    """The label of the hit line `data[start:end]`; `spans()` gives its match spans, relative to start."""
    if is_import(data, start, end):
        return IMPORT
    name = definition_name(data, start, end)
    if name is not None and overlaps(spans(), name):
        return DEF_LIKE
    return MATCH


def _empty_firsts() -> dict[str, list[LineHit]]:
    return {DEF_LIKE: [], MATCH: [], IMPORT: []}


class FileHits(Record):
    """What ranked mode keeps of one file: counts, the first hits of each label, and their order."""

    hits: int = 0
    firsts: dict[str, list[LineHit]] = field(default_factory=_empty_firsts)
    labels: dict[int, str] = field(default_factory=dict)  # hit line -> label, for the hits labelled

    def settled(self) -> bool:
        """Five definitions are in: later hits can no longer change what is kept."""
        return len(self.firsts[DEF_LIKE]) >= PER_FILE_CAP

    def only_definitions_matter(self) -> bool:
        """Definitions and plain matches fill the top five: a later match or import cannot be kept."""
        return len(self.firsts[DEF_LIKE]) + len(self.firsts[MATCH]) >= PER_FILE_CAP

    def count(self) -> None:
        """A hit that cannot be kept (see `settled`): counted, not labelled."""
        self.hits += 1

    def take(self, hit: LineHit) -> None:
        """The file's next hit, in line order: labelled as far as it can still change the top five."""
        if self.settled():
            self.count()
        elif not self.only_definitions_matter():
            self.add(hit, label_for(hit.text, 0, len(hit.text), lambda: hit.spans))
        elif is_def_like(hit.text, 0, len(hit.text), lambda: hit.spans):
            self.add(hit, DEF_LIKE)
        else:
            self.count()

    def add(self, hit: LineHit, label: str) -> None:
        self.hits += 1
        self.labels[hit.line] = label
        bucket = self.firsts[label]
        if len(bucket) < PER_FILE_CAP:
            bucket.append(hit)

    def top(self) -> list[LineHit]:
        """The kept hits, best first: def-like, then match, then import, each by line."""
        return (self.firsts[DEF_LIKE] + self.firsts[MATCH] + self.firsts[IMPORT])[:PER_FILE_CAP]

    def best_rank(self) -> int:
        return min(RANK[self.labels[h.line]] for h in self.top())


class RankedSelection:
    """Which of a file's hits ranked mode needs decoded (a `LineSelection` for rg's output): every hit
    until the top five can hold no more plain matches or imports, then only hits that could be
    def-like (`DEF_HINT`), until five definitions are in. The others cannot change what `take` keeps,
    so they are counted, not decoded; `hits` is then what `take` made of the hits decoded.

    A hit with no `DEF_HINT` and no `IMPORT_HINT` is a plain match whatever else it holds, so five of
    them end the first phase before they are decoded (rg's output is decoded a chunk at a time); the
    first five hits are wanted whatever they are (`always`), so they are not looked at."""

    always = PER_FILE_CAP

    def __init__(self) -> None:
        self.hits = FileHits()
        self.phase = 0  # 0: every hit matters; 1: only definitions; 2: settled, none
        self.plain = 0  # hits wanted after the first five that are surely plain matches

    def wants(self, message: bytes, start: int, end: int) -> bool:
        phase = self.phase
        if phase == 0:
            if (
                IMPORT_HINT.search(message, start, end) is None  # the shorter scan first
                and DEF_HINT.search(message, start, end) is None
            ):
                self.plain += 1
                if self.plain >= PER_FILE_CAP:
                    self.phase = 1  # with this one, five plain matches or definitions are in
            return True
        return phase == 1 and DEF_HINT.search(message, start, end) is not None

    def wants_any(self, texts: bytes) -> bool:
        return self.phase == 0 or (self.phase == 1 and DEF_HINT.search(texts) is not None)

    def took(self, line: LineHit) -> None:
        if not line.utf8:
            return  # left out of the ranking (counted as invalid_utf8), so it fills no place
        hits = self.hits
        hits.take(line)
        phase = self.phase
        if phase == 0 and hits.only_definitions_matter():
            phase = self.phase = 1
        if phase == 1 and hits.settled():
            self.phase = 2


def file_order_key(best_rank: int, hits: int, path: str) -> tuple[int, int, str]:
    """Files sort by their best label, then hit count (descending), then path."""
    return best_rank, -hits, path
