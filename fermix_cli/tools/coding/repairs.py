"""hash_edit's automatic repairs (R1–R4): echoed boundary rows, kept closers, insert landing shifts."""

from __future__ import annotations

import os
from collections.abc import Sequence

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.blocks import is_pure_closer
from fermix_cli.tools.coding.splice import POST, PRE, SWAP, LineEdit

from ...core.records import replace

_HASH = {".py", ".pyi", ".sh", ".bash", ".rb", ".yaml", ".yml", ".toml", ".mk"}
_SLASH = {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".js", ".mjs", ".cjs", ".jsx", ".ts"}
_SLASH |= {".tsx", ".mts", ".cts", ".rs", ".go", ".java", ".kt", ".kts", ".swift", ".scala"}
_DASH = {".sql", ".lua", ".hs"}
_DELTA = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _comment_style(path: str) -> tuple[str | None, bool]:
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1].lower()
    if ext in _HASH or name in ("Makefile", "makefile"):
        return "#", False
    if ext in _SLASH:
        return "//", True
    if ext in _DASH:
        return "--", False
    return None, False


def balance(lines: Sequence[str], path: str) -> int:
    """Net count of `()`, `[]` and `{}`, skipping one-line string literals and comments."""
    line_comment, block_comments = _comment_style(path)
    rust = path.endswith(".rs")
    total = 0
    in_block = False
    for line in lines:
        quote = None
        i = 0
        while i < len(line):
            ch = line[i]
            if in_block:
                if line.startswith("*/", i):
                    in_block = False
                    i += 1
            elif quote is not None:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = None
            elif line_comment and line.startswith(line_comment, i):
                break
            elif block_comments and line.startswith("/*", i):
                in_block = True
                i += 1
            elif ch in '"`' or (ch == "'" and (not rust or _char_literal(line, i))):
                quote = ch
            else:
                total += _DELTA.get(ch, 0)
            i += 1
    return total


def _char_literal(line: str, i: int) -> bool:
    """In Rust a `'` opens a char literal only when it closes right away (not a lifetime)."""
    return line[i + 2 : i + 3] == "'" or (line[i + 1 : i + 2] == "\\" and "'" in line[i + 3 : i + 10])


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _first_indent(body: Sequence[str]) -> int | None:
    return next((_indent(row) for row in body if row.strip()), None)


def apply_repairs(
    edits: Sequence[LineEdit], lines: Sequence[str], path: str
) -> tuple[list[LineEdit], list[str]]:
    """Apply R1–R4 to edits numbered against `lines`; return the repaired edits and their warnings."""
    warnings: list[str] = []
    repaired: list[LineEdit] = []
    real = len(lines) - 1 if len(lines) > 1 and lines[-1] == "" else len(lines)
    for index, edit in enumerate(edits):
        others = [e for i, e in enumerate(edits) if i != index]
        targeted = {n for e in others if e.kind == SWAP for n in range(e.start, e.end + 1)}
        anchored = targeted | {e.start for e in others if e.kind in (PRE, POST)}
        if edit.kind == SWAP and edit.label.startswith("SWAP ") and edit.body:
            edit = _repair_swap(edit, lines, real, targeted, path, warnings)
        elif edit.kind == POST and edit.label.startswith("INS.POST "):
            edit = _shift_post(edit, lines, real, anchored, warnings)
        elif edit.kind == POST and edit.block is not None:
            edit = _shift_into_block(edit, lines, anchored, warnings)
        repaired.append(edit)
    return repaired, warnings


