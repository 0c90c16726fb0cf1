"""Whether a search result is complete, and when not, what was left out and how to get the rest.

Every search tool's result carries `complete` (true only when every match or path the search found
is in this answer) and `omitted`: one entry per reason, with how many and what to do about it. The
same entries become `[incomplete: …]` lines in the text a model sees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..records import Record
from .names import printable


class Omission(Record, frozen=True):
    reason: str  # page | per_file_cap | output_cap | binary | invalid_utf8 | unreadable | timeout | ...
    count: int | None  # None: not known (the search stopped before it could count)
    unit: str  # what was left out, singular: match, line, file, path
    how: str  # how to get the rest

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "count": self.count, "unit": self.unit, "how": self.how}

    def note(self) -> str:
        if self.count is None:
            what = f"an unknown number of {_plural(self.unit)}"
        else:
            what = f"{self.count:,} {self.unit if self.count == 1 else _plural(self.unit)}"
        return f"[incomplete: {what} left out ({self.reason}); {self.how}]"


def _plural(unit: str) -> str:
    if unit.endswith("y") and unit[-2:-1] not in ("a", "e", "i", "o", "u"):
        return unit[:-1] + "ies"  # directory, entry
    return unit + ("es" if unit.endswith(("ch", "sh", "s", "x")) else "s")


def completeness(omissions: list[Omission]) -> dict[str, Any]:
    return {"complete": not omissions, "omitted": [o.to_dict() for o in omissions]}


def notes(omissions: list[Omission]) -> list[str]:
    return [o.note() for o in omissions]


def timeout_omission(seconds: float, what: str, narrow: str = "the path or pattern") -> Omission:
    """`what` (singular) the search may have left out; `narrow`: what the caller can narrow. The
    tools that use it have a fixed deadline, so there is no limit to raise."""
    return Omission(
        "timeout",
        None,
        what,
        f"the search stopped at its {seconds:g} s limit, which is fixed; narrow {narrow}",
    )


class BadIgnoreRule(Record, frozen=True):
    """A line of an ignore file (`.gitignore`, `.ignore`, ...) that rg could not parse. rg warns and
    goes on without that rule, as Git does with a pattern it cannot read: nothing is left out of the
    search because of it (what the rule meant to exclude is searched), so it is a warning, not an
    omission."""

    path: str  # the ignore file, absolute
    line: int  # 1-based
    error: str  # rg's words, e.g. "error parsing glob 'a[': unclosed character class; missing ']'"


MAX_WARNINGS = 20  # bad ignore-file lines listed in `warnings`


def ignore_warnings(rules: list[BadIgnoreRule], show: Callable[[str], str] = str) -> list[dict[str, Any]]:
    """The `warnings` entries for ignore-file lines rg could not parse, each file named as `show`
    shows it: at most MAX_WARNINGS, the last of which then says how many more there are (`more`)."""
    out: list[dict[str, Any]] = []
    for r in rules[:MAX_WARNINGS]:
        message = (
            f"line {r.line} of {printable(show(r.path))} does not parse ({r.error}); rg ignored that rule, so the files "
            "it was meant to leave out were searched; fix the line"
        )
        out.append({"reason": "bad_ignore_rule", "path": show(r.path), "line": r.line, "message": message})
    more = len(rules) - len(out)
    if more:
        out[-1]["more"] = more
        out[-1]["message"] += f" ({more:,} more bad lines of ignore files are not listed)"
    return out


def warning_notes(warnings: list[dict[str, Any]]) -> list[str]:
    """The `[warning: …]` lines of the text a model sees: up to three in full, then one for the rest."""
    if len(warnings) <= 3:
        return [f"[warning: {w['message']}]" for w in warnings]
    rest = warnings[2:]
    n = len(rest) + sum(w.get("more", 0) for w in rest)
    sample = ", ".join(f"{w['path']} line {w['line']}" for w in rest[:3])
    return [f"[warning: {w['message']}]" for w in warnings[:2]] + [
        f"[warning: {n:,} more lines of ignore files do not parse (e.g. {sample}); rg ignored those rules "
        "too, so the files they were meant to leave out were searched; fix them]"
    ]


def unreadable_omission(errors: list[str]) -> Omission | None:
    if not errors:
        return None
    sample = "; ".join(printable(e.removeprefix("rg: ")) for e in errors[:3])
    return Omission(
        "unreadable",
        len(errors),
        "path",
        f"they could not be read ({sample}); fix their permissions to search them",
    )


def binary_omission(
    not_searched: list[str],
    stopped: list[str],
    how_to_search: str,
    show: Callable[[str], str] = str,
    *,
    more: bool = False,
) -> Omission | None:
    """Files rg met binary data in: `not_searched` (a NUL byte in the first block it read, so it did
    not search them, as every grep does) and `stopped` (a NUL after their first matches: searched up
    to it). The first three paths (by path) are named, as `show` shows them. `more`: rg's log of them
    passed its cap, so there are more than these (the count is a floor, and the answer says so)."""
    total = len(not_searched) + len(stopped)
    if not total and not more:
        return None
    parts = []
    if more:
        parts.append(
            f"at least {total:,} files: rg's log of binary files passed its cap and the rest were not counted"
        )
    if not_searched:
        n = len(not_searched)
        verbs = ("holds", "was") if n == 1 else ("hold", "were")
        parts.append(f"{n:,} {verbs[0]} binary data from the start (a NUL byte) and {verbs[1]} not searched")
    if stopped:
        n = len(stopped)
        parts.append(
            f"{n:,} {'was' if n == 1 else 'were'} searched only up to a NUL byte after the first matches"
        )
    sample = ", ".join(show(p) for p in sorted(not_searched + stopped)[:3])
    example = f" (e.g. {sample})" if sample else ""
    return Omission("binary", total, "file", f"{'; '.join(parts)}; {how_to_search}{example}")


def invalid_name_omission(
    paths: list[str], count: int, unit: str, show: Callable[[str], str] = printable
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
