"""Search tools of the agent toolset: glob_search and content_search, on ripgrep.

glob_search lists candidates with `rg --files` (ignore rules, dotfiles included) and matches the
glob in fermix; content_search runs `rg --json`. Every returned path is checked by the sandbox again.
Answers say whether they are complete (`complete`, `omitted`) and how to get what was left out.
"""

from __future__ import annotations

import json
import os
import stat
import time
from typing import Annotated, Any

from ..core.context import ToolContext
from ..core.errors import ToolError, world_error
from ..core.params import Field
from ..core.pathcanon import refused_by_directory
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ..core.search.above import GIT_RULE_FILES, git_top, rules_above
from ..core.search.globpat import basename_globs, compile_glob, literal_prefix, max_depth
from ..core.search.names import is_utf8, shown_path
from ..core.search.report import (
    Omission,
    binary_omission,
    completeness,
    ignore_warnings,
    invalid_name_omission,
    notes,
    timeout_omission,
    unreadable_omission,
    warning_notes,
)
from ..core.search.ripgrep import (
    FileMatches,
    PatternError,
    RunStats,
    Scope,
    Search,
    allowed_below,
    decode_pending,
    list_files,
)
from ..core.search.special import special_kind, special_omission, walked_special_omission
from ..core.search.walklog import skipped_children

GLOB_DEADLINE_S = 30.0
NAME_TYPE = "fermixname"  # the rg file type glob_search defines for its file-name prefilter
CONTENT_LINE_CAP = 1000  # characters of one matched line shown; the rest is cut and marked
CONTENT_OUTPUT_CAP = 256 * 1024  # characters of matched text in one answer


def _clamp(value: int | None, default: int, lo: int, hi: int) -> int:
    return default if value is None else max(lo, min(hi, value))


def _search_root(ctx: ToolContext, raw: str | None, tool: str) -> str:
    root = ctx.sandbox.read_path(raw if raw is not None else ".", tool=tool, reject_dotdot=True)
    if not os.path.exists(root):
        raise ToolError("not_found", f"Search path not found: {root}", {"path": root})
    return root


def _allowed(ctx: ToolContext, root: str, paths: list[str]) -> tuple[list[str], int]:
    """The absolute paths the sandbox allows (checked again after rg), and how many it refused."""
    return allowed_below(ctx.sandbox, root, paths)


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
    deadline = time.monotonic() + GLOB_DEADLINE_S
    prefix = literal_prefix(p.pattern)
    start, run = _prefix_dir(ctx, root, prefix, deadline) if prefix else (root, RunStats())
    if start is not None and prefix and _rules_reach_below(root, prefix):
        # An ignore file on the way holds a rule with a path (`/src/lib/gen/`), which rg started at the
        # prefix would not apply below it: the walk starts at the root (the prefix checks stand).
        start, prefix = root, ""
    hits: list[str] = []
    if start is not None and not run.timed_out:
        depth = max_depth(p.pattern)
        # rg narrows the listing by file name when the pattern's last component allows (a file type is
        # matched after the ignore rules, unlike `-g`, which would bring ignored files back); the full
        # glob is then matched here on what is left.
        names = basename_globs(p.pattern)
        scope = Scope(
            root=start,
            hidden=True,
            max_depth=None if depth is None else max(depth - prefix.count("/") - (1 if prefix else 0), 1),
            type_defs=tuple(f"{NAME_TYPE}:{g}" for g in names or ()),
            types=(NAME_TYPE,) if names else (),
        )
        listed, run = list_files(scope, deadline, ctx.sandbox)
        base_rel = prefix + "/" if prefix else ""
        at = start.rstrip("/") + "/"  # canonical; rg follows no symlink, so at + rel is too
        match = rx.match
        hits = [at + rel for rel in listed if match(base_rel + rel)]
        hits, _ = _allowed(ctx, start, hits)
    unnamed = [h for h in hits if not is_utf8(h)]
    if unnamed:
        hits = [h for h in hits if is_utf8(h)]
    hits.sort()
    omissions: list[Omission] = []
    if len(hits) > limit:
        omissions.append(
            Omission(
                "max_results",
                len(hits) - limit,
                "path",
                f"{len(hits)} paths matched; raise max_results (at most 1000) or narrow the pattern or path",
            )
        )
    invalid = invalid_name_omission(unnamed, len(unnamed), "path")
    if invalid:
        omissions.append(invalid)
    bad = unreadable_omission(run.errors)
    if bad:
        omissions.append(bad)
    if run.timed_out:
        omissions.append(timeout_omission(GLOB_DEADLINE_S, "path"))
    result: dict[str, Any] = {
        "paths": hits[:limit],
        "truncated": len(hits) > limit or run.timed_out,
        "scan_complete": not run.timed_out,
        "total_matched": len(hits),
        **completeness(omissions),
    }
    return _with_warnings(result, run)


