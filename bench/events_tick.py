"""`fermix jobs run` with 10 000 events and 50 000 planned reminders of which 20 are due, and event_list.

The home gets one event made by `event_store` and clones of it by SQL (five reminders each, spread over
the next two years). Each repetition resets the 20 due reminders, runs `fermix jobs run --json` as cron
would (a fresh process, FERMIX_NOW fixing the clock) and subtracts the sends (`timings_ms.send` of the
reminders' report, measured inside the engine) from the wall time: what is left is start-up, opening
state.db, the idle checks, reconcile, roll and claim. Side by side, in the same run: `python -c pass`,
an idle tick of the same home (the common minute), and an idle tick of an empty home. Then the first page
of `event_list` in-process, p50/p95 over many calls (target: p50 under 20 ms).

With BEFORE=DIR (a checkout of an earlier revision, e.g. `git archive REV | tar -x -C DIR`), that tree's
idle tick on an empty home of its own is measured in the same loop: today's idle tick, side by side.

Usage: [BEFORE=DIR] python3 bench/events_tick.py [REPETITIONS] [EVENTS] [DUE] [LIST_CALLS]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOW = datetime(2026, 9, 1, 8, 0, 30, tzinfo=UTC)
RULES = [{"type": "days_before", "days": d} for d in (30, 7, 1, 0)] + [
    {"type": "duration_before", "minutes": 60}
]
CONFIG = (
    '[fermix_core.personalization]\ntimezone = "Europe/Berlin"\n[fermix_core.jobs]\n'
    'default_delivery_target = {platform = "inbox", recipient = "owner"}\n'
)


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def populate(home: str, n_events: int, n_due: int) -> list[str]:
    """One event by the real tool, cloned by SQL; the first n_due reminders are due at NOW."""
    sys.path.insert(0, REPO)
    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.core.registry import default_registry

    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(CONFIG)
    ctx = ToolContext(paths=resolve_paths(home), clock=lambda: NOW - timedelta(days=60))
    default_registry().invoke(
        "event_store",
        {"title": "template", "kind": "appointment", "reminders": RULES,
         "when": {"type": "datetime", "date": "2026-12-01", "time": "10:00:00"}},
        ctx,
    )  # fmt: skip
    db = ctx.state.conn
    event = dict(db.execute("SELECT * FROM temporal_events").fetchone())
    reminder = dict(db.execute("SELECT * FROM reminder_occurrences LIMIT 1").fetchone())
    due_ids: list[str] = []
    with ctx.state.write() as w:
        w.execute("DELETE FROM reminder_occurrences")
        w.execute("DELETE FROM temporal_events")
        ecols, rcols = list(event), list(reminder)
        for i in range(n_events):
            day = (NOW + timedelta(days=1 + i % 700)).date().isoformat()
            event.update(id=f"ev_{i:012x}", title=f"Event {i}", dedupe_key=f"appointment|event {i}|{day}",
                         event_date=day, next_date=day, next_at=f"{day}T08:00:00.000000Z")  # fmt: skip
            w.execute(f"INSERT INTO temporal_events ({', '.join(ecols)}) VALUES ({', '.join('?' * len(ecols))})",
                      [event[c] for c in ecols])  # fmt: skip
            for k in range(5):
                index = i * 5 + k
                due = (
                    NOW - timedelta(seconds=20)
                    if index < n_due
                    else NOW + timedelta(hours=1 + index % 17_000)
                )
                reminder.update(id=f"rm_{uuid.uuid4().hex[:12]}", event_id=event["id"], rule_id=f"rule_{k}",
                                occurrence_key=day, scheduled_for=stamp(due), next_attempt_at=stamp(due),
                                valid_until=stamp(due + timedelta(days=2)), boundary=stamp(due + timedelta(days=2)))  # fmt: skip
                w.execute(
                    f"INSERT INTO reminder_occurrences ({', '.join(rcols)}) VALUES ({', '.join('?' * len(rcols))})",
                    [reminder[c] for c in rcols],
                )
                if index < n_due:
                    due_ids.append(reminder["id"])
    ctx.close()
    return due_ids


def reset(home: str, due_ids: list[str]) -> None:
    conn = sqlite3.connect(os.path.join(home, "state.db"))
    with conn:
        conn.executemany(
            "UPDATE reminder_occurrences SET status = 'pending', attempt_count = 0, sent_at = NULL, claimed_by = NULL,"
            " lease_until = NULL, conversation_id = NULL, next_attempt_at = scheduled_for WHERE id = ?",
            [(r,) for r in due_ids],
        )
    conn.close()
    shutil.rmtree(os.path.join(home, "inbox"), ignore_errors=True)


CPU: list[float] = []  # CPU time (user + system) of each child, in ms: steadier than wall time under load


def run(env: dict[str, str], args: list[str]) -> tuple[float, dict[str, object] | None]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, cwd=env["HOME"])
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr}")
    return wall, json.loads(proc.stdout) if proc.stdout.strip() else None


def list_latency(home: str, calls: int) -> list[float]:
    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.core.registry import default_registry

    ctx = ToolContext(paths=resolve_paths(home), clock=lambda: NOW)
    reg = default_registry()
    reg.invoke(
        "event_list", {}, ctx
    )  # opens state.db and loads the config once, as a long-lived process would
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        page = reg.invoke("event_list", {}, ctx)
        out.append((time.perf_counter() - t0) * 1000)
    assert page["count"] == 25 and "next_cursor" in page
    ctx.close()
    return out


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    n_events = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    n_due = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    n_list = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    # Compiled bytecode first, as a pip install leaves it: with PYTHONDONTWRITEBYTECODE set, every run would
    # otherwise compile fermix's modules from source and time that instead of the tick.
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "fermix_cli")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        home, empty = os.path.join(tmp, "home"), os.path.join(tmp, "empty")
        due_ids = populate(home, n_events, n_due)
        env = {**os.environ, "FERMIX_HOME": home, "HOME": tmp, "PYTHONPATH": REPO,
               "PYDANTIC_DISABLE_PLUGINS": "__all__", "FERMIX_NOW": NOW.isoformat()}  # fmt: skip
        idle_env = {**env, "FERMIX_NOW": (NOW - timedelta(minutes=1)).isoformat()}
        empty_env = {**env, "FERMIX_HOME": empty}
        cmd = [sys.executable, "-m", "fermix_cli", "jobs", "run", "--json"]
        before = os.environ.get("BEFORE")
        before_env = {**env, "FERMIX_HOME": os.path.join(tmp, "before"), "PYTHONPATH": before or ""}
        if before:
            run(before_env, cmd)  # its own state.db: the earlier schema
        run(idle_env, cmd)  # warm the page cache
        run(empty_env, cmd)  # create the empty home's state.db
        pass_ms, empty_ms, idle_ms, wall_ms, send_ms, tick_ms, claim_ms = [], [], [], [], [], [], []
        cpu: dict[str, list[float]] = {"pass": [], "empty": [], "idle": [], "due": [], "before": []}
        before_ms: list[float] = []
        for _ in range(reps):
            pass_ms.append(run(env, [sys.executable, "-c", "pass"])[0])
            cpu["pass"].append(CPU[-1])
            if before:
                before_ms.append(run(before_env, cmd)[0])
                cpu["before"].append(CPU[-1])
            empty_ms.append(run(empty_env, cmd)[0])
            cpu["empty"].append(CPU[-1])
            wall, summary = run(idle_env, cmd)
            cpu["idle"].append(CPU[-1])
            assert summary is not None and summary["status"] == "idle", summary
            idle_ms.append(wall)
            reset(home, due_ids)
            wall, summary = run(env, cmd)
            cpu["due"].append(CPU[-1])
            assert summary is not None
            report = summary["due_work"]["reminders"]  # type: ignore[index]
            assert len(report["sent"]) == n_due, report
            wall_ms.append(wall)
            send_ms.append(float(report["timings_ms"]["send"]))
            claim_ms.append(float(report["timings_ms"]["claim"]))
            tick_ms.append(wall - float(report["timings_ms"]["send"]))
        listing = list_latency(home, n_list)

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):8.1f} ms"

    planned = n_events * 5
    print(
        f"fermix jobs run, {n_events} events, {planned} planned reminders, {n_due} due, {reps} repetitions (medians)"
    )
    print(f"  python -c pass                          {med(pass_ms)}")
    if before_ms:
        print(f"  BEFORE's idle tick, empty home          {med(before_ms)}   (CPU {med(cpu['before'])})")
    print(f"  idle tick, empty home                   {med(empty_ms)}")
    print(f"  idle tick, this home                    {med(idle_ms)}")
    print(f"  {n_due} due: whole command (with sends)     {med(wall_ms)}")
    print(f"  {n_due} due: the sends (inbox)              {med(send_ms)}")
    print(f"  {n_due} due: wall minus the sends           {med(tick_ms)}   (target < 150 ms)")
    print(f"    of which reconcile, roll and claim    {med(claim_ms)}")
    print("  CPU time (user + system) of the same commands:")
    print(f"    python -c pass {med(cpu['pass'])}; idle, empty home {med(cpu['empty'])}; idle, this home "
          f"{med(cpu['idle'])}; {n_due} due, with sends {med(cpu['due'])}")  # fmt: skip
    q = statistics.quantiles(listing, n=20)
    print(f"event_list first page, {n_list} calls: p50 {statistics.median(listing):.2f} ms, p95 {q[18]:.2f} ms"
          "   (target p50 < 20 ms)")  # fmt: skip


if __name__ == "__main__":
    main()
