"""Paths whose names are not UTF-8 (`bad\\xffname.txt`): left out of a search's answer, counted in
`omitted` (reason `invalid_utf8_name`) and named escaped, never shown lossily.

Python holds such a name with surrogate escapes. An answer cannot carry it: printed as JSON its raw
byte makes the output invalid UTF-8, and with U+FFFD in its place it names a file that does not
exist; nor can a tool argument carry it back (arguments with lone surrogates are refused). So, as
`grep` does with a matching line that is not UTF-8, the answer leaves it out, says how many, and
names the first three with `\\xNN` escapes, which a shell's `$'…'` quoting reads back.
"""

from __future__ import annotations

import functools
import os
import re


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


@functools.cache
def _classes() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """What a shown name escapes: control characters (C0, DEL, C1), line and paragraph separators, and
    bytes that are not UTF-8 (held as surrogate escapes); and, once any of those is, backslashes.

    Compiled on first use: classes reaching past Latin-1 cost `re` about a millisecond to compile,
    which a search whose names are all plain ASCII (nearly every one) need not pay at start-up."""
    unshowable = "\x00-\x1f\x7f-\x9f\u2028\u2029\udc80-\udcff"
    return re.compile(f"[{unshowable}]"), re.compile(f"[{unshowable}\\\\]")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    code = ord(c)
    if c == "\\":
        return "\\\\"
    if code >= 0xDC80:  # a byte that is not UTF-8 (surrogate escape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def printable(name: str) -> str:
    """`name` as the text a model or a person reads shows it, on one line whatever it holds: each
    control character as `\\xNN` (a line break is `\\x0a`), C1 controls and U+2028/U+2029 as `\\uNNNN`,
    each byte that is not UTF-8 as `\\xNN`, and then backslashes doubled, so a shell's `$'…'` quoting
    reads the name back. A name with none of those is shown as it is. (JSON carries names as they are.)"""
    if name.isascii() and name.isprintable():
        return name
    unshowable, escaped_ = _classes()
    if unshowable.search(name) is None:
        return name
    return escaped_.sub(_escape, name)


def shown_path(path: str) -> str:
    """`path` as `printable` shows it; one that holds U+FFFD and does not exist came from rg's log,
    which shows names that are not UTF-8 lossily (its bytes are lost), and is marked so."""
    if "\ufffd" in path and not os.path.lexists(path):
        return f"{printable(path)} (its name is not UTF-8; U+FFFD stands for bytes rg's log did not keep)"
    return printable(path)
