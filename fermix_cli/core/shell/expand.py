"""Reading shell words: quotes, `$` expansions, substitutions and backquotes, for the shell lexer."""

from __future__ import annotations

import re

from fermix_cli.core.shell.words import Part, RawKind, RawPart, ShellSyntaxError, Word, finish_word

_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_HEX = "0123456789abcdefABCDEF"
# Longest first, so that `:-` wins over `:` and `##` over `#`.
_PARAM_OPS = (
    ":-", ":=", ":?", ":+", "##", "%%", "//", "/#", "/%", "^^", ",,",
    "-", "=", "?", "+", "#", "%", "/", "^", ",", "@", ":",
)  # fmt: skip


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = re.compile(r"[0-9]+|[@*#?$!0-]")
_WORD_END = frozenset(" \t\n;&|()<>")
_QUOTING = frozenset("'\"$`")  # single and double quotes, `$` and backticks
_MARKERS: dict[str, RawKind] = {"~": "tilde", "{": "open", ",": "comma", "}": "close"}
# Runs of characters that need no handling of their own, in a word and inside double quotes.
_WORD_PLAIN = re.compile(r"[^ \t\n;&|()<>\\'\"$`~{,}]+")
_DQUOTE_PLAIN = re.compile(r'[^\\$`"]+')
_DEFAULTING_OPS = frozenset({":-", "-", ":=", "="})
_HOME_KEEPING_OPS = frozenset({":-", "-", ":=", "=", ":?", "?", "%", "%%"})


