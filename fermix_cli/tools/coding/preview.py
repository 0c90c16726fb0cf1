"""The compact post-edit preview in a hash_edit response."""

from __future__ import annotations

from fermix_cli.tools.coding.hashline import clip_row
from fermix_cli.tools.coding.splice import SpliceResult

CONTEXT = 2
COLLAPSE_OVER = 5


def preview_rows(result: SpliceResult) -> tuple[list[str], set[int]]:
    """Post-edit `N:TEXT` rows around every added line and pure deletion, and the row numbers shown.

    Windows of ±2 rows merge when they overlap; separate regions get a blank row between them; a run of
    more than 5 added lines shows its first 2, a `…` row and its last 2.
    """
    lines = result.lines
    real = len(lines) - 1 if len(lines) > 1 and lines[-1] == "" else len(lines)
    if real == 1 and lines[0] == "":
        real = 0
    added = [i + 1 for i, origin in enumerate(result.origin) if origin is None and i < real]
    wanted: set[int] = set()
    for number in added:
        wanted.update(range(number - CONTEXT, number + CONTEXT + 1))
    for position in result.deleted_at:
        wanted.update(range(position - CONTEXT, position + CONTEXT))
    hidden: set[int] = set()
    run: list[int] = []
    for number in [*added, -1]:
        if run and number != run[-1] + 1:
            if len(run) > COLLAPSE_OVER:
                hidden.update(run[CONTEXT:-CONTEXT])
            run = []
        run.append(number)
    rows: list[str] = []
    shown: set[int] = set()
    previous: int | None = None
    for number in sorted(n for n in wanted if 1 <= n <= real):
        if number in hidden:
            if previous not in hidden:
                rows.append("…")
        else:
            if previous is not None and number != previous + 1:
                rows.append("")
            rows.append(f"{number}:{clip_row(lines[number - 1])}")
            shown.add(number)
        previous = number
    return rows, shown
