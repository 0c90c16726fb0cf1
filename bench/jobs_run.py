"""`fermix jobs run` over 10 000 jobs of which 10 are due: wall time of the real command, minus the runs.

Each repetition resets the 10 due jobs, runs `fermix jobs run --json` as cron would (a fresh process,
FERMIX_NOW fixing the clock) and reads its summary. The runs themselves are the span from the first
worker's start to the last run's record (`timings_ms.runs`, measured inside the runner); overhead is the
wall time minus that span: interpreter start-up, imports, opening state.db, reconcile, expire, claim,
spawning, recording and delivering. Also measured: the same home with nothing due (the common minute),
and `python -c pass` for reference.

Usage: python3 bench/jobs_run.py [REPETITIONS] [JOBS] [DUE]
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOW = datetime(2026, 3, 2, 8, 0, 30, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def populate(home: str, n_jobs: int, n_due: int) -> list[str]:
    """One job made by the real tool, cloned by SQL into n_jobs; the first n_due are due at NOW."""
    sys.path.insert(0, REPO)
    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.core.registry import default_registry

    created = NOW - timedelta(days=1)
    ctx = ToolContext(paths=resolve_paths(home), clock=lambda: created)
    default_registry().invoke(
        "schedule_job",
        {"name": "template", "schedule": "every 1 hours", "task": "hello", "provider": "echo", "model": "echo",
         "delivery_mode": "local"},
        ctx,
    )  # fmt: skip
    db = ctx.state.conn
    row = dict(db.execute("SELECT * FROM scheduled_jobs WHERE id = 'template'").fetchone())
    columns = list(row)
    due_ids = []
    with ctx.state.write() as w:
        w.execute("DELETE FROM scheduled_jobs")
        for i in range(n_jobs):
            job_id = f"job-{i:05d}"
            row.update(id=job_id, name=job_id)
            if i < n_due:
                row["next_run_at"] = stamp(NOW - timedelta(seconds=20))
                due_ids.append(job_id)
            else:  # spread over the next week, never due during the benchmark
                row["next_run_at"] = stamp(NOW + timedelta(minutes=5 + i % 10_000))
            w.execute(
                f"INSERT INTO scheduled_jobs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [row[c] for c in columns],
            )
    ctx.close()
    return due_ids


def reset(home: str, due_ids: list[str]) -> None:
    conn = sqlite3.connect(os.path.join(home, "state.db"))
    with conn:
        conn.execute("DELETE FROM job_runs")
        conn.executemany(
            "UPDATE scheduled_jobs SET state = 'scheduled', next_run_at = ? WHERE id = ?",
            [(stamp(NOW - timedelta(seconds=20)), j) for j in due_ids],
        )
    conn.close()


def run(env: dict[str, str], args: list[str]) -> tuple[float, dict[str, object] | None]:
    t0 = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, cwd=env["HOME"])
    wall = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr}")
    return wall, json.loads(proc.stdout) if proc.stdout.strip() else None


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    n_jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    n_due = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        due_ids = populate(home, n_jobs, n_due)
        env = {
            **os.environ,
            "FERMIX_HOME": home,
            "HOME": tmp,
            "PYTHONPATH": REPO,
            "PYDANTIC_DISABLE_PLUGINS": "__all__",
            "FERMIX_NOW": NOW.isoformat(),
        }
        cmd = [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"]
        pass_ms, idle_ms, claim_ms, wall_ms, runs_ms, overhead_ms = [], [], [], [], [], []
        start_ms, first_ms, after_ms = [], [], []
        idle_env = {**env, "FERMIX_NOW": (NOW - timedelta(minutes=1)).isoformat()}
        run(env | {"FERMIX_NOW": (NOW - timedelta(minutes=1)).isoformat()}, cmd)  # warm the page cache
        for _ in range(reps):
            pass_ms.append(run(env, [sys.executable, "-c", "pass"])[0])
            wall, summary = run(idle_env, cmd)
            assert summary is not None and summary["status"] == "idle", summary
            idle_ms.append(wall)
            reset(home, due_ids)
            wall, summary = run(env, cmd)
            assert summary is not None
            done = summary["runs"]
            assert isinstance(done, list) and len(done) == n_due, summary
            timings = summary["timings_ms"]
            assert isinstance(timings, dict)
            wall_ms.append(wall)
            runs_ms.append(float(timings["runs"]))
            claim_ms.append(float(timings["claim"]))
            overhead_ms.append(wall - float(timings["runs"]))
            start_ms.append(wall - float(timings["total"]))
            first_ms.append(float(timings["to_first_run"]))
            after_ms.append(float(timings["after_runs"]))

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):8.1f} ms"

    print(f"fermix jobs run, {n_jobs} jobs, {n_due} due, {reps} repetitions (medians)")
    print(f"  python -c pass                         {med(pass_ms)}")
    print(f"  nothing due: whole command             {med(idle_ms)}")
    print(f"  {n_due} due: whole command (with runs)     {med(wall_ms)}")
    print(f"  {n_due} due: the runs themselves           {med(runs_ms)}")
    print(f"  {n_due} due: wall minus the runs           {med(overhead_ms)}   (target < 150 ms)")
    print("  of which:")
    print(f"    start-up to the tick (Python, imports) {med(start_ms)}")
    print(f"    lock, open, reconcile, claim           {med(claim_ms)}")
    print(f"    ... to the first worker's start        {med(first_ms)}")
    print(f"    after the last run (record, deliver)   {med(after_ms)}")


if __name__ == "__main__":
    main()