class WordReader:
    """Reads one word at a time from `text` at `pos`; subclasses lex what substitutions contain."""

    def __init__(self, text: str, pos: int, variables: dict[str, tuple[Part, ...]]) -> None:
        self.text = text
        self.pos = pos
        self.vars = variables
        self.ifs = " \t\n"

    def nested(self, text: str, pos: int, *, stop_paren: bool) -> int:
        """Lex a substitution's commands starting at `pos`; return the position where it ends."""
        raise NotImplementedError

    def read_word(self) -> list[RawPart]:
        text = self.text
        parts: list[RawPart] = []
        while self.pos < len(text):
            c = text[self.pos]
            if c in _WORD_END:
                break
            if c == "\\":
                nxt = text[self.pos + 1 : self.pos + 2]
                self.pos += 2
                if nxt != "\n":
                    _add(parts, "qlit", nxt or "\\")
            elif c in _QUOTING:
                self.read_quoting(c, parts, quoted=False)
            else:
                self.pos += 1
                marker = _MARKERS.get(c)
                if marker is not None:
                    parts.append(RawPart(marker))
                else:
                    end = _plain_run_end(text, self.pos, _WORD_PLAIN)
                    _add(parts, "lit", text[self.pos - 1 : end])
                    self.pos = end
        return _coalesce(parts)

    def read_quoting(self, c: str, parts: list[RawPart], *, quoted: bool) -> None:
        """Read what starts at `c`, one of `_QUOTING`, alike in a word and in `${name<op>word}`."""
        if c == "'":
            end = self.text.find("'", self.pos + 1)
            if end < 0:
                raise ShellSyntaxError("unbalanced single quote")
            _add(parts, "qlit", self.text[self.pos + 1 : end])
            self.pos = end + 1
        elif c == '"':
            self.pos += 1
            parts.extend(self.read_dquote('"'))
        elif c == "$":
            parts.extend(self.dollar(quoted=quoted))
        else:  # "`"
            parts.append(self.backtick(quoted=quoted))

    def read_dquote(self, terminator: str | None) -> list[RawPart]:
        """Read a double-quoted body (or a here-document body when terminator is None)."""
        text = self.text
        parts: list[RawPart] = [RawPart("qlit", "")]
        while True:
            if self.pos >= len(text):
                if terminator is not None:
                    raise ShellSyntaxError("unbalanced double quote")
                return _coalesce(parts)
            c = text[self.pos]
            if c == terminator:
                self.pos += 1
                return _coalesce(parts)
            if c == "\\":
                nxt = text[self.pos + 1 : self.pos + 2]
                if nxt == "\n":
                    self.pos += 2
                elif nxt in ("$", "`", "\\") or (nxt == '"' and terminator == '"'):
                    _add(parts, "qlit", nxt)
                    self.pos += 2
                else:
                    _add(parts, "qlit", "\\")
                    self.pos += 1
            elif c == "$":
                parts.extend(self.dollar(quoted=True))
            elif c == "`":
                parts.append(self.backtick(quoted=True))
            else:
                end = _plain_run_end(text, self.pos + 1, _DQUOTE_PLAIN)
                _add(parts, "qlit", text[self.pos : end])
                self.pos = end

    def dollar(self, *, quoted: bool) -> list[RawPart]:
        text, pos = self.text, self.pos
        nxt = text[pos + 1 : pos + 2]
        if nxt == "'" and not quoted:
            value, self.pos = decode_ansi_c(text, pos + 2)
            return [RawPart("qlit", value)]
        if nxt == '"' and not quoted:
            self.pos += 2
            return self.read_dquote('"')
        if text.startswith("$((", pos):
            return [self.arithmetic("((", "))")]
        if nxt == "(":
            self.pos += 1
            return [RawPart("subst", self.command_subst())]
        if nxt == "[":
            return [self.arithmetic("[", "]")]
        if nxt == "{":
            return self.parameter(quoted=quoted)
        m = _NAME.match(text, pos + 1)
        if m is not None:
            self.pos = m.end()
            return self.variable(m.group(0), "$" + m.group(0), quoted=quoted)
        if nxt and nxt in "@*#?-$!0123456789":
            self.pos += 2
            return [RawPart("unknown", "$" + nxt)]
        self.pos += 1
        return [RawPart("qlit" if quoted else "lit", "$")]

    def variable(self, name: str, spelling: str, *, quoted: bool) -> list[RawPart]:
        if name == "HOME":
            return [RawPart("home", spelling)]
        if name == "IFS":
            return [RawPart("qlit", " ")] if quoted else [RawPart("split")]
        value = self.vars.get(name)
        if value is None:
            return [RawPart("unknown", spelling)]
        return field_split(value, None if quoted else self.ifs)

    def parameter(self, *, quoted: bool) -> list[RawPart]:
        text = self.text
        start = self.pos
        self.pos += 2
        prefix = ""
        if text[self.pos : self.pos + 1] in ("#", "!") and text[self.pos + 1 : self.pos + 2] not in ("}", ""):
            prefix = text[self.pos]
            self.pos += 1
        m = _NAME.match(text, self.pos) or _SPECIAL.match(text, self.pos)
        if m is None:
            raise ShellSyntaxError("bad substitution")
        name = m.group(0)
        self.pos = m.end()
        if prefix == "!" and text[self.pos : self.pos + 1] in ("*", "@"):
            prefix += text[self.pos]  # `${!prefix*}`: the names of matching variables
            self.pos += 1
        if text[self.pos : self.pos + 1] == "[":
            prefix += self.subscript()
        op: str | None = None
        word: list[RawPart] = []
        if text[self.pos : self.pos + 1] == "}":
            self.pos += 1
        else:
            op = param_op(text, self.pos)
            if op is None:
                raise ShellSyntaxError("bad substitution")
            self.pos += len(op)
            word = self.read_param_word()
        spelling = text[start : self.pos]
        if prefix or not _NAME.fullmatch(name):
            return [RawPart("unknown", spelling)]
        if name == "IFS":
            return [RawPart("qlit", " ")] if quoted else [RawPart("split")]
        if name == "HOME":
            return (
                [RawPart("home", spelling)]
                if op is None or op in _HOME_KEEPING_OPS
                else [RawPart("unknown", spelling)]
            )
        if op is None:
            return self.variable(name, spelling, quoted=quoted)
        if op in _DEFAULTING_OPS:
            known = self.vars.get(name)
            if known is not None and Word(known).render("x"):
                return field_split(known, None if quoted else self.ifs)
            default = tuple(p for w in finish_word(word) for p in w.parts)
            return [RawPart("unknown", spelling, default)]
        return [RawPart("unknown", spelling)]

    def subscript(self) -> str:
        """Skip an array subscript `[...]`, lexing substitutions inside it; return it."""
        start = self.pos
        depth = 0
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "$":
                self.dollar(quoted=True)
                continue
            depth += {"[": 1, "]": -1}.get(c, 0)
            self.pos += 1
            if depth == 0:
                return self.text[start : self.pos]
        raise ShellSyntaxError("unterminated array subscript")

    def read_param_word(self) -> list[RawPart]:
        """Read the word of `${name<op>word}` up to its closing brace."""
        text = self.text
        parts: list[RawPart] = []
        depth = 0
        while True:
            if self.pos >= len(text):
                raise ShellSyntaxError("unterminated parameter expansion")
            c = text[self.pos]
            if c == "}" and depth == 0:
                self.pos += 1
                return _coalesce(parts)
            if c == "\\":
                _add(parts, "qlit", text[self.pos + 1 : self.pos + 2])
                self.pos += 2
            elif c in _QUOTING:
                self.read_quoting(c, parts, quoted=True)
            else:
                depth += {"{": 1, "}": -1}.get(c, 0)
                if c == "~" and not parts:
                    parts.append(RawPart("tilde"))
                else:
                    _add(parts, "lit", c)
                self.pos += 1

    def arithmetic(self, opener: str, closer: str) -> RawPart:
        """Skip `$((...))` or `$[...]`, still lexing any substitutions inside it."""
        text = self.text
        start = self.pos
        self.pos += 1 + len(opener)
        inner_open, inner_close = opener[0], closer[0]
        depth = 0
        while True:
            if self.pos >= len(text):
                raise ShellSyntaxError("unterminated arithmetic expansion")
            c = text[self.pos]
            if c == inner_close and depth == 0:
                if not text.startswith(closer, self.pos):
                    raise ShellSyntaxError("unbalanced arithmetic expansion")
                self.pos += len(closer)
                return RawPart("unknown", text[start : self.pos])
            if c == "$":
                self.dollar(quoted=True)
                continue
            if c == "`":
                self.backtick(quoted=True)
                continue
            if c == '"':
                self.pos += 1
                self.read_dquote('"')
                continue
            if c == inner_open:
                depth += 1
            elif c == inner_close:
                depth -= 1
            self.pos += 2 if c == "\\" else 1

    def command_subst(self) -> str:
        """Lex `$(...)` or `<(...)` from the `(`; return the inner source."""
        start = self.pos + 1
        self.pos = self.nested(self.text, start, stop_paren=True)
        return self.text[start : self.pos - 1]

    def backtick(self, *, quoted: bool) -> RawPart:
        text = self.text
        i = self.pos + 1
        buf: list[str] = []
        while True:
            if i >= len(text):
                raise ShellSyntaxError("unterminated backquote substitution")
            c = text[i]
            if c == "`":
                break
            if c == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                if nxt in "$`\\" or (quoted and nxt == '"'):
                    buf.append(nxt)
                else:
                    buf.append(c + nxt)
                i += 2
                continue
            buf.append(c)
            i += 1
        self.pos = i + 1
        inner = "".join(buf)
        self.nested(inner, 0, stop_paren=False)
        return RawPart("subst", inner)


