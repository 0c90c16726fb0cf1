"""ast_grep: embedded AST search, read-only rewrite previews, and outlines (ast-grep-py, no CLI).

Directories use the shared workspace walker; a file named explicitly bypasses the ignore filters
but not the path checks. Only complete UTF-8 files up to 256 KiB are parsed, and trees, patterns,
files, bytes, time and output are all bounded. Nothing is ever written, and no project
`sgconfig.yml`, custom grammar or rule file is loaded.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ...core.codingpaths import display_path, resolve_source
from ...core.context import ToolContext
from ...core.errors import ToolError
from ...core.fsops import FileReader
from ...core.p4ignore import resolve_p4
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ...core.walk import WalkOptions, WalkStats, walk
from . import ast_lang
from .ast_lang import DeadlinePassed, TreeTooComplex, library_error
from .outline import OutlineOptions, check_filter_size, compile_name, entry, parse_types, selected, symbols

PATTERN_MAX_BYTES = 4096
FILE_MAX_BYTES = 256 * 1024
MAX_FILES = 10_000
CALL_BYTES_CAP = 128 * 1024 * 1024
DEADLINE_S = 30.0
OUTPUT_CAP = 65_536
DEFAULT_LIMIT, MAX_LIMIT = 100, 500
REPLACEMENT_CAP = 1024 * 1024
NOTES_RESERVE = 1024
SKIPPED_LISTED = 20
OUTLINE_ONLY = ("items", "view", "name", "symbol_type", "pub_members")


class AstGrepParams(Params):
    operation: Annotated[
        Literal["search", "outline"] | None,
        Field(description="search (default) or outline; if given it must be one of the two, not null"),
    ] = None
    pattern: Annotated[
        str | None,
        Field(
            description="search: an ast-grep pattern such as `console.log($A)` (at most 4 KiB); outline: omit"
        ),
    ] = None
    rewrite: Annotated[
        str | None,
        Field(
            description="search: replacement for a read-only diff preview, may use $A / $$$ARGS; outline: omit"
        ),
    ] = None
    path: Annotated[
        str | None, Field(max_length=4096, description="File or directory (default: the working directory)")
    ] = None
    language: Annotated[
        str | None,
        Field(max_length=64, description="Language name; default: inferred from each file's extension"),
    ] = None
    limit: Annotated[
        int | None,
        Field(
            ge=1,
            le=2**31,
            description="search: output lines; outline: top-level entries (default 100, max 500)",
        ),
    ] = None
    items: Annotated[
        Literal["structure", "exports", "imports", "all"] | None,
        Field(description="outline only: structure (default), exports, imports or all"),
    ] = None
    view: Annotated[
        Literal["digest", "names", "signatures", "expanded"] | None,
        Field(description="outline only: digest (default), names, signatures or expanded"),
    ] = None
    name: Annotated[
        str | None,
        Field(
            description="outline only: regex over each top-level name, signature and first line (<= 512 bytes)"
        ),
    ] = None
    symbol_type: Annotated[
        str | None,
        Field(description="outline only: comma-separated types, e.g. `function,class` (<= 512 bytes)"),
    ] = None
    pub_members: Annotated[
        bool | None, Field(description="outline only: list only public members (default false)")
    ] = None

    @model_validator(mode="before")
    @classmethod
    def _operation_not_null(cls, value: Any) -> Any:
        # Every other field treats null as omitted; `operation`, if present, must name a mode.
        if isinstance(value, dict) and "operation" in value and value["operation"] is None:
            raise ToolError(
                "invalid_input",
                'operation may not be null: omit it (search) or pass "search" or "outline"',
                {"errors": [{"field": "operation", "message": "null is not allowed"}]},
            )
        return value


def _mode_error(op: str, fields: list[str], example: str) -> ToolError:
    names = ", ".join(fields)
    return ToolError(
        "invalid_input",
        f"{op} does not take {names}; omit {'it' if len(fields) == 1 else 'them'} or set "
        f"{'it' if len(fields) == 1 else 'them'} to null, e.g. {example}",
        {"fields": fields, "operation": op},
    )


def _check_mode(p: AstGrepParams, op: str) -> None:
    if op == "outline":
        bad = [f for f in ("pattern", "rewrite") if getattr(p, f) is not None]
        if bad:
            raise _mode_error(op, bad, '{"operation":"outline","path":"src","pattern":null,"rewrite":null}')
        check_filter_size("name", p.name)
        check_filter_size("symbol_type", p.symbol_type)
        return
    bad = [f for f in OUTLINE_ONLY if getattr(p, f) is not None]
    if bad:
        nulls = ",".join(f'"{f}":null' for f in bad)
        raise _mode_error(op, bad, '{"operation":"search","pattern":"foo($A)",' + nulls + "}")
    if not p.pattern:
        raise ToolError(
            "invalid_input",
            'search needs a non-empty pattern, e.g. {"pattern":"console.log($A)"}; '
            'for symbols use {"operation":"outline"}',
            {"fields": ["pattern"]},
        )
    for fname in ("pattern", "rewrite"):
        value = getattr(p, fname)
        if value is not None and len(value.encode("utf-8")) > PATTERN_MAX_BYTES:
            raise ToolError(
                f"invalid_{fname}",
                f"{fname} is {len(value.encode('utf-8'))} bytes; ast_grep accepts at most 4 KiB",
                {"field": fname},
            )


# ----- the work set --------------------------------------------------------------------------


@dataclass
class Work:
    """Counters shared by search and outline."""

    deadline: float
    files_scanned: int = 0
    bytes_read: int = 0
    unsupported: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    stop: str | None = None  # file_cap | byte_cap | deadline
    languages: set[str] = field(default_factory=set)

    def skip(self, path: str, reason: str) -> None:
        self.skipped[reason] += 1
        if len(self.skipped_files) < SKIPPED_LISTED:
            self.skipped_files.append({"path": path, "reason": reason})


def _files(
    ctx: ToolContext, root: str, cwd: str, language: str | None, outline: bool, work: Work
) -> Iterator[tuple[str, str, str]]:
    """(shown path, canonical path, language) of each file to parse."""
    wanted = ast_lang.OUTLINE_LANGUAGES if outline else ast_lang.LANGUAGES
    if not os.path.isdir(root):
        lang = language or ast_lang.language_for_path(root)
        if lang is None:
            raise ToolError(
                "invalid_language",
                f"Cannot tell the language of {display_path(root, cwd)} from its extension; pass language",
                {"path": root},
            )
        if lang not in wanted:
            raise ToolError(
                "invalid_language",
                f"outline supports {', '.join(sorted(wanted))}; {display_path(root, cwd)} is {lang}",
                {"language": lang},
            )
        yield display_path(root, cwd), root, lang
        return
    stats = WalkStats()
    opts = WalkOptions(
        hidden=False,
        perforce=resolve_p4(root, home=ctx.os_home),
        max_entries=10**9,
        deadline=work.deadline,
        want_size=False,
    )
    for e in walk(root, ctx.sandbox, opts, stats):
        lang = ast_lang.language_for_path(e.rel)
        if lang is None or lang not in wanted or (language is not None and lang != language):
            work.unsupported += 1
            continue
        yield display_path(e.path, cwd), e.canonical, lang
    if stats.stopped == "deadline":
        work.stop = work.stop or "deadline"


def _load(reader: FileReader, shown: str, canonical: str, lang: str, work: Work) -> Any:
    """The parsed root of one file, or None when it is skipped (counted) or a budget stops the scan."""
    if work.files_scanned >= MAX_FILES:
        work.stop = "file_cap"
        return None
    if work.bytes_read >= CALL_BYTES_CAP:
        work.stop = "byte_cap"
        return None
    ast_lang.check_deadline(work.deadline)
    try:
        data, longer = reader.read(canonical, min(FILE_MAX_BYTES, CALL_BYTES_CAP - work.bytes_read))
    except (OSError, ToolError):
        work.skip(shown, "unreadable")
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
        parsed = ast_lang.parse(source, lang, work.deadline)
    except TreeTooComplex:
        work.skip(shown, "too_complex")
        return None
    work.languages.add(lang)
    return source, parsed.root


# ----- search ----------------------------------------------------------------------------------

_METAVAR = re.compile(r"\$\$\$([A-Z_][A-Z0-9_]*)|\$\$?([A-Z_][A-Z0-9_]*)")


def expand_rewrite(rewrite: str, node: Any, source: str) -> str | None:
    """The rewrite with `$A` / `$$$ARGS` filled in from the match, or None past the 1 MiB estimate."""
    pieces: list[tuple[int, int, str]] = []
    estimate = len(rewrite.encode("utf-8"))
    for m in _METAVAR.finditer(rewrite):
        if m.group(1):
            nodes = node.get_multiple_matches(m.group(1))
            text = source[nodes[0].range().start.index : nodes[-1].range().end.index] if nodes else ""
        else:
            got = node.get_match(m.group(2))
            text = got.text() if got is not None else m.group(0)
        estimate += len(text) * 4
        if estimate > REPLACEMENT_CAP:
            return None
        pieces.append((m.start(), m.end(), text))
    out, pos = [], 0
    for s, e, text in pieces:
        out += [rewrite[pos:s], text]
        pos = e
    out.append(rewrite[pos:])
    return "".join(out)


class ByteOffsets:
    """Character index → UTF-8 byte offset for one source text."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ascii = source.isascii()
        self._marks: list[int] = []

    def __call__(self, index: int) -> int:
        if self.ascii:
            return index
        step = 4096
        while len(self._marks) * step <= index:
            i = len(self._marks) * step
            prev = self._marks[-1] if self._marks else 0
            self._marks.append(prev + (len(self.source[i - step : i].encode("utf-8")) if i else 0))
        base = (index // step) * step
        return self._marks[index // step] + len(self.source[base:index].encode("utf-8"))


@dataclass
class Output:
    limit: int
    lines: list[str] = field(default_factory=list)
    size: int = 0
    truncated: bool = False

    def fits(self, rows: list[str]) -> int:
        """How many of `rows` can be added under the line limit and the byte cap."""
        n, size = 0, self.size
        for row in rows:
            size += len(row.encode("utf-8")) + 1
            if len(self.lines) + n >= self.limit or size > OUTPUT_CAP - NOTES_RESERVE:
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


def _strip_cr(s: str) -> str:
    return s[:-1] if s.endswith("\r") else s


def _search(
    p: AstGrepParams, work: Work, files: Iterator[tuple[str, str, str]], limit: int, strict: str | None
) -> dict[str, Any]:
    pattern = p.pattern or ""
    out = Output(limit)
    pattern_errors: dict[str, str] = {}
    compiled: dict[str, bool] = {}
    matches: list[dict[str, Any]] = []
    files_matched = skipped_replacements = 0
    reader = FileReader()
    try:
        for shown, canonical, lang in files:
            if lang not in compiled:
                err = ast_lang.compile_pattern(pattern, lang, work.deadline)
                compiled[lang] = err is None
                if err is not None:
                    pattern_errors[lang] = err
            if not compiled[lang]:
                continue
            loaded = _load(reader, shown, canonical, lang, work)
            if loaded is None:
                if work.stop:
                    break
                continue
            source, root = loaded
            try:
                nodes = root.root().find_all(pattern=pattern)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:
                pattern_errors[lang] = library_error(e)
                continue
            ast_lang.check_deadline(work.deadline)
            if not nodes:
                continue
            files_matched += 1
            lines = source.split("\n")
            offsets = ByteOffsets(source)
            for node in nodes:
                r = node.range()
                row_line = r.start.line + 1
                record: dict[str, Any] = {
                    "path": shown, "line": row_line, "column": r.start.column + 1,
                    "end_line": r.end.line + 1, "end_column": r.end.column + 1,
                    "byte_start": offsets(r.start.index), "byte_end": offsets(r.end.index),
                    "text": _strip_cr(lines[r.start.line]),
                }  # fmt: skip
                if p.rewrite is None:
                    rows = [f"{shown}:{row_line}:{record['text']}"]
                else:
                    replacement = expand_rewrite(p.rewrite, node, source)
                    if replacement is None:
                        skipped_replacements += 1
                        continue
                    record["replacement"] = replacement
                    rows = _preview(shown, lines, r, replacement, record)
                before = len(out.lines)
                whole = len(out.lines) < out.limit and out.add(rows)
                if len(out.lines) > before:
                    matches.append(record if whole else {**record, "preview_cut": True})
                if not whole:
                    out.truncated = True
                    break
            if out.truncated:
                break
    except DeadlinePassed:
        work.stop = "deadline"
    finally:
        reader.close()
    if strict is not None and strict in pattern_errors:
        raise ToolError(
            "invalid_pattern",
            f"pattern does not compile for {strict}: {pattern_errors[strict]}",
            {"language": strict, "error": pattern_errors[strict]},
        )
    result = _common(work, out, "search")
    partial = result["partial"] or bool(pattern_errors) or skipped_replacements > 0
    result.update(
        matches=matches,
        files_matched=files_matched,
        pattern_errors=pattern_errors,
        replacements_skipped=skipped_replacements,
        partial=partial,
    )
    body = "\n".join(out.lines) if out.lines else "[no matches]"
    result["output"] = _with_notes(body, _notes(result))
    return result


def _preview(shown: str, lines: list[str], r: Any, replacement: str, record: dict[str, Any]) -> list[str]:
    """`@@ path:line bytes[s:e] @@`, then `-` source lines and `+` the same lines with the match replaced."""
    first, last = r.start.line, r.end.line
    if last > first and r.end.column == 0:
        last -= 1  # the match ends exactly at a line break
    old = [_strip_cr(s) for s in lines[first : last + 1]]
    head = lines[first][: r.start.column]
    tail_line = lines[r.end.line] if r.end.line < len(lines) else ""
    tail = tail_line[r.end.column :] if r.end.line == last else ""
    new = (head + replacement + _strip_cr(tail)).split("\n")
    return [
        f"@@ {shown}:{record['line']} bytes[{record['byte_start']}:{record['byte_end']}] @@",
        *("-" + s for s in old),
        *("+" + _strip_cr(s) for s in new),
    ]


# ----- outline ---------------------------------------------------------------------------------


def _outline(
    p: AstGrepParams, work: Work, files: Iterator[tuple[str, str, str]], limit: int
) -> dict[str, Any]:
    import json

    opts = OutlineOptions(
        items=p.items or "structure",
        view=p.view or "digest",
        name=compile_name(p.name) if p.name is not None else None,
        types=parse_types(p.symbol_type) if p.symbol_type is not None else None,
        pub_members=bool(p.pub_members),
    )
    out = Output(limit)
    entries: list[dict[str, Any]] = []
    reader = FileReader()
    try:
        for shown, canonical, lang in files:
            loaded = _load(reader, shown, canonical, lang, work)
            if loaded is None:
                if work.stop:
                    break
                continue
            _, root = loaded
            for sym in symbols(root.root(), lang, work.deadline):
                if not selected(sym, opts):
                    continue
                line = {"path": shown, "language": lang, "item": entry(sym, opts)}
                text = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
                if len(out.lines) >= out.limit or out.fits([text]) < 1:
                    out.truncated = True  # whole entries only: a parent and its members go together
                    break
                out.add([text])
                entries.append(line)
                ast_lang.check_deadline(work.deadline)
            if out.truncated:
                break
    except DeadlinePassed:
        work.stop = "deadline"
    finally:
        reader.close()
    result = _common(work, out, "outline")
    result.update(symbols=entries, symbols_returned=len(entries), items=opts.items, view=opts.view)
    body = "\n".join(out.lines) if out.lines else "[no symbols]"
    result["output"] = _with_notes(body, _notes(result))
    return result


# ----- results ---------------------------------------------------------------------------------


def _common(work: Work, out: Output, op: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "operation": op,
        "returned": len(out.lines),
        "limit": out.limit,
        "truncated": out.truncated or work.stop in ("file_cap", "byte_cap"),
        "partial": work.stop is not None or sum(work.skipped.values()) > 0,
        "timed_out": work.stop == "deadline",
        "scan_stop": work.stop,
        "files_scanned": work.files_scanned,
        "bytes_read": work.bytes_read,
        "files_skipped": sum(work.skipped.values()),
        "skip_reasons": dict(work.skipped),
        "skipped_files": work.skipped_files,
        "files_unsupported": work.unsupported,
        "languages": sorted(work.languages),
    }
    return result


def _notes(result: dict[str, Any]) -> list[str]:
    notes = []
    if result.get("truncated"):
        notes.append(f"[truncated at {result['limit']} lines or 64 KiB; narrow path or raise limit]")
    if result.get("files_skipped"):
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(result["skip_reasons"].items()))
        notes.append(f"[{result['files_skipped']} files skipped ({reasons})]")
    for lang, err in sorted(result.get("pattern_errors", {}).items()):
        notes.append(f"[pattern does not compile for {lang}: {err}]")
    if result.get("timed_out"):
        notes.append("[stopped at the 30 s deadline; results are partial]")
    elif result.get("scan_stop") in ("file_cap", "byte_cap"):
        notes.append("[stopped at the 10,000-file / 128 MiB limit; results are partial]")
    return notes


def _with_notes(text: str, notes: list[str]) -> str:
    if not notes:
        return text
    return f"{text}\n\n" + "\n".join(notes) if text else "\n".join(notes)


def ast_grep(p: AstGrepParams, ctx: ToolContext) -> dict[str, Any]:
    op = p.operation or "search"
    _check_mode(p, op)
    language = ast_lang.normalize_language(p.language) if p.language is not None else None
    if op == "outline" and language is not None and language not in ast_lang.OUTLINE_LANGUAGES:
        raise ToolError(
            "invalid_language",
            f"outline supports {', '.join(sorted(ast_lang.OUTLINE_LANGUAGES))}; not {language}",
            {"language": language},
        )
    limit = min(p.limit or DEFAULT_LIMIT, MAX_LIMIT)
    target = resolve_source(ctx, p.path if p.path is not None else ".", tool="ast_grep")
    if not os.path.exists(target.path):
        raise ToolError("not_found", f"Path not found: {target.display}", {"path": target.path})
    work = Work(deadline=time.monotonic() + DEADLINE_S)
    if op == "search" and language is not None:
        err = ast_lang.compile_pattern(p.pattern or "", language, work.deadline)
        if err is not None:
            raise ToolError(
                "invalid_pattern",
                f"pattern does not compile for {language}: {err}",
                {"language": language, "error": err},
            )
    files = _files(ctx, target.path, target.cwd, language, op == "outline", work)
    if op == "search":
        return _search(p, work, files, limit, language)
    return _outline(p, work, files, limit)


def _render(result: dict[str, Any]) -> str:
    return str(result["output"])


TOOLS = specs(
    ToolSpec(
        name="ast_grep",
        category="coding",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Syntax-aware search, read-only rewrite previews and symbol outlines, in-process (no CLI). "
            "search (default): `pattern` is ast-grep code with metavariables ($A, $$$ARGS); rows are "
            "path:line:text; with `rewrite`, each match becomes a `@@ path:line bytes[s:e] @@` block of "
            "`-` source lines and `+` replaced lines (files are never written). outline: JSON lines "
            "{path, language, item} for Rust, TypeScript/TSX, JavaScript, Python, Go, Kotlin, Java and "
            "Swift, shaped by items/view/name/symbol_type/pub_members. Language comes from the extension "
            "unless given. Limits: 4 KiB patterns, 256 KiB UTF-8 files, 10,000 files, 128 MiB, 16,384 "
            "nodes at depth 64, 30 s, 64 KiB output; check files_skipped, partial and truncated."
        ),
        params=AstGrepParams,
        handler=ast_grep,
        render=_render,
        hints=Hints(read_only=True, idempotent=True),
        toolsets=frozenset({"coding"}),
        when_to_use=(
            "Match code by structure rather than text (calls, definitions, argument shapes), preview a "
            "mechanical rewrite before editing, or list a file's symbols before reading it. For plain text "
            "use grep."
        ),
        examples=(
            Example({"pattern": "console.log($A)", "path": "src"}, "every console.log call"),
            Example(
                {"pattern": "print($A)", "rewrite": "logger.info($A)", "path": "app.py"},
                "preview a rewrite (nothing is written)",
            ),
            Example({"operation": "outline", "path": "src", "language": "rust", "limit": 30}, "Rust symbols"),
            Example(
                {"operation": "outline", "path": "lib.ts", "items": "exports", "view": "signatures"},
                "exported signatures of one file",
            ),
        ),
        failure_modes=(
            FailureMode(
                "invalid_input", "a field does not belong to the operation, or search has no pattern"
            ),
            FailureMode("invalid_language", "unknown language, or the file's language cannot be inferred"),
            FailureMode(
                "invalid_pattern", "the pattern does not compile for the given language, or is over 4 KiB"
            ),
            FailureMode("invalid_symbol_type", "symbol_type names an unknown type"),
            FailureMode("invalid_name", "name is not a valid regular expression"),
            FailureMode("not_found", "the path does not exist"),
            FailureMode("outside_root", "the path is outside the sandbox roots"),
            FailureMode(
                "absolute_path_denied",
                "absolute paths outside the working directory are disabled (capabilities.tools.ast_grep.absolute_paths)",
            ),
        ),
    ),
)
