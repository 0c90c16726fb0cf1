"""Words of a parsed shell command: literal text, home references and expansions of unknown value."""

from __future__ import annotations

import itertools
import re
from typing import Literal

from ..records import Record

MAX_BRACE_WORDS = 64
# Brace expansion rescans a word once per marker; past this many markers a word is refused rather
# than risk quadratic work on hostile input.
_MAX_BRACE_MARKERS = 512

# Stands for "a value nobody knows" inside text that is parsed again (the string of `sh -c "$X"`):
# it stays unknown whatever quoting surrounds it in the nested command.
UNKNOWN_MARK = "\ue000"

# A pattern the shell would glob: `*`, `?`, or a bracket expression that closes (`[` alone, as in
# `[ -f x ]` or `[[`, is a plain word).
GLOB = re.compile(r"[*?]|\[[^/]+\]")
# `$(mktemp ...)` prints a path it has just created: never a root, whatever its arguments.
_MKTEMP = re.compile(r"^\s*(?:[^\s;&|`()<>]*/)?mktemp(?:\s[^;&|`()<>\n]*)?$")


FRESH_TEMP = "/tmp/tmp.mktemp"


def is_fresh_temp(source: str) -> bool:
    """True when a command substitution's source is a plain `mktemp` call."""
    return _MKTEMP.match(source) is not None


PartKind = Literal["lit", "home", "unknown", "subst"]
RawKind = Literal["lit", "qlit", "home", "unknown", "subst", "tilde", "open", "comma", "close", "split"]


class ShellSyntaxError(ValueError):
    """The command cannot be parsed with confidence, so safety checks must fail closed."""


class Part(Record, frozen=True):
    """One piece of a word after quote removal.

    `lit` is literal text; `home` is a spelling of the home directory (`~`, `$HOME`, `${HOME}`);
    `unknown` is an expansion whose value is not known (`text` is its spelling, `fallback` the parts of
    a `${X:-word}` default); `subst` is a command or process substitution (`text` is its inner source).
    """

    kind: PartKind
    text: str
    fallback: tuple[Part, ...] | None = None


class Word(Record, frozen=True):
    """One shell word after brace expansion, tilde expansion, quote removal and IFS splitting."""

    parts: tuple[Part, ...]

    @classmethod
    def of(cls, text: str) -> Word:
        return cls((Part("lit", text),))

    @property
    def literal(self) -> str | None:
        """The word's text when every part is literal, else None."""
        if all(p.kind == "lit" for p in self.parts):
            return "".join(p.text for p in self.parts)
        return None

    @property
    def has_unknown(self) -> bool:
        return any(p.kind in ("unknown", "subst") for p in self.parts)

    @property
    def starts_unknown(self) -> bool:
        for p in self.parts:
            if p.kind == "lit" and not p.text:
                continue
            return p.kind in ("unknown", "subst")
        return False

    def with_temps_known(self) -> Word:
        """This word with each `$(mktemp ...)` replaced by a temporary path (what it prints)."""
        if not any(p.kind == "subst" and is_fresh_temp(p.text) for p in self.parts):
            return self
        parts = (
            Part("lit", FRESH_TEMP) if p.kind == "subst" and is_fresh_temp(p.text) else p for p in self.parts
        )
        return Word(tuple(parts))

    @property
    def substitutions(self) -> tuple[str, ...]:
        """Inner sources of the command and process substitutions in this word."""
        return tuple(p.text for p in self.parts if p.kind == "subst")

    def render(self, home: str, unknown: str = "", *, use_fallback: bool = False) -> str:
        """The word's text with home parts replaced by `home` and unknown parts by `unknown`.

        With `use_fallback`, an unknown part that has a `${X:-word}` default renders as that default.
        """
        out: list[str] = []
        for p in self.parts:
            if p.kind == "lit":
                out.append(p.text)
            elif p.kind == "home":
                out.append(home)
            elif use_fallback and p.fallback is not None:
                out.append(Word(p.fallback).render(home, unknown))
            else:
                out.append(unknown)
        return "".join(out)

    def after_unknown(self, home: str) -> str:
        """The text that follows the leading run of unknown parts (empty parts skipped)."""
        parts = list(self.parts)
        while parts and (
            parts[0].kind in ("unknown", "subst") or (parts[0].kind == "lit" and not parts[0].text)
        ):
            parts.pop(0)
        return Word(tuple(parts)).render(home)

    def __str__(self) -> str:
        out: list[str] = []
        for p in self.parts:
            out.append(f"$({p.text})" if p.kind == "subst" else p.text)
        return "".join(out)


class RawPart(Record, frozen=True):
    """A piece of a word as the lexer reads it, before brace, tilde and split processing."""

    kind: RawKind
    text: str = ""
    fallback: tuple[Part, ...] | None = None


_MARKER_TEXT = {"open": "{", "comma": ",", "close": "}", "tilde": "~"}
_SEQ_INT = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$")
_SEQ_CHAR = re.compile(r"^([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?$")
_TILDE_USER = re.compile(r"^[A-Za-z0-9_.+-]*")


