"""grep: bounded in-process content search with OR patterns, ranked (`grouped_v1`) or raw output.

The pipeline is the shared one: the workspace walker (ignore, hidden and Perforce rules, sandbox),
the shared matcher (regex after repairs, literal fallback), a bounded reader, then this module's
ranking and printer. No program is run: one loop reads and matches the walked files in order.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Iterator
from contextlib import closing
from functools import partial
from typing import Annotated, Any, Literal

from ....core.context import ToolContext
from ....core.errors import ToolError
from ....core.params import Field
from ....core.records import Record, field
from ....core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ....core.search.match import LineHit, Matcher
from ....core.search.p4ignore import resolve_p4
from ....core.search.walk import ALWAYS_SKIP, WalkOptions, WalkStats, walk
from ..pathrules import display_path, resolve_source
from .printer import Block, Hit, render_ranked, render_raw
from .ranking import DEF_LIKE, PER_FILE_CAP, FileHits, file_order_key, is_def_like, label_for
from .searcher import CALL_BYTES_CAP, FILE_CAP, MAX_FILES, ScanStats, Searcher, context_rows, line_str

MAX_PATTERNS = 8
MAX_PATTERN_BYTES = 1024
DEADLINE_S = 10.0
OUTPUT_CAP = 65_536
FOOTER_RESERVE = 512
DEFAULT_LIMIT, MAX_LIMIT = 50, 500
MAX_CONTEXT = 20
SKIP_DIRS = ALWAYS_SKIP | {"target"}


class GrepParams(Params):
    patterns: Annotated[
        list[str],
        Field(
            min_length=1,
            max_length=MAX_PATTERNS,
            description=(
                "1 to 8 patterns, OR-ed. Each is a case-sensitive regex (unbalanced brackets and stray "
                "braces are escaped first); one that still does not compile is matched literally."
            ),
        ),
    ]
    path: Annotated[
        str | None,
        Field(max_length=4096, description="File or directory to search (default: the working directory)"),
    ] = None
    mode: Annotated[
        Literal["ranked", "raw"] | None,
        Field(
            description="ranked (default): grouped_v1 with labels, 5 hits per file; raw: path:line:text rows"
        ),
    ] = None
    limit: Annotated[
        int | None,
        Field(ge=1, le=MAX_LIMIT, description="Primary matching lines per page (default 50, at most 500)"),
    ] = None
    offset: Annotated[
        int | None,
        Field(ge=0, le=2**31, description="Primary matching lines to skip, for paging (default 0)"),
    ] = None
    context: Annotated[
        int | None,
        Field(
            ge=0, le=MAX_CONTEXT, description="Context lines on each side of a hit (default 0, at most 20)"
        ),
    ] = None


class FileResult(Record):
    path: str
    hits: int
    best: int
    kept: list[Hit]
    labels: dict[int, str | None] = field(default_factory=dict)


def _validate_patterns(patterns: list[str]) -> None:
    for i, p in enumerate(patterns):
        if p == "":
            raise ToolError(
                "invalid_pattern", f"patterns[{i}] is empty; every pattern must be a non-empty string", {}
            )
        if len(p.encode("utf-8")) > MAX_PATTERN_BYTES:
            raise ToolError(
                "invalid_pattern",
                f"patterns[{i}] is {len(p.encode('utf-8'))} bytes; patterns are limited to {MAX_PATTERN_BYTES}",
                {"index": i},
            )


def _targets(
    ctx: ToolContext, root: str, walk_stats: WalkStats, deadline: float
) -> Iterator[tuple[str, str]]:
    if not os.path.isdir(root):
        return iter([(root, root)])
    opts = WalkOptions(
        hidden=False,
        perforce=resolve_p4(root, home=ctx.os_home),
        skip_names=SKIP_DIRS,
        max_entries=10**9,
        deadline=deadline,
        want_size=False,
    )
    return ((e.path, e.canonical) for e in walk(root, ctx.sandbox, opts, walk_stats) if not e.is_dir)


def grep(p: GrepParams, ctx: ToolContext) -> dict[str, Any]:
    _validate_patterns(p.patterns)
    matcher = Matcher(p.patterns, regex=True, literal_fallback=True, repair=True)
    mode = p.mode or "ranked"
    limit = min(p.limit or DEFAULT_LIMIT, MAX_LIMIT)
    offset = p.offset or 0
    ctx_lines = min(p.context or 0, MAX_CONTEXT)
    target = resolve_source(ctx, p.path if p.path is not None else ".", tool="grep")
    if not os.path.exists(target.path):
        raise ToolError("not_found", f"Search path not found: {target.display}", {"path": target.path})
    deadline = time.monotonic() + DEADLINE_S
    walk_stats = WalkStats()
    searcher = Searcher(matcher, deadline)
    scan: Scan | list[FileResult]
    try:
        if mode == "raw":
            scan = _scan_raw(ctx, target.path, target.cwd, searcher, walk_stats, offset, limit, ctx_lines)
        else:
            scan = _scan_ranked(ctx, target.path, target.cwd, searcher, walk_stats, ctx_lines)
    finally:
        searcher.reader.close()
    if walk_stats.stopped == "deadline" and searcher.stats.stop is None:
        searcher.stats.stop = "deadline"
    return _result(p, mode, matcher, scan, searcher.stats, walk_stats, offset, limit, ctx_lines)


# ----- ranked ----------------------------------------------------------------------------------


def _rank_file(path: str, data: bytes, found: list[LineHit], matcher: Matcher, n_ctx: int) -> FileResult:
    """Label a file's hits until its top five are settled, then build the kept hits and their context."""

    def label(h: LineHit) -> str:
        return label_for(data, h.start, h.end, lambda: matcher.spans(data, h.start, h.end))

    fh = FileHits()
    for hit in found:
        if fh.settled():
            fh.count()
        elif not fh.only_definitions_matter():
            fh.add(hit, label(hit))
        elif is_def_like(data, hit.start, hit.end, partial(matcher.spans, data, hit.start, hit.end)):
            fh.add(hit, DEF_LIKE)
        else:
            fh.count()
    kept = fh.top()
    # Hits inside a kept hit's context window print as primary rows, so they need labels too.
    labels: dict[int, str | None] = {}
    if n_ctx:
        lines = [h.line for h in found]
        for k in kept:
            lo = bisect.bisect_left(lines, k.line - n_ctx)
            hi = bisect.bisect_right(lines, k.line + n_ctx)
            for h in found[lo:hi]:
                labels[h.line] = fh.labels.get(h.line) or label(h)
    for k in kept:
        labels[k.line] = fh.labels[k.line]
    hits = [
        Hit(h.line, fh.labels[h.line], line_str(data, h.start, h.end), context_rows(data, h, n_ctx))
        for h in kept
    ]
    return FileResult(path, fh.hits, fh.best_rank(), hits, labels)


