"""ast_grep search on the ast-grep CLI: `path:line:text` rows, or read-only rewrite previews."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ....core.context import ToolContext
from ....core.errors import ToolError
from ....core.search.names import escaped, printable
from ....core.search.report import completeness, ignore_warnings, warning_notes
from ..pathrules import display_path
from . import languages
from .cli import run_scan
from .omitted import notes, omissions
from .workset import SKIPPED_LISTED, Output, Work, common_result, with_notes

if TYPE_CHECKING:
    from .tool import AstGrepParams

REPLACEMENT_CAP = 1024 * 1024


def _strip_cr(s: str) -> str:
    return s[:-1] if s.endswith("\r") else s


def search(
    p: AstGrepParams,
    ctx: ToolContext,
    work: Work,
    root: str,
    target: str,
    cwd: str,
    limit: int,
    strict: str | None,
    deadline_s: float,
) -> dict[str, Any]:
    """Run the ast-grep CLI over `target` (a file name, or "." for the directory `root`)."""
    pattern = p.pattern or ""
    # Every match counted, the first `limit` of each language kept (each shows as a line at least).
    scan = run_scan(
        ctx, root, target, pattern, p.rewrite, strict, work.deadline, SKIPPED_LISTED,
        keep=limit, replacement_cap=REPLACEMENT_CAP,
    )  # fmt: skip
    work.files_scanned = scan.files_scanned
    work.bytes_read = scan.bytes_read
    work.unsupported = scan.unsupported
    for reason, n in scan.skipped.items():
        work.skipped[reason] += n
    # The CLI names files relative to `root`; the answer names them as its rows do (from cwd).
    work.skipped_files += [{**f, "path": _shown(root, f["path"], cwd)} for f in scan.skipped_files]
    work.warnings = ignore_warnings(scan.bad_rules, lambda path: printable(display_path(path, cwd)))
    work.skipped_dirs += scan.skipped_dirs
    work.invalid_names += scan.invalid_names
    if scan.timed_out:
        work.stop = "deadline"
    pattern_errors: dict[str, str] = {}
    for lang in sorted(scan.languages):
        if lang in languages.LANGUAGES:
            err = languages.compile_pattern(pattern, lang, work.deadline + 5)
            if err is not None:
                pattern_errors[lang] = err
    if strict is not None and strict in pattern_errors:
        raise ToolError(
            "invalid_pattern",
            f"pattern does not compile for {strict}: {pattern_errors[strict]}",
            {"language": strict, "error": pattern_errors[strict]},
        )
    if scan.returncode not in (0, 1) and not scan.timed_out:
        # Not an answer: what the CLI printed, else the exit status (a signal is negative).
        said = "; ".join(scan.errors[:5]) or f"exit status {scan.returncode}"
        raise ToolError(
            "search_failed",
            f"the ast-grep CLI failed, so this is no answer: {said[:1000]}",
            {"returncode": scan.returncode, "stderr": scan.errors[:20]},
        )
    work.languages |= {lang for lang in scan.languages if lang not in pattern_errors}
    # One or the other: a language the pattern is refused for has no matches in the answer (the CLI
    # may have matched what it could of a pattern over the node limit or with an ERROR node).
    found: list[dict[str, Any]] = []
    total = skipped_replacements = files_matched = 0
    for lang, n in scan.totals.items():
        if lang in pattern_errors:
            pattern_errors[lang] += f" ({n} {'match' if n == 1 else 'matches'} in its files not shown)"
            continue
        found += scan.matches[lang]
        total += n
        files_matched += scan.files_matched[lang]
        skipped_replacements += scan.oversized[lang]
    found.sort(key=lambda m: (m["file"], m["range"]["byteOffset"]["start"], m["range"]["byteOffset"]["end"]))
    out = Output(limit)
    matches: list[dict[str, Any]] = []
    for m in found[:limit]:
        if out.truncated:
            break
        shown = display_path(m["file"], cwd)
        r = m["range"]
        start, end = r["start"], r["end"]
        lines = [_strip_cr(s) for s in str(m.get("lines", "")).split("\n")]
        record: dict[str, Any] = {
            "path": shown, "line": start["line"] + 1, "column": start["column"] + 1,
            "end_line": end["line"] + 1, "end_column": end["column"] + 1,
            "byte_start": r["byteOffset"]["start"], "byte_end": r["byteOffset"]["end"],
            "text": lines[0] if lines else "",
        }  # fmt: skip
        if p.rewrite is None:
            rows = [f"{printable(shown)}:{record['line']}:{record['text']}"]
        else:
            record["replacement"] = str(m.get("replacement", ""))
            rows = _preview(shown, lines, start, end, record["replacement"], record)
        before = len(out.lines)
        whole = len(out.lines) < out.limit and out.add(rows)
        if len(out.lines) > before:
            matches.append(record if whole else {**record, "preview_cut": True})
        if not whole:
            out.truncated = True
    if len(matches) < total - skipped_replacements:
        out.truncated = True  # more than the limit or the output holds: only the first were kept
        out.cut = out.cut or "limit"
    result = common_result(work, out, "search", bytes_known=target != ".")
    partial = result["partial"] or bool(pattern_errors) or skipped_replacements > 0
    result.update(
        matches=matches,
        matches_total=total,
        files_matched=files_matched,
        pattern_errors=pattern_errors,
        replacements_skipped=skipped_replacements,
        partial=partial,
        engine="ast-grep",
    )
    left = total - len(matches) - skipped_replacements
    if left > 0:
        result["more"] = {
            "count": left,
            "how": "raise limit (at most 500) or narrow path; output holds at most 64 KiB",
        }
    found_out = omissions(
        work, out, "search", deadline_s, more=max(left, 0),
        pattern_errors=pattern_errors, replacements_skipped=skipped_replacements,
    )  # fmt: skip
    result.update(completeness(found_out))
    body = "\n".join(out.lines) if out.lines else "[no matches]"
    result["output"] = with_notes(body, notes(found_out, pattern_errors) + warning_notes(work.warnings))
    return result


def _shown(root: str, rel: str, cwd: str) -> str:
    """A path the CLI named relative to `root` (escaped if its name is not UTF-8), as rows show paths."""
    return escaped(display_path(os.path.join(root, rel), cwd))


def _preview(
    shown: str,
    lines: list[str],
    start: dict[str, int],
    end: dict[str, int],
    replacement: str,
    record: dict[str, Any],
) -> list[str]:
    """`@@ path:line bytes[s:e] @@`, then `-` source lines and `+` the same lines with the match replaced.

    `lines` are the whole source lines the match spans (the CLI's `lines`); columns count characters.
    """
    span = end["line"] - start["line"]
    old = lines[: span + 1]
    if span > 0 and end["column"] == 0:
        old = old[:-1]  # the match ends exactly at a line break
    head = lines[0][: start["column"]] if lines else ""
    tail = lines[span][end["column"] :] if span < len(lines) and len(old) == span + 1 else ""
    new = (head + replacement + tail).split("\n")
    return [
        f"@@ {printable(shown)}:{record['line']} bytes[{record['byte_start']}:{record['byte_end']}] @@",
        *("-" + s for s in old),
        *("+" + _strip_cr(s) for s in new),
    ]
