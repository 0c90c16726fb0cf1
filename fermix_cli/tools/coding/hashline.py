"""Hashline text rules: normalisation, the v2 content tag, decoding, and read selectors."""

from __future__ import annotations

import re
from collections.abc import Callable

from fermix_cli.core.errors import ExitClass, ToolError

from ...core.records import Record

BOM = "\ufeff"
MAX_FILE_BYTES = 1_048_576
DEFAULT_WINDOW = 400
MAX_BOUNDED_LINES = 3000
LONG_LINE_CHARS = 768

_TRAILING_WS = re.compile(r"[ \t\r]+(?=\n|\Z)")
_NUMBER = r"[1-9][0-9]*"
_RANGE = re.compile(
    rf"(?P<open>{_NUMBER})[+-]?|-(?P<upto>{_NUMBER})|(?P<lo>{_NUMBER})-(?P<hi>{_NUMBER})"
    rf"|(?P<from>{_NUMBER})\+(?P<count>{_NUMBER})"
)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
INVALID_SELECTOR = (
    "Invalid selector '{sel}'. Use :N, :-M, :N-M, :N+, :N+K, :raw, "
    "or a range combined with raw (e.g. :raw:50-100)."
)


def normalise_eol(text: str) -> str:
    """Drop a leading BOM and turn CRLF and lone CR into LF; this is the text rows and snapshots use."""
    if text.startswith(BOM):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def normalise(text: str) -> str:
    """The v2 tag input: `normalise_eol`, then drop trailing spaces, tabs and CRs on every line."""
    return _TRAILING_WS.sub("", normalise_eol(text))


def compute_tag(text: str) -> str:
    """The v2 hashline tag: low 16 bits of XXH32 (seed 0) over the normalised UTF-8 text, 4 hex digits."""
    import xxhash

    digest = xxhash.xxh32(normalise(text).encode("utf-8"), seed=0).intdigest()
    return format(digest & 0xFFFF, "04X")


def split_rows(text: str) -> list[str]:
    """The rows a read shows for LF text: no phantom element after a final newline; `""` has none."""
    if not text:
        return []
    rows = text.split("\n")
    if rows[-1] == "":
        rows.pop()
    return rows


def clip_row(row: str, limit: int = LONG_LINE_CHARS) -> str:
    """Shorten an over-long row to `row[:limit]…[+K chars]`."""
    if len(row) <= limit:
        return row
    return f"{row[:limit]}…[+{len(row) - limit} chars]"


def context_rows(lines: list[str], anchors: list[int]) -> str:
    """`*N:TEXT` / ` N:TEXT` rows of `lines` ±2 around each anchor, with `...` between runs."""
    real = len(split_rows("\n".join(lines)))
    wanted = sorted({n for a in anchors for n in range(a - 2, a + 3) if 1 <= n <= real})
    rows: list[str] = []
    for index, number in enumerate(wanted):
        if index and number != wanted[index - 1] + 1:
            rows.append("...")
        rows.append(f"{'*' if number in anchors else ' '}{number}:{clip_row(lines[number - 1])}")
    return "\n".join(rows)


def decode_text(raw: bytes, path: str) -> str:
    """Decode a file for read or hash_edit, refusing files over 1 MiB or not UTF-8 (BOM kept)."""
    if len(raw) > MAX_FILE_BYTES:
        raise ToolError(
            "too_large",
            f"{path} is {len(raw)} bytes; read is limited to 1 MiB files. Use grep, or bash for large files.",
            {"path": path, "bytes": len(raw)},
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            "not_utf8",
            f"{path} is not valid UTF-8 text (first bad byte at offset {exc.start}).",
            {"path": path, "offset": exc.start},
        ) from None


class Selector(Record, frozen=True):
    """Which rows a read shows: `start`..`end` inclusive (`end` None = open window), raw or hashline."""

    start: int = 1
    end: int | None = None
    raw: bool = False

    @property
    def bounded(self) -> bool:
        """A range with an end (`:-M`, `:N-M`, `:N+K`), as opposed to an open window."""
        return self.end is not None


def parse_selector(suffix: str) -> Selector | None:
    """Parse a selector suffix such as `:raw:50-100`; None when it does not fit the grammar."""
    parts = suffix.split(":")
    if len(parts) < 2 or parts[0] != "" or len(parts) > 3:
        return None
    parts = parts[1:]
    raw = parts.count("raw")
    if raw > 1 or (len(parts) == 2 and raw != 1):
        return None
    ranges = [p for p in parts if p != "raw"]
    if not ranges:
        return Selector(raw=True)
    match = _RANGE.fullmatch(ranges[0])
    if match is None:
        return None
    groups = {k: int(v) for k, v in match.groupdict().items() if v is not None}
    if "open" in groups:
        return Selector(start=groups["open"], raw=bool(raw))
    if "upto" in groups:
        return Selector(start=1, end=groups["upto"], raw=bool(raw))
    if "lo" in groups:
        if groups["lo"] > groups["hi"]:
            return None
        return Selector(start=groups["lo"], end=groups["hi"], raw=bool(raw))
    return Selector(start=groups["from"], end=groups["from"] + groups["count"] - 1, raw=bool(raw))


