"""The hash_edit input grammar: sections, hunks and file ops, with hashline v2's lexical leniency."""

from __future__ import annotations

import re

from fermix_cli.core.errors import ToolError

from ...core.records import Record, field, replace

MAX_INPUT_BYTES = 1_048_576
MAX_SECTIONS = 32
MAX_HUNKS = 1000

RANGE_OPS = ("SWAP", "DEL")
SINGLE_OPS = ("SWAP.BLK", "DEL.BLK", "INS.PRE", "INS.POST", "INS.BLK.POST")
EDGE_OPS = ("INS.HEAD", "INS.TAIL")
FILE_OPS = ("MV", "REM")
KEYWORDS = frozenset(RANGE_OPS + SINGLE_OPS + EDGE_OPS + FILE_OPS)
BODY_OPS = frozenset({"SWAP", "SWAP.BLK", "INS.PRE", "INS.POST", "INS.BLK.POST", "INS.HEAD", "INS.TAIL"})
BLOCK_OPS = frozenset({"SWAP.BLK", "DEL.BLK", "INS.BLK.POST"})

_OP_WORD = re.compile(r"^\s*([A-Za-z]+(?:\.[A-Za-z]+)*)(.*)$")
# An upper-case word followed by line numbers and/or a colon is an op header, known or not.
_OP_LIKE = re.compile(r"^\s*([A-Za-z]+(?:\.[A-Za-z]+)*)(?:\s+[0-9][0-9\s.=\-…]*:?|\s*:)\s*$")
_BARE_RANGE = re.compile(r"^\s*[0-9]+(?:\s*(?:\.=|\.\.|-|…)\s*[0-9]+|\s+[0-9]+)?\s*:?\s*$")
_RANGE = re.compile(r"^(\S+?)\s*(?:\.=|\.\.|-|…)\s*(\S+)$|^(\S+)\s+(\S+)$")
_NUMBER = re.compile(r"[1-9][0-9]*")
# Longer than any line count a 1 MiB file can have, and far short of Python's int-parsing digit limit.
MAX_NUMBER_DIGITS = 18
_TAG = re.compile(r"[0-9A-Fa-f]{4}")
_APPLY_PATCH = re.compile(r"^\*\*\*\s*(?:Update|Add|Delete) File:\s*")
_MOVE_TO = re.compile(r"^\*\*\*\s*Move to:")

APPLY_PATCH_MESSAGE = (
    "apply_patch markers are not supported; start a section with [PATH#TAG] and use SWAP N.=M: / DEL N.=M. "
    "Use write for new files."
)
UNIFIED_DIFF_MESSAGE = (
    "unified-diff hunk headers are not hashline ops; use SWAP N.=M: with +TEXT rows (or DEL N.=M)."
)
MV_BODY_MESSAGE = "`MV DEST` does not take body rows. Put line edits above the `MV` row."
ONE_FILE_OP_MESSAGE = "Only one file-level op (`REM` or `MV`) per section."
REM_AFTER_MESSAGE = "`REM` deletes the whole file and cannot be combined with line ops."
INS_EMPTY_MESSAGE = "`INS` needs at least one `+TEXT` body row."
NO_SECTIONS_MESSAGE = "No hashline sections found in input."


class Hunk(Record, frozen=True):
    """One line op as written: `start`..`end` in original numbering (0 for INS.HEAD/INS.TAIL)."""

    op: str
    start: int
    end: int
    body: tuple[str, ...]
    line: int


class FileOp(Record, frozen=True):
    """A whole-file op: `REM`, or `MV` to `dest` as written."""

    kind: str
    dest: str | None
    line: int


class Section(Record, frozen=True):
    """The edits for one file: its PATH, tag, hunks and an optional file op.

    `path` is the spelling sections merge on and messages show (`normalise_section_path`); `written`
    holds each distinct PATH as written (unquoted), first first. Those are what gets resolved, so an
    absolute PATH stays absolute for the path rules.
    """

    path: str
    tag: str | None
    hunks: tuple[Hunk, ...]
    fileop: FileOp | None
    line: int
    source: str
    written: tuple[str, ...]


def _quote(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


def _fail(message: str, line: int | None = None) -> ToolError:
    return ToolError("invalid_patch", message, {"line": line} if line else None)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1]
    return text


