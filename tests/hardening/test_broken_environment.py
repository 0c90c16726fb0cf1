"""A broken environment (read-only home or state.db) is exit 1 with a clear code, never exit 4 or a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Env, Result

# Root ignores file modes, so as root a read-only bind mount in a private mount namespace stands in.
_AS_ROOT = os.geteuid() == 0
_CAN_UNSHARE = (
    _AS_ROOT
    and shutil.which("unshare") is not None
    and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
)


def run_with_read_only(world: Env, read_only: Path, *args: str) -> Result:
    """Run the real CLI while `read_only` (a directory or a file) cannot be written."""
    argv = [sys.executable, "-m", "fermix_cli", *args]
    if _AS_ROOT:
        if not _CAN_UNSHARE:
            pytest.skip("running as root without mount namespaces: cannot make a path read-only")
        argv = [
            "unshare",
            "-m",
            "sh",
            "-c",
            'mount --bind -o ro "$0" "$0" && exec "$@"',
            str(read_only),
            *argv,
        ]
        proc = subprocess.run(
            argv, capture_output=True, text=True, cwd=world.project, env=world.env, timeout=60
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)
    mode = read_only.stat().st_mode
    read_only.chmod(0o500 if read_only.is_dir() else 0o400)
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, cwd=world.project, env=world.env, timeout=60
        )
    finally:
        read_only.chmod(mode)
    return Result(proc.returncode, proc.stdout, proc.stderr)


CALLS: list[tuple[str, ...]] = [
    ("tool", "memory_store", "--json", '{"key":"colour","value":"blue"}'),
    ("tool", "memory_recall", "--json", '{"search":"colour"}'),
    ("tool", "read", "--json", '{"paths":["notes.txt"]}'),
    ("tool", "schedule_job", "--json", '{"name":"n","schedule":"every 15 minutes","task":"say hi"}'),
    ("tool", "file_edit", "--json", '{"path":"notes.txt","old_string":"hello","new_string":"bye"}'),
    ("tool", "write", "--json", '{"path":"notes.txt","content":"x"}'),
    ("jobs", "run"),
]


def _assert_clean_failure(r: Result) -> None:
    assert r.code in (0, 1, 3), (r.code, r.stderr)
    assert "Traceback" not in r.stderr and "Logging error" not in r.stderr, r.stderr
    if r.code != 0:
        assert r.stdout == ""
        assert json.loads(r.stderr)["error"]["code"]


@pytest.mark.parametrize("argv", CALLS, ids=lambda a: "-".join(a[:2]))
@pytest.mark.parametrize("what", ["home", "state.db"])
def test_read_only_home_or_state_is_a_tool_failure(world: Env, argv: tuple[str, ...], what: str) -> None:
    (world.project / "notes.txt").write_text("hello\n")
    assert world.tool("memory_store", {"key": "seed", "value": "v"}).code == 0  # home and state.db exist
    target = world.fermix_home if what == "home" else world.fermix_home / "state.db"
    _assert_clean_failure(run_with_read_only(world, target, *argv))


@pytest.mark.parametrize("argv", CALLS, ids=lambda a: "-".join(a[:2]))
def test_fresh_home_in_a_read_only_directory(world: Env, argv: tuple[str, ...]) -> None:
    (world.project / "notes.txt").write_text("hello\n")
    world.fermix_home.mkdir()
    _assert_clean_failure(run_with_read_only(world, world.fermix_home, *argv))
