"""Commands (the Typer tree, not only `fermix tool`) while state.db is busy past the busy timeout: one
typed `state_busy` line on stderr, the details in the log, never a Python traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from tests.conftest import Env, hold_write_lock

SCRIPT = (
    "import sys\n"
    "import fermix_cli.core.state as state\n"
    "state.BUSY_TIMEOUT_MS = 200\n"  # 10 s in fermix: the test holds the lock past this one
    "from fermix_cli.__main__ import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _fermix(world: Env, *args: str, script: str = SCRIPT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], cwd=world.project, env=world.env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("args", [("jobs", "pause", "digest"), ("memory", "forget", "1")])
def test_a_busy_state_db_is_one_typed_line_not_a_traceback(world: Env, args: tuple[str, ...]) -> None:
    r = world.run("jobs", "add", "Digest", "-s", "every 5 minutes", "--command", "echo hi")
    assert r.code == 0, r.stderr
    r = world.run("tool", "memory_store", "--key", "a", "--value", "b", "--category", "preference")
    assert r.code == 0, r.stderr
    release = threading.Event()
    holder = hold_write_lock(world.fermix_home / "state.db", 60.0, release)  # held until the command ends
    try:
        done = _fermix(world, *args)
    finally:
        release.set()
        holder.join()
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert json.loads(line)["error"]["code"] == "state_busy"


def test_what_a_command_logs_before_its_context_goes_to_the_log_file(world: Env) -> None:
    """Logging goes to the file from the start of every command, as on the tool fast path."""
    script = (
        "import sys\n"
        "import fermix_cli.cli.common as common\n"
        "from fermix_cli.core.logs import logger\n"
        "real = common.context\n"
        "def context():\n"
        "    try:\n"
        "        raise OSError('early trouble')\n"
        "    except OSError:\n"
        "        logger('fermix.test').exception('logged before the context')\n"
        "    return real()\n"
        "common.context = context\n"
        "from fermix_cli.__main__ import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    done = _fermix(world, "memory", "list", "--json", script=script)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    log = (world.fermix_home / "logs" / "fermix.log").read_text()
    assert "logged before the context" in log and "early trouble" in log
