"""`--jsonl` throughput of file_read calls in one process (target: at least 2000 calls/s).

Usage: python3 bench/jsonl_throughput.py [N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory() as tmp:
        # tmp is the (fake) home: run from there, a relative path means the fermix workspace.
        env = dict(os.environ, HOME=tmp, FERMIX_HOME=os.path.join(tmp, "home"))
        fermix = [sys.executable, "-m", "fermix_cli"]
        subprocess.run(
            [*fermix, "tool", "file_write", "--json", '{"path":"b.txt","content":"a\\nb\\nc\\n"}'],
            env=env,
            check=True,
            capture_output=True,
            cwd=tmp,
        )
        lines = "".join(json.dumps({"path": "b.txt", "offset": 1 + i % 3}) + "\n" for i in range(n)).encode()
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            out = subprocess.run(
                [*fermix, "tool", "file_read", "--jsonl"],
                input=lines,
                env=env,
                capture_output=True,
                cwd=tmp,
                check=True,
            )
            runs.append(time.perf_counter() - t0)
            assert out.stdout.count(b'"ok":true') == n, out.stderr[:500]
        med = statistics.median(runs)
        print(
            f"{n} file_read calls over --jsonl: median {med:.3f} s = {n / med:,.0f} calls/s (runs: {', '.join(f'{r:.3f}' for r in runs)})"
        )


if __name__ == "__main__":
    main()
