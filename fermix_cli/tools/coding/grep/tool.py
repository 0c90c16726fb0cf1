"""grep: content search with OR patterns, ranked (`grouped_v1`) or raw output, on ripgrep.

rg walks (ignore, hidden and Perforce rules; the sandbox's exclusions) and matches (`rg --json`),
reading every candidate file to its end; this module plans the patterns, checks every returned path
with the sandbox again, ranks, pages and prints. Files come out in path order, so pages are stable.
What the answer leaves out is listed in `omitted` and in `[incomplete: …]` lines of the text.
"""

from __future__ import annotations

import bisect
import os
import time
from typing import Annotated, Any, Literal

from ....core.context import ToolContext
from ....core.errors import ToolError
from ....core.params import Field
from ....core.records import Record, field
from ....core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ....core.search.names import is_utf8, printable, shown_path
from ....core.search.p4ignore import resolve_p4
from ....core.search.report import (
    Omission,
    binary_omission,
    completeness,
    ignore_warnings,
    invalid_name_omission,
    timeout_omission,
    unreadable_omission,
    warning_notes,
)
from ....core.search.ripgrep import (
    FileMatches,
    LineMatch,
    PatternError,
    Scope,
    Search,
    allowed_below,
    decode_pending,
    literal_glob,
)
from ....core.search.special import special_kind, special_omission, walked_special_omission
from ..pathrules import display_path, resolve_source
from .printer import Block, Hit, Page, render_ranked, render_raw
from .ranking import PER_FILE_CAP, FileHits, RankedSelection, file_order_key, label_for
from .searcher import ContextReader, PatternPlan, is_utf8_file, line_str, plan, replan

MAX_PATTERNS = 8
MAX_PATTERN_BYTES = 1024
DEADLINE_S = 10.0
OUTPUT_CAP = 65_536
FOOTER_RESERVE = 1024
DEFAULT_LIMIT, MAX_LIMIT = 50, 500
MAX_CONTEXT = 20
SKIP_DIRS = (".git", "target/")  # "target/": the directory (a build tree), not a file so named
RANKED_KEEP = 10_000  # matching lines per file labelled in ranked mode; the rest are counted by rg
MAX_FILTERS = 16
HIT_TEXT_CAP = 4096  # characters of a hit's line in the JSON `hits` (the text output cuts at 1,000)


