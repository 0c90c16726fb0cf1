"""memory_recall search over 100 000 memories, in-process through registry.invoke (target: p50 < 20 ms).

The memories are Zipf-distributed sentences over a 4 000-word vocabulary, spread like a long-lived
home: long-term owner and agent memory, notes of 200 conversations and the memory of 10 jobs.
Queries are one to three words drawn from the same distribution, so common words (thousands of
matches to rank) and rare ones both occur.

Usage: python3 bench/memory_recall.py [N_MEMORIES] [N_QUERIES]
"""

from __future__ import annotations

import itertools
import os
import random
import statistics
import sys
import tempfile
import time


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    n_queries = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.core.registry import default_registry
    from fermix_cli.memory import store as mem

    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(4200)})[
        :4000
    ]
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(vocab))))

    def words(k: int) -> list[str]:
        return rng.choices(vocab, cum_weights=cumulative, k=k)

    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(paths=resolve_paths(os.path.join(tmp, "home")), session_id="conv-0")
        caller = mem.Caller("operator", "cli", "conv-0")
        t0 = time.perf_counter()
        with ctx.state.write() as db:
            for i in range(n):
                pick = i % 20
                if pick < 12:
                    scope = mem.Scope("owner", mem.OWNER)
                    category: str | None = mem.USER_CATEGORIES[i % 4]
                elif pick < 16:
                    scope, category = mem.Scope("agent", mem.AGENT), mem.WORK_CATEGORIES[i % 2]
                elif pick < 19:
                    scope, category = mem.Scope("conversation", f"conv-{i % 200}"), None
                else:
                    scope, category = mem.Scope("job", f"job-{i % 10}"), "context"
                key = "_".join(words(2)) + f"_{i}"
                mem.insert(
                    db,
                    scope,
                    key,
                    " ".join(words(rng.randint(6, 16))),
                    category,
                    caller,
                    "2026-01-01T00:00:00.000000Z",
                )
        load = time.perf_counter() - t0
        size = os.path.getsize(ctx.paths.state_db) + os.path.getsize(f"{ctx.paths.state_db}-wal")
        print(f"loaded {n:,} memories in {load:.1f} s ({size / 1e6:.0f} MB with WAL)")

        reg = default_registry()
        queries = [" ".join(words(rng.choice((1, 1, 2, 2, 3)))) for _ in range(n_queries)]
        for q in queries[:20]:  # warm the page cache and the registry
            reg.invoke("memory_recall", {"search": q}, ctx)
        for scope in ("current", "all"):
            times, hits = [], 0
            for q in queries:
                t = time.perf_counter()
                result = reg.invoke("memory_recall", {"search": q, "scope": scope}, ctx)
                times.append((time.perf_counter() - t) * 1000)
                hits += len(result["hits"])
            print(
                f"memory_recall search, scope={scope}: {len(queries)} queries, "
                f"p50 {statistics.median(times):.2f} ms, p95 {percentile(times, 0.95):.2f} ms, "
                f"max {max(times):.2f} ms ({hits / len(queries):.1f} hits/query)"
            )
        ctx.close()


if __name__ == "__main__":
    main()
