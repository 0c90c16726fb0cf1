"""Paths whose names are not UTF-8 (`bad\\xffname.txt`): left out of a search's answer, counted in
`omitted` (reason `invalid_utf8_name`) and named escaped, never shown lossily.

Python holds such a name with surrogate escapes. An answer cannot carry it: printed as JSON its raw
byte makes the output invalid UTF-8, and with U+FFFD in its place it names a file that does not
exist; nor can a tool argument carry it back (arguments with lone surrogates are refused). So, as
`grep` does with a matching line that is not UTF-8, the answer leaves it out, says how many, and
names the first three with `\\xNN` escapes, which a shell's `$'…'` quoting reads back.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .report import Omission


def is_utf8(path: str) -> bool:
    """False for a name decoded with surrogate escapes (bytes that are not UTF-8)."""
    if path.isascii():
        return True
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(path: str) -> str:
    """`path` with each byte that is not UTF-8 as `\\xNN`."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def shown_path(path: str) -> str:
    """`path` escaped; one that holds U+FFFD and does not exist came from rg's log, which shows names
    that are not UTF-8 lossily (its bytes are lost), and is marked so."""
    if "\ufffd" in path and not os.path.lexists(path):
        return f"{path} (its name is not UTF-8; U+FFFD stands for bytes rg's log did not keep)"
    return escaped(path)


def invalid_name_omission(
    paths: list[str], count: int, unit: str, show: Callable[[str], str] = escaped
) -> Omission | None:
    """The `invalid_utf8_name` entry for `paths` (what they hold: `count` of `unit`), or None."""
    if not paths:
        return None
    n = len(paths)
    sample = ", ".join(show(p) for p in sorted(paths)[:3])
    return Omission(
        "invalid_utf8_name",
        count,
        unit,
        f"{n:,} {'name is' if n == 1 else 'names are'} not UTF-8, which no answer or tool argument can "
        f"carry, e.g. {sample} (bytes shown as \\xNN); reach them in a shell, where $'…' quoting reads "
        "those escapes",
    )
