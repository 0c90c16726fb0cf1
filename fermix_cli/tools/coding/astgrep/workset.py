"""ast_grep's work set: the files to parse (shared walker, or one explicit file), their bounded
loading and parsing, the output budget, and the metadata every result carries.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ....core.context import ToolContext
from ....core.errors import ToolError
from ....core.fsops import FileReader
from ....core.records import Record, field
from ....core.search.names import escaped, is_utf8, printable
from ....core.search.p4ignore import resolve_p4
from ....core.search.report import ignore_warnings
from ....core.search.ripgrep import Scope, list_files
from ....core.search.special import special_kind
from ..pathrules import display_path
from . import languages
from .languages import TreeTooComplex

FILE_MAX_BYTES = 256 * 1024
MAX_FILES = 10_000
CALL_BYTES_CAP = 128 * 1024 * 1024
OUTPUT_CAP = 65_536
NOTES_RESERVE = 1024
SKIPPED_LISTED = 20


# ----- the work set --------------------------------------------------------------------------


class Work(Record):
    """Counters shared by search and outline."""

    deadline: float
    files_scanned: int = 0
    bytes_read: int = 0
    unsupported: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_files: list[dict[str, Any]] = field(default_factory=list)
    skipped_dirs: int = 0  # of the `unreadable` paths, the directories
    stop: str | None = None  # file_cap | byte_cap | deadline
    languages: set[str] = field(default_factory=set)
    invalid_names: list[str] = field(default_factory=list)  # left out: names that are not UTF-8
    warnings: list[dict[str, Any]] = field(
        default_factory=list
    )  # bad ignore-file lines (report.ignore_warnings)

    def skip(self, path: str, reason: str, *, directory: bool = False) -> None:
        self.skipped[reason] += 1
        self.skipped_dirs += directory
        if len(self.skipped_files) < SKIPPED_LISTED:
            entry = {"path": path, "reason": reason}
            self.skipped_files.append({**entry, "kind": "directory"} if directory else entry)


def check_file_language(path: str, cwd: str, language: str | None, *, outline: bool) -> str:
    """The language of one explicitly named file, or invalid_language."""
    wanted = languages.OUTLINE_LANGUAGES if outline else languages.LANGUAGES
    lang = language or languages.language_for_path(path)
    if lang is None:
        raise ToolError(
            "invalid_language",
            f"Cannot tell the language of {display_path(path, cwd)} from its extension; pass language",
            {"path": path},
        )
    if lang not in wanted:
        raise ToolError(
            "invalid_language",
            f"outline supports {', '.join(sorted(wanted))}; {display_path(path, cwd)} is {lang}",
            {"language": lang},
        )
    return lang


def work_files(
    ctx: ToolContext, root: str, cwd: str, language: str | None, outline: bool, work: Work
) -> Iterator[tuple[str, str, str]]:
    """(shown path, canonical path, language) of each file to parse: the files `rg --files` lists."""
    wanted = languages.OUTLINE_LANGUAGES if outline else languages.LANGUAGES
    if not os.path.isdir(root):
        yield display_path(root, cwd), root, check_file_language(root, cwd, language, outline=outline)
        return
    scope = Scope(root=root, p4=resolve_p4(root, home=ctx.os_home))
    listed, run = list_files(scope, work.deadline, ctx.sandbox)
    work.warnings = ignore_warnings(run.bad_rules, lambda path: printable(display_path(path, cwd)))
    sandbox = ctx.sandbox
    check = sandbox.needs_checks_below(root)
    links = bool(listed) and sandbox.may_have_protected_links()
    for rel in sorted(listed):
        lang = languages.language_for_path(rel)
        if lang is None or lang not in wanted or (language is not None and lang != language):
            work.unsupported += 1
            continue
        full = os.path.join(root, rel)
        if (check and not sandbox.allows(full)) or (links and sandbox.is_link_to_protected(full)):
            continue
        if not is_utf8(rel):  # no answer can carry its name: left out, counted, named escaped
            work.invalid_names.append(rel)
            work.skip(escaped(display_path(full, cwd)), "invalid_utf8_name")
            continue
        yield display_path(full, cwd), full, lang
    # rg's `rg: ./PATH: Permission denied (os error 13)`: a directory (or file) it could not read.
    for line in run.errors:
        rel = line.removeprefix("rg: ").rpartition(": ")[0].removeprefix("./")
        full = os.path.join(root, rel)
        work.skip(display_path(full, cwd), "unreadable", directory=is_directory(full))
    if run.timed_out:
        work.stop = work.stop or "deadline"


def load_tree(reader: FileReader, shown: str, canonical: str, lang: str, work: Work) -> Any:
    """The parsed root of one file, or None when it is skipped (counted) or a budget stops the scan."""
    if work.files_scanned >= MAX_FILES:
        work.stop = "file_cap"
        return None
    if work.bytes_read >= CALL_BYTES_CAP:
        work.stop = "byte_cap"
        return None
    languages.check_deadline(work.deadline)
    try:
        data, longer = reader.read(canonical, min(FILE_MAX_BYTES, CALL_BYTES_CAP - work.bytes_read))
    except (OSError, ToolError):
        # A FIFO, socket or device is never read (it could block or not end): no permission to fix.
        work.skip(shown, "special" if special_kind(canonical) is not None else "unreadable")
        return None
    work.files_scanned += 1
    work.bytes_read += len(data)
    if longer:
        if work.bytes_read >= CALL_BYTES_CAP and len(data) < FILE_MAX_BYTES:
            work.stop = "byte_cap"
        work.skip(shown, "too_large")
        return None
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        work.skip(shown, "invalid_utf8")
        return None
    if "\x00" in source:
        work.skip(shown, "binary")
        return None
    try:
        parsed = languages.parse(source, lang, work.deadline)
    except TreeTooComplex:
        work.skip(shown, "too_complex")
        return None
    work.languages.add(lang)
    return source, parsed.root


def is_directory(path: str) -> bool:
    """`path` is a directory itself (not a symlink to one); False when it cannot be looked at."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


