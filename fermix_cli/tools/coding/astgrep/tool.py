"""ast_grep: AST search and read-only rewrite previews on the ast-grep CLI, outlines in-process.

search runs `ast-grep run --json=stream` (its own parallel walk and parser, every file read whole;
see `cli`); outline parses each file with ast-grep-py, over the files `rg --files` lists. A file
named explicitly bypasses the ignore filters but not the path checks. Nothing is ever written, and
no project `sgconfig.yml`, custom grammar or rule file is loaded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from ....core.context import ToolContext
from ....core.errors import ToolError
from ....core.fsops import FileReader
from ....core.params import Field, model_validator
from ....core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from ....core.search.report import completeness, warning_notes
from ....core.search.ripgrep import argument_problem
from ..pathrules import resolve_source
from . import languages
from .languages import DeadlinePassed
from .matches import search
from .omitted import notes, omissions
from .outline import (
    OutlineOptions,
    check_filter_size,
    compile_name,
    entry,
    name_filter,
    parse_types,
    selected,
    symbols,
)
from .symbol_rules import Symbol
from .workset import (
    Output,
    Work,
    check_file_language,
    common_result,
    load_tree,
    with_notes,
    work_files,
)

PATTERN_MAX_BYTES = 4096
DEADLINE_S = 30.0
DEFAULT_LIMIT, MAX_LIMIT = 100, 500
OUTLINE_ONLY = ("items", "view", "name", "symbol_type", "pub_members")
NAME_BATCH_SYMBOLS, NAME_BATCH_FILES = 4096, 64


class AstGrepParams(Params):
    null_means_absent = frozenset(
        {"pattern", "rewrite", "language", "path", "limit", *OUTLINE_ONLY}
    )  # the seed: every field but operation takes null as omission
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
            le=MAX_LIMIT,
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
        why = argument_problem(value) if value is not None else None
        if why is not None:  # a line break is fine: ast-grep patterns may span lines
            raise ToolError(f"invalid_{fname}", f"the {fname} {why}", {"field": fname})


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
    pending: list[tuple[str, str, Symbol]] = []  # selected by the other filters, `name` still to match

    def flush() -> None:
        """Add the pending entries that `name` selects, in order, until the output is full."""
        keep = name_filter(opts.name, [s for _, _, s in pending], work.deadline) if opts.name else None
        for i, (shown, lang, sym) in enumerate(pending):
            if keep is not None and not keep[i]:
                continue
            line = {"path": shown, "language": lang, "item": entry(sym, opts)}
            text = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
            if len(out.lines) >= out.limit or out.fits([text]) < 1:
                out.truncated = True  # whole entries only: a parent and its members go together
                break
            out.add([text])
            entries.append(line)
            languages.check_deadline(work.deadline)
        pending.clear()

    reader = FileReader()
    try:
        files_pending = 0
        for shown, canonical, lang in files:
            loaded = load_tree(reader, shown, canonical, lang, work)
            if loaded is None:
                if work.stop:
                    break
                continue
            _, root = loaded
            pending += [
                (shown, lang, sym) for sym in symbols(root.root(), lang, work.deadline) if selected(sym, opts)
            ]
            files_pending += 1
            # `name` is matched by one rg call for many files (their trees kept meanwhile, so a bound).
            if opts.name is None or len(pending) >= NAME_BATCH_SYMBOLS or files_pending >= NAME_BATCH_FILES:
                flush()
                files_pending = 0
            if out.truncated:
                break
        if not out.truncated:
            flush()
    except DeadlinePassed:
        work.stop = "deadline"
    finally:
        reader.close()
    result = common_result(work, out, "outline")
    result.update(symbols=entries, symbols_returned=len(entries), items=opts.items, view=opts.view)
    found = omissions(work, out, "outline", DEADLINE_S)
    result.update(completeness(found))
    body = "\n".join(out.lines) if out.lines else "[no symbols]"
    result["output"] = with_notes(body, notes(found) + warning_notes(work.warnings))
    return result


def ast_grep(p: AstGrepParams, ctx: ToolContext) -> dict[str, Any]:
    op = p.operation or "search"
    _check_mode(p, op)
    language = languages.normalize_language(p.language) if p.language is not None else None
    if op == "outline" and language is not None and language not in languages.OUTLINE_LANGUAGES:
        raise ToolError(
            "invalid_language",
            f"outline supports {', '.join(sorted(languages.OUTLINE_LANGUAGES))}; not {language}",
            {"language": language},
        )
    limit = min(p.limit or DEFAULT_LIMIT, MAX_LIMIT)
    target = resolve_source(ctx, p.path if p.path is not None else ".", tool="ast_grep")
    if not os.path.exists(target.path):
        raise ToolError("not_found", f"Path not found: {target.display}", {"path": target.path})
    work = Work(deadline=time.monotonic() + DEADLINE_S)
    if op == "search":
        if os.path.isdir(target.path):
            root, name = target.path, "."
        else:  # one file: its language, given or inferred, is as strict as a given one
            language = check_file_language(target.path, target.cwd, language, outline=False)
            root, name = os.path.dirname(target.path), os.path.basename(target.path)
        if language is not None:
            err = languages.compile_pattern(p.pattern or "", language, work.deadline)
            if err is not None:
                raise ToolError(
                    "invalid_pattern",
                    f"pattern does not compile for {language}: {err}",
                    {"language": language, "error": err},
                )
        return search(p, ctx, work, root, name, target.cwd, limit, language, DEADLINE_S)
    files = work_files(ctx, target.path, target.cwd, language, True, work)
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
            "Syntax-aware search, read-only rewrite previews and symbol outlines. search (default) runs "
            "the ast-grep CLI over a directory (its own parallel walk; the same visible files as grep): "
            "`pattern` is ast-grep code with metavariables ($A, $$$ARGS); rows are path:line:text in "
            "path order; with `rewrite`, each match becomes a `@@ path:line bytes[s:e] @@` block of `-` "
            "source lines and `+` replaced lines (files are never written). outline: JSON lines {path, "
            "language, item} for Rust, TypeScript/TSX, JavaScript, Python, Go, Kotlin, Java and Swift, "
            "shaped by items/view/name/symbol_type/pub_members. Language comes from the extension unless "
            "given. Search reads every file whole (no size or node gate); limits: 4 KiB patterns, 30 s, "
            "64 KiB output. `complete` is false and `omitted` (and `[incomplete: …]` lines) say what was "
            "left out (more matches, skipped files, languages the pattern fails for, ...) and how to get it."
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
                "invalid_pattern",
                "the pattern does not compile for the given language (or one file's, inferred), parses "
                "with an ERROR node, has over 256 nodes, is over 4 KiB or holds a NUL byte",
            ),
            FailureMode("invalid_rewrite", "the rewrite is over 4 KiB or holds a NUL byte"),
            FailureMode("invalid_symbol_type", "symbol_type names an unknown type"),
            FailureMode("invalid_name", "name is not a valid Rust regex (rg's syntax)"),
            FailureMode("not_found", "the path does not exist"),
            FailureMode("search_engine_missing", "the ast-grep CLI is not installed; the message says how"),
            FailureMode("outside_root", "the path is outside the sandbox roots"),
            FailureMode(
                "absolute_path_denied",
                "absolute paths outside the working directory are disabled (capabilities.tools.ast_grep.absolute_paths)",
            ),
        ),
    ),
)