def _with_warnings(result: dict[str, Any], run: RunStats) -> dict[str, Any]:
    """`result` with `warnings` when rg warned of something that left nothing out (a bad ignore rule)."""
    warnings = ignore_warnings(run.bad_rules)
    if warnings:
        result["warnings"] = warnings
    return result


def _notes(r: dict[str, Any]) -> list[str]:
    return notes([Omission(**o) for o in r["omitted"]]) + warning_notes(r.get("warnings", []))


_IGNORE_FILES = (*GIT_RULE_FILES, os.path.join(".git", "info", "exclude"))


def _rules_reach_below(root: str, prefix: str) -> bool:
    """Whether an ignore file in the root, a prefix directory above the last, or a directory above the
    root holds a rule naming a path (a `/` before its end): rg applies such a rule right only in a walk
    from that file's directory (the check of the prefix directories, which walks them as paths of
    their own, would see it only now and then)."""
    if any("/" in rule.text.rstrip("/") for rule in rules_above(root, None, git_top(root))):
        return True
    comps = prefix.split("/")
    for depth in range(len(comps)):
        directory = os.path.join(root, *comps[:depth])
        for name in _IGNORE_FILES:
            try:
                with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as f:
                    text = f.read((1 << 20) + 1)
            except OSError:
                continue
            if len(text) > 1 << 20:
                return True  # too long to read whole: the root walk, which needs no reading of it
            for line in text.splitlines():
                rule = line.strip()
                if rule and not rule.startswith("#") and "/" in rule.rstrip("/"):
                    return True
    return False


def _prefix_dir(ctx: ToolContext, root: str, prefix: str, deadline: float) -> tuple[str | None, RunStats]:
    """Where the walk for a pattern with literal leading directories (`prefix`) starts: `root/prefix`,
    or None when a walk from `root` would list nothing there (so the answer is the whole walk's): a
    component is missing, not a directory, a symlink (not followed), or one rg's walk skips (ignored
    by a rule from above, `.git`). The stats say whether that check ran out of time. A prefix the
    sandbox refuses is an error, as the same directory given as `path` would be."""
    at = root
    for name in prefix.split("/"):
        at = os.path.join(at, name)
        try:
            mode = os.lstat(at).st_mode
        except PermissionError:  # the directory above refuses lookups: nothing below it can be listed
            ctx.sandbox.read_path(at, tool="glob_search")
            raise refused_by_directory(at, os.path.dirname(at)) from None
        except OSError:
            return None, RunStats()
        if not stat.S_ISDIR(mode):  # a symlink too: it is not followed
            return None, RunStats()
    ctx.sandbox.read_path(at, tool="glob_search")  # no symlink on the way: `at` is canonical
    comps = prefix.split("/")
    dirs = ["/".join(comps[:i]) for i in range(len(comps))]  # the root, then each prefix directory
    skipped = skipped_children(Scope(root=root, hidden=True), dirs, deadline, ctx.sandbox)
    if skipped is None:
        return None, RunStats(timed_out=True)
    if any("/".join(comps[: i + 1]) in skipped for i in range(len(comps))):
        return None, RunStats()
    return at, RunStats()


