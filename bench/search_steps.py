"""Where an in-process `content_search` spends its time beyond `rg` (issue 15), step by step, in one run.

Each step adds one thing to the one before, on the same tree, interleaved round by round:
1. `rg -n` (the reference of search_engines.py);
2. `rg --json --debug` with its stderr sent to /dev/null: rg's JSON and its debug log, a line per
   binary file, which is how fermix counts the binary files rg skips;
3. the same with the log kept in a memfd, as fermix kept it before (each write updates the file);
4. the same with the log in a 1 MiB pipe drained every 10 ms, as fermix keeps it (`LazyPipe`), and
   rg's output collected every few ms and at its exit, as fermix reads it (`read_beside`);
5. the same with Python decoding every JSON line as it arrives (one `json.loads` per chunk);
6. `content_search` itself, in-process, one `ToolContext` for all calls (as a model run holds one).

Usage: python bench/search_steps.py DIR [PATTERN] [--runs N]   (DIR: any tree, e.g. a copy of
site-packages; its parent stands as the home, and a scratch fermix home is used; PATTERN: a literal,
default `frozenset(`)
Prints each step's median and its multiple of step 1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("pattern", nargs="?", default="frozenset(")
    ap.add_argument("--runs", type=int, default=15)
    opts = ap.parse_args()
    root = opts.root.resolve()

    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.core.registry import default_registry
    from fermix_cli.core.search import engines
    from fermix_cli.core.search.ripgrep import LazyPipe, read_beside, scratch_file

    reg = default_registry()
    scratch = tempfile.mkdtemp(prefix="fermix-bench-steps-")
    ctx = ToolContext(paths=resolve_paths(scratch), os_home=str(root.parent), launch_cwd=str(root))
    args = {"pattern": opts.pattern, "max_results": 1000}
    base = [engines.rg(), "--no-config", "--no-require-git", "--hidden", "-g", "!.git"]

    def rg(extra: list[str], log: str = "null", decode: bool = False) -> None:
        err = scratch_file() if log == "memfd" else LazyPipe() if log == "pipe" else None
        where = err.write_fd if isinstance(err, LazyPipe) else err or subprocess.DEVNULL
        proc = subprocess.Popen(
            [*base, *extra, "--fixed-strings", "-e", opts.pattern, "--", "."],
            stdout=subprocess.PIPE,
            stderr=where,
            cwd=root,
        )
        assert proc.stdout is not None
        if isinstance(err, LazyPipe):
            err.started()
            chunks = read_beside(proc.stdout.fileno(), err, proc.pid)
        else:
            chunks = iter(lambda: proc.stdout.read1(1 << 20), b"")  # type: ignore[attr-defined,union-attr]
        rest = b""
        for chunk in chunks:
            if decode:
                *whole, rest = (rest + chunk).split(b"\n")
                if whole:
                    json.loads(b"[" + b",".join(whole) + b"]")
        if isinstance(err, LazyPipe):
            err.read_rest()
        proc.wait()
        if err is not None:
            err.close()

    steps: list[tuple[str, Callable[[], object]]] = [
        ("rg -n", lambda: rg(["-n"])),
        ("rg --json --debug, log to /dev/null", lambda: rg(["--json", "--debug"])),
        ("  log kept in a memfd (before)", lambda: rg(["--json", "--debug"], log="memfd")),
        ("  log in a lazily read pipe", lambda: rg(["--json", "--debug"], log="pipe")),
        ("  every line decoded as it arrives", lambda: rg(["--json", "--debug"], log="pipe", decode=True)),
        ("content_search in-process", lambda: reg.invoke("content_search", args, ctx)),
    ]
    for _, fn in steps:
        fn()  # warm-up: page cache, imports
    times: dict[str, list[float]] = {name: [] for name, _ in steps}
    for _ in range(opts.runs):
        for name, fn in steps:
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    ref = statistics.median(times["rg -n"])
    print(f"{root} ({opts.runs} rounds, medians)")
    for name, _ in steps:
        m = statistics.median(times[name])
        print(f"{name:40s} {m * 1000:8.1f} ms  {m / ref:5.2f}x")
    ctx.close()
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