def decode_ansi_c(text: str, pos: int) -> tuple[str, int]:
    """Decode a `$'...'` body starting at `pos` (just past the quote); return it and the end position."""
    out: list[str] = []
    while True:
        if pos >= len(text):
            raise ShellSyntaxError("unbalanced $'...' quote")
        c = text[pos]
        if c == "'":
            return "".join(out), pos + 1
        if c != "\\" or pos + 1 >= len(text):
            out.append(c)
            pos += 1
            continue
        esc = text[pos + 1]
        pos += 2
        if esc in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[esc])
        elif esc in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[esc]
            digits = _take(text, pos, _HEX, width)
            pos += len(digits)
            out.append(chr(min(int(digits, 16), 0x10FFFF)) if digits else "\\" + esc)
        elif esc in "01234567":
            digits = esc + _take(text, pos, "01234567", 2)
            pos += len(digits) - 1
            out.append(chr(int(digits, 8) & 0xFF))
        elif esc == "c" and pos < len(text):
            out.append(chr(ord(text[pos]) & 0x1F))
            pos += 1
        else:
            out.append("\\" + esc)


def _take(text: str, pos: int, alphabet: str, limit: int) -> str:
    end = pos
    while end < len(text) and end - pos < limit and text[end] in alphabet:
        end += 1
    return text[pos:end]


def param_op(text: str, pos: int) -> str | None:
    """The parameter-expansion operator at `pos` in `${name<op>word}`, if any."""
    for op in _PARAM_OPS:
        if text.startswith(op, pos):
            return op
    return None


def field_split(value: tuple[Part, ...], ifs: str | None) -> list[RawPart]:
    """A known variable's value as lexer parts; `ifs` None means the expansion was quoted."""
    out: list[RawPart] = []
    for part in value:
        if part.kind != "lit":
            out.append(RawPart(part.kind, part.text, part.fallback))
        elif ifs is None:
            out.append(RawPart("qlit", part.text))
        else:
            field: list[str] = []
            for ch in part.text:
                if ch in ifs:
                    if field:
                        out.append(RawPart("lit", "".join(field)))
                        field = []
                    out.append(RawPart("split"))
                else:
                    field.append(ch)
            if field:
                out.append(RawPart("lit", "".join(field)))
    return out


def _add(parts: list[RawPart], kind: RawKind, text: str) -> None:
    """Append literal text; `_coalesce` merges neighbours of the same quoting once the word is read."""
    parts.append(RawPart(kind, text))


def _coalesce(parts: list[RawPart]) -> list[RawPart]:
    """Merge adjacent literals of the same quoting in one pass (merging as they come is quadratic)."""
    out: list[RawPart] = []
    run: list[str] = []
    for part in parts:
        if out and part.kind in ("lit", "qlit") and out[-1].kind == part.kind:
            if not run:
                run.append(out[-1].text)
            run.append(part.text)
            continue
        if run:
            out[-1] = RawPart(out[-1].kind, "".join(run))
            run = []
        out.append(part)
    if run:
        out[-1] = RawPart(out[-1].kind, "".join(run))
    return out


def _plain_run_end(text: str, pos: int, plain: re.Pattern[str]) -> int:
    """Where a run of characters needing no special handling, starting at `pos`, ends."""
    match = plain.match(text, pos)
    return match.end() if match else pos
