"""grep's printer: `grouped_v1` (ranked) and flat `path:line:content` (raw) text under a byte budget.

A record is one primary hit with its context rows, plus the file header for a file's first hit on
the page. Records are added whole: when the next one would not fit, printing stops there. A page
always makes progress: a first record that is bigger than the budget on its own is printed with its
context cut to the widest window around the hit that fits, and the page says so (`Page.cut`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from ....core.records import Record, field
from ....core.search.names import printable

MAX_LINE_CHARS = 1000
GROUPED_HEADER = "grouped_v1"


def clip(text: str) -> str:
    """A line as printed: cut at 1,000 characters with `…`."""
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


class Hit(Record, frozen=True):
    """One primary hit with its context rows (line, text), all texts already decoded."""

    line: int
    label: str | None
    text: str
    context: tuple[tuple[int, str], ...] = ()


class Block(Record):
    """The rows of one file on a page."""

    path: str
    hit_labels: dict[int, str | None]  # every hit line within reach of the page's context windows
    rows: dict[int, str] = field(default_factory=dict)  # line -> text
    hits: list[Hit] = field(default_factory=list)

    def with_hit(self, hit: Hit) -> dict[int, str]:
        rows = dict(self.rows)
        rows[hit.line] = hit.text
        for n, text in hit.context:
            rows.setdefault(n, text)
        return rows


def _row(path: str | None, line: int, text: str, label: str | None, primary: bool) -> str:
    """One row; `path` (raw rows) as `printable` shows it, so a name with a line break stays one row."""
    text = clip(text)
    if path is None:
        return f"{line}:[{label}] {text}" if primary else f"{line}-{text}"
    return f"{path}:{line}:{text}" if primary else f"{path}-{line}-{text}"


def render_rows(block: Block, rows: dict[int, str], raw: bool) -> list[str]:
    out: list[str] = []
    prev = None
    for n in sorted(rows):
        if prev is not None and n > prev + 1:
            out.append("--")
        primary = n in block.hit_labels
        out.append(_row(printable(block.path) if raw else None, n, rows[n], block.hit_labels.get(n), primary))
        prev = n
    return out


def _size(lines: Iterable[str]) -> int:
    return sum(len(s.encode("utf-8")) + 1 for s in lines)


class Cut(Record, frozen=True):
    """A hit printed with less context than asked for, to fit the budget on its own."""

    path: str
    line: int
    kept: int  # context lines kept on each side
    dropped: int  # context rows left out


class Page(Record):
    text: str
    printed: int  # primary hits printed
    capped: bool  # stopped by the byte budget
    cut: Cut | None = None  # the page's first hit, when its context alone passed the budget


def _fit_first(hit: Hit, size_of: Callable[[Hit], int], room: int, path: str) -> tuple[Hit, Cut | None]:
    """The page's first hit when it does not fit `room` on its own: its context cut to the widest
    window around the hit that fits, or dropped (the hit row alone, cut at 1,000 characters, fits)."""
    reach = max((abs(n - hit.line) for n, _ in hit.context), default=0)
    trimmed = hit.replace(context=())
    kept = 0
    for k in range(reach - 1, 0, -1):
        window = hit.replace(context=tuple(r for r in hit.context if abs(r[0] - hit.line) <= k))
        if size_of(window) <= room:
            trimmed, kept = window, k
            break
    dropped = len(hit.context) - len(trimmed.context)
    return trimmed, Cut(path, hit.line, kept, dropped) if dropped else None


def _ranked_record(block: Block, hit: Hit) -> tuple[dict[int, str], list[str]]:
    """The block's rows with `hit` added, and its text with the `## path` header."""
    rows = block.with_hit(hit)
    return rows, [f"## {printable(block.path)}", *render_rows(block, rows, raw=False)]


def _ranked_size(block: Block, hit: Hit) -> int:
    return _size(_ranked_record(block, hit)[1])


def render_ranked(blocks: list[tuple[Block, list[Hit]]], budget: int) -> Page:
    """`grouped_v1`: a `## path` header per file, rows in line order, `--` between gaps."""
    parts: list[list[str]] = []
    cut: Cut | None = None
    used = _size([GROUPED_HEADER])
    printed = 0
    for block, hits in blocks:
        current: list[str] = []
        sep = 1 if parts else 0  # the blank line between files
        for hit in hits:
            rows, candidate = _ranked_record(block, hit)
            extra = _size(candidate) - (_size(current) if current else 0) + (0 if current else sep)
            if used + extra > budget and not printed:  # alone on the page and still too big
                hit, cut = _fit_first(hit, partial(_ranked_size, block), budget - used, block.path)
                rows, candidate = _ranked_record(block, hit)
                extra = _size(candidate)
            elif used + extra > budget:
                if current:
                    parts.append(current)
                return Page(_join_ranked(parts), printed, True, cut)
            used += extra
            block.rows = rows
            block.hits.append(hit)
            current = candidate
            printed += 1
        if current:
            parts.append(current)
    return Page(_join_ranked(parts), printed, False, cut)


def _join_ranked(parts: list[list[str]]) -> str:
    return "\n".join(
        [GROUPED_HEADER, "\n\n".join("\n".join(p) for p in parts)] if parts else [GROUPED_HEADER]
    )


def _raw_record(
    block: Block, hit: Hit, last: int | None, context: bool, after_others: bool
) -> tuple[dict[int, str], list[str], int | None]:
    """The block's rows with `hit` added, the new text rows (those past `last`, the last line printed
    from this file) and the new last line; `after_others`: rows of other files come before."""
    rows = block.with_hit(hit)
    cur = last
    new: list[str] = []
    shown = printable(block.path)
    for n in sorted(k for k in rows if cur is None or k > cur):
        if context and ((cur is None and after_others) or (cur is not None and n > cur + 1)):
            new.append("--")
        new.append(_row(shown, n, rows[n], None, n in block.hit_labels))
        cur = n
    return rows, new, cur


def _raw_size(context: bool, block: Block, hit: Hit) -> int:
    """The size of `hit` as the first record of a page."""
    return _size(_raw_record(block, hit, None, context, False)[1])


def render_raw(blocks: list[tuple[Block, list[Hit]]], budget: int, context: bool) -> Page:
    """Flat rows sorted by path then line; `--` between non-adjacent groups when context is shown."""
    lines: list[str] = []
    used = 0
    printed = 0
    cut: Cut | None = None
    for block, hits in blocks:
        last: int | None = None  # the last line printed from this file
        for hit in hits:
            rows, new, cur = _raw_record(block, hit, last, context, bool(lines))
            size = _size(new)
            if used + size > budget and not printed:  # alone on the page and still too big
                hit, cut = _fit_first(
                    hit,
                    partial(_raw_size, context, block),
                    budget,
                    block.path,
                )
                rows, new, cur = _raw_record(block, hit, last, context, False)
                size = _size(new)
            elif used + size > budget:
                return Page("\n".join(lines), printed, True, cut)
            used += size
            lines += new
            last = cur
            block.rows = rows
            block.hits.append(hit)
            printed += 1
    return Page("\n".join(lines), printed, False, cut)