def _looks_like_selector(rest: str) -> bool:
    return bool(rest) and (rest[0].isdigit() or rest[0] in "-+" or rest.startswith("raw"))


def parse_target(entry: str, is_file: Callable[[str], bool] | None = None) -> tuple[str, Selector | None]:
    """Split a read entry into its target and selector.

    An entry that names an existing file (per `is_file`) has no selector; otherwise the longest trailing
    suffix that fits the grammar is the selector. A suffix that looks like a selector but does not parse
    raises `invalid_selector`; an http(s) or other `scheme://` target (except `skill://`) is refused.
    """
    exists = is_file or (lambda _path: False)
    scheme = _SCHEME.match(entry)
    if scheme and scheme.group(1).lower() in ("http", "https"):
        raise ToolError(
            "unsupported_target",
            f'read does not fetch URLs; use web {{"operation":"open","url":"{entry}"}}',
            {"target": entry},
        )
    if scheme and scheme.group(1) != "skill":
        raise ToolError(
            "unsupported_target",
            f"Unsupported read target scheme {scheme.group(1)}://; read takes local paths and skill:// references.",
            {"target": entry},
        )
    if exists(entry):
        return entry, None
    colons = [i for i, ch in enumerate(entry) if ch == ":" and i > 0]
    valid = next((i for i in colons if parse_selector(entry[i:]) is not None), None)
    looks = next((i for i in colons if _looks_like_selector(entry[i + 1 :])), None)
    if valid is not None and (looks is None or looks >= valid or exists(entry[:valid])):
        return entry[:valid], parse_selector(entry[valid:])
    if looks is not None:
        sel = entry[looks:]
        raise ToolError("invalid_selector", INVALID_SELECTOR.format(sel=sel), {"selector": sel})
    return entry, None


OUTPUT_CAP = 1_048_576
CAP_REACHED = "not read: output cap (1 MiB) reached"


class ReadSection(Record, frozen=True):
    """One rendered read: its text, and what the caller records as a snapshot (tag None for `:raw`).

    `next_line` is set when the output stops before EOF with a continuation footer; `capped` when the
    byte budget (not a window) caused that.
    """

    content: str
    tag: str | None
    text: str
    shown: tuple[int, ...]
    next_line: int | None = None
    capped: bool = False


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _window(selector: Selector, total: int) -> tuple[int, int, bool]:
    """First and last row to show, and whether a window or cap cut the output short of EOF."""
    if selector.end is None:
        last = min(total, selector.start + DEFAULT_WINDOW - 1)
        return selector.start, last, last < total
    first, last = selector.start, selector.end
    if not selector.raw:
        first, last = max(1, first - 1), last + 3
    last = min(last, total)
    if last - first + 1 > MAX_BOUNDED_LINES:
        return first, first + MAX_BOUNDED_LINES - 1, True
    return first, last, False


def _footer(total: int, last_shown: int) -> str:
    return f"\n\n[{total - last_shown} more lines in file. Use :{last_shown + 1} to continue]"