class Scan(Record):
    blocks: list[tuple[Block, list[Hit]]]  # the page, before the byte budget
    primary_total: int  # pageable primary hits seen (after the per-file cap in ranked mode)
    hits_total: int  # every matching line seen
    has_more: bool  # known to have more primary hits after this page
    files: list[FileResult] = field(default_factory=list)


def _scan_ranked(
    ctx: ToolContext, root: str, cwd: str, searcher: Searcher, walk_stats: WalkStats, n_ctx: int
) -> list[FileResult]:
    results: list[FileResult] = []
    for shown_path, data, found in searcher.scan(_targets(ctx, root, walk_stats, searcher.deadline)):
        results.append(_rank_file(display_path(shown_path, cwd), data, found, searcher.matcher, n_ctx))
    results.sort(key=lambda r: file_order_key(r.best, r.hits, r.path))
    return results


def _page_ranked(results: list[FileResult], offset: int, limit: int) -> Scan:
    flat = [(r, h) for r in results for h in r.kept]
    page = flat[offset : offset + limit]
    blocks: list[tuple[Block, list[Hit]]] = []
    for r, h in page:
        if blocks and blocks[-1][0].path == r.path:
            blocks[-1][1].append(h)
        else:
            blocks.append((Block(r.path, r.labels), [h]))
    return Scan(blocks, len(flat), sum(r.hits for r in results), offset + limit < len(flat), results)


# ----- raw -------------------------------------------------------------------------------------


