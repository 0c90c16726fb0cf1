"""`fermix ask` while another process holds state.db's write lock past the busy timeout at the run's end:
the answer is still given, and the unrecorded end is a typed warning on stderr, not a crash."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.conftest import Env

SCRIPT = (
    "import sys\n"
    "import fermix_cli.core.state as state\n"
    "import fermix_cli.agent.loop as loop\n"
    "state.BUSY_TIMEOUT_MS = 200\n"  # 10 s in fermix: the test holds the lock past this one
    "loop.FINISH_PATIENCE_SECONDS = {patience}\n"
    "from fermix_cli.__main__ import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _ask_while_locked(
    world: Env, patience: float, *args: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    script = world.project / "slow.json"
    script.write_text(json.dumps([{"delay": 1.0, "text": "the final answer"}]))
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(patience=patience), "ask", "--provider", "mock",
         "--model", str(script), *args, "what is it?"],
        cwd=world.project, env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    db = world.fermix_home / "state.db"
    run_id = ""
    deadline = time.monotonic() + 60
    while not run_id and time.monotonic() < deadline:
        time.sleep(0.02)
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as c:
                    row = c.execute("SELECT id FROM runs WHERE status = 'running'").fetchone()
            except sqlite3.OperationalError:
                row = None
            run_id = row[0] if row else ""
    assert run_id, "the run never started"
    # Another writer holds the lock from before the model answers: until fermix has given up and
    # ended, or, where it is patient, until it has met the lock and is trying again.
    log = world.fermix_home / "logs" / "fermix.log"
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("BEGIN IMMEDIATE")
    try:
        if patience < 10:
            out, err = proc.communicate(timeout=60)
        else:
            deadline = time.monotonic() + 60
            while "state.db is busy" not in (log.read_text() if log.exists() else ""):
                assert time.monotonic() < deadline, "fermix never met the lock"
                time.sleep(0.05)
    finally:
        conn.execute("COMMIT")
        conn.close()
    if patience >= 10:
        out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), run_id


@pytest.mark.parametrize("as_json", [False, True])
def test_the_answer_is_given_though_its_end_cannot_be_recorded(world: Env, as_json: bool) -> None:
    done, run_id = _ask_while_locked(world, 0.3, *(["--json"] if as_json else []))
    assert done.returncode == 0, done.stderr
    if as_json:
        out = json.loads(done.stdout)
        assert (out["status"], out["response"], out["recorded"]) == ("ok", "the final answer", False)
    else:
        assert done.stdout == "the final answer\n"
    assert "Traceback" not in done.stderr
    warning = json.loads(done.stderr.strip().splitlines()[-1])["warning"]
    assert warning["code"] == "state_busy"
    assert warning["message"].startswith("the run's end was not recorded in state.db: another fermix process")
    log = (world.fermix_home / "logs" / "fermix.log").read_text()
    assert f"run {run_id}: its end (ok) could not be recorded" in log


def test_a_busy_state_db_at_the_end_is_waited_out(world: Env) -> None:
    done, run_id = _ask_while_locked(world, 30, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = json.loads(done.stdout)
    assert (out["status"], out["response"]) == ("ok", "the final answer")
    assert "recorded" not in out
    with sqlite3.connect(world.fermix_home / "state.db") as c:
        assert c.execute("SELECT status, response FROM runs WHERE id = ?", (run_id,)).fetchone() == (
            "ok",
            "the final answer",
        )
