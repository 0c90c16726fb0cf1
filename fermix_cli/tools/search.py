"""Search tools of the agent toolset: glob_search and content_search, over the shared walker and matcher."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Annotated, Any

from ..core.context import ToolContext
from ..core.errors import ToolError, world_error
from ..core.fsops import FileReader
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ..core.search.globpat import compile_glob, literal_prefix, max_depth
from ..core.search.match import Matcher, MatchTimeout, is_binary, line_text
from ..core.search.walk import WalkOptions, WalkStats, walk

GLOB_MAX_ENTRIES = 100_000
GLOB_DEADLINE_S = 30.0
CONTENT_FILE_CAP = 64 * 1024 * 1024
CONTENT_LINE_CAP = 1000  # characters of one matched line shown; the rest is cut and marked
CONTENT_OUTPUT_CAP = 256 * 1024  # characters of matched text in one answer


def _clamp(value: int | None, default: int, lo: int, hi: int) -> int:
    return default if value is None else max(lo, min(hi, value))


def _search_root(ctx: ToolContext, raw: str | None, tool: str) -> str:
    root = ctx.sandbox.read_path(raw if raw is not None else ".", tool=tool, reject_dotdot=True)
    if not os.path.exists(root):
        raise ToolError("not_found", f"Search path not found: {root}", {"path": root})
    return root


# ----- glob_search -----------------------------------------------------------------------------


class GlobParams(Params):
    pattern: Annotated[
        str, Field(max_length=4096, description='Glob pattern relative to `path`, e.g. "src/**/*.ex"')
    ]
    path: Annotated[
        str | None,
        Field(max_length=4096, description="Directory to search from (default: the working directory)"),
    ] = None
    max_results: Annotated[
        int | None, Field(le=2**31, description="Upper bound on returned paths (default 200, at most 1000)")
    ] = None


def glob_search(p: GlobParams, ctx: ToolContext) -> dict[str, Any]:
    rx = compile_glob(p.pattern)
    limit = _clamp(p.max_results, 200, 1, 1000)
    root = _search_root(ctx, p.path, "glob_search")
    if not os.path.isdir(root):
        raise world_error("invalid_path", f"Search root is not a directory: {root}", {"path": root})
    prefix = literal_prefix(p.pattern)
    start = os.path.join(root, prefix) if prefix else root
    if prefix:
        try:
            start = ctx.sandbox.read_path(start, tool="glob_search")
        except ToolError:
            return {"paths": [], "truncated": False, "scan_complete": True}
        if not os.path.isdir(start):
            return {"paths": [], "truncated": False, "scan_complete": True}
    depth = max_depth(p.pattern)
    opts = WalkOptions(
        hidden=True,
        max_entries=GLOB_MAX_ENTRIES,
        deadline=time.monotonic() + GLOB_DEADLINE_S,
        max_depth=None if depth is None else max(depth - prefix.count("/") - (1 if prefix else 0), 1),
    )
    stats = WalkStats()
    hits: list[str] = []
    base_rel = prefix + "/" if prefix else ""
    for entry in walk(start, ctx.sandbox, opts, stats):
        if rx.match(base_rel + entry.rel):
            hits.append(entry.path)
    hits.sort()
    return {
        "paths": hits[:limit],
        "truncated": len(hits) > limit or not stats.complete,
        "scan_complete": stats.complete,
    }


def _render_glob(r: dict[str, Any]) -> str:
    text = json.dumps(r["paths"], ensure_ascii=False)
    if not r["scan_complete"]:
        text += "\n[scan stopped early: the walk hit its entry or time limit; narrow the pattern or path]"
    elif r["truncated"]:
        text += "\n[truncated: more paths matched; raise max_results or narrow the pattern]"
    return text


# ----- content_search --------------------------------------------------------------------------


class ContentParams(Params):
    pattern: Annotated[
        str,
        Field(max_length=65_536, description="Text to find, or a regular expression when `regex` is true"),
    ]
    path: Annotated[
        str | None,
        Field(max_length=4096, description="File or directory to search (default: the working directory)"),
    ] = None
    regex: Annotated[bool, Field(description="Interpret `pattern` as a regular expression")] = False
    max_results: Annotated[
        int | None, Field(le=2**31, description="Upper bound on matches (default 200, at most 1000)")
    ] = None
    timeout_ms: Annotated[
        int | None,
        Field(le=2**31, description="Search deadline in milliseconds (default 30000, at most 120000)"),
    ] = None


def content_search(p: ContentParams, ctx: ToolContext) -> dict[str, Any]:
    if p.pattern == "":
        raise ToolError("missing_pattern", "Missing required parameter: pattern", {})
    matcher = Matcher([p.pattern], regex=p.regex)
    limit = _clamp(p.max_results, 200, 1, 1000)
    timeout_ms = _clamp(p.timeout_ms, 30_000, 1, 120_000)
    deadline = time.monotonic() + timeout_ms / 1000
    root = _search_root(ctx, p.path, "content_search")
    files: Iterator[tuple[str, int]]
    if os.path.isdir(root):
        stats = WalkStats()
        files = (
            (e.canonical, e.size)
            for e in walk(root, ctx.sandbox, WalkOptions(hidden=True, deadline=deadline), stats)
        )
    else:
        stats = None
        files = iter([(root, os.path.getsize(root))])
    matches: list[dict[str, Any]] = []
    skipped_large = 0
    truncated = output_capped = False
    shown = 0
    reader = FileReader()

    try:
        for path, size in files:
            if size > CONTENT_FILE_CAP:
                skipped_large += 1
                continue
            try:
                data, _ = reader.read(path, CONTENT_FILE_CAP)
            except (OSError, ToolError):
                continue
            if is_binary(data):
                continue
            for hit in matcher.lines(data, deadline):
                if len(matches) >= limit or shown >= CONTENT_OUTPUT_CAP:
                    truncated = True
                    output_capped = shown >= CONTENT_OUTPUT_CAP
                    break
                match = _match(path, hit.line, line_text(data, hit))
                shown += len(match["text"])
                matches.append(match)
            if truncated:
                break
            if time.monotonic() > deadline:
                raise MatchTimeout()
    except MatchTimeout:
        raise ToolError(
            "timeout",
            f"content_search passed its {timeout_ms} ms deadline with {len(matches)} matches so far; "
            "narrow the path or pattern, or raise timeout_ms",
            {"timeout_ms": timeout_ms, "matches_so_far": len(matches)},
        ) from None
    finally:
        reader.close()
    if stats is not None and stats.stopped == "deadline":
        raise ToolError(
            "timeout",
            f"content_search passed its {timeout_ms} ms deadline; narrow the path or raise timeout_ms",
            {"timeout_ms": timeout_ms, "matches_so_far": len(matches)},
        )
    result: dict[str, Any] = {
        "matches": matches,
        "truncated": truncated or (stats is not None and not stats.complete),
    }
    if skipped_large:
        result["files_skipped_large"] = skipped_large
    if output_capped:
        result["output_capped_at"] = CONTENT_OUTPUT_CAP
    return result


def _match(path: str, line: int, text: str) -> dict[str, Any]:
    """One match, its line cut at CONTENT_LINE_CAP characters (and marked) so one line cannot flood the answer."""
    if len(text) <= CONTENT_LINE_CAP:
        return {"path": path, "line": line, "text": text}
    return {"path": path, "line": line, "text": text[:CONTENT_LINE_CAP], "line_truncated": True}


TOOLS = specs(
    ToolSpec(
        name="glob_search",
        category="search",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Find files by glob pattern below a directory (default: the working directory). `*` stays within "
            "one directory, `**` spans directories, `{a,b}` alternates. Honours .gitignore and .ignore; "
            "dotfiles match. Returns sorted absolute paths of regular files."
        ),
        params=GlobParams,
        handler=glob_search,
        render=_render_glob,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Find files by name or extension. To search inside files, use content_search.",
        examples=(
            Example({"pattern": "**/*.py"}, "every Python file below the working directory"),
            Example({"pattern": "src/**/*.ex", "max_results": 50}, "Elixir sources under src"),
        ),
        failure_modes=(
            FailureMode("invalid_pattern", "the pattern is absolute, has a `..` component, or is malformed"),
            FailureMode("not_found", "the search path does not exist"),
            FailureMode("outside_root", "the search path is outside the sandbox roots"),
        ),
    ),
    ToolSpec(
        name="content_search",
        category="search",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Search file contents for text (or a regular expression when `regex` is true) in a file or below "
            "a directory, without shelling out. Binary files are skipped; .gitignore is honoured. Returns "
            "{path, line, text} for each matching line, bounded by max_results and a deadline. A line is "
            "shown up to 1000 characters (`line_truncated` marks a cut one) and an answer up to 256 KiB of "
            "text (`output_capped_at`); `truncated` says when matches were left out."
        ),
        params=ContentParams,
        handler=content_search,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Find where text occurs. To find files by name, use glob_search.",
        examples=(
            Example({"pattern": "TODO"}, "literal text below the working directory"),
            Example({"pattern": r"def \w+_test\(", "regex": True, "path": "tests"}, "a regular expression"),
        ),
        failure_modes=(
            FailureMode("invalid_regex", "the regular expression does not compile"),
            FailureMode("timeout", "the deadline passed; narrow the search"),
            FailureMode("not_found", "the search path does not exist"),
        ),
    ),
)