def _scan_raw(
    ctx: ToolContext,
    root: str,
    cwd: str,
    searcher: Searcher,
    walk_stats: WalkStats,
    offset: int,
    limit: int,
    n_ctx: int,
) -> Scan:
    seen = 0
    blocks: list[tuple[Block, list[Hit]]] = []
    has_more = False
    scan = searcher.scan(_targets(ctx, root, walk_stats, searcher.deadline))
    with closing(scan):
        for shown_path, data, found in scan:
            page: list[Hit] = []
            labels: dict[int, str | None] = {}
            last_page_line = -1
            for hit in found:
                if seen >= offset + limit:
                    if not has_more:
                        has_more = True
                    if hit.line > last_page_line + n_ctx:
                        break
                    labels[hit.line] = None  # a hit inside the last hit's context prints as primary
                    continue
                if seen >= offset:
                    page.append(
                        Hit(
                            hit.line, None, line_str(data, hit.start, hit.end), context_rows(data, hit, n_ctx)
                        )
                    )
                    last_page_line = hit.line
                labels[hit.line] = None
                seen += 1
            if page:
                blocks.append((Block(display_path(shown_path, cwd), labels), page))
            if has_more:
                searcher.stats.stop = searcher.stats.stop or "lookahead"
                break
    return Scan(blocks, seen, seen, has_more)


# ----- result ----------------------------------------------------------------------------------


def _result(
    p: GrepParams,
    mode: str,
    matcher: Matcher,
    scanned: Any,
    stats: ScanStats,
    walk_stats: WalkStats,
    offset: int,
    limit: int,
    n_ctx: int,
) -> dict[str, Any]:
    scan: Scan = _page_ranked(scanned, offset, limit) if mode == "ranked" else scanned
    budget = OUTPUT_CAP - FOOTER_RESERVE
    if mode == "ranked":
        page = render_ranked(scan.blocks, budget)
    else:
        page = render_raw(scan.blocks, budget, context=n_ctx > 0)
    scan_complete = stats.stop is None and stats.files_truncated == 0  # a cut file was not scanned whole
    cap_stop = stats.stop if stats.stop in ("file_cap", "byte_cap", "deadline") else None
    returned = page.printed
    next_offset = offset + returned
    more = scan.has_more or page.capped
    has_more: bool | None = True if more else (None if cap_stop else False)
    reasons: list[str] = []
    omitted_total = 0
    per_file: dict[str, dict[str, int]] = {}
    if mode == "ranked":
        shown_paths = {b.path for b, _ in scan.blocks}
        for r in scan.files:
            omitted = r.hits - len(r.kept)
            omitted_total += omitted
            if omitted and r.path in shown_paths:
                per_file[r.path] = {"hits": r.hits, "shown": len(r.kept), "omitted": omitted}
        if omitted_total:
            reasons.append("per_file_cap")
    if page.capped:
        reasons.append("output_cap")
    if cap_stop:
        reasons.append(cap_stop)
    if stats.files_truncated and cap_stop != "byte_cap":  # the call cap's own cut is byte_cap
        reasons.append("file_bytes")
    text = page.text
    notes = _footer(mode, scan, page.capped, has_more, next_offset, cap_stop, omitted_total, returned, offset)
    if notes:
        text = f"{text}\n\n{notes}" if text else notes
    return {
        "output": text,
        "format": "grouped_v1" if mode == "ranked" else "raw",
        "mode": mode,
        "patterns": list(p.patterns),
        "matchers": [pl.to_dict() for pl in matcher.plans],
        "offset": offset,
        "limit": limit,
        "context": n_ctx,
        "returned": returned,
        "has_more": has_more,
        "next_offset": next_offset if more else None,
        "primary_total": scan.primary_total,
        "hits_total": scan.hits_total,
        "total_exact": scan_complete,
        "truncated": bool(reasons) or bool(more),
        "truncation_reasons": reasons,
        "per_file": per_file,
        "omitted_total": omitted_total,
        "scan_complete": scan_complete,
        "scan_stop": stats.stop,
        "files_scanned": stats.files_scanned,
        "files_matched": stats.files_matched,
        "bytes_scanned": stats.bytes_scanned,
        "files_truncated": stats.files_truncated,
        "skipped": {
            "binary": stats.binary,
            "invalid_utf8": stats.invalid_utf8,
            "special": stats.special + walk_stats.special,
            "unreadable": stats.unreadable + walk_stats.errors,
            "hidden": walk_stats.hidden,
            "ignored": walk_stats.ignored,
            "denied": walk_stats.denied,
        },
        "recovery_skips": stats.recovery_skips,
        "limits": {
            "file_bytes": FILE_CAP,
            "call_bytes": CALL_BYTES_CAP,
            "files": MAX_FILES,
            "seconds": DEADLINE_S,
            "output_bytes": OUTPUT_CAP,
            "per_file_hits": PER_FILE_CAP if mode == "ranked" else None,
        },
        "hits": [
            {"path": b.path, "line": h.line, "label": h.label, "text": h.text}
            for b, _ in scan.blocks
            for h in b.hits
        ],
    }


