"""find (fuzzy path discovery over `rg --files`) and list_files (a raw shallow listing).

find's candidates are the files rg lists (hidden, Git-ignored, `.ignore`d and Perforce-ignored
paths left out, as rg and the rule files say) and the directories that hold them: rg lists files
only, so a directory with no visible file below it (an empty one, say) is not a candidate; such a
directory that matches, at any depth, is counted in the result's `omitted` (reason
`no_listed_files`), never dropped silently. Which directories rg's walk entered comes from its
`--debug` log, which names every entry it skipped (hidden, ignored, excluded).
"""

from __future__ import annotations

import os
import time
from typing import Annotated, Any, Literal

from ...core.context import ToolContext
from ...core.errors import ToolError, world_error
from ...core.params import Field
from ...core.pathcanon import is_inside
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ...core.search.names import is_utf8, printable
from ...core.search.p4ignore import resolve_p4
from ...core.search.report import (
    Omission,
    completeness,
    ignore_warnings,
    invalid_name_omission,
    notes,
    timeout_omission,
    unreadable_omission,
    warning_notes,
)
from ...core.search.ripgrep import RunStats, Scope, allowed_below
from ...core.search.ripgrep import list_files as rg_list_files
from ...core.search.walklog import lossy
from .fuzzy import Query, rank_key
from .pathrules import ToolPath, display_path, resolve_source

MAX_QUERY_CHARS = 512
FIND_DEADLINE_S = 10.0
FIND_DEFAULT_LIMIT, FIND_MAX_LIMIT = 50, 200
LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT = 500, 5000


def _directory(ctx: ToolContext, raw: str | None, tool: str) -> ToolPath:
    target = resolve_source(ctx, raw if raw is not None else ".", tool=tool)
    if not os.path.exists(target.path):
        raise ToolError("not_found", f"Directory not found: {target.display}", {"path": target.path})
    if not os.path.isdir(target.path):
        raise world_error(
            "invalid_path",
            f"{target.display} is a file, not a directory; {tool} needs a directory (use read for a file)",
            {"path": target.path},
        )
    return target


# ----- find ------------------------------------------------------------------------------------


class FindParams(Params):
    query: Annotated[
        str,
        Field(
            max_length=4096,
            description=(
                "What to look for: whitespace-separated tokens, all of which must match the path "
                "(case-insensitive; exact names rank first; a token with / matches the relative path)"
            ),
        ),
    ]
    kind: Annotated[
        Literal["files", "directories", "mixed"] | None,
        Field(description="files (default), directories (shown with a trailing /), or mixed"),
    ] = None
    path: Annotated[
        str | None,
        Field(max_length=4096, description="Directory to search below (default: the working directory)"),
    ] = None
    limit: Annotated[
        int | None, Field(ge=1, le=FIND_MAX_LIMIT, description="Results per page (default 50, at most 200)")
    ] = None
    offset: Annotated[
        int | None, Field(ge=0, le=2**31, description="Results to skip, for paging (default 0)")
    ] = None