def _render_glob(r: dict[str, Any]) -> str:
    text = json.dumps(r["paths"], ensure_ascii=False)
    return "\n".join([text, *_notes(r)])


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
    regex: Annotated[
        bool,
        Field(description="Interpret `pattern` as a regular expression (Rust syntax, as ripgrep has it)"),
    ] = False
    case_insensitive: Annotated[
        bool | None, Field(description="Match regardless of case (default false: case-sensitive)")
    ] = None
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
    limit = _clamp(p.max_results, 200, 1, 1000)
    timeout_ms = _clamp(p.timeout_ms, 30_000, 1, 120_000)
    deadline = time.monotonic() + timeout_ms / 1000
    root = _search_root(ctx, p.path, "content_search")
    if os.path.isdir(root):
        scope, target = Scope(root=root, hidden=True), "."
    else:
        kind = special_kind(root)
        if kind is not None:  # rg would block on a FIFO until the deadline: skipped at once
            return _skipped_special(root, kind)
        scope, target = Scope(root=os.path.dirname(root)), os.path.basename(root)
    search = Search(
        scope,
        [p.pattern],
        deadline,
        ctx.sandbox,
        fixed=not p.regex,
        ignore_case=bool(p.case_insensitive),
        keep=limit,
        target=target,
    )
    files = []
    stopped: list[str] = []
    base = scope.root.rstrip("/") + "/"  # canonical; rg follows no symlink, so base + rel is too
    try:
        for fm in search.files():
            fm.path = base + fm.path
            files.append(fm)
            if fm.binary:
                stopped.append(fm.path)  # rg stopped at a NUL after the first matches; those are kept
    except PatternError as e:
        raise ToolError(
            "invalid_regex", f"Invalid regular expression: {e.message}", {"pattern": p.pattern}
        ) from None
    allowed, refused = _allowed(ctx, scope.root, [fm.path for fm in files])
    if refused:
        keep = set(allowed)
        files = [fm for fm in files if fm.path in keep]
        stopped = [p for p in stopped if p in keep]
    if search.stats.timed_out:
        found = sum(fm.matched_lines for fm in files)
        raise ToolError(
            "timeout",
            f"content_search passed its {timeout_ms} ms deadline with {found} matches so far; "
            "narrow the path or pattern, or raise timeout_ms",
            {"timeout_ms": timeout_ms, "matches_so_far": found},
        )
    seen = set(stopped)
    not_searched, _ = _allowed(
        ctx, scope.root, [base + rel for rel in search.stats.binary if base + rel not in seen]
    )
    unnamed = [fm for fm in files if not is_utf8(fm.path)]
    if unnamed:
        files = [fm for fm in files if is_utf8(fm.path)]
        stopped = [p for p in stopped if is_utf8(p)]
    files.sort(key=lambda fm: fm.path)
    total = sum(fm.matched_lines for fm in files)
    decode_pending(_first_files(files, limit))
    matches: list[dict[str, Any]] = []
    shown = 0
    output_capped = False
    for fm in files:
        for lm in fm.lines:
            if len(matches) >= limit:
                break
            if shown >= CONTENT_OUTPUT_CAP:
                output_capped = True
                break
            match = _match(fm.path, lm.line, lm.text.decode("utf-8", "replace").rstrip())
            shown += len(match["text"])
            matches.append(match)
        if len(matches) >= limit or output_capped:
            break
    omissions: list[Omission] = []
    left = total - len(matches)
    if left:
        why = "output_cap" if output_capped else "max_results"
        fix = (
            f"the answer holds at most {CONTENT_OUTPUT_CAP // 1024} KiB of text; narrow the path or pattern"
            if output_capped
            else "raise max_results (at most 1000) or narrow the path or pattern"
        )
        omissions.append(Omission(why, left, "match", f"{total} lines matched; {fix}"))
    binary = binary_omission(
        not_searched,
        stopped,
        "content_search does not search binary data; run `rg -a PATTERN PATH` in a shell",
        shown_path,
        more=search.stats.log_cut,
    )
    if binary:
        omissions.append(binary)
    invalid = invalid_name_omission(
        [fm.path for fm in unnamed], sum(fm.matched_lines for fm in unnamed), "match"
    )
    if invalid:
        omissions.append(invalid)
    special, _ = _allowed(ctx, scope.root, [base + rel for rel in search.stats.special])
    walked = walked_special_omission(special, "content_search", shown_path)
    if walked:
        omissions.append(walked)
    bad = unreadable_omission(search.stats.errors)
    if bad:
        omissions.append(bad)
    result: dict[str, Any] = {
        "matches": matches,
        "truncated": left > 0,
        "total_matches": total,
        **completeness(omissions),
    }
    if output_capped:
        result["output_capped_at"] = CONTENT_OUTPUT_CAP
    return _with_warnings(result, search.stats)