def _footer(
    mode: str,
    scan: Scan,
    capped: bool,
    has_more: bool | None,
    next_offset: int,
    cap_stop: str | None,
    omitted_total: int,
    returned: int,
    offset: int,
) -> str:
    notes: list[str] = []
    if returned == 0 and not scan.primary_total:
        notes.append("[no matches]")
    elif returned == 0:
        notes.append(f"[no primary matches at offset={offset}; {scan.primary_total} in total]")
    if capped:
        notes.append(f"[output capped at 64 KiB; use offset={next_offset}]")
    elif has_more:
        if mode == "ranked" and cap_stop is None:
            notes.append(
                f"[{scan.primary_total - next_offset} more primary matches; use offset={next_offset}]"
            )
        else:
            notes.append(f"[more matches; use offset={next_offset}]")
    if omitted_total:
        notes.append(
            f"[{omitted_total} more hits beyond {PER_FILE_CAP} per file are not listed; narrow path or use mode=raw]"
        )
    if cap_stop:
        why = {"file_cap": "10,000 files", "byte_cap": "128 MiB read", "deadline": "10 s"}[cap_stop]
        notes.append(f"[scan stopped at the {why} limit; results are partial, narrow path]")
    return "\n".join(notes)


def _render(result: dict[str, Any]) -> str:
    return str(result["output"])


TOOLS = specs(
    ToolSpec(
        name="grep",
        category="coding",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Search file contents in-process (no rg needed) for up to 8 OR-ed patterns. Each pattern is a "
            "case-sensitive regex after common bracket/brace repairs, matched literally if it still does "
            "not compile. Ranked mode (default) prints grouped_v1: `## path` headers, `N:[def-like]`, "
            "`N:[match]` and `N:[import]` rows (at most 5 per file, definitions first) and `N-` context "
            "rows; raw mode prints `path:line:text` rows. Skips hidden, ignored (.gitignore, .ignore, "
            "Perforce), .git, target, binary, special and unreadable files. Caps: 4 MiB per file, 128 MiB "
            "and 10,000 files per call, 10 s, 64 KiB of output; metadata says when results are partial."
        ),
        params=GrepParams,
        handler=grep,
        render=_render,
        hints=Hints(read_only=True, idempotent=True),
        toolsets=frozenset({"coding"}),
        when_to_use=(
            "Find where code or text occurs, definitions first. To find files by name use find; to match "
            "syntax rather than text use ast_grep; then read the paths it returns."
        ),
        examples=(
            Example(
                {"patterns": ["fn run"], "path": "src", "limit": 20, "context": 2}, "ranked, with context"
            ),
            Example({"patterns": ["TODO", "FIXME"], "mode": "raw"}, "either marker, as path:line:text rows"),
            Example({"patterns": [r"def \w+_test\("], "offset": 50}, "a regex, second page"),
        ),
        failure_modes=(
            FailureMode("invalid_pattern", "a pattern is empty or longer than 1,024 bytes"),
            FailureMode("not_found", "the search path does not exist"),
            FailureMode("outside_cwd", "a relative path leaves the working directory"),
            FailureMode("outside_root", "the path is outside the sandbox roots"),
            FailureMode("protected_path", "the path is protected by the sandbox"),
            FailureMode(
                "absolute_path_denied",
                "absolute paths outside the working directory are disabled (capabilities.tools.grep.absolute_paths)",
            ),
        ),
    ),
)