class GrepParams(Params):
    patterns: Annotated[
        list[str],
        Field(
            min_length=1,
            max_length=MAX_PATTERNS,
            description=(
                "1 to 8 patterns, OR-ed. Each is a case-sensitive regex (Rust syntax, as ripgrep has it; "
                "unbalanced brackets and stray braces are escaped first); one that still does not compile "
                "is matched literally."
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
    case_insensitive: Annotated[
        bool | None,
        Field(description="Match regardless of case (default false: case-sensitive)"),
    ] = None
    glob: Annotated[
        list[Annotated[str, Field(max_length=1024)]] | None,
        Field(
            max_length=MAX_FILTERS,
            description=(
                "Only files whose path matches these globs (`*.py`, `src/**`); `!` in front excludes. "
                "A glob that names an ignored file includes it (ripgrep's -g), but not one inside an "
                "ignored directory, which the walk never enters: pass that directory as `path`"
            ),
        ),
    ] = None
    type: Annotated[
        list[Annotated[str, Field(max_length=64)]] | None,
        Field(
            max_length=MAX_FILTERS,
            description="Only files of these ripgrep types (py, rust, js, ts, go, md, ...; see `rg --type-list`)",
        ),
    ] = None


class FileResult(Record):
    path: str  # as shown
    abs_path: str
    hits: int
    best: int
    kept: list[LineMatch]
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


class Tally(Record):
    """What the search saw beyond the hits: counts for the metadata and the omissions."""

    files_matched: int = 0
    binary: int = 0  # files with binary data (a NUL byte): not searched, or searched up to it
    binary_not_searched: list[str] = field(default_factory=list)  # canonical paths, binary from the start
    binary_stopped: list[str] = field(default_factory=list)  # canonical paths, NUL after the first matches
    binary_log_cut: bool = False  # rg's log of binary files passed its cap: there are more than these
    invalid_utf8: int = 0  # files with a matching line that is not UTF-8
    invalid_lines: int = 0
    denied: int = 0  # files rg returned that the sandbox refuses (hard links to protected files)
    special: str | None = None  # what the file named as `path` is when it is no regular file (a FIFO, …)
    special_path: str = ""
    walked_special: list[str] = field(default_factory=list)  # canonical: FIFOs, sockets, devices passed over
    context_short: list[tuple[tuple[str, int], int]] = field(default_factory=list)  # hit -> lines left out
    unnamed: list[str] = field(default_factory=list)  # files with hits whose names are not UTF-8: left out
    unnamed_lines: int = 0  # their matching lines
    cwd: str = ""  # paths in notes are shown relative to it


def _shown(path: str, cwd: str) -> str:
    """`path` as a note names it: as `display_path` shows it, each byte that is not UTF-8 as `\\xNN`,
    and marked when rg's log had already lost those bytes (see `core/search/names.py`)."""
    shown = display_path(path, cwd)
    marked = shown_path(path)
    plain = printable(path)
    if marked != plain:  # rg's log named it lossily: keep the mark
        return printable(shown) + marked[len(plain) :]
    return printable(shown)


def _scope(ctx: ToolContext, p: GrepParams, path: str) -> tuple[Scope, str]:
    globs, types = tuple(p.glob or ()), tuple(p.type or ())
    if os.path.isdir(path):
        p4 = resolve_p4(path, home=ctx.os_home)
        return Scope(root=path, exclude_names=SKIP_DIRS, p4=p4, globs=globs, types=types), "."
    return Scope(root=os.path.dirname(path), globs=globs, types=types), os.path.basename(path)


def _search(
    ctx: ToolContext,
    p: GrepParams,
    plans: list[PatternPlan],
    deadline: float,
    scope: Scope,
    target: str,
    keep: int | None,
    ranked: bool,
) -> Search:
    """rg over `scope` (`target`: "." or one file's name) for the planned patterns. `ranked`: of each
    file's first `keep` hits, only those ranked mode needs are decoded (`RankedSelection`)."""
    return Search(
        scope,
        [pl.source for pl in plans],
        deadline,
        ctx.sandbox,
        ignore_case=bool(p.case_insensitive),
        keep=keep,
        selection=RankedSelection if ranked else None,
        selection_around=min(p.context or 0, MAX_CONTEXT),
        target=target,
    )


def _collect(
    ctx: ToolContext,
    p: GrepParams,
    path: str,
    plans: list[PatternPlan],
    deadline: float,
    keep: int | None,
    ranked: bool,
) -> tuple[list[FileMatches], Search, Tally]:
    scope, target = _scope(ctx, p, path)
    search = _search(ctx, p, plans, deadline, scope, target, keep, ranked)
    tally = Tally()
    if target != "." and (kind := special_kind(path)) is not None:
        tally.special, tally.special_path = kind, path  # skipped, as rg's walk skips them: not run
        return [], search, tally
    base = scope.root.rstrip("/") + "/"  # canonical; rg follows no symlink, so base + rel is too
    matched = list(search.files())
    for fm in matched:
        fm.path = base + fm.path
    allowed, tally.denied = allowed_below(ctx.sandbox, scope.root, [fm.path for fm in matched])
    keep_paths = set(allowed) if tally.denied else None
    found: list[FileMatches] = []
    for fm in matched:
        if keep_paths is not None and fm.path not in keep_paths:
            continue
        if fm.binary:
            tally.binary_stopped.append(fm.path)  # the matches before the NUL are kept, as rg prints them
        bad = [lm for lm in fm.lines if not lm.utf8] if fm.any_not_utf8() else []
        if fm.examined < fm.matched_lines and (bad or not is_utf8_file(fm.path)):
            # rg counted the lines past the first `keep` without their text (of those before, every
            # one that is not UTF-8 was decoded), so whether they are UTF-8
            # is known only when the whole file is (the common case, checked without rg); else the
            # file is searched again for every line, to count those that are not exactly (and to have
            # enough valid ones for the page).
            fm = _every_line(ctx, p, plans, deadline, fm, search, walked=target == ".") or fm
            bad = [lm for lm in fm.lines if not lm.utf8] if fm.any_not_utf8() else []
        if bad:
            tally.invalid_utf8 += 1
            tally.invalid_lines += len(bad)
            valid = [lm for lm in fm.lines if lm.utf8]
            fm.lines = valid if keep is None else valid[:keep]
            fm.matched_lines -= len(bad)
            if not fm.matched_lines:
                continue
        found.append(fm)
    tally.files_matched = len(found)
    # Every file rg met binary data in (its debug log names them), checked by the sandbox like a hit.
    stopped = {fm.path for fm in matched if fm.binary}
    unsearched = [base + rel for rel in search.stats.binary if base + rel not in stopped]
    tally.binary_not_searched = allowed_below(ctx.sandbox, scope.root, unsearched)[0]
    tally.binary = len(tally.binary_not_searched) + len(tally.binary_stopped)
    tally.binary_log_cut = search.stats.log_cut
    tally.walked_special = allowed_below(
        ctx.sandbox, scope.root, [base + rel for rel in search.stats.special]
    )[0]
    return found, search, tally


def _every_line(
    ctx: ToolContext,
    p: GrepParams,
    plans: list[PatternPlan],
    deadline: float,
    fm: FileMatches,
    search: Search,
    *,
    walked: bool,
) -> FileMatches | None:
    """Every matching line of one file (`fm.path`, canonical), from a search of that file alone; None
    when that search found nothing (the file changed, or the deadline passed, which `search` then says).

    A file the first search found walking a directory is found the same way again (a walk of its
    directory, narrowed to it by an anchored glob): rg stops reading a walked file at binary data but
    searches a file named to it past that, so naming it would count lines the walk never reported."""
    root, name = os.path.split(fm.path)
    scope = Scope(root=root, globs=(literal_glob(name),)) if walked else Scope(root=root)
    again = _search(ctx, p, plans, deadline, scope, "." if walked else name, None, False)
    files = [f for f in again.files() if f.path == name] if walked else list(again.files())
    search.stats.timed_out = search.stats.timed_out or again.stats.timed_out
    search.stats.errors += again.stats.errors
    if not files:
        return None
    files[0].path = fm.path
    return files[0]


def grep(p: GrepParams, ctx: ToolContext) -> dict[str, Any]:
    _validate_patterns(p.patterns)
    mode = p.mode or "ranked"
    limit = min(p.limit or DEFAULT_LIMIT, MAX_LIMIT)
    offset = p.offset or 0
    ctx_lines = min(p.context or 0, MAX_CONTEXT)
    target = resolve_source(ctx, p.path if p.path is not None else ".", tool="grep")
    if not os.path.exists(target.path):
        raise ToolError("not_found", f"Search path not found: {target.display}", {"path": target.path})
    deadline = time.monotonic() + DEADLINE_S
    plans = plan(p.patterns, ignore_case=bool(p.case_insensitive))
    keep = RANKED_KEEP if mode == "ranked" else offset + limit + 1 + ctx_lines
    try:
        found, search, tally = _collect(ctx, p, target.path, plans, deadline, keep, mode == "ranked")
    except PatternError:
        plans = replan(plans, ignore_case=bool(p.case_insensitive))
        try:
            found, search, tally = _collect(ctx, p, target.path, plans, deadline, keep, mode == "ranked")
        except PatternError as e:  # the set as a whole, every pattern fine with those before it
            raise ToolError(
                "invalid_regex",
                f"rg cannot search these patterns together: {e.message}; search for fewer at a time",
                {"patterns": p.patterns},
            ) from None
    tally.cwd = target.cwd
    found.sort(key=lambda fm: fm.path)
    # A name that is not UTF-8 cannot be shown or passed back (see core/search/names.py): left out and counted.
    unnamed = [fm for fm in found if not is_utf8(fm.path)]
    if unnamed:
        found = [fm for fm in found if is_utf8(fm.path)]
        tally.unnamed = [fm.path for fm in unnamed]
        tally.unnamed_lines = sum(fm.matched_lines for fm in unnamed)
        tally.files_matched -= len(unnamed)
    names = {fm.path: display_path(fm.path, target.cwd) for fm in found}
    reader = ContextReader(ctx_lines)
    if mode == "raw":
        skipped = _skip_before_page(found, offset, ctx_lines)
        decode_pending(_page_files(found, offset, limit))
        scan = _page_raw(found, names, offset, limit, reader, skipped)
    else:
        ranked = [_rank_file(fm, names[fm.path], ctx_lines) for fm in found]
        ranked.sort(key=lambda r: file_order_key(r.best, r.hits, r.path))
        scan = _page_ranked(ranked, offset, limit, reader)
    tally.context_short = sorted(reader.short.items())
    return _result(p, mode, plans, scan, search, tally, offset, limit, ctx_lines)


# ----- ranked ----------------------------------------------------------------------------------


def _label(lm: LineMatch) -> str:
    return label_for(lm.text, 0, len(lm.text), lambda: lm.spans)


def _rank_file(fm: FileMatches, shown: str, n_ctx: int) -> FileResult:
    """Label a file's hits until its top five are settled, then keep the top five."""
    if fm.selection is not None and isinstance(fm.selection, RankedSelection):
        fh = fm.selection.hits  # it took every line of fm.lines (the UTF-8 ones), in order
    else:
        fh = FileHits()
        for hit in fm.lines:
            fh.take(hit)
    fh.hits += fm.matched_lines - len(fm.lines)  # matching lines not decoded (see RankedSelection)
    kept = fh.top()
    # Hits inside a kept hit's context window print as primary rows, so they need labels too.
    labels: dict[int, str | None] = {}
    if n_ctx:
        lines = [h.line for h in fm.lines]
        for k in kept:
            lo = bisect.bisect_left(lines, k.line - n_ctx)
            hi = bisect.bisect_right(lines, k.line + n_ctx)
            for h in fm.lines[lo:hi]:
                labels[h.line] = fh.labels.get(h.line) or _label(h)
    for k in kept:
        labels[k.line] = fh.labels[k.line]
    return FileResult(shown, fm.path, fh.hits, fh.best_rank(), kept, labels)


class Scan(Record):
    blocks: list[tuple[Block, list[Hit]]]  # the page, before the byte budget
    primary_total: int  # pageable primary hits (after the per-file cap in ranked mode)
    hits_total: int  # every matching line
    has_more: bool  # more primary hits after this page
    files: list[FileResult] = field(default_factory=list)


def _hit(path: str, lm: LineMatch, label: str | None, context: ContextReader) -> Hit:
    return Hit(lm.line, label, line_str(lm.text), context.rows(path, lm))


def _page_ranked(results: list[FileResult], offset: int, limit: int, context: ContextReader) -> Scan:
    flat = [(r, h) for r in results for h in r.kept]
    page = flat[offset : offset + limit]
    blocks: list[tuple[Block, list[Hit]]] = []
    for r, h in page:
        hit = _hit(r.abs_path, h, r.labels[h.line], context)
        if blocks and blocks[-1][0].path == r.path:
            blocks[-1][1].append(hit)
        else:
            blocks.append((Block(r.path, r.labels), [hit]))
    return Scan(blocks, len(flat), sum(r.hits for r in results), offset + limit < len(flat), results)


# ----- raw -------------------------------------------------------------------------------------


def _page_files(found: list[FileMatches], offset: int, limit: int) -> list[FileMatches]:
    """The files raw mode's page (`offset`, `limit`) shows lines of."""
    out: list[FileMatches] = []
    seen = 0
    for fm in found:
        seen += fm.matched_lines
        if seen > offset:
            out.append(fm)
        if seen >= offset + limit:
            break
    return out


def _skip_before_page(found: list[FileMatches], offset: int, n_ctx: int) -> int:
    """Drop, undecoded, the lines of the page's first file that come before the page and its context
    (a deep page of one big file would decode every line before it: 900,000 lines took 2 GB and 20 s).
    Returns how many were dropped (from the front of that file's lines)."""
    seen = 0
    for fm in found:
        if seen + fm.matched_lines <= offset:
            seen += fm.matched_lines
            continue
        drop = max(0, offset - seen - n_ctx)
        if fm.decoded or drop == 0:
            return 0
        drop = min(drop, len(fm.pending))
        del fm.pending[:drop]
        return drop
    return 0


def _page_raw(
    found: list[FileMatches],
    names: dict[str, str],
    offset: int,
    limit: int,
    context: ContextReader,
    skipped: int = 0,
) -> Scan:
    """Files by path, lines in order; rg counted every matching line, so the total is exact. The
    page's first file may have its first `skipped` lines dropped (`_skip_before_page`)."""
    n_ctx = context.n
    total = sum(fm.matched_lines for fm in found)
    seen = 0
    blocks: list[tuple[Block, list[Hit]]] = []
    for fm in found:
        if seen + fm.matched_lines <= offset:
            seen += fm.matched_lines
            continue
        seen, skipped = seen + skipped, 0  # (the first file of the page only)
        page: list[Hit] = []
        labels: dict[int, str | None] = {}
        last_page_line = -1
        for lm in fm.lines:
            if seen >= offset + limit:
                if lm.line > last_page_line + n_ctx:
                    break
                labels[lm.line] = None  # a hit inside the last hit's context prints as primary
                continue
            if seen >= offset:
                page.append(_hit(fm.path, lm, None, context))
                last_page_line = lm.line
            labels[lm.line] = None
            seen += 1
        if page:
            blocks.append((Block(names[fm.path], labels), page))
        if seen >= offset + limit:
            break
    return Scan(blocks, total, total, offset + limit < total)


# ----- result ----------------------------------------------------------------------------------


def _result(
    p: GrepParams,
    mode: str,
    plans: list[PatternPlan],
    scan: Scan,
    search: Search,
    tally: Tally,
    offset: int,
    limit: int,
    n_ctx: int,
) -> dict[str, Any]:
    budget = OUTPUT_CAP - FOOTER_RESERVE
    if mode == "ranked":
        page = render_ranked(scan.blocks, budget)
    else:
        page = render_raw(scan.blocks, budget, context=n_ctx > 0)
    run = search.stats
    scan_complete = not run.timed_out
    returned = page.printed
    next_offset = offset + returned
    more = scan.has_more or page.capped
    has_more: bool | None = True if more else (None if not scan_complete else False)
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
    if page.capped or page.cut:
        reasons.append("output_cap")
    if not scan_complete:
        reasons.append("deadline")
    omissions = _omissions(mode, scan, page, more, next_offset, omitted_total, tally, search, n_ctx)
    text = page.text
    warnings = ignore_warnings(run.bad_rules, lambda path: _shown(path, tally.cwd))
    footer = _fit_footer(
        [
            *filter(None, _footer(mode, scan, returned, offset, omissions).split("\n")),
            *warning_notes(warnings),
        ]
    )
    if footer:
        text = f"{text}\n\n{footer}" if text else footer
    result: dict[str, Any] = {
        "output": text,
        "format": "grouped_v1" if mode == "ranked" else "raw",
        "mode": mode,
        "patterns": list(p.patterns),
        "matchers": [pl.to_dict() for pl in plans],
        "case_insensitive": bool(p.case_insensitive),
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
        **completeness(omissions),
        "per_file": per_file,
        "omitted_total": omitted_total,
        "scan_complete": scan_complete,
        "scan_stop": "deadline" if run.timed_out else None,
        "files_scanned": search.files_searched,
        "files_matched": tally.files_matched,
        "bytes_scanned": search.bytes_searched,
        "skipped": {
            "binary": tally.binary,
            "invalid_utf8": tally.invalid_utf8,
            "unreadable": len(run.errors),
            "denied": tally.denied,
            "special": (1 if tally.special else 0) + len(tally.walked_special),
        },
        "engine": "rg",
        "limits": {
            "seconds": DEADLINE_S,
            "output_bytes": OUTPUT_CAP,
            "per_file_hits": PER_FILE_CAP if mode == "ranked" else None,
        },
        "hits": [_hit_json(b.path, h) for b, _ in scan.blocks for h in b.hits],
    }
    if warnings:
        result["warnings"] = warnings
    return result


def _hit_json(path: str, h: Hit) -> dict[str, Any]:
    """One hit for the JSON: the whole line up to HIT_TEXT_CAP characters (`text_truncated` past it)."""
    out: dict[str, Any] = {"path": path, "line": h.line, "label": h.label, "text": h.text[:HIT_TEXT_CAP]}
    if len(h.text) > HIT_TEXT_CAP:
        out["text_truncated"] = True
    return out


def _omissions(
    mode: str,
    scan: Scan,
    page: Page,
    more: bool,
    next_offset: int,
    omitted_total: int,
    tally: Tally,
    search: Search,
    n_ctx: int,
) -> list[Omission]:
    out: list[Omission] = []
    if more:
        left = scan.primary_total - next_offset
        why = "output_cap" if page.capped else "page"
        cap = "the 64 KiB output cap" if page.capped else "limit"
        out.append(
            Omission(why, left, "match", f"stopped at {cap}; use offset={next_offset} for the next page")
        )
    if page.cut:
        c = page.cut
        out.append(
            Omission(
                "context_cut",
                c.dropped,
                "line",
                f"the hit at {printable(c.path)}:{c.line} with its context passes the 64 KiB output cap, so {c.kept} "
                f"of the {n_ctx} lines asked for on each side are shown; read the file around that line, "
                "or ask for less context",
            )
        )
    if tally.context_short:
        (path, line), _ = tally.context_short[0]
        n = len(tally.context_short)
        out.append(
            Omission(
                "context_short",
                sum(missing for _, missing in tally.context_short),
                "line",
                f"{n} {'hit shows' if n == 1 else 'hits show'} fewer context lines than asked: a line next to "
                f"{'it' if n == 1 else 'them'} is over 4 MiB (or the file could not be read again); read the "
                f"file around them (e.g. {printable(_shown(path, tally.cwd))}:{line})",
            )
        )
    if omitted_total:
        out.append(
            Omission(
                "per_file_cap",
                omitted_total,
                "match",
                f"ranked mode shows {PER_FILE_CAP} hits per file; narrow path to that file or use mode=raw",
            )
        )
    binary = binary_omission(
        tally.binary_not_searched,
        tally.binary_stopped,
        "to search them as text run `rg -a PATTERN PATH` in the shell",
        lambda path: _shown(path, tally.cwd),
        more=tally.binary_log_cut,
    )
    if binary:
        out.append(binary)
    if tally.invalid_utf8:
        out.append(
            Omission(
                "invalid_utf8",
                tally.invalid_lines,
                "line",
                f"in {tally.invalid_utf8} file(s) they are not UTF-8 text, so they are not shown; "
                "to see them run `rg -a PATTERN PATH` in the shell",
            )
        )
    unnamed = invalid_name_omission(
        tally.unnamed, tally.unnamed_lines, "line", lambda path: _shown(path, tally.cwd)
    )
    if unnamed:
        out.append(unnamed)
    if tally.special:
        out.append(special_omission(_shown(tally.special_path, tally.cwd), tally.special, "grep"))
    walked = walked_special_omission(tally.walked_special, "grep", lambda path: _shown(path, tally.cwd))
    if walked:
        out.append(walked)
    bad = unreadable_omission(search.stats.errors)
    if bad:
        out.append(bad)
    if search.stats.timed_out:
        out.append(timeout_omission(DEADLINE_S, "file", "the path, glob, type or pattern"))
    return out


def _footer(mode: str, scan: Scan, returned: int, offset: int, omissions: list[Omission]) -> str:
    lines: list[str] = []
    if returned == 0 and not scan.primary_total:
        lines.append("[no matches]")
    elif returned == 0:
        lines.append(f"[no primary matches at offset={offset}; {scan.primary_total} in total]")
    for o in omissions:
        nxt = o.how.rsplit("offset=", 1)[-1].split(" ")[0] if "offset=" in o.how else ""
        if o.reason == "output_cap":
            lines.append(f"[output capped at 64 KiB; use offset={nxt}]")
        elif o.reason == "page" and mode == "raw":
            lines.append(f"[more matches; use offset={nxt}]")
        elif o.reason == "page":
            lines.append(f"[{o.count} more primary matches; use offset={nxt}]")
        elif o.reason == "per_file_cap":
            lines.append(
                f"[{o.count} more hits beyond {PER_FILE_CAP} per file are not listed; narrow path or use mode=raw]"
            )
        else:
            lines.append(o.note())
    return "\n".join(lines)


def _fit_footer(notes: list[str]) -> str:
    """The notes below the page, within FOOTER_RESERVE bytes (with the blank line before them), so that
    page and notes stay within OUTPUT_CAP. Notes name paths, which can be long: when they do not fit,
    each is cut to a fair share (marked …) and a last line says where they are whole."""
    room = FOOTER_RESERVE - 2
    if sum(len(n.encode("utf-8")) + 1 for n in notes) - 1 <= room:
        return "\n".join(notes)
    tail = "[notes cut to fit the output cap; `omitted` and `warnings` in the JSON hold them whole]"
    share = (room - len(tail) - len(notes)) // max(len(notes), 1)
    return "\n".join([*(_cut_utf8(n, share) for n in notes), tail])


def _cut_utf8(text: str, limit: int) -> str:
    """`text` within `limit` UTF-8 bytes: cut at a character and marked with … when it is longer."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: max(limit - 3, 0)].decode("utf-8", "ignore") + "…"


def _render(result: dict[str, Any]) -> str:
    return str(result["output"])


TOOLS = specs(
    ToolSpec(
        name="grep",
        category="coding",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Search file contents (on ripgrep) for up to 8 OR-ed patterns. Each pattern is a case-sensitive "
            "regex (Rust syntax, Unicode-aware) after common bracket/brace repairs, matched literally if it "
            "still does not compile; `case_insensitive`, `glob` and `type` narrow it. Ranked mode (default) "
            "prints grouped_v1: `## path` headers, `N:[def-like]`, `N:[match]` and `N:[import]` rows (at "
            "most 5 per file, definitions first) and `N-` context rows; raw mode prints `path:line:text` "
            "rows. Skips hidden, ignored (.gitignore, .ignore, Perforce), .git, target and binary files (a "
            "NUL byte where reading starts); every other file is read to its end. Limits: 10 s, 64 KiB of "
            "output. `complete` is false and `omitted` (and "
            "`[incomplete: …]` lines) say what was left out (next page, binary files, ...) and how to get it."
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
            FailureMode(
                "invalid_pattern",
                "a pattern is empty, longer than 1,024 bytes, or holds a NUL byte or a line break",
            ),
            FailureMode(
                "invalid_regex",
                "the patterns are too big for rg to compile as one set, though each goes with those before "
                "it; a pattern that does not compile, alone or with those before it, is searched literally",
            ),
            FailureMode("invalid_type", "a `type` is not one of ripgrep's file types"),
            FailureMode("invalid_glob", "a `glob` does not parse"),
            FailureMode(
                "search_engine_missing", "ripgrep (rg) is not installed; the message says how to install it"
            ),
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
