"""ast_grep search: `path:line:text` rows, or read-only rewrite previews with metavariables filled in."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ....core.errors import ToolError
from ....core.fsops import FileReader
from . import languages
from .languages import DeadlinePassed, library_error
from .workset import Output, Work, common_result, load_tree, notes, with_notes

if TYPE_CHECKING:
    from .tool import AstGrepParams

REPLACEMENT_CAP = 1024 * 1024


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


def _strip_cr(s: str) -> str:
    return s[:-1] if s.endswith("\r") else s


def search(
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
                err = languages.compile_pattern(pattern, lang, work.deadline)
                compiled[lang] = err is None
                if err is not None:
                    pattern_errors[lang] = err
            if not compiled[lang]:
                continue
            loaded = load_tree(reader, shown, canonical, lang, work)
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
            languages.check_deadline(work.deadline)
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
    result = common_result(work, out, "search")
    partial = result["partial"] or bool(pattern_errors) or skipped_replacements > 0
    result.update(
        matches=matches,
        files_matched=files_matched,
        pattern_errors=pattern_errors,
        replacements_skipped=skipped_replacements,
        partial=partial,
    )
    body = "\n".join(out.lines) if out.lines else "[no matches]"
    result["output"] = with_notes(body, notes(result))
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
