"""What an ast_grep answer leaves out, and how to get it: the `omitted` entries and the `[incomplete: …]`
lines every search tool's answer carries (`core/search/report.py`)."""

from __future__ import annotations

from ....core.search.names import printable
from ....core.search.report import Omission, invalid_name_omission, timeout_omission
from .workset import Output, Work

# Why files were skipped, and what to do about it: (search, outline) where the two differ.
_SKIP_HOW: dict[str, tuple[str, str]] = {
    "invalid_utf8": (
        "their text is not UTF-8, which the ast-grep parser cannot read; search them with grep",
        "their text is not UTF-8, which the parser cannot read; search them with grep",
    ),
    "unreadable": ("they could not be read; fix their permissions",) * 2,
    "too_large": (
        "the ast-grep CLI's walk skips a file over 3,000,000 bytes and 200,000 lines; name the file as "
        "path to search it (up to 16 MiB)",
        "outline reads files up to 256 KiB; search the file with a pattern (read whole), or read it",
    ),
    "not_scanned": (
        "files of a known language the ast-grep CLI did not scan; name one as path",
        "files of a known language that were not parsed; name one as path",
    ),
    "too_large_to_parse": (
        "over 16 MiB: the ast-grep parser needs about 150 times a file's size in memory; search it with grep",
    )
    * 2,
    "special": ("they are FIFOs, sockets or devices, not regular files, so they were not read",) * 2,
    "binary": ("", "they hold a NUL byte (binary data), so they were not parsed"),
    "too_complex": ("", "their syntax tree is over the parser's depth or node limit; read the file instead"),
}


def _skipped(work: Work, op: str) -> list[Omission]:
    out = []
    for reason, n in sorted(work.skipped.items()):
        if reason == "invalid_utf8_name" or not n:
            continue  # its own entry (names.invalid_name_omission)
        known = _SKIP_HOW.get(reason)
        how = (known[0] if op == "search" else known[1]) if known else ""
        how = how or f"the ast-grep CLI skipped them ({reason}); name one as path to search it"
        listed = [f for f in work.skipped_files if f["reason"] == reason]
        sample = ", ".join(
            printable(f["path"])
            + ("/" if f.get("kind") == "directory" else "")
            + (f": {f['error']}" if "error" in f else "")
            for f in listed[:3]
        )
        dirs = sum(1 for f in listed if f.get("kind") == "directory")
        unit = "path" if dirs else "file"
        out.append(Omission(reason, n, unit, f"{how} (e.g. {sample})" if sample else how))
    return out


def omissions(
    work: Work,
    out: Output,
    op: str,
    deadline_s: float,
    *,
    more: int | None = None,
    pattern_errors: dict[str, str] | None = None,
    replacements_skipped: int = 0,
) -> list[Omission]:
    """Everything the answer leaves out (`more`: matches found but not shown, for search)."""
    found: list[Omission] = []
    unit = "match" if op == "search" else "entry"
    if more or (op == "outline" and out.truncated):
        if out.cut == "output_cap":
            how = "stopped at the 64 KiB output cap; narrow path (or the pattern)"
        else:
            how = f"stopped at limit={out.limit}; raise limit (at most 500) or narrow path"
        found.append(Omission(out.cut or "limit", more if op == "search" else None, unit, how))
    if replacements_skipped:
        found.append(
            Omission(
                "replacement_cap",
                replacements_skipped,
                "match",
                "their replacement passes the 1 MiB preview cap, so they are not previewed; narrow the "
                "pattern or path",
            )
        )
    if pattern_errors:
        langs = ", ".join(sorted(pattern_errors))
        found.append(
            Omission(
                "pattern_error",
                len(pattern_errors),
                "language",
                f"the pattern does not compile for {langs} (see pattern_errors); pass language to search "
                "one language, or change the pattern",
            )
        )
    found += _skipped(work, op)
    unnamed = invalid_name_omission(work.invalid_names, len(work.invalid_names), "file")
    if unnamed is not None:
        found.append(unnamed)
    if work.stop == "deadline":
        found.append(timeout_omission(deadline_s, "file", "the path or pattern, or pass language"))
    elif work.stop in ("file_cap", "byte_cap"):
        found.append(
            Omission(
                work.stop,
                None,
                "file",
                "outline stopped at its 10,000-file / 128 MiB limit; narrow path or pass language",
            )
        )
    return found


def notes(found: list[Omission], pattern_errors: dict[str, str] | None = None) -> list[str]:
    """The `[incomplete: …]` lines, with a line per language the pattern does not compile for."""
    lines = [o.note() for o in found if o.reason != "pattern_error"]
    for lang, err in sorted((pattern_errors or {}).items()):
        lines.append(f"[incomplete: pattern does not compile for {lang}: {err}]")
    return lines
