"""Block ops: finding the syntactic block that starts on a line (tree-sitter via ast-grep-py)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashline import context_rows
from fermix_cli.tools.coding.patchparse import Hunk
from fermix_cli.tools.coding.splice import POST, SWAP, LineEdit

from ...core.records import Record

# Extensions mapped only to languages ast-grep-py bundles, so SgRoot never panics in practice.
LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".lua": "lua",
    ".php": "php",
    ".scala": "scala",
    ".sh": "bash",
    ".bash": "bash",
    ".css": "css",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".markdown": "markdown",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".nix": "nix",
    ".tf": "hcl",
    ".hcl": "hcl",
    ".sol": "solidity",
}

BLOCK_RESOLVER_UNAVAILABLE = (
    "`SWAP.BLK`/`DEL.BLK`/`INS.BLK.POST` are not available here (no block resolver configured). "
    "Use a concrete line range."
)

# (text, path, line) -> the 1-based span of the block starting on line, or None.
BlockResolver = Callable[[str, str, int], tuple[int, int] | None]
_PURE_CLOSER = re.compile(r"^[\s)\]};,]*[)\]}][\s)\]};,]*$|^\s*</[^>]*>\s*$")


def is_pure_closer(line: str) -> bool:
    """A line made only of closing delimiters, `;`, `,` and whitespace, or a single `</…>` tag."""
    return bool(_PURE_CLOSER.match(line))


def language_for(path: str) -> str | None:
    """The ast-grep language for a path's extension, or None."""
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


def _covers(node: Any, row: int, col: int) -> bool:
    span = node.range()
    start, end = (span.start.line, span.start.column), (span.end.line, span.end.column)
    return start <= (row, col) < end


def _has_parse_error(node: Any) -> bool:
    if node.kind() == "ERROR" or node.find(kind="ERROR") is not None:
        return True
    stack = [node]
    while stack:
        current = stack.pop()
        children = current.children()
        if not children:
            span = current.range()
            if (span.start.line, span.start.column) == (span.end.line, span.end.column):
                return True  # a zero-width leaf is a MISSING token inserted by error recovery
        stack.extend(children)
    return False


def _parse(text: str, language: str) -> Any | None:
    try:
        from ast_grep_py import SgRoot
    except ImportError as exc:
        raise ToolError("block_resolver_unavailable", BLOCK_RESOLVER_UNAVAILABLE) from exc
    try:
        return SgRoot(text, language).root()
    except BaseException as exc:
        # ast-grep-py panics (pyo3 PanicException, a BaseException) on a language it lacks.
        if type(exc).__name__ != "PanicException":
            raise
        return None


def resolve_block(text: str, path: str, line: int) -> tuple[int, int] | None:
    """The 1-based line span of the syntactic block starting on `line` of `text`, or None.

    The named node covering the line's first non-blank column must start on that line; the block is
    its outermost named ancestor still starting there (never the file root), and must parse cleanly.
    Trailing blank lines are not part of a block.
    """
    language = language_for(path)
    lines = text.split("\n")
    if language is None or not 1 <= line <= len(lines) or not lines[line - 1].strip():
        return None
    root = _parse(text, language)
    if root is None:
        return None
    row = line - 1
    col = len(lines[row]) - len(lines[row].lstrip(" \t"))
    node, best = root, None
    while True:
        child = next((c for c in node.children() if _covers(c, row, col)), None)
        if child is None:
            break
        node = child
        if node.is_named():
            best = node
    if best is None or best.range().start.line != row:
        return None
    while True:
        parent = best.parent()
        if parent is None or parent.parent() is None or parent.range().start.line != row:
            break
        best = parent
    if best.parent() is None or _has_parse_error(best):
        return None
    span = best.range()
    end = span.end.line
    if span.end.column == 0 and end > row:
        end -= 1
    while end > row and not lines[end].strip():
        end -= 1
    return line, end + 1


class LoweredBlocks(Record, frozen=True):
    """Hunks lowered to line edits, with the response's `→ resolved` lines and downgrade warnings."""

    edits: tuple[LineEdit, ...]
    resolved: tuple[str, ...]
    warnings: tuple[str, ...]


def _single_line(op: str, line: int) -> ToolError:
    plain = {
        "SWAP.BLK": f"SWAP {line}.={line}:",
        "DEL.BLK": f"DEL {line}",
        "INS.BLK.POST": f"INS.POST {line}:",
    }
    return ToolError(
        "block_single_line",
        f"{op} {line}: `{op} {line}` resolved a single-line block — line {line} is a bare statement, not the "
        f"opening line of a multi-line construct. For that one line use `{plain[op]}`.",
        {"line": line},
    )


def lower_hunks(hunks: Sequence[Hunk], text: str, path: str, resolver: BlockResolver | None) -> LoweredBlocks:
    """Lower every hunk to a `LineEdit`, resolving block ops against `text` (the tagged version)."""
    lines = text.split("\n")
    edits: list[LineEdit] = []
    resolved: list[str] = []
    warnings: list[str] = []
    for hunk in hunks:
        label = hunk.op if hunk.op in ("INS.HEAD", "INS.TAIL") else f"{hunk.op} {hunk.start}"
        kind = {"DEL": SWAP, "DEL.BLK": SWAP, "SWAP.BLK": SWAP, "INS.BLK.POST": POST}.get(hunk.op, hunk.op)
        if hunk.op not in ("SWAP.BLK", "DEL.BLK", "INS.BLK.POST"):
            edits.append(LineEdit(kind, hunk.start, hunk.end, hunk.body, hunk.line, label))
            continue
        if resolver is None:
            raise ToolError("block_resolver_unavailable", BLOCK_RESOLVER_UNAVAILABLE)
        n = hunk.start
        span = resolver(text, path, n)
        if span is None and hunk.op == "INS.BLK.POST":
            if 1 <= n <= len(lines) and is_pure_closer(lines[n - 1]):
                warnings.append(
                    f"INS.BLK.POST {n}: line {n} closes a block; inserted after line {n} (as INS.POST {n})."
                )
            else:
                warnings.append(
                    f"INS.BLK.POST {n}: no syntactic block starts on line {n}; "
                    f"inserted after line {n} instead (as INS.POST {n})."
                )
            edits.append(LineEdit(POST, n, n, hunk.body, hunk.line, label))
            continue
        if span is None:
            form = f"`{hunk.op} {n}:`" if hunk.op == "SWAP.BLK" else f"`{hunk.op} {n}`"
            fallback = "SWAP N.=M:" if hunk.op == "SWAP.BLK" else "DEL N.=M"
            message = (
                f"{hunk.op} {n}: {form} could not resolve a syntactic block beginning on line {n} "
                "(unsupported language, blank/closer line, or parse error). "
                f"Use `{fallback}` with explicit lines."
            )
            context = context_rows(lines, [n])
            raise ToolError("block_unresolved", message + (f"\n\n{context}" if context else ""), {"line": n})
        start, end = span
        if start == end:
            raise _single_line(hunk.op, n)
        size = end - start + 1
        note = f"{hunk.op} {n} → resolved lines {start}-{end} ({size} lines)"
        if hunk.op == "INS.BLK.POST":
            edits.append(LineEdit(POST, end, end, hunk.body, hunk.line, label, (start, end)))
            note += f"; body lands after line {end}"
        else:
            edits.append(LineEdit(SWAP, start, end, hunk.body, hunk.line, label, (start, end)))
        resolved.append(note)
    return LoweredBlocks(tuple(edits), tuple(resolved), tuple(warnings))