def find(p: FindParams, ctx: ToolContext) -> dict[str, Any]:
    text = p.query.strip()
    if not text:
        raise ToolError("invalid_query", "query is empty; give a name or part of a path to look for", {})
    if len(text) > MAX_QUERY_CHARS:
        raise ToolError(
            "query_too_long",
            f"query is {len(text)} characters; find accepts at most {MAX_QUERY_CHARS}",
            {"length": len(text)},
        )
    kind = p.kind or "files"
    limit = min(p.limit or FIND_DEFAULT_LIMIT, FIND_MAX_LIMIT)
    offset = p.offset or 0
    target = _directory(ctx, p.path, "find")
    query = Query.parse(text)
    scope = Scope(root=target.path, p4=resolve_p4(target.path, home=ctx.os_home))
    deadline = time.monotonic() + FIND_DEADLINE_S
    skipped: set[str] = set()
    if kind == "files":
        files, run = rg_list_files(scope, deadline, ctx.sandbox)
    else:
        files, run = rg_list_files(scope, deadline, ctx.sandbox, skipped=skipped)
    dirs: set[str] = set()
    if kind != "files":
        for rel in files:
            d = rel.rpartition("/")[0]
            while d and d not in dirs:
                dirs.add(d)
                d = d.rpartition("/")[0]
    base = display_path(target.path, target.cwd)  # rg follows no symlink: root + rel is canonical
    prefix = "" if base == "." else base + "/"
    at = target.path.rstrip("/") + "/"
    # A root above the working directory: what lies inside the working directory is shown relative
    # to it, the rest absolute, one result at a time.
    each = prefix.startswith("/") and is_inside(target.cwd, target.path)
    scored: list[tuple[tuple[int, int, bytes], str, bool, int]] = []
    refused = 0
    unnamed: list[str] = []  # matches whose names are not UTF-8: counted, not shown
    for is_dir, rels in ((False, files if kind != "directories" else []), (True, sorted(dirs))):
        hits: list[tuple[str, int]] = []
        for rel in query.survivors(rels):
            score = query.score(rel)
            if score is not None:
                hits.append((rel, score))
        allowed, denied = allowed_below(
            ctx.sandbox, target.path, [at + rel for rel, _ in hits], link_check=not is_dir
        )
        refused += denied
        keep = set(allowed) if denied else None
        for rel, score in hits:
            if keep is not None and at + rel not in keep:
                continue
            shown = (display_path(at + rel, target.cwd) if each else prefix + rel) + ("/" if is_dir else "")
            if not is_utf8(rel):
                unnamed.append(shown)
                continue
            scored.append((rank_key(score, shown), shown, is_dir, score))
    scored.sort()
    complete = not run.timed_out
    page = scored[offset : offset + limit]
    more = offset + len(page) < len(scored)
    has_more: bool | None = more if complete else None
    lines = [printable(shown) for _, shown, _, _ in page]  # one line each, whatever the name holds
    omissions: list[Omission] = []
    if more and complete:
        nxt = offset + len(page)
        omissions.append(Omission("page", len(scored) - nxt, "path", f"use offset={nxt} for the next page"))
    if kind != "files" and not run.timed_out:
        gap = _fileless_omission(target.path, dirs, skipped, query, ctx.sandbox, deadline, run, prefix)
        if gap:
            omissions.append(gap)
    invalid = invalid_name_omission(unnamed, len(unnamed), "path")
    if invalid:
        omissions.append(invalid)
    bad = unreadable_omission(run.errors)
    if bad:
        omissions.append(bad)
    if run.timed_out:
        omissions.append(timeout_omission(FIND_DEADLINE_S, "path"))
    footer: list[str] = []
    if not scored:
        footer.append("[no matches]")
    elif not page:
        footer.append(f"[no results at offset={offset}; {len(scored)} in total]")
    if complete and more:
        footer.append(f"[{len(scored) - offset - len(page)} more results; use offset={offset + len(page)}]")
    if not complete:
        footer.append(
            "[partial scan: stopped at the 10 s deadline; only paths seen so far are ranked. Narrow path.]"
        )
    footer += [
        n
        for o, n in zip(omissions, notes(omissions), strict=True)
        if o.reason in ("unreadable", "no_listed_files", "invalid_utf8_name")
    ]
    warnings = ignore_warnings(run.bad_rules, lambda path: printable(display_path(path, target.cwd)))
    footer += warning_notes(warnings)
    output = "\n".join(lines)
    if footer:
        output = f"{output}\n\n" + "\n".join(footer) if output else "\n".join(footer)
    result: dict[str, Any] = {
        "output": output,
        "results": [
            {"path": shown, "kind": "directory" if is_dir else "file", "score": score}
            for _, shown, is_dir, score in page
        ],
        "query": text,
        "kind": kind,
        "offset": offset,
        "limit": limit,
        "returned": len(page),
        "has_more": has_more,
        "next_offset": offset + len(page) if (more or not complete) and page else None,
        "total_matched": len(scored),
        "total_matched_exact": complete,
        "scan_complete": complete,
        "truncated": not complete or more,
        "index_ready": complete,
        "entries_scanned": len(files),
        "entry_limit_reached": False,
        "timed_out": run.timed_out,
        "walk_errors": len(run.errors),
        # Protected and blocked entries are excluded before rg lists them; this counts the ones the
        # sandbox refused after (hard links to protected files).
        "walk_entries_omitted": refused,
        **completeness(omissions),
        "engine": "rg",
    }
    if warnings:
        result["warnings"] = warnings
    return result


