"""The coding harness: what launching a run costs over starting the vendor CLI by hand, and reading runs.

A stand-in `codex` (tests/harness/standin.py: a Python script that writes a short JSON event stream) is
put on PATH of a fresh home with coding agents approved. Measured in the same run, medians over N:

- `codex_run` in-process, from the call to its return (sandbox admission, `git rev-parse` for the
  worktree, the ledger transaction, the run directory, the detached supervisor's spawn), against the
  reference: `subprocess.Popen` of the same stand-in in a new session (the bare spawn);
- launch to `completed` in the ledger (the supervisor, the stand-in, exit.json, the harvest, polled every
  5 ms through get_coding_run), against the reference: Popen + wait of the stand-in;
- `list_coding_runs` with HISTORY finished runs in the ledger (p50/p95).

Usage: python3 bench/harness_launch.py [N] [HISTORY]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    history = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    from pathlib import Path

    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.core.registry import default_registry
    from tests.harness.standin import install

    root = tempfile.mkdtemp(prefix="fermix-bench-harness-")
    bin_dir, home, project = Path(root, "bin"), Path(root, "home"), Path(root, "home", "project")
    project.mkdir(parents=True)
    install(bin_dir, sys.executable, ("codex",))
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    os.environ["HOME"] = str(home)
    fermix_home = home / ".fermix"
    fermix_home.mkdir()
    (fermix_home / "config.toml").write_text("[fermix_core.harness]\napproved = true\n")
    reg = default_registry()

    def ctx() -> ToolContext:
        return ToolContext(paths=resolve_paths(str(fermix_home)), os_home=str(home), launch_cwd=str(project))

    c = ctx()
    args = {"prompt": "bench", "cwd": str(project)}
    launch, e2e, ref_spawn, ref_e2e = [], [], [], []
    warm = reg.invoke("codex_run", args, c)["run_id"]  # warm-up: imports, migrations
    while reg.invoke("get_coding_run", {"run_id": warm}, c)["status"] == "running":
        time.sleep(0.005)
    for _ in range(n):
        t0 = time.perf_counter()
        run_id = reg.invoke("codex_run", args, c)["run_id"]
        launch.append(time.perf_counter() - t0)
        while reg.invoke("get_coding_run", {"run_id": run_id}, c)["status"] == "running":
            time.sleep(0.005)
        e2e.append(time.perf_counter() - t0)
        argv = [str(bin_dir / "codex"), "exec", "--json", "--", "bench"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=project, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
        )
        ref_spawn.append(time.perf_counter() - t0)
        proc.wait()
        ref_e2e.append(time.perf_counter() - t0)
    with c.state.write() as db:
        _insert_rows(db, history)
    listing = []
    for _ in range(max(n, 50)):
        t0 = time.perf_counter()
        reg.invoke("list_coding_runs", {}, c)
        listing.append(time.perf_counter() - t0)
    c.close()

    def ms(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1000:.1f} ms"

    print(
        f"codex_run launch (call to return)   median {ms(launch)}   reference Popen of the stand-in {ms(ref_spawn)}"
    )
    print(f"launch to 'completed' in the ledger  median {ms(e2e)}   reference Popen + wait {ms(ref_e2e)}")
    listing.sort()
    p95 = listing[int(len(listing) * 0.95) - 1]
    print(f"list_coding_runs over {history} runs    p50 {ms(listing)}   p95 {p95 * 1000:.1f} ms")


def _insert_rows(db: object, history: int) -> None:
    db.executemany(  # type: ignore[attr-defined]
        "INSERT INTO coding_runs (id, tool, vendor, rail, status, cwd, worktree, run_dir, prompt_bytes,"
        " timeout_seconds, session_id, origin, created_at, ended_at, delivery_state)"
        " VALUES (?, 'codex_run', 'codex', 'local', 'completed', '/x', '/x', '/x', 1, 1800, 's', 'cli',"
        " '2026-01-01T00:00:00.000000Z', '2026-01-01T00:01:00.000000Z', 'delivered')",
        [(f"hr_{i + 4096:012x}",) for i in range(history)],
    )


if __name__ == "__main__":
    main()