def parse_header(line: str) -> tuple[str, str | None] | None:
    """Parse `[PATH]` / `[PATH#TAG]`; None when the line is not bracketed, ToolError for a bad tag."""
    stripped = line.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return None
    inner = _APPLY_PATCH.sub("", stripped[1:-1].strip()).strip()
    path, sep, tag = inner.partition("#")
    path = _unquote(path)
    tag = tag.strip()
    if not path or (sep and not _TAG.fullmatch(tag)):
        raise _fail(
            "Input header must be [PATH] or [PATH#TAG] with a 4-hex content-hash tag; "
            f'got "{_quote(stripped)}".'
        )
    return path, (tag.upper() if sep else None)


def _number(token: str, line: int) -> int:
    if not _NUMBER.fullmatch(token):
        raise _fail(f'line {line}: line numbers start at 1; got "{_quote(token)}".', line)
    if len(token) > MAX_NUMBER_DIGITS:
        raise _fail(
            f'line {line}: line number "{_quote(token, 40)}" is too large; no file has that many lines.', line
        )
    return int(token)


def _parse_range(rest: str, line: int) -> tuple[int, int]:
    match = _RANGE.match(rest)
    if match is None:
        start = end = _number(rest, line)
    else:
        first, second = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
        start, end = _number(first, line), _number(second, line)
    if start > end:
        raise _fail(
            f"line {line}: range {start}.={end} is reversed; write the lower line number first.", line
        )
    return start, end


class _Pending(Record):
    op: str
    start: int
    end: int
    line: int
    body: list[str] = field(default_factory=list)
    blanks: int = 0


class _OpenSection(Record):
    path: str
    tag: str | None
    line: int
    hunks: list[Hunk] = field(default_factory=list)
    fileop: FileOp | None = None
    rows: list[str] = field(default_factory=list)


