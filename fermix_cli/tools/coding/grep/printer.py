"""grep's printer: `grouped_v1` (ranked) and flat `path:line:content` (raw) text under a byte budget.

A record is one primary hit with its context rows, plus the file header for a file's first hit on
the page. Records are added whole: when the next one would not fit, printing stops there.
"""

from __future__ import annotations

from collections.abc import Iterable

from ....core.records import Record, field

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
        out.append(_row(block.path if raw else None, n, rows[n], block.hit_labels.get(n), primary))
        prev = n
    return out


def _size(lines: Iterable[str]) -> int:
    return sum(len(s.encode("utf-8")) + 1 for s in lines)


class Page(Record):
    text: str
    printed: int  # primary hits printed
    capped: bool  # stopped by the byte budget


def render_ranked(blocks: list[tuple[Block, list[Hit]]], budget: int) -> Page:
    """`grouped_v1`: a `## path` header per file, rows in line order, `--` between gaps."""
    parts: list[list[str]] = []
    used = _size([GROUPED_HEADER])
    printed = 0
    for block, hits in blocks:
        header = f"## {block.path}"
        current: list[str] = []
        sep = 1 if parts else 0  # the blank line between files
        for hit in hits:
            rows = block.with_hit(hit)
            candidate = [header, *render_rows(block, rows, raw=False)]
            extra = _size(candidate) - (_size(current) if current else 0) + (0 if current else sep)
            if used + extra > budget:
                if current:
                    parts.append(current)
                return Page(_join_ranked(parts), printed, True)
            used += extra
            block.rows = rows
            block.hits.append(hit)
            current = candidate
            printed += 1
        if current:
            parts.append(current)
    return Page(_join_ranked(parts), printed, False)


def _join_ranked(parts: list[list[str]]) -> str:
    return "\n".join(
        [GROUPED_HEADER, "\n\n".join("\n".join(p) for p in parts)] if parts else [GROUPED_HEADER]
    )


def render_raw(blocks: list[tuple[Block, list[Hit]]], budget: int, context: bool) -> Page:
    """Flat rows sorted by path then line; `--` between non-adjacent groups when context is shown."""
    lines: list[str] = []
    used = 0
    printed = 0
    for block, hits in blocks:
        last: int | None = None  # the last line printed from this file
        for hit in hits:
            rows = block.with_hit(hit)
            cur = last
            new: list[str] = []
            for n in sorted(k for k in rows if cur is None or k > cur):
                if context and ((cur is None and lines) or (cur is not None and n > cur + 1)):
                    new.append("--")
                new.append(_row(block.path, n, rows[n], None, n in block.hit_labels))
                cur = n
            size = _size(new)
            if used + size > budget:
                return Page("\n".join(lines), printed, True)
            used += size
            lines += new
            last = cur
            block.rows = rows
            block.hits.append(hit)
            printed += 1
    return Page("\n".join(lines), printed, False)
