"""Start-up runs without the cyclic collector; the command's own work, and any in-process caller, with it."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from fermix_cli.__main__ import main
from tests.conftest import Env

PROBE = (
    "import gc, sys\n"
    "from fermix_cli.core import startup\n"
    "seen = []\n"
    "real = startup.resume_collector\n"
    "def spy():\n"
    "    seen.append(gc.isenabled())\n"
    "    real()\n"
    "startup.resume_collector = spy\n"
    "from fermix_cli.__main__ import main\n"
    "sys.argv = ['fermix', *sys.argv[1:]]\n"
    "rc = main()\n"
    "print(rc, seen[0], gc.isenabled(), gc.get_freeze_count() > 0)\n"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["tool", "file_write", "--json", '{"path":"a.txt","content":"x"}'],  # the tool-call fast path
        ["jobs", "run"],  # what cron calls
        ["memory", "list"],  # a Typer command
    ],
)
def test_the_entry_point_pauses_the_collector_until_the_command_runs_then_freezes_start_up(
    world: Env, argv: list[str]
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=world.env, cwd=world.project, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    rc, paused_during_start_up, enabled_after, frozen = out.stdout.splitlines()[-1].split()
    assert (rc, paused_during_start_up, enabled_after, frozen) == ("0", "False", "True", "True")


@pytest.mark.parametrize(
    "argv",
    [
        ["tool", "file_write", "--json", '{"path":"a.txt","content":"x"}'],
        ["tool", "no_such_tool", "--json", "{}"],  # fails before the command's code runs
        ["tool", "file_write", "--json", "{not json"],
    ],
)
def test_an_in_process_caller_gets_its_collector_back_and_nothing_frozen(
    world: Env, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(world.project)
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    main(argv)
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
