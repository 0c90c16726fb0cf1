"""fermix's search tools against the engines themselves, side by side in one run (issue 15).

End to end (`python -S -m fermix_cli tool NAME --json ...`, start-up included, as an installed fermix
starts: see Bench.__init__) and in-process (`registry.invoke` with one context for the row's calls,
as the agent loop holds one per run; no start-up) against `rg` and `fd` on a ~12k-file tree (a copy
of a virtualenv's site-packages), a ~33k-file tree (two such copies and three of the stdlib) and one
200 MB file; `ast_grep` against the `ast-grep` CLI on the 12k tree and on ten files of
100,000 matches in all (of which it shows five). Every row checks that
fermix and the reference return the same number of results before it is timed (a row whose counts
differ is marked MISMATCH). Each round times the reference, the CLI and the in-process call back to
back; prints the medians over the rounds and the ratios. Rows against rg also time rg's own floor for
a complete answer, the same search with `--json --debug` (its log is the one complete list of the
binary files it skips), and print it as a multiple of the reference: no reader of rg can go below it.

Usage: python bench/search_engines.py [--runs N] [--only 10k,33k,src,200mb,ast,astmany]
(`src`, not run by default: three stdlib copies, a source tree with few binary files.)
Needs: the rg and ast-grep fermix runs (installed with it), fd (`apt-get install fd-find`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LIT = "frozenset("
RX = r"class \w+Error\("
AST = "isinstance($A, $B)"
AST_MANY_LINES = 10_000  # per file, ten files: 100,000 matches, of which ast_grep shows 5


def interleaved(fns: list[Callable[[], Any]], runs: int) -> list[float]:
    """Medians of `runs` rounds, each round timing every function once, back to back, so that load
    from other work on the machine falls on the reference and on fermix alike."""
    for fn in fns:
        fn()  # warm-up (page cache, imports)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t)
    return [statistics.median(t) for t in times]


def sh(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[:3]} failed: {done.stderr[:500]}")
    return done.stdout


def engine_floor(argv: list[str], cwd: Path) -> None:
    """Run rg with its JSON read and its log (stderr) thrown away."""
    subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))


def build_trees(work: Path, only: list[str]) -> dict[str, Path]:
    site = Path(sysconfig.get_paths()["purelib"])
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    home = work / "home"
    trees = {"10k": home / "t10k", "33k": home / "t33k", "src": home / "tsrc", "200mb": home / "big"}
    trees["astmany"] = home / "astmany"
    if "10k" in only or "ast" in only:
        copy_tree(site, trees["10k"] / "site")
    if "33k" in only:
        for i in range(2):
            copy_tree(site, trees["33k"] / f"site{i}")
        for i in range(3):
            shutil.copytree(
                stdlib,
                trees["33k"] / f"lib{i}",
                symlinks=True,
                ignore=shutil.ignore_patterns("__pycache__", "site-packages", "lib-dynload", "config-*"),
            )
    if "src" in only:  # a source tree: three copies of the stdlib (few binary files, unlike site-packages)
        for i in range(3):
            shutil.copytree(
                stdlib,
                trees["src"] / f"lib{i}",
                symlinks=True,
                ignore=shutil.ignore_patterns("__pycache__", "site-packages", "lib-dynload", "config-*"),
            )
    if "astmany" in only:  # many matches in few files: what the answer keeps is bounded by its limit
        trees["astmany"].mkdir(parents=True)
        for i in range(10):
            (trees["astmany"] / f"f{i}.py").write_text("print(x)\n" * AST_MANY_LINES)
    big = trees["200mb"]
    big.mkdir(parents=True)
    block = b"".join(b"filler line %06d of the big file, nothing to see here\n" % i for i in range(19_000))
    with open(big / "big.txt", "wb") as f:
        f.write(b"class StartError(Exception): frozenset()\n")
        for _ in range(200):
            f.write(block)
        f.write(b"class EndError(Exception): frozenset()\n")
    # Each tree is a git work tree, so fd (whose Debian build has no --no-require-git) honours the
    # .gitignore files a site-packages holds exactly as rg and fermix do.
    for t in trees.values():
        t.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(t)], check=True)
    return trees


def fd_binary() -> str:
    found = shutil.which("fdfind") or shutil.which("fd")
    if not found:
        raise SystemExit("fd is needed: apt-get install fd-find")
    return found


class Bench:
    def __init__(self, work: Path, runs: int) -> None:
        self.runs = runs
        self.home = work / "home"
        self.fermix_home = work / "fermix"
        # The CLI runs as an installed fermix starts: its modules compiled (`pip install` compiles them;
        # PYTHONDONTWRITEBYTECODE would make every call compile the sources again) and Python started
        # without `site` (-S), its packages named on PYTHONPATH instead: an editable install's `.pth`
        # finder costs some 17 ms of every start that a `pip install .` does not have.
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "fermix_cli")], check=True)
        paths = sysconfig.get_paths()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env = {
            **env,
            "HOME": str(self.home),
            "FERMIX_HOME": str(self.fermix_home),
            "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(REPO), paths["purelib"], paths["platlib"]])),
            "PYDANTIC_DISABLE_PLUGINS": "__all__",
        }
        os.environ.update({k: self.env[k] for k in ("HOME", "FERMIX_HOME")})
        from fermix_cli.core.search import engines

        self.rg = engines.rg()
        self.sg = engines.ast_grep()
        self.fd = fd_binary()
        self.rows: list[tuple[str, str, float, float | None, float, str]] = []
        self.contexts: list[Any] = []

    # ----- fermix, two ways ---------------------------------------------------------------------

    def cli(self, tool: str, args: dict[str, Any], cwd: Path) -> dict[str, Any]:
        out = sh(
            [sys.executable, "-S", "-m", "fermix_cli", "tool", tool, "--json", json.dumps(args)],
            cwd,
            self.env,
        )
        return dict(json.loads(out))

    def inproc(self, tool: str, args: dict[str, Any], cwd: Path) -> Callable[[], dict[str, Any]]:
        from fermix_cli.core.context import ToolContext
        from fermix_cli.core.paths import resolve_paths
        from fermix_cli.core.registry import default_registry

        reg = default_registry()
        # One context for all the row's calls, as a model loop holds one for a run: its config and
        # sandbox are built once (about 1 ms, paid by a run's first call), not once per call.
        ctx = ToolContext(
            paths=resolve_paths(str(self.fermix_home)), os_home=str(self.home), launch_cwd=str(cwd)
        )
        self.contexts.append(ctx)

        def call() -> dict[str, Any]:
            return dict(reg.invoke(tool, args, ctx))

        return call

    # ----- one comparison -----------------------------------------------------------------------

    def row(
        self,
        label: str,
        tool: str,
        args: dict[str, Any],
        count_of: Callable[[dict[str, Any]], int],
        ref_argv: list[str],
        ref_count: Callable[[str], int],
        cwd: Path,
        in_process: bool = True,
    ) -> None:
        want = ref_count(sh(ref_argv, cwd))
        got = count_of(self.cli(tool, args, cwd))
        status = "same count" if got == want else f"MISMATCH fermix {got} vs {want}"
        fns: list[Callable[[], Any]] = [lambda: sh(ref_argv, cwd), lambda: self.cli(tool, args, cwd)]
        if in_process:
            fns.append(self.inproc(tool, args, cwd))
        # rg's own floor for a complete answer: the same search with its JSON and the `--debug` log
        # that alone names every binary file it skips (sent to /dev/null), before fermix reads a byte.
        floor = ref_argv[0] == self.rg
        if floor:
            fns.append(lambda: engine_floor([*ref_argv, "--json", "--debug"], cwd))
        ts = interleaved(fns, self.runs)
        ref_t, cli_t = ts[0], ts[1]
        inp_t = ts[2] if in_process else None
        ref_name = Path(ref_argv[0]).name
        note = f"{want} results, {status}"
        if floor:
            note += f"; rg --json --debug {ts[-1] / ref_t:.2f}x"
        self.rows.append((label, ref_name, ref_t, inp_t, cli_t, note))
        print(self.format(self.rows[-1]), flush=True)

    @staticmethod
    def format(r: tuple[str, str, float, float | None, float, str]) -> str:
        label, ref, ref_t, inp_t, cli_t, note = r
        inp = f"{inp_t * 1000:8.1f} {inp_t / ref_t:5.2f}x" if inp_t is not None else f"{'-':>8s} {'':>6s}"
        return f"{label:34s} {ref:>8s} {ref_t * 1000:8.1f} | {inp} | {cli_t * 1000:8.1f} {cli_t / ref_t:5.2f}x | {note}"

    # ----- the suites ---------------------------------------------------------------------------

    def tree(self, name: str, root: Path) -> None:
        rg = [self.rg, "--no-config", "--no-require-git"]
        grep_flags = [*rg, "-g", "!.git", "-g", "!target", "-n", "--no-heading"]
        nfiles = len(sh([*rg, "--files"], root).splitlines())
        log = subprocess.run(
            [*rg, "--json", "--debug", "-F", "-e", LIT], cwd=root, capture_output=True, text=True
        )
        nbin = log.stderr.count("found binary data at offset")
        print(f"\n== {name} tree: {root} ({nfiles} files rg lists, {nbin} of them binary)", flush=True)

        def lines(out: str) -> int:
            return sum(1 for ln in out.splitlines() if ln and ": WARNING: " not in ln)

        for kind, pat in (("literal", LIT), ("regex", RX)):
            ref = [*grep_flags, "-F", "-e", pat] if kind == "literal" else [*grep_flags, "-e", pat]
            self.row(f"grep {kind} (raw)", "grep", {"patterns": [pat], "mode": "raw"},
                     lambda r: int(r["primary_total"]), ref, lines, root)  # fmt: skip
            self.row(f"grep {kind} (ranked)", "grep", {"patterns": [pat]},
                     lambda r: int(r["hits_total"]), ref, lines, root)  # fmt: skip
            cs_ref = [
                *rg,
                "--hidden",
                "-n",
                "--no-heading",
                *(["-F"] if kind == "literal" else []),
                "-e",
                pat,
            ]
            self.row(f"content_search {kind}", "content_search",
                     {"pattern": pat, "regex": kind == "regex", "max_results": 1000},
                     lambda r: int(r["total_matches"]), cs_ref, lines, root)  # fmt: skip
        if name == "200mb":
            return
        fd = [self.fd, "-E", ".git"]
        self.row("glob_search **/*.py", "glob_search", {"pattern": "**/*.py", "max_results": 1000},
                 lambda r: int(r["total_matched"]), [*fd, "-H", "-t", "f", "-g", "*.py"], lines, root)  # fmt: skip
        # find's fuzzy match of a 4-letter token reaches subsequences of the relative path; fd's
        # full-path regex u.*t.*i.*l is the same set (the root's own path holds no u).
        self.row("find util", "find", {"query": "util"},
                 lambda r: int(r["total_matched"]), [*fd, "-t", "f", "-i", "-p", "u.*t.*i.*l"], lines, root)  # fmt: skip

    def ast(self, root: Path) -> None:
        print(f"\n== ast_grep on {root}", flush=True)

        def count(out: str) -> int:
            return sum(1 for ln in out.splitlines() if ln.strip())

        ref = [self.sg, "run", "-p", AST, "-l", "python", "--json=stream", "."]
        self.row("ast_grep python tree", "ast_grep", {"pattern": AST, "language": "python", "limit": 10},
                 lambda r: int(r["matches_total"]), ref, count, root, in_process=True)  # fmt: skip

    def ast_many(self, root: Path) -> None:
        print(f"\n== ast_grep, many matches: {root}", flush=True)
        ref = [self.sg, "run", "-p", "print($A)", "-l", "python", "--json=stream", "."]
        self.row("ast_grep 100k matches, limit 5", "ast_grep", {"pattern": "print($A)", "limit": 5},
                 lambda r: int(r["matches_total"]), ref, lambda out: out.count("\n"), root)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="10k,33k,200mb,ast,astmany")
    opts = ap.parse_args()
    # The tree's absolute path must hold no "u" (see find), so the work dir is named by hand.
    work = Path(tempfile.gettempdir()) / f"fxbench{os.getpid()}"
    work.mkdir()
    try:
        only = opts.only.split(",")
        trees = build_trees(work, only)
        bench = Bench(work, opts.runs)
        print(f"rg: {bench.rg}  ast-grep: {bench.sg}  fd: {bench.fd}  runs: {opts.runs} (medians, ms)")
        bare = interleaved(
            [lambda: sh([sys.executable, "-S", "-c", "pass"], work, bench.env)], opts.runs * 4
        )[0]
        print(f"start-up floor: `python -S -c pass` {bare * 1000:.1f} ms (in every CLI figure below)")
        print(
            f"{'row':34s} {'ref':>8s} {'ref ms':>8s} | {'in-proc':>8s} {'ratio':>6s} | {'CLI':>8s} {'ratio':>6s} |"
        )
        for name in ("10k", "33k", "src", "200mb"):
            if name in only:
                bench.tree(name, trees[name])
        if "ast" in only:
            bench.ast(trees["10k"])
        if "astmany" in only:
            bench.ast_many(trees["astmany"])
        for ctx in bench.contexts:
            ctx.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