def _repair_swap(
    edit: LineEdit, lines: Sequence[str], real: int, targeted: set[int], path: str, warnings: list[str]
) -> LineEdit:
    a, b, body = edit.start, edit.end, list(edit.body)
    name = f"SWAP {a}.={b}"

    def echoes(row: str, number: int) -> bool:
        if not (1 <= number <= real) or number in targeted or not row.strip():
            return False
        return row.rstrip() == lines[number - 1].rstrip()

    span = list(lines[a - 1 : b])
    top, bottom = echoes(body[0], a - 1), echoes(body[-1], b + 1)
    if len(body) >= 3 and top and bottom:
        outer_flat = balance([lines[a - 2]], path) == 0 and balance([lines[b]], path) == 0
        if outer_flat or balance(body[1:-1], path) == balance(span, path):
            warnings.append(
                f"{name}: dropped body rows that repeated kept lines {a - 1} and {b + 1} "
                "(lines outside the range are not replaced)."
            )
            return replace(edit, body=tuple(body[1:-1]))
    want = balance(span, path)
    if balance(body, path) == want:
        return edit
    drop: tuple[int, int] | None = None
    unfixable: tuple[int, int] | None = None
    if len(body) >= 2 and top != bottom:
        row, number = (1, a - 1) if top else (len(body), b + 1)
        rest = body[1:] if top else body[:-1]
        if balance(rest, path) != want:
            unfixable = (row, number)
        elif a != b or is_pure_closer(lines[number - 1]):
            drop = (row, number)
    keep = _kept_closers(a, b, body, lines, path)
    if drop is not None and keep is not None:
        raise ToolError(
            "ambiguous_repair",
            f"{name}: rejected: ambiguous closing lines — the body could drop its repeated closer or keep "
            "the range's closer. Resend the range with the body as exactly its final content.",
        )
    if drop is not None:
        row, number = drop
        warnings.append(
            f"{name}: dropped body row {row}, which repeated kept line {number} outside the range."
        )
        return replace(edit, body=tuple(body[1:] if row == 1 else body[:-1]))
    if keep is not None:
        warnings.append(
            f"{name}: kept closing line(s) {keep}-{b} that the body did not restate; "
            f"replaced {a}-{keep - 1} only."
        )
        return replace(edit, end=keep - 1)
    if unfixable is not None:
        row, number = unfixable
        raise ToolError(
            "inconsistent_echo",
            f"{name}: rejected: body row {row} repeats line {number}, which is outside the range, but dropping "
            f"it does not make the edit consistent. Widen the range to cover line {number} and restate its "
            "final content, or remove the repeated row.",
        )
    return edit


def _kept_closers(a: int, b: int, body: Sequence[str], lines: Sequence[str], path: str) -> int | None:
    """R3: the first line N of a trailing pure-closer run N..B whose keeping balances the body."""
    n = b
    while n > a and is_pure_closer(lines[n - 1]):
        tail = [line.rstrip() for line in lines[n - 1 : b]]
        ends_with = [row.rstrip() for row in body[-len(tail) :]] == tail
        if not ends_with and balance(body, path) == balance(lines[a - 1 : n - 1], path):
            return n
        n -= 1
    return None


def _shift_post(
    edit: LineEdit, lines: Sequence[str], real: int, anchored: set[int], warnings: list[str]
) -> LineEdit:
    """R4: an INS.POST body shallower than its anchor moves below the following closing lines."""
    n = edit.start
    depth = _first_indent(edit.body)
    if depth is None or n > real or depth >= _indent(lines[n - 1]):
        return edit
    j = n
    while j + 1 <= real and j + 1 not in anchored and is_pure_closer(lines[j]) and _indent(lines[j]) >= depth:
        j += 1
    if j == n:
        return edit
    warnings.append(
        f"INS.POST {n}: body indented shallower than line {n}; moved it below the closing line(s) to line {j}."
    )
    return replace(edit, start=j, end=j)


def _shift_into_block(
    edit: LineEdit, lines: Sequence[str], anchored: set[int], warnings: list[str]
) -> LineEdit:
    """R4: an INS.BLK.POST body deeper than the block's closing line lands just before that closer."""
    assert edit.block is not None
    end = edit.block[1]
    depth = _first_indent(edit.body)
    closer = lines[end - 1]
    if depth is None or end in anchored or not is_pure_closer(closer) or depth <= _indent(closer):
        return edit
    warnings.append(
        f"{edit.label}: body indented deeper than the block's closing line; "
        f"placed it inside the block before line {end}."
    )
    return replace(edit, kind=PRE, start=end, end=end)
