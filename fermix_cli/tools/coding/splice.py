"""Applying lowered line edits to a file's lines, always against the original numbering."""

from __future__ import annotations

from collections.abc import Sequence

from fermix_cli.core.errors import ToolError

from ...core.records import Record, field, replace

SWAP = "SWAP"
PRE = "INS.PRE"
POST = "INS.POST"
HEAD = "INS.HEAD"
TAIL = "INS.TAIL"


class LineEdit(Record, frozen=True):
    """A hunk lowered to a plain line op. A SWAP with an empty body deletes `start`..`end`.

    `label` is the op as written (for messages); `block` is the resolved block of a block op; `anchors`
    are the original lines recovery must map (range lines, block lines, insert anchors).
    """

    kind: str
    start: int
    end: int
    body: tuple[str, ...]
    line: int
    label: str
    block: tuple[int, int] | None = None

    @property
    def anchors(self) -> tuple[int, ...]:
        if self.kind in (HEAD, TAIL):
            return ()
        if self.block is not None:
            return tuple(range(self.block[0], self.block[1] + 1))
        if self.kind == SWAP:
            return tuple(range(self.start, self.end + 1))
        return (self.start,)

    def shifted(self, offset: int) -> LineEdit:
        if self.kind in (HEAD, TAIL):
            return self
        block = None if self.block is None else (self.block[0] + offset, self.block[1] + offset)
        return replace(self, start=self.start + offset, end=self.end + offset, block=block)


class SpliceResult(Record):
    """The edited lines with provenance: `origin[j]` is the original line of output row j+1 (None = new).

    `deleted_at` lists 1-based output positions where lines vanished with nothing in their place.
    """

    lines: list[str]
    origin: list[int | None] = field(default_factory=list)
    deleted_at: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def new_number(self) -> dict[int, int]:
        """Map each kept original line to its 1-based number after the edit."""
        return {old: index + 1 for index, old in enumerate(self.origin) if old is not None}


def check_edits(edits: Sequence[LineEdit], count: int) -> None:
    """Reject anchors outside 1..count and two edits that delete or replace one line."""
    for edit in edits:
        if edit.kind in (HEAD, TAIL):
            continue
        for number in (edit.start, edit.end):
            if not 1 <= number <= count:
                raise ToolError(
                    "line_out_of_range",
                    f"Line {number} does not exist (file has {count} lines)",
                    {"line": number, "lines": count},
                )
    owner: dict[int, int] = {}
    for edit in edits:
        if edit.kind != SWAP:
            continue
        for number in range(edit.start, edit.end + 1):
            if number in owner:
                raise ToolError(
                    "overlapping_hunks",
                    f"line {edit.line}: anchor line {number} is already targeted by another hunk on line "
                    f"{owner[number]}. Issue ONE hunk per range; payload is only the final desired content, "
                    "never a before/after pair.",
                    {"line": edit.line, "anchor": number},
                )
            owner[number] = edit.line


def splice(lines: Sequence[str], edits: Sequence[LineEdit]) -> SpliceResult:
    """Apply `edits` (checked by `check_edits`) to `lines`, the text split on `\\n`.

    At one original line: INS.PRE rows, the SWAP body starting there, the line unless deleted, then
    INS.POST rows. INS.HEAD rows come first and INS.TAIL rows after the last real line. The phantom
    element after a final newline is never deleted and stays last; rows aimed at it land before it.
    An empty file's single element is replaced by INS.HEAD/INS.TAIL rows.
    """
    count = len(lines)
    phantom = count > 1 and lines[-1] == ""
    pre: dict[int, list[str]] = {}
    post: dict[int, list[str]] = {}
    bodies: dict[int, tuple[str, ...]] = {}
    deleted: set[int] = set()
    head: list[str] = []
    tail: list[str] = []
    for edit in edits:
        if edit.kind == HEAD:
            head.extend(edit.body)
        elif edit.kind == TAIL:
            tail.extend(edit.body)
        elif edit.kind == PRE:
            pre.setdefault(edit.start, []).extend(edit.body)
        elif edit.kind == POST:
            post.setdefault(edit.start, []).extend(edit.body)
        else:
            bodies[edit.start] = edit.body
            deleted.update(range(edit.start, edit.end + 1))
    result = SpliceResult([])
    empty_file = count == 1 and lines[0] == "" and bool(head or tail)

    def add(rows: Sequence[str]) -> None:
        result.lines.extend(rows)
        result.origin.extend([None] * len(rows))

    add(head)
    for number in range(1, count + 1):
        is_phantom = phantom and number == count
        add(pre.get(number, ()))
        body = bodies.get(number)
        if body is not None:
            add(body)
        if is_phantom:
            add(post.get(number, ()))
            add(tail)
        if is_phantom or not (number in deleted or empty_file):
            result.lines.append(lines[number - 1])
            result.origin.append(number)
        elif body == () and number in bodies:
            result.deleted_at.append(len(result.lines) + 1)
        if not is_phantom:
            add(post.get(number, ()))
    if not phantom:
        add(tail)
    return result