def finish_word(raw: list[RawPart]) -> list[Word]:
    """Turn one lexed word into the words the shell would pass: braces, tildes, then IFS splits."""
    words: list[Word] = []
    for alternative in _expand_braces(raw):
        for piece in _split(_resolve_tildes(alternative)):
            words.append(Word(_merge(piece)))
    return words


def _expand_braces(raw: list[RawPart]) -> list[list[RawPart]]:
    if sum(1 for p in raw if p.kind in ("open", "comma", "close")) > _MAX_BRACE_MARKERS:
        raise ShellSyntaxError("brace expansion too complex")
    results: list[list[RawPart]] = []
    _expand_into(raw, results)
    return results


def _expand_into(parts: list[RawPart], results: list[list[RawPart]]) -> None:
    for i, part in enumerate(parts):
        if part.kind != "open":
            continue
        span = _brace_span(parts, i)
        if span is None:
            continue
        close, alternatives = span
        for alt in alternatives:
            _expand_into(parts[:i] + alt + parts[close + 1 :], results)
        return
    if len(results) >= MAX_BRACE_WORDS:
        raise ShellSyntaxError(f"brace expansion yields more than {MAX_BRACE_WORDS} words")
    results.append(parts)


def _brace_span(parts: list[RawPart], start: int) -> tuple[int, list[list[RawPart]]] | None:
    """The matching close brace and the alternatives of the brace at `start`, if it expands."""
    depth = 0
    commas: list[int] = []
    for j in range(start + 1, len(parts)):
        kind = parts[j].kind
        if kind == "open":
            depth += 1
        elif kind == "close":
            if depth:
                depth -= 1
                continue
            if commas:
                bounds = [start, *commas, j]
                return j, [parts[a + 1 : b] for a, b in itertools.pairwise(bounds)]
            seq = _sequence(parts[start + 1 : j])
            return None if seq is None else (j, [[RawPart("lit", s)] for s in seq])
        elif kind == "comma" and depth == 0:
            commas.append(j)
    return None


def _sequence(inner: list[RawPart]) -> list[str] | None:
    if len(inner) != 1 or inner[0].kind != "lit":
        return None
    text = inner[0].text
    m = _SEQ_INT.match(text)
    if m:
        first, last = int(m.group(1)), int(m.group(2))
        values: list[str] | None = None
        step = abs(int(m.group(3) or 1)) or 1
        count = abs(last - first) // step + 1
        if count <= MAX_BRACE_WORDS:
            direction = step if last >= first else -step
            values = [str(first + k * direction) for k in range(count)]
    else:
        m = _SEQ_CHAR.match(text)
        if not m:
            return None
        first, last = ord(m.group(1)), ord(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        count = abs(last - first) // step + 1
        direction = step if last >= first else -step
        values = [chr(first + k * direction) for k in range(count)] if count <= MAX_BRACE_WORDS else None
    if values is None:
        raise ShellSyntaxError(f"brace expansion yields more than {MAX_BRACE_WORDS} words")
    return values


def _resolve_tildes(parts: list[RawPart]) -> list[RawPart]:
    out: list[RawPart] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        i += 1
        if part.kind != "tilde":
            out.append(part)
            continue
        prev = out[-1] if out else None
        at_start = not out or (prev is not None and prev.kind == "lit" and prev.text.endswith(("=", ":")))
        if not at_start:
            out.append(RawPart("lit", "~"))
            continue
        nxt = parts[i] if i < len(parts) else None
        if nxt is None or nxt.kind in ("split", "qlit") or (nxt.kind == "lit" and nxt.text[:1] in ("/", ":")):
            out.append(RawPart("home", "~"))
        elif nxt.kind == "lit":
            # `~user`, `~+`, `~-`: another user's home or a directory stack entry.
            user = _TILDE_USER.match(nxt.text)
            name = user.group(0) if user else ""
            out.append(RawPart("unknown", "~" + name))
            rest = nxt.text[len(name) :]
            if rest:
                out.append(RawPart("lit", rest))
            i += 1
        else:
            out.append(RawPart("unknown", "~"))
    return out


def _split(parts: list[RawPart]) -> list[list[RawPart]]:
    pieces: list[list[RawPart]] = [[]]
    for part in parts:
        if part.kind == "split":
            pieces.append([])
        else:
            pieces[-1].append(part)
    return [p for p in pieces if p]


def _merge(parts: list[RawPart]) -> tuple[Part, ...]:
    merged: list[Part] = []
    for raw in parts:
        if raw.kind in ("lit", "qlit", "open", "comma", "close", "tilde"):
            pieces = _MARKER_TEXT.get(raw.kind, raw.text).split(UNKNOWN_MARK)
            for i, text in enumerate(pieces):
                if i:
                    merged.append(Part("unknown", "<unknown>"))
                if merged and merged[-1].kind == "lit":
                    merged[-1] = Part("lit", merged[-1].text + text)
                elif text or i == 0:
                    merged.append(Part("lit", text))
        elif raw.kind in ("home", "unknown", "subst"):
            merged.append(Part(raw.kind, raw.text, raw.fallback))
    return tuple(merged)
