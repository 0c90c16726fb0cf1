"""BM25 ranking over small in-memory catalogs (tool_search). Pure functions, no I/O."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

K1 = 1.5
B = 0.75

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric runs: `mcp_github_create_issue` -> mcp, github, create, issue."""
    return _TOKEN.findall(text.lower())


def bm25_scores(query: str, documents: Sequence[Sequence[str]]) -> list[float]:
    """One score per document (a token list) for `query`, with k1 = 1.5, b = 0.75.

    idf = ln((N - df + 0.5) / (df + 0.5) + 1), which stays positive for any df.
    """
    n = len(documents)
    if n == 0:
        return []
    terms = set(tokenize(query))
    counts = [Counter(doc) for doc in documents]
    avgdl = sum(len(d) for d in documents) / n or 1.0
    df = {t: sum(1 for c in counts if t in c) for t in terms}
    scores = []
    for doc, c in zip(documents, counts, strict=True):
        score = 0.0
        norm = K1 * (1 - B + B * len(doc) / avgdl)
        for t in terms:
            tf = c.get(t, 0)
            if tf:
                idf = math.log((n - df[t] + 0.5) / (df[t] + 0.5) + 1)
                score += idf * tf * (K1 + 1) / (tf + norm)
        scores.append(score)
    return scores
