"""The coding `read` tool: hashline views of local files (and skill:// files) with line selectors.

Each hashline section is recorded in the session's snapshot store, so its `[path#TAG]` header and
the rows shown can anchor a later `hash_edit` (hashline.md §3).
"""

from __future__ import annotations

import os
from typing import Annotated, Any

from fermix_cli.core.context import ToolContext
from fermix_cli.core.errors import ToolError
from fermix_cli.core.params import AfterValidator, Field
from fermix_cli.core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from fermix_cli.tools.coding.diskio import read_limited, session_store
from fermix_cli.tools.coding.hashline import (
    ReadEntry,
    ReadSection,
    Selector,
    assemble_read,
    decode_text,
    parse_target,
    split_rows,
)

MAX_ENTRIES = 8


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError(
            "entries must be non-blank paths (a file or skill:// target, optionally with a selector)"
        )
    return value


Entry = Annotated[str, Field(min_length=1, max_length=4200), AfterValidator(_non_blank)]


class ReadParams(Params):
    paths: Annotated[
        list[Entry],
        Field(
            min_length=1,
            max_length=MAX_ENTRIES,
            description=(
                "1 to 8 targets: a local file path or skill://<name>[/<reference>], each with an optional "
                "selector suffix :N, :-M, :N-M, :N+, :N+K, :raw, or a range with raw (:raw:50-100)."
            ),
        ),
    ]


def _names_file(ctx: ToolContext, entry: str) -> bool:
    """Whether the whole entry, selector-looking suffix included, is an existing file."""
    from fermix_cli.core.pathcanon import canonicalize

    try:
        return os.path.isfile(canonicalize(ctx.sandbox.anchor(entry)))
    except (ToolError, ValueError, OSError):
        return False


def _load(ctx: ToolContext, entry: str) -> tuple[ReadEntry, str | None]:
    """One entry read from disk, and the snapshot key of a local file (None for skill targets)."""
    target, selector = parse_target(entry, lambda candidate: _names_file(ctx, candidate))
    if target.startswith("skill://"):
        from fermix_cli.core.skillrefs import resolve_skill_target

        skill = resolve_skill_target(ctx, target)
        raw, _ = read_limited(skill.path, skill.display)
        chosen = selector or Selector()
        verbatim = Selector(chosen.start, chosen.end, raw=True)  # skill files carry no tag: not editable
        return ReadEntry(entry, skill.display, decode_text(raw, skill.display), verbatim), None
    from fermix_cli.tools.coding.pathrules import resolve_source

    where = resolve_source(ctx, target, tool="read")
    raw, _ = read_limited(where.path, where.display)
    return ReadEntry(entry, where.display, decode_text(raw, where.display), selector), where.path


def _describe(entry: ReadEntry, section: ReadSection | None, error: ToolError | None) -> dict[str, Any]:
    if section is None:
        error = error or entry.error or ToolError("output_cap", "not read: output cap (1 MiB) reached")
        return {"entry": entry.entry, "path": entry.path or None, "error": error.to_dict()}
    return {
        "entry": entry.entry,
        "path": entry.path,
        "tag": section.tag,
        "lines": len(split_rows(section.text)),
        "shown": [section.shown[0], section.shown[-1]] if section.shown else None,
        "next_line": section.next_line,
    }


def read(p: ReadParams, ctx: ToolContext) -> dict[str, Any]:
    entries: list[ReadEntry] = []
    keys: list[str | None] = []
    for entry in p.paths:
        try:
            loaded, key = _load(ctx, entry)
        except ToolError as e:
            loaded, key = ReadEntry(entry, error=e), None
        entries.append(loaded)
        keys.append(key)
    output = assemble_read(entries)
    recorded = [(k, s) for k, s in zip(keys, output.sections, strict=True) if k and s is not None and s.tag]
    if recorded:
        store = session_store(ctx)
        for key, section in recorded:
            assert section.tag is not None
            store.record(key, section.tag, section.text, section.shown)
    return {
        "content": output.content,
        "files": [
            _describe(e, s, error)
            for e, s, error in zip(entries, output.sections, output.errors, strict=True)
        ],
    }


TOOLS = specs(
    ToolSpec(
        name="read",
        category="coding",
        policy_class="read_only",
        owner_only=True,
        toolsets=frozenset({"coding"}),
        description=(
            "Read 1-8 known local files (or skill:// files). Local files come back in hashline form: a "
            "[path#TAG] header, then N:TEXT rows, at most 400 lines unless a selector picks a range "
            "(:N, :-M, :N-M, :N+, :N+K; :raw for plain text). Copy the header and line numbers into hash_edit. "
            "Files are limited to 1 MiB of UTF-8; the whole output to 1 MiB."
        ),
        params=ReadParams,
        handler=read,
        render=lambda r: r["content"],
        hints=Hints(read_only=True, idempotent=True),
        when_to_use=(
            "Read a file you are about to edit, or a known range of it. It does not search: use find for "
            "paths and grep for contents first."
        ),
        examples=(
            Example({"paths": ["README.md"]}, "the first 400 lines as [README.md#TAG] and N:TEXT rows"),
            Example(
                {"paths": ["src/app.py:120-160", "src/util.py:raw"]}, "a range of one file, another verbatim"
            ),
            Example({"paths": ["skill://repo_overview"]}, "a skill's SKILL.md"),
        ),
        failure_modes=(
            FailureMode("not_found", "File not found: PATH (or an unknown skill)"),
            FailureMode("is_directory", "PATH is a directory; use find or list_files."),
            FailureMode("too_large", "PATH is over 1 MiB; read refuses it whole (the tag covers the file)"),
            FailureMode("not_utf8", "PATH is not valid UTF-8 text"),
            FailureMode("invalid_selector", "the suffix looks like a selector but does not parse"),
            FailureMode("invalid_range", "the selector starts past the end of the file"),
            FailureMode("unsupported_target", "an http(s) URL (use web) or another scheme"),
            FailureMode("outside_cwd", "a relative path leaves the working directory"),
            FailureMode("outside_root", "the path is outside the sandbox roots; ask for a grant"),
            FailureMode("protected_path", "the path holds credentials or fermix state"),
            FailureMode(
                "read_entries_failed",
                "every entry failed, not all alike (entries failing alike keep their own code); "
                "details.entries lists each entry's code",
            ),
        ),
    ),
)