def _first_files(files: list[FileMatches], lines: int) -> list[FileMatches]:
    """The first of `files` that together hold `lines` of the lines kept (or all of them)."""
    out: list[FileMatches] = []
    for fm in files:
        if lines <= 0:
            break
        out.append(fm)
        lines -= len(fm.decoded) + len(fm.pending)
    return out


def _skipped_special(path: str, kind: str) -> dict[str, Any]:
    """content_search's answer for a `path` that is a FIFO, socket or device: nothing read, and why."""
    omission = special_omission(shown_path(path), kind, "content_search")
    return {"matches": [], "truncated": False, "total_matches": 0, **completeness([omission])}


def _render_content(r: dict[str, Any]) -> str:
    text = json.dumps(r["matches"], ensure_ascii=False)
    return "\n".join([text, *_notes(r)])


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
            "one directory, `**` spans directories, `{a,b}` alternates, `\\` escapes the next character "
            "(rg's glob syntax). Honours .gitignore and .ignore; "
            "dotfiles match; symlinks are not followed. Returns sorted absolute paths of regular files; "
            "`complete`/`omitted` say when more matched than max_results."
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
            FailureMode("search_engine_missing", "ripgrep (rg) is not installed; the message says how"),
            FailureMode("outside_root", "the search path is outside the sandbox roots"),
            FailureMode(
                "protected_path",
                "the search path, or a literal directory the pattern starts with, is protected",
            ),
            FailureMode(
                "blocked_root", "the search path, or a literal directory the pattern starts with, is blocked"
            ),
        ),
    ),
    ToolSpec(
        name="content_search",
        category="search",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Search file contents for text (or a regular expression, Rust syntax, when `regex` is true) in a "
            "file or below a directory, on ripgrep (no shell). Binary files are skipped (a NUL byte); "
            ".gitignore and .ignore are honoured; every file is read to its end. Returns {path, line, text} "
            "for each matching line, in path order, bounded by max_results and a deadline. A line is shown "
            "up to 1000 characters (`line_truncated` marks a cut one) and an answer up to 256 KiB of text "
            "(`output_capped_at`); `complete`, `omitted` and `total_matches` say what was left out and how "
            "to get it."
        ),
        params=ContentParams,
        handler=content_search,
        render=_render_content,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Find where text occurs. To find files by name, use glob_search.",
        examples=(
            Example({"pattern": "TODO"}, "literal text below the working directory"),
            Example({"pattern": r"def \w+_test\(", "regex": True, "path": "tests"}, "a regular expression"),
        ),
        failure_modes=(
            FailureMode("invalid_regex", "the regular expression does not compile"),
            FailureMode(
                "invalid_pattern", "the pattern holds a NUL byte or a line break (rg matches one line)"
            ),
            FailureMode("timeout", "the deadline passed; narrow the search"),
            FailureMode("search_engine_missing", "ripgrep (rg) is not installed; the message says how"),
            FailureMode("not_found", "the search path does not exist"),
        ),
    ),
)