def render_section(
    path: str, text: str, selector: Selector | None = None, budget: int = OUTPUT_CAP
) -> ReadSection:
    """Render one read of `text` (a decoded file) as a `[PATH#TAG]` section, or verbatim for `:raw`.

    `budget` is the UTF-8 byte allowance: a section that crosses it is cut at a row boundary and gets
    the continuation footer. Raises `output_cap` when not even the header and footer fit.
    """
    selector = selector or Selector()
    lf_text = normalise_eol(text)
    rows = split_rows(lf_text)
    tag = None if selector.raw else compute_tag(text)
    header = "" if selector.raw else f"[{path}#{tag}]"
    total = len(rows)
    if total == 0 and selector.start == 1:
        content = "" if selector.raw else f"{header}\n[The file is empty.]"
        if _utf8_len(content) > budget:
            raise ToolError("output_cap", CAP_REACHED)
        return ReadSection(content, tag, lf_text, ())
    if selector.start > total:
        # An empty file has no last line to point at (and :0 is no selector): only :1 reads it.
        advice = (
            f"Use :1 to read from the start, or :{total} to read the last line."
            if total
            else "The file is empty; use :1 (or no selector) to read it."
        )
        raise ToolError(
            "invalid_range",
            f"Line {selector.start} is beyond end of file ({total} lines total). {advice}",
            {"line": selector.start, "total": total},
        )
    first, last, cut = _window(selector, total)
    used = _utf8_len(header)
    if used + _utf8_len(_footer(total, first - 1)) > budget:
        raise ToolError("output_cap", CAP_REACHED)
    parts = [header] if header else []
    shown: list[int] = []
    capped = False
    for number in range(first, last + 1):
        row = rows[number - 1] if selector.raw else f"{number}:{clip_row(rows[number - 1])}"
        cost = _utf8_len(row) + (1 if parts else 0)
        needs_footer = number < total and (number < last or cut)
        reserve = _utf8_len(_footer(total, number)) if needs_footer else 0
        if used + cost + reserve > budget:
            cut = capped = True
            break
        parts.append(row)
        used += cost
        shown.append(number)
    content = "\n".join(parts)
    last_shown = shown[-1] if shown else first - 1
    next_line = None
    if cut and last_shown < total:
        content += _footer(total, last_shown).lstrip("\n") if not parts else _footer(total, last_shown)
        next_line = last_shown + 1
    return ReadSection(content, tag, lf_text, tuple(shown), next_line, capped)


class ReadEntry(Record, frozen=True):
    """One requested read entry, loaded by the caller: either decoded text or the error it hit."""

    entry: str
    path: str = ""
    text: str | None = None
    selector: Selector | None = None
    error: ToolError | None = None


class ReadOutput(Record, frozen=True):
    """The whole read result; `sections[i]` is entry i's rendering, or None with `errors[i]` why not.

    `errors[i]` is what the content's `ERROR:` line for entry i says: past the output cap that is
    `output_cap`, whatever the entry would have hit on its own.
    """

    content: str
    sections: tuple[ReadSection | None, ...]
    errors: tuple[ToolError | None, ...]


def assemble_read(entries: list[ReadEntry], cap: int = OUTPUT_CAP) -> ReadOutput:
    """Render a read call: one section, or `--- FILE: … ---` sections with `ERROR:` for failures.

    A single failing entry raises its error. A multi-entry call raises only when every entry failed
    (`all_failed_error`), with the whole listing as message. Once the byte cap cuts a section, every
    later entry becomes `ERROR: not read: output cap (1 MiB) reached`.
    """
    if len(entries) == 1:
        entry = entries[0]
        if entry.error is not None:
            raise entry.error
        only = render_section(entry.path, entry.text or "", entry.selector, cap)
        return ReadOutput(only.content, (only,), (None,))
    pieces: list[str] = []
    sections: list[ReadSection | None] = []
    errors: list[ToolError | None] = []
    used = 0
    capped = False
    for index, entry in enumerate(entries):
        lead = ("\n\n" if pieces else "") + f"--- FILE: {entry.entry} ---\n"
        later = sum(
            _utf8_len(f"\n\n--- FILE: {e.entry} ---\nERROR: {CAP_REACHED}") for e in entries[index + 1 :]
        )
        section: ReadSection | None = None
        error = entry.error
        if capped:
            error = ToolError("output_cap", CAP_REACHED)
        elif error is None:
            try:
                budget = cap - used - _utf8_len(lead) - later
                section = render_section(entry.path, entry.text or "", entry.selector, budget)
                capped = section.capped
            except ToolError as exc:
                capped = exc.code == "output_cap"
                error = exc
        body = section.content if section is not None else f"ERROR: {error.message if error else ''}"
        errors.append(error)
        pieces.append(lead + body)
        used += _utf8_len(pieces[-1])
        sections.append(section)
    content = "".join(pieces)
    failed = [(entry, error) for entry, error in zip(entries, errors, strict=True) if error is not None]
    if len(failed) == len(entries):
        raise all_failed_error(failed, content)
    return ReadOutput(content, tuple(sections), tuple(errors))


def all_failed_error(failed: list[tuple[ReadEntry, ToolError]], content: str) -> ToolError:
    """The error of a multi-entry read whose every entry failed: the listing, under one code.

    Entries that failed alike keep their code and exit class. Mixed codes become `read_entries_failed`,
    with the exit class they share (all refusals: 3, all bad input: 2), else 1. `details.entries` always
    gives each entry's own code.
    """
    codes = {error.code for _, error in failed}
    classes = {error.exit_class for _, error in failed}
    details = {"entries": [{"entry": entry.entry, "code": error.code} for entry, error in failed]}
    exit_class = classes.pop() if len(classes) == 1 else ExitClass.TOOL_FAILED
    code = codes.pop() if len(codes) == 1 else "read_entries_failed"
    return ToolError(code, content, details, exit_class=exit_class)