class _Parser:
    def __init__(self) -> None:
        self.sections: list[_OpenSection] = []
        self.section: _OpenSection | None = None
        self.pending: _Pending | None = None
        self.last_fileop = False

    def close_hunk(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None or self.section is None:
            return
        if not pending.body and pending.op != "SWAP":
            if pending.op == "SWAP.BLK":
                raise _fail(
                    f"`SWAP.BLK {pending.start}:` needs at least one `+TEXT` body row. "
                    f"To delete a block, use `DEL.BLK {pending.start}`.",
                    pending.line,
                )
            if pending.op in BODY_OPS:
                raise _fail(INS_EMPTY_MESSAGE, pending.line)
        hunk = Hunk(pending.op, pending.start, pending.end, tuple(pending.body), pending.line)
        self.section.hunks.append(hunk)

    def open_section(self, path: str, tag: str | None, line: int, row: str) -> None:
        self.close_hunk()
        self.section = _OpenSection(path, tag, line, rows=[row])
        self.sections.append(self.section)
        self.last_fileop = False

    def body_row(self, text: str, line: int) -> None:
        pending = self.pending
        if pending is not None and pending.op in BODY_OPS:
            if "\r" in text:
                # The snapshot and the next read split rows at a lone CR (normalise_eol); a row holding
                # one would become two lines on disk and shift every later line number.
                raise _fail(
                    f"line {line}: body row contains a carriage return (\\r), which would split it into two "
                    "lines; put each line in its own `+TEXT` row.",
                    line,
                )
            pending.body.extend([""] * pending.blanks)
            pending.blanks = 0
            pending.body.append(text[1:])
        elif pending is not None:
            if pending.op == "DEL":
                span = f"{pending.start}.={pending.end}"
                raise _fail(
                    f"line {line}: `DEL {span}` does not take body rows. "
                    f"Remove the body, or use `SWAP {span}:`.",
                    line,
                )
            raise _fail(
                f"line {line}: `DEL.BLK {pending.start}` does not take body rows. "
                f"Remove the body, or use `SWAP.BLK {pending.start}:`.",
                line,
            )
        elif self.last_fileop:
            raise _fail(MV_BODY_MESSAGE, line)
        else:
            raise _fail(f'line {line}: payload line has no preceding hunk header: "{_quote(text)}"', line)

    def raw_row(self, text: str, line: int) -> None:
        stripped = text.strip()
        op_like = _OP_LIKE.match(text) or _OP_WORD.match(text)
        if stripped.startswith("@@"):
            raise _fail(UNIFIED_DIFF_MESSAGE, line)
        if _APPLY_PATCH.match(stripped) or _MOVE_TO.match(stripped):
            raise _fail(APPLY_PATCH_MESSAGE, line)
        if _BARE_RANGE.match(text):
            raise _fail(
                f"line {line}: a bare line number/range is not an op; "
                "write SWAP N.=M: (replace) or DEL N.=M (delete).",
                line,
            )
        if op_like and op_like.group(1) not in KEYWORDS:
            word = op_like.group(1)
            shaped = op_like.re is _OP_LIKE and word.isupper()
            if shaped or word.upper() in KEYWORDS:
                raise _fail(
                    f'line {line}: unknown op "{word}"; valid ops: SWAP, SWAP.BLK, DEL, DEL.BLK, INS.PRE, '
                    "INS.POST, INS.BLK.POST, INS.HEAD, INS.TAIL, MV, REM.",
                    line,
                )
        if stripped.startswith("-"):
            raise _fail(
                f"line {line}: `-` rows are not valid; the range already names the lines being changed. "
                "For a literal `-` line, write `+-…`.",
                line,
            )
        if self.pending is not None and self.pending.op in BODY_OPS:
            raise _fail(
                f'line {line}: body rows must be `+TEXT` literal lines; got "{_quote(text)}". Prefix every '
                "body line with `+` (a literal leading `+` or `-` becomes `++…` / `+-…`).",
                line,
            )
        raise _fail(f'line {line}: payload line has no preceding hunk header: "{_quote(text)}"', line)

    def op_header(self, text: str, line: int) -> bool:
        """Start a hunk or file op if `text` is an op header; False when it is a raw row."""
        match = _OP_WORD.match(text)
        if match is None or match.group(1) not in KEYWORDS:
            return False
        op, rest = match.group(1), match.group(2)
        if rest and not (rest[0].isspace() or rest[0] in ":."):
            return False
        rest = rest.strip()
        colon = rest.endswith(":")
        args = rest[:-1].strip() if colon else rest
        if op == "DEL.BLK" and colon:
            return False
        assert self.section is not None
        if op in FILE_OPS:
            self.file_op(op, args, line)
            return True
        if self.section.fileop is not None and self.section.fileop.kind == "REM":
            raise _fail(REM_AFTER_MESSAGE, line)
        self.close_hunk()
        self.last_fileop = False
        if op in EDGE_OPS:
            if args:
                raise _fail(f'line {line}: `{op}:` takes no line number; got "{_quote(args)}".', line)
            self.pending = _Pending(op, 0, 0, line)
            return True
        start, end = _parse_range(args, line)
        if op in SINGLE_OPS and start != end:
            raise _fail(f'line {line}: `{op}` takes one line number; got "{_quote(args)}".', line)
        if op == "DEL" and colon:
            raise _fail(
                f"`DEL {start}.={end}` has no colon and no body. Remove the colon and body rows.", line
            )
        self.pending = _Pending(op, start, end, line)
        return True

    def file_op(self, op: str, args: str, line: int) -> None:
        assert self.section is not None
        self.close_hunk()
        if self.section.fileop is not None:
            raise _fail(ONE_FILE_OP_MESSAGE, line)
        if op == "REM":
            if args:
                raise _fail(f"line {line}: `REM` takes no arguments.", line)
            if self.section.hunks:
                raise _fail(
                    f"line {line}: `REM` deletes the whole file and takes no body rows or line ops. "
                    "Issue it alone under the header.",
                    line,
                )
            self.section.fileop = FileOp("REM", None, line)
        else:
            dest = _unquote(args)
            if not dest:
                raise _fail(f"line {line}: `MV` needs a destination path.", line)
            self.section.fileop = FileOp("MV", dest, line)
        self.last_fileop = True


def _first_line(parser: _Parser, text: str, line: int) -> None:
    stripped = text.strip()
    if stripped.startswith("@@"):
        raise _fail(UNIFIED_DIFF_MESSAGE, line)
    if _APPLY_PATCH.match(stripped):
        raise _fail(APPLY_PATCH_MESSAGE, line)
    header = parse_header(text)
    if header is None:
        raise _fail(
            'input must begin with "[PATH#HASH]" on the first non-blank line for anchored edits; '
            f'got: "{_quote(text)}". Example: "[src/foo.ts#1A2B]" then edit ops.',
            line,
        )
    parser.open_section(header[0], header[1], line, text)


def _split(text: str) -> list[_OpenSection]:
    parser = _Parser()
    rows = text.split("\n")
    for index, raw in enumerate(rows):
        line, row = index + 1, raw.removesuffix("\r")
        stripped = row.strip()
        if stripped == "*** Begin Patch":
            continue
        if stripped in ("*** End Patch", "*** Abort"):
            break
        if parser.section is None:
            if stripped:
                _first_line(parser, row, line)
            continue
        parser.section.rows.append(row)
        if row.startswith("+"):
            parser.body_row(row, line)
        elif not stripped:
            if parser.pending is not None:
                parser.pending.blanks += 1
        elif (header := parse_header(row)) is not None:
            parser.section.rows.pop()
            parser.open_section(header[0], header[1], line, text)
            parser.section.rows.append(row)
        elif stripped.startswith("#") and _is_op_header(rows, index + 1):
            continue
        elif not parser.op_header(row, line):
            parser.raw_row(row, line)
    parser.close_hunk()
    return parser.sections


def _is_op_header(rows: list[str], index: int) -> bool:
    if index >= len(rows):
        return False
    match = _OP_WORD.match(rows[index])
    return match is not None and match.group(1) in KEYWORDS


def normalise_section_path(path: str, cwd: str | None) -> str:
    """PATH as sections are merged on: `.` and empty components dropped, absolute inside `cwd` made relative.

    Only a key and a display spelling: a path is resolved as written (an absolute path that reaches
    outside `cwd` through a symlink is allowed where its relative spelling is not). Purely lexical; `..` is kept (and blocks making an absolute path relative), since only the
    filesystem can say where it leads. Sections that still name one file twice are refused later.
    """
    parts = [part for part in path.split("/") if part not in ("", ".")]
    slash = "/" if path.endswith("/") and parts else ""
    if not path.startswith("/"):
        return "/".join(parts) + slash if parts else "."
    absolute = "/" + "/".join(parts)
    base = cwd.rstrip("/") if cwd else None
    if base is None or ".." in parts:
        return absolute + slash
    if absolute == (base or "/"):
        return "."
    if absolute.startswith(base + "/"):
        return absolute[len(base) + 1 :] + slash
    return absolute + slash


def parse_patch(text: str, cwd: str | None = None) -> tuple[Section, ...]:
    """Parse a hash_edit `input` into sections, merging same-PATH sections in order of first appearance.

    With `cwd`, PATHs are normalised first (`normalise_section_path`), so `[a.txt]`, `[./a.txt]` and
    `[CWD/a.txt]` are one section; `Section.written` keeps each spelling for resolution.
    """
    size = len(text.encode("utf-8"))
    if size > MAX_INPUT_BYTES:
        raise ToolError("input_too_large", f"input is {size} bytes; hash_edit is limited to 1 MiB of input.")
    opened = _split(text.removeprefix("\ufeff"))
    if len(opened) > MAX_SECTIONS:
        raise ToolError(
            "input_too_large", f"input has {len(opened)} sections; hash_edit accepts at most {MAX_SECTIONS}."
        )
    hunks = sum(len(s.hunks) for s in opened)
    if hunks > MAX_HUNKS:
        raise ToolError("input_too_large", f"input has {hunks} hunks; hash_edit accepts at most {MAX_HUNKS}.")
    merged: dict[str, Section] = {}
    for part in opened:
        if not part.hunks and part.fileop is None:
            continue
        path = normalise_section_path(part.path, cwd)
        rows = "\n".join(part.rows)
        section = Section(path, part.tag, tuple(part.hunks), part.fileop, part.line, rows, (part.path,))
        previous = merged.get(path)
        if previous is not None:
            section = _merge(previous, section)
        merged[path] = section
    if not merged:
        raise ToolError("no_sections", NO_SECTIONS_MESSAGE)
    return tuple(merged.values())


def _merge(first: Section, second: Section) -> Section:
    if first.tag and second.tag and first.tag != second.tag:
        raise ToolError(
            "conflicting_tags",
            f"Conflicting hashline snapshot tags for {first.path}: #{first.tag} and #{second.tag}. "
            "Re-read the file and retry with one current header.",
        )
    if first.fileop is not None and second.fileop is not None:
        raise _fail(ONE_FILE_OP_MESSAGE, second.fileop.line)
    fileop = first.fileop or second.fileop
    if fileop is not None and fileop.kind == "REM" and (first.hunks or second.hunks):
        raise _fail(REM_AFTER_MESSAGE, fileop.line)
    return replace(
        first,
        tag=first.tag or second.tag,
        hunks=first.hunks + second.hunks,
        fileop=fileop,
        source=first.source + "\n" + second.source,
        written=first.written + tuple(p for p in second.written if p not in first.written),
    )