def _fileless_omission(
    root: str,
    known: set[str],
    skipped: set[str],
    query: Query,
    sandbox: Any,
    deadline: float,
    run: RunStats,
    prefix: str,
) -> Omission | None:
    """The `no_listed_files` entry: directories that match but hold no file rg lists."""
    if run.log_cut:  # the log of skipped entries is not whole: a walk could enter ignored trees
        return Omission(
            "no_listed_files",
            None,
            "directory",
            "rg's log of the entries it skipped passed its cap, so directories that hold no file it "
            "lists were not looked for; narrow path, or use list_files",
        )
    fileless, whole = _fileless_dirs(root, known, skipped, query, sandbox, deadline)
    if not fileless and whole:
        return None
    sample = ", ".join(printable(prefix + d + "/") for d in fileless[:3])
    how = (
        "these match but hold no file ripgrep lists (empty, hidden or ignored files only), so they "
        "are not ranked"
    )
    if sample:
        how += f", e.g. {sample}"
    if not whole:
        how += f"; the look for them stopped at the {FIND_DEADLINE_S:g} s limit, so there may be more (narrow path)"
    return Omission(
        "no_listed_files",
        len(fileless) if whole else None,
        "directory",
        how + "; list_files on the parent shows them",
    )


def _fileless_dirs(
    root: str, known: set[str], skipped: set[str], query: Query, sandbox: Any, deadline: float
) -> tuple[list[str], bool]:
    """Directories matching `query` that rg's walk entered but that hold no file it listed, at any
    depth: below the root and the directories it listed files in, every directory that is not
    hidden, a symlink, or an entry the walk skipped (`skipped`, from its log). Only those are
    entered, so this costs a scandir per directory rg itself read. Sorted, and whether the walk
    finished before the deadline."""
    found: list[str] = []
    at = root.rstrip("/") + "/"
    check = sandbox.needs_checks_below(root)
    todo = ["", *sorted(known)]
    while todo:
        if time.monotonic() > deadline:
            return sorted(found), False
        parent = todo.pop()
        try:
            with os.scandir(at + parent if parent else root) as it:
                children = [
                    e.name for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
                ]
        except OSError:
            continue
        for name in children:
            rel = f"{parent}/{name}" if parent else name
            if rel in known or lossy(rel) in skipped:
                continue
            if check and not sandbox.allows(at + rel):
                continue
            todo.append(rel)
            if query.could_match(rel.lower()) and query.score(rel) is not None:
                found.append(rel)
    return sorted(found), True


# ----- list_files ------------------------------------------------------------------------------


class ListParams(Params):
    path: Annotated[
        str | None,
        Field(
            max_length=4096,
            description="Directory whose direct children to list (default: the working directory)",
        ),
    ] = None
    limit: Annotated[
        int | None, Field(ge=1, le=LIST_MAX_LIMIT, description="Names per page (default 500, at most 5000)")
    ] = None
    offset: Annotated[
        int | None, Field(ge=0, le=2**31, description="Names to skip, for paging (default 0)")
    ] = None


def list_files(p: ListParams, ctx: ToolContext) -> dict[str, Any]:
    target = _directory(ctx, p.path, "list_files")
    limit = min(p.limit or LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT)
    offset = p.offset or 0
    sandbox = ctx.sandbox
    check = sandbox.needs_checks_below(target.path)
    links = sandbox.may_have_protected_links()  # some protected file has a second name somewhere
    rows: list[tuple[bytes, str, str]] = []
    denied = 0
    unnamed: list[str] = []
    try:
        with os.scandir(target.path) as it:
            for de in it:
                if check and not sandbox.allows(de.path):
                    denied += 1  # protected or blocked paths are never listed
                    continue
                if links and de.is_file(follow_symlinks=False) and sandbox.is_link_to_protected(de.path):
                    denied += 1  # another name of a protected file is not listed either (as find has it)
                    continue
                if not is_utf8(de.name):
                    unnamed.append(de.name)  # counted in `omitted`, never shown lossily
                    continue
                try:
                    if de.is_symlink():
                        kind, suffix = "symlink", "@"
                    elif de.is_dir(follow_symlinks=False):
                        kind, suffix = "dir", "/"
                    elif de.is_file(follow_symlinks=False):
                        kind, suffix = "file", ""
                    else:
                        kind, suffix = "other", ""
                except OSError:
                    kind, suffix = "other", ""
                rows.append((os.fsencode(de.name), de.name + suffix, kind))
    except OSError as e:
        raise ToolError(
            "unreadable", f"Cannot list {target.display}: {e.strerror}", {"path": target.path}
        ) from None
    rows.sort()
    page = rows[offset : offset + limit]
    kinds = {"file": 0, "dir": 0, "symlink": 0, "other": 0}
    for _, _, kind in rows:
        kinds[kind] += 1
    more = offset + len(page) < len(rows)
    lines = [printable(name) for _, name, _ in page]  # one line each, whatever the name holds
    output = "\n".join(lines)
    if not rows:
        output = "[empty directory]" if not (denied or unnamed) else "[nothing to list]"
    elif more:
        output += f"\n\n[{len(rows) - offset - len(page)} more entries; use offset={offset + len(page)}]"
    elif not page:
        output = f"[no entries at offset={offset}; {len(rows)} in total]"
    omissions: list[Omission] = []
    if more:
        nxt = offset + len(page)
        omissions.append(Omission("page", len(rows) - nxt, "name", f"use offset={nxt} for the next page"))
    if denied:
        omissions.append(
            Omission(
                "denied",
                denied,
                "name",
                "protected or blocked by the sandbox, so never listed; `fermix sandbox explain` shows its rules",
            )
        )
    invalid = invalid_name_omission(unnamed, len(unnamed), "name")
    if invalid:
        omissions.append(invalid)
    footer = [n for o, n in zip(omissions, notes(omissions), strict=True) if o.reason != "page"]
    if footer:
        output += "\n\n" + "\n".join(footer)
    return {
        "output": output,
        "path": display_path(target.path, target.cwd),
        "entries": [{"name": name, "kind": kind} for _, name, kind in page],
        "offset": offset,
        "limit": limit,
        "total": len(rows),
        "returned": len(page),
        "has_more": more,
        "next_offset": offset + len(page) if more else None,
        "kinds": kinds,
        "denied": denied,
        **completeness(omissions),
    }


