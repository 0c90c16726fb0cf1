"""A small POSIX shell lexer: a command line into simple commands and words, for safety checks.

It is not an interpreter. It splits on every control operator, removes quotes, recurses into
substitutions and here-documents, and marks whatever it cannot know as `unknown`, so that the rules
judging the result can err on the side of refusing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from fermix_cli.core.shell.expand import WordReader
from fermix_cli.core.shell.script import Command, HereDoc, Redirect, Script
from fermix_cli.core.shell.words import Part, RawPart, ShellSyntaxError, Word, finish_word, is_fresh_temp

from ..records import Record, field

__all__ = ["MAX_DEPTH", "MAX_INPUT_CHARS", "Command", "HereDoc", "Redirect", "Script", "parse_script"]

# The largest command the shell tools accept (their schemas use it too), parsed whole.
MAX_INPUT_CHARS = 256 * 1024
MAX_DEPTH = 8

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=", re.S)
_REDIRECT_OPS = ("<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">")
# Reserved words after which `{` still opens a group (`then { ...; }`, `! { ...; }`).
_GROUP_PREFIXES = frozenset({"!", "then", "do", "else", "elif", "if", "while", "until", "time"})
_DECLARATIONS = frozenset({"export", "readonly", "declare", "typeset", "local"})


def parse_script(
    text: str, *, depth: int = 0, variables: Mapping[str, tuple[Part, ...]] | None = None
) -> Script:
    """Parse a command line; raise ShellSyntaxError when it cannot be parsed with confidence.

    `variables` gives known values of shell variables (for example FERMIX_HOME). `depth` is the
    nesting level already used by the caller (nested `sh -c` strings count against MAX_DEPTH).
    """
    if len(text) > MAX_INPUT_CHARS:
        raise ShellSyntaxError(f"command is longer than {MAX_INPUT_CHARS} characters")
    if depth > MAX_DEPTH:
        raise ShellSyntaxError("nesting is deeper than 8")
    shared = _Shared()
    _Lexer(text, 0, depth, shared, dict(variables or {}), (), stop_paren=False).run()
    return Script(tuple(b.freeze() for b in shared.builders if b.words or b.redirects or b.heredocs))


class _Builder(Record):
    pipeline: int
    stage: int
    functions: tuple[str, ...]
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    heredocs: list[HereDoc] = field(default_factory=list)
    background: bool = False

    def freeze(self) -> Command:
        return Command(
            tuple(self.words),
            tuple(self.redirects),
            tuple(self.heredocs),
            self.pipeline,
            self.stage,
            self.background,
            self.functions,
        )


class _Shared(Record):
    builders: list[_Builder] = field(default_factory=list)
    next_pipeline: int = 0

    def new_pipeline(self) -> int:
        self.next_pipeline += 1
        return self.next_pipeline


class _Group(Record):
    kind: str
    start: int
    outer_pipeline: int
    outer_stage: int
    function: str | None
    case_depth: int


class _PendingDoc(Record):
    builder: _Builder
    delimiter: str
    strip_tabs: bool
    quoted: bool


class _Lexer(WordReader):
    def __init__(
        self,
        text: str,
        pos: int,
        depth: int,
        shared: _Shared,
        variables: dict[str, tuple[Part, ...]],
        functions: tuple[str, ...],
        *,
        stop_paren: bool,
    ) -> None:
        super().__init__(text, pos, variables)
        self.depth = depth
        self.shared = shared
        self.functions = list(functions)
        self.stop_paren = stop_paren
        self.groups: list[_Group] = []
        self.pending_function: str | None = None
        self.case_depth = 0
        self.docs: list[_PendingDoc] = []
        self.cur: _Builder | None = None
        self.pipeline = shared.new_pipeline()
        self.stage = 0
        self.last_group: _Group | None = None

    # -- control structure ---------------------------------------------------------------------

    def run(self) -> None:
        """Lex until the end of the text, or past the `)` that closes a `$(` when stop_paren is set."""
        text = self.text
        while True:
            c = text[self.pos : self.pos + 1]
            if not c:
                self.end_command(";")
                if self.groups:
                    raise ShellSyntaxError(f"unbalanced {self.groups[-1].kind!r}")
                if self.stop_paren:
                    raise ShellSyntaxError("unterminated command substitution")
                self.read_heredocs()
                return
            if c in " \t":
                self.pos += 1
            elif c == "\\" and text.startswith("\\\n", self.pos):
                self.pos += 2
            elif c == "\n":
                self.pos += 1
                self.end_command(";")
                self.read_heredocs()
            elif c == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif c == ";":
                self.pos += 1
                while text[self.pos : self.pos + 1] in (";", "&") and text[self.pos : self.pos + 1]:
                    self.pos += 1
                self.end_command(";")
            elif c == "&":
                self.operator_amp()
            elif c == "|":
                nxt = text[self.pos + 1 : self.pos + 2]
                self.pos += 2 if nxt in ("|", "&") else 1
                self.end_command(";" if nxt == "|" else "|")
            elif c == "(":
                self.open_paren()
            elif c == ")":
                if self.close_paren():
                    return
            elif c in "<>":
                if text[self.pos + 1 : self.pos + 2] == "(":
                    self.pos += 1
                    self.add_words([RawPart("subst", self.command_subst())])
                else:
                    self.redirect()
            else:
                self.word()

    def operator_amp(self) -> None:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt == "&":
            self.pos += 2
            self.end_command(";")
        elif nxt == ">":
            self.redirect(prefix="&")
        else:
            self.pos += 1
            self.end_command("&")

    def builder(self) -> _Builder:
        if self.cur is None:
            self.cur = _Builder(self.pipeline, self.stage, tuple(self.functions))
        return self.cur

    def end_command(self, sep: str) -> None:
        b = self.cur
        self.cur = None
        if b is not None and (b.words or b.redirects or b.heredocs):
            self.shared.builders.append(b)
            self.record_assignments(b)
        group = self.last_group
        self.last_group = None
        if sep == "|":
            if group is not None:
                self.reassign(group, background=False)
            self.stage += 1
            return
        if sep == "&":
            for other in self.shared.builders:
                if other.pipeline == self.pipeline:
                    other.background = True
            if group is not None:
                self.reassign(group, background=True)
        self.pipeline = self.shared.new_pipeline()
        self.stage = 0

    def reassign(self, group: _Group, *, background: bool) -> None:
        """Make a group's commands one stage of the pipeline the group sits in."""
        for b in self.shared.builders[group.start :]:
            b.pipeline, b.stage = group.outer_pipeline, group.outer_stage
            b.background = b.background or background

    def open_paren(self) -> None:
        b = self.cur
        after = self.text[self.pos + 1 :].lstrip(" \t")
        if b is not None and not b.redirects and after.startswith(")"):
            names = [w.literal for w in b.words]
            if len(names) == 1 or (len(names) == 2 and names[0] == "function"):
                # `name ( )`: a function definition; its body is the next group.
                self.cur = None
                self.pending_function = names[-1] or "?"
                self.pos = len(self.text) - len(after) + 1
                return
        self.end_before_group()
        self.pos += 1
        self.open_group("(")

    def end_before_group(self) -> None:
        """End what precedes a group's opening. A group in command position stays where it sits in
        its pipeline: `x | (sh)` and `x | { sh; }` feed the group as `x | sh` feeds sh."""
        b = self.cur
        in_place = b is None or (not b.redirects and all(w.literal in _GROUP_PREFIXES for w in b.words))
        pipeline, stage = self.pipeline, self.stage
        self.end_command(";")
        if in_place:
            self.pipeline, self.stage = pipeline, stage

    def close_paren(self) -> bool:
        """Handle `)`; true when it ends the enclosing `$(`."""
        self.pos += 1
        base = self.groups[-1].case_depth if self.groups else 0
        if self.case_depth > base:
            self.end_command(";")  # the `)` after a case pattern
            return False
        if self.groups and self.groups[-1].kind == "(":
            self.close_group()
            return False
        if self.stop_paren and not self.groups:
            self.end_command(";")
            self.read_heredocs()
            return True
        raise ShellSyntaxError("unbalanced ')'")

    def open_group(self, kind: str) -> None:
        if self.depth + len(self.groups) + 1 > MAX_DEPTH:
            raise ShellSyntaxError("nesting is deeper than 8")
        group = _Group(
            kind,
            len(self.shared.builders),
            self.pipeline,
            self.stage,
            self.pending_function,
            self.case_depth,
        )
        self.pending_function = None
        if group.function is not None:
            self.functions.append(group.function)
        self.groups.append(group)
        self.pipeline = self.shared.new_pipeline()
        self.stage = 0

    def close_group(self) -> None:
        self.end_command(";")
        group = self.groups.pop()
        if group.function is not None:
            self.functions.pop()
        self.pipeline, self.stage = group.outer_pipeline, group.outer_stage
        if group.outer_stage > 0:
            self.reassign(group, background=False)
        self.last_group = group

    # -- words and redirections ----------------------------------------------------------------

    def word(self) -> None:
        raw = self.read_word()
        if (
            len(raw) == 1
            and raw[0].text.isdigit()
            and raw[0].kind == "lit"
            and self.text[self.pos : self.pos + 1] in ("<", ">")
        ):
            return  # a file descriptor number before a redirection
        b = self.cur
        command_position = b is None or all(w.literal in _GROUP_PREFIXES for w in b.words)
        if len(raw) == 1 and raw[0].kind == "open":
            names = [w.literal for w in b.words] if b is not None else []
            if command_position or (len(names) == 2 and names[0] == "function"):
                if not command_position:
                    self.cur = None
                    self.pending_function = names[1] or "?"
                self.end_before_group()
                self.open_group("{")
                return
        if len(raw) == 1 and raw[0].kind == "close" and command_position and self.groups:
            if self.groups[-1].kind != "{":
                raise ShellSyntaxError("'}' closes a '('")
            self.close_group()
            return
        words = finish_word(raw)
        if (b is None or not b.words) and words:
            first = words[0].literal
            if first == "case":
                self.case_depth += 1
            elif first == "esac" and self.case_depth:
                self.case_depth -= 1
        self.add_finished(words)

    def add_words(self, raw: list[RawPart]) -> None:
        self.add_finished(finish_word(raw))

    def add_finished(self, words: list[Word]) -> None:
        if words:
            self.pending_function = None
            self.builder().words.extend(words)

    def redirect(self, prefix: str = "") -> None:
        self.pos += len(prefix)
        op = next(o for o in _REDIRECT_OPS if self.text.startswith(o, self.pos))
        self.pos += len(op)
        while self.text[self.pos : self.pos + 1] in (" ", "\t") and self.pos < len(self.text):
            self.pos += 1
        start = self.pos
        if self.text.startswith(("<(", ">("), self.pos):
            self.pos += 1
            raw = [RawPart("subst", self.command_subst())]
        else:
            raw = self.read_word()
        if not raw and self.pos == start:
            raise ShellSyntaxError(f"redirection {prefix + op!r} has no target")
        b = self.builder()
        if op in ("<<", "<<-"):
            source = self.text[start : self.pos]
            delimiter = re.sub(r"[\"'\\]", "", source)
            quoted = any(q in source for q in "\"'\\")
            self.docs.append(_PendingDoc(b, delimiter, op == "<<-", quoted))
            return
        words = finish_word(raw)
        parts = tuple(p for w in words for p in w.parts)
        b.redirects.append(Redirect(prefix + op, Word(parts)))

    def read_heredocs(self) -> None:
        text = self.text
        for doc in self.docs:
            lines: list[str] = []
            while self.pos < len(text):
                end = text.find("\n", self.pos)
                end = len(text) if end < 0 else end
                line = text[self.pos : end]
                self.pos = min(end + 1, len(text))
                if doc.strip_tabs:
                    line = line.lstrip("\t")
                if line == doc.delimiter:
                    break
                lines.append(line)
            body = "".join(line + "\n" for line in lines)
            expanded = None
            if not doc.quoted:
                sub = self.sub_lexer(body, 0, stop_paren=False)
                expanded = Word(tuple(p for w in finish_word(sub.read_dquote(None)) for p in w.parts))
            doc.builder.heredocs.append(HereDoc(body, expands=not doc.quoted, expanded=expanded))
        self.docs.clear()

    def record_assignments(self, b: _Builder) -> None:
        """Remember `NAME=value` commands so that a later `$NAME` expands to a known value."""
        if not b.words:
            return
        first = b.words[0].literal
        if first in ("unset", "read"):
            for w in b.words[1:]:
                self.vars.pop(w.literal or "", None)
            return
        if first in _DECLARATIONS:
            candidates = b.words[1:]
        elif all(_assignment(w) is not None for w in b.words):
            candidates = b.words
        else:
            return
        for w in candidates:
            assignment = _assignment(w)
            if assignment is None:
                continue
            name, value = assignment
            # A `$(mktemp)` value stays, as the substitution: the judge knows what it prints.
            if any(p.kind == "unknown" or (p.kind == "subst" and not is_fresh_temp(p.text)) for p in value):
                self.vars.pop(name, None)
            else:
                self.vars[name] = value
            if name == "IFS":
                self.ifs = Word(value).literal or " \t\n"

    # -- quoting and expansions ----------------------------------------------------------------

    def nested(self, text: str, pos: int, *, stop_paren: bool) -> int:
        sub = self.sub_lexer(text, pos, stop_paren=stop_paren)
        sub.run()
        return sub.pos

    def sub_lexer(self, text: str, pos: int, *, stop_paren: bool) -> _Lexer:
        if self.depth + len(self.groups) + 1 > MAX_DEPTH:
            raise ShellSyntaxError("nesting is deeper than 8")
        return _Lexer(
            text,
            pos,
            self.depth + len(self.groups) + 1,
            self.shared,
            dict(self.vars),
            tuple(self.functions),
            stop_paren=stop_paren,
        )


def _assignment(word: Word) -> tuple[str, tuple[Part, ...]] | None:
    head = word.parts[0] if word.parts else None
    if head is None or head.kind != "lit":
        return None
    m = _ASSIGN.match(head.text)
    if m is None:
        return None
    return m.group(1), (Part("lit", head.text[m.end() :]), *word.parts[1:])
