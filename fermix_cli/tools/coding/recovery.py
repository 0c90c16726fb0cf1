"""Stale-tag recovery: remapping anchors from a tagged snapshot onto the live file, and the mismatch error."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashline import context_rows
from fermix_cli.tools.coding.splice import LineEdit

RECOVERED_EXTERNAL = (
    "Recovered from a stale file hash using a previous read snapshot "
    "(file changed externally between read and edit)."
)
RECOVERED_EARLIER = (
    "Recovered from a stale file hash using an earlier in-session snapshot "
    "(a prior edit in this session advanced the hash)."
)
RECOVERED_REMAPPED = (
    "Recovered by remapping stale line anchors to unchanged current lines "
    "(file changed since the tagged read). Verify the diff matches your intent."
)
EDGE_DRIFT = (
    "Applied the `INS.HEAD:`/`INS.TAIL:` edit despite a stale snapshot tag (file changed since your read) "
    "— head/tail position is content-independent. Re-read if the drift was unexpected."
)


def line_map(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """Map 1-based lines of `old` to `new` where they sit in equal diff blocks (trailing space ignored)."""
    matcher = difflib.SequenceMatcher(
        None, [line.rstrip() for line in old], [line.rstrip() for line in new], autojunk=False
    )
    mapping: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapping[block.a + k + 1] = block.b + k + 1
    return mapping


def _occurrences(lines: Sequence[str], index: dict[str, list[int]], run: Sequence[str]) -> int:
    size = len(run)
    return sum(1 for i in index.get(run[0], ()) if list(lines[i : i + size]) == list(run))


def _agrees(number: int, offset: int, snap: Sequence[str], mapping: dict[int, int]) -> bool:
    if number < 1 or number > len(snap):
        return True  # a file edge counts as agreeing
    return number in mapping and mapping[number] - number == offset


def remap_offset(edits: Sequence[LineEdit], snap: Sequence[str], mapping: dict[int, int]) -> int | None:
    """The single offset that moves every anchor of `edits` onto the live file, or None.

    Every anchored line must map; a run of anchors whose text is unique in the snapshot needs one
    agreeing neighbour, a duplicated run both (a file edge agrees); all anchors share one offset.
    """
    offset: int | None = None
    stripped = [line.rstrip() for line in snap]
    index: dict[str, list[int]] = {}
    for position, line in enumerate(stripped):
        index.setdefault(line, []).append(position)
    for edit in edits:
        anchors = edit.anchors
        if not anchors:
            continue
        for number in anchors:
            if number not in mapping:
                return None
            shift = mapping[number] - number
            if offset is None:
                offset = shift
            elif shift != offset:
                return None
        first, last = min(anchors), max(anchors)
        assert offset is not None
        neighbours = [_agrees(n, offset, snap, mapping) for n in (first - 1, last + 1)]
        unique = _occurrences(stripped, index, stripped[first - 1 : last]) == 1
        if not (any(neighbours) if unique else all(neighbours)):
            return None
    return offset


def mismatch_error(
    path: str, tag: str, live_tag: str, known: bool, live_lines: list[str], anchors: list[int]
) -> ToolError:
    """The stale-tag rejection, with context rows from the current file around the written anchors."""
    if known:
        head = (
            f"Edit rejected for {path}: file changed between read and edit.\n"
            f"Section is bound to #{tag}, but the current file hashes to #{live_tag}. If a prior edit in "
            "this session modified this file, copy the [path#newhash] header from that edit's response; "
            "otherwise re-read the file with `read` to refresh the tag before retrying."
        )
    else:
        head = (
            f"Edit rejected for {path}: hash #{tag} is not from this session.\n"
            f"The current file hashes to #{live_tag}. Re-read the file with `read` to copy a current "
            "[path#tag] header — never invent the tag and never reuse one from a prior session."
        )
    context = context_rows(live_lines, anchors)
    message = head + (f"\n\n{context}" if context else "")
    return ToolError("stale_tag", message, {"path": path, "tag": tag, "current_tag": live_tag})