def _render(result: dict[str, Any]) -> str:
    return str(result["output"])


TOOLS = specs(
    ToolSpec(
        name="find",
        category="coding",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Fuzzy path discovery: rank files, directories or both below a directory by how well their "
            "paths match whitespace-separated query tokens (all must match; exact basenames first, then "
            "prefixes, substrings, subsequences). Honours hidden-file, .gitignore, .ignore and Perforce "
            "rules; reads no file contents. One path per line, relative to the working directory; "
            "directories end in /. At most 100,000 entries and 10 s per scan; `scan_complete` and "
            "`total_matched_exact` say whether the ranking saw everything."
        ),
        params=FindParams,
        handler=find,
        render=_render,
        hints=Hints(read_only=True, idempotent=True),
        toolsets=frozenset({"coding"}),
        when_to_use=(
            "Find a file or directory when you know part of its name or path. To search inside files use "
            "grep; to list one directory exactly use list_files."
        ),
        examples=(
            Example({"query": "lib"}, "files whose path matches lib, best first"),
            Example(
                {"query": "lib", "kind": "mixed", "path": "src", "limit": 20, "offset": 0}, "files and dirs"
            ),
            Example({"query": "tests/ config"}, "a path token and a name token"),
        ),
        failure_modes=(
            FailureMode("invalid_query", "the query is empty after trimming"),
            FailureMode("query_too_long", "the query is longer than 512 characters"),
            FailureMode("not_found", "the path does not exist"),
            FailureMode("search_engine_missing", "ripgrep (rg) is not installed; the message says how"),
            FailureMode("invalid_path", "the path is a file, not a directory"),
            FailureMode("outside_cwd", "a relative path leaves the working directory"),
            FailureMode("outside_root", "the path is outside the sandbox roots"),
            FailureMode(
                "absolute_path_denied",
                "absolute paths outside the working directory are disabled (capabilities.tools.find.absolute_paths)",
            ),
        ),
    ),
    ToolSpec(
        name="list_files",
        category="coding",
        policy_class="read_only",
        owner_only=True,
        description=(
            "List the direct children of one directory (default: the working directory), raw: no ignore "
            "files, no hidden-file filter, symlinks not followed. One name per line, sorted byte-wise; "
            "directories end in /, symlinks in @. Protected paths are never listed. Paged by limit "
            "(default 500, at most 5000) and offset; `complete`/`omitted` say what was left out (the "
            "next page, entries the sandbox refused)."
        ),
        params=ListParams,
        handler=list_files,
        render=_render,
        hints=Hints(read_only=True, idempotent=True),
        toolsets=frozenset({"coding"}),
        when_to_use="See exactly what one directory holds. To discover paths by name below it, use find.",
        examples=(
            Example({}, "the working directory"),
            Example({"path": "src", "limit": 100}, "the first 100 entries of src"),
        ),
        failure_modes=(
            FailureMode("not_found", "the path does not exist"),
            FailureMode("invalid_path", "the path is a file, not a directory"),
            FailureMode("outside_cwd", "a relative path leaves the working directory"),
            FailureMode("outside_root", "the path is outside the sandbox roots"),
            FailureMode("protected_path", "the path is protected by the sandbox"),
            FailureMode(
                "absolute_path_denied",
                "absolute paths outside the working directory are disabled (capabilities.tools.list_files.absolute_paths)",
            ),
        ),
    ),
)