class Output(Record):
    limit: int
    lines: list[str] = field(default_factory=list)
    size: int = 0
    truncated: bool = False
    cut: str | None = None  # what stopped it: limit | output_cap

    def fits(self, rows: list[str]) -> int:
        """How many of `rows` can be added under the line limit and the byte cap."""
        n, size = 0, self.size
        for row in rows:
            size += len(row.encode("utf-8")) + 1
            if len(self.lines) + n >= self.limit:
                self.cut = self.cut or "limit"
                break
            if size > OUTPUT_CAP - NOTES_RESERVE:
                self.cut = self.cut or "output_cap"
                break
            n += 1
        return n

    def add(self, rows: list[str]) -> bool:
        """Add rows (a record cut at the boundary if need be); False once output is full."""
        n = self.fits(rows)
        for row in rows[:n]:
            self.lines.append(row)
            self.size += len(row.encode("utf-8")) + 1
        if n < len(rows):
            self.truncated = True
            return False
        return True


def common_result(work: Work, out: Output, op: str, *, bytes_known: bool = True) -> dict[str, Any]:
    """The metadata search and outline share (the caller adds `output`, `complete` and `omitted`).
    `bytes_known`: False when the CLI read the files (a tree search), so `bytes_read` is null."""
    dirs = work.skipped_dirs
    result: dict[str, Any] = {
        "operation": op,
        "returned": len(out.lines),
        "limit": out.limit,
        "truncated": out.truncated or work.stop in ("file_cap", "byte_cap"),
        "partial": work.stop is not None or sum(work.skipped.values()) > 0,
        "timed_out": work.stop == "deadline",
        "scan_stop": work.stop,
        "files_scanned": work.files_scanned,
        "bytes_read": work.bytes_read if bytes_known else None,
        "files_skipped": sum(work.skipped.values()) - dirs,
        "directories_skipped": dirs,
        "skip_reasons": dict(work.skipped),
        "skipped_files": work.skipped_files,
        "files_unsupported": work.unsupported,
        "languages": sorted(work.languages),
    }
    if work.warnings:
        result["warnings"] = work.warnings
    return result


def with_notes(text: str, lines: list[str]) -> str:
    """`text`, then a blank line and the notes (just the notes when there is no text)."""
    if not lines:
        return text
    return f"{text}\n\n" + "\n".join(lines) if text else "\n".join(lines)
