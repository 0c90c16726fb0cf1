"""find's fuzzy path scoring: every query token must match the candidate, each at its best tier.

| tier | condition (case-insensitive)                    | points                                   |
| 1    | basename or stem equals the token               | 1000                                     |
| 2    | basename starts with the token                  | 800                                      |
| 3    | substring of the basename                       | 600, +50 at a word boundary              |
| 4    | substring of the relative path                  | 400, +50 at a segment start              |
| 5    | subsequence of the basename (token >= 3 chars)  | 200 + min(199, 8*adjacent + 15*boundary) |
| 6    | subsequence of the relative path (>= 3 chars)   | 100 + min(99, same bonus)                |

A token containing `/` is matched against the relative path only (tiers 4 and 6). The score is the
sum over tokens, minus 5 per directory level, minus min(50, basename length - query length) when
the basename is longer than the query, plus 10 when every token also matches with its exact case.
Ties go to the shorter path, then byte order.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re

from ...core.records import Record

BOUNDARY_CHARS = frozenset("_-./ ")


def is_boundary(s: str, i: int) -> bool:
    """Start of a word: position 0, after `_ - . /` or a space, or a lower→upper camel step."""
    if i == 0:
        return True
    prev = s[i - 1]
    return prev in BOUNDARY_CHARS or (prev.islower() and s[i].isupper())


def _subsequence(needle: str, hay: str) -> list[int] | None:
    """Greedy leftmost positions of `needle`'s characters in `hay`, or None."""
    out: list[int] = []
    pos = 0
    for ch in needle:
        i = hay.find(ch, pos)
        if i == -1:
            return None
        out.append(i)
        pos = i + 1
    return out


def _subsequence_bonus(positions: list[int], original: str) -> int:
    """The bonus of a subsequence match found at `positions` of `original.lower()`."""
    adjacent = sum(1 for a, b in itertools.pairwise(positions) if b == a + 1)
    boundary = sum(1 for i in positions if _boundary_of_lowered(original, i))
    return 8 * adjacent + 15 * boundary


def _boundary_of_lowered(original: str, i: int) -> bool:
    """`is_boundary` for position `i` of `original.lower()`. Lowering can lengthen a string (`İ` is
    `i` and a combining dot): there a position is mapped back to the character it came from."""
    if len(original.lower()) != len(original):
        i = _origins(original)[i]
    return is_boundary(original, i)


def _origins(s: str) -> list[int]:
    """For each character of `s.lower()`, the index in `s` of the character it comes from."""
    return [i for i, c in enumerate(s) for _ in c.lower()]


def _occurrences(hay: str, needle: str) -> list[int]:
    out = []
    i = hay.find(needle)
    while i != -1:
        out.append(i)
        i = hay.find(needle, i + 1)
    return out


def token_points(token: str, rel: str, base: str, stem: str) -> tuple[int, bool] | None:
    """(points, matched with exact case) for one token, or None when it does not match."""
    t = token.lower()
    rl = rel.lower()
    if "/" not in token:
        bl, sl = base.lower(), stem.lower()
        if bl == t or sl == t:
            return 1000, base == token or stem == token
        if bl.startswith(t):
            return 800, base.startswith(token)
        hits = _occurrences(bl, t)
        if hits:
            bonus = 50 if any(_boundary_of_lowered(base, i) for i in hits) else 0
            return 600 + bonus, token in base
    hits = _occurrences(rl, t)
    if hits:
        bonus = 50 if any(i == 0 or rl[i - 1] == "/" for i in hits) else 0
        return 400 + bonus, token in rel
    if len(t) < 3:
        return None
    if "/" not in token:
        pos = _subsequence(t, base.lower())
        if pos is not None:
            return 200 + min(199, _subsequence_bonus(pos, base)), _subsequence(token, base) is not None
    pos = _subsequence(t, rl)
    if pos is not None:
        return 100 + min(99, _subsequence_bonus(pos, rel)), _subsequence(token, rel) is not None
    return None


def stem_of(base: str) -> str:
    """The basename without its last extension (a leading dot is not an extension)."""
    i = base.rfind(".")
    return base[:i] if i > 0 else base


class Query(Record, frozen=True):
    text: str
    tokens: tuple[str, ...]
    _filters: tuple[tuple[str, re.Pattern[str] | None], ...]

    @classmethod
    def parse(cls, text: str) -> Query:
        tokens = tuple(text.split())
        filters = []
        for t in tokens:
            tl = t.lower()
            rx = re.compile(".*?".join(re.escape(c) for c in tl), re.DOTALL) if len(tl) >= 3 else None
            filters.append((tl, rx))
        return cls(text, tokens, tuple(filters))

    def could_match(self, rel_lower: str) -> bool:
        """A cheap necessary condition: every token is a substring or a subsequence of the path."""
        for tl, rx in self._filters:
            if tl not in rel_lower and (rx is None or rx.search(rel_lower) is None):
                return False
        return True

    def survivors(self, rels: list[str]) -> list[str]:
        """The candidates for which `could_match` holds, found with one regex scan per token over
        all of them at once (the same test, in C rather than once per path in Python)."""
        if not rels:
            return []
        text = "\n".join(rels)
        low = text.lower()
        if len(low) != len(text) or text.count("\n") != len(rels) - 1:  # offsets would not line up
            return [r for r in rels if self.could_match(r.lower())]
        # Where each candidate starts in `low` (the lengths summed in C: this runs over every file).
        starts = list(itertools.accumulate(map(operator.add, map(len, rels), itertools.repeat(1)), initial=0))
        keep: set[int] | None = None
        for tl, rx in self._filters:
            if rx is None:  # a short token: a substring
                scan = re.compile(re.escape(tl))
            else:  # a subsequence (a substring is one too): linear, each step possessive, within one line
                scan = re.compile(
                    re.escape(tl[0]) + "".join(f"[^{re.escape(c)}\n]*+{re.escape(c)}" for c in tl[1:])
                )
            # Unanchored, so the engine skips to each occurrence of the token's first character; the
            # match from a line's first one is its leftmost subsequence, so no line with one is missed.
            hit = {bisect.bisect_right(starts, m.start()) - 1 for m in scan.finditer(low)}
            keep = hit if keep is None else keep & hit
            if not keep:
                return []
        return [rels[i] for i in sorted(keep)] if keep is not None else list(rels)

    def score(self, rel: str) -> int | None:
        """The candidate's score, or None when some token does not match."""
        base = rel.rsplit("/", 1)[-1]
        stem = stem_of(base)
        total = 0
        exact = True
        for token in self.tokens:
            got = token_points(token, rel, base, stem)
            if got is None:
                return None
            total += got[0]
            exact = exact and got[1]
        total -= 5 * rel.count("/")
        total -= max(0, min(50, len(base) - len(self.text)))
        if exact:
            total += 10
        return total


def rank_key(score: int, path: str) -> tuple[int, int, bytes]:
    """Best score first, then the shorter path, then byte order."""
    return -score, len(path), path.encode("utf-8", "surrogateescape")
