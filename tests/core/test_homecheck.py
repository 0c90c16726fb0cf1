"""A fermix home deleted or replaced during a call: the call fails with `home_vanished`, never reports done."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.homecheck import HomeIdentity
from fermix_cli.core.state import StateDB
from tests.conftest import Env


def _wait_for(predicate: Callable[[], Any], timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def _long_shell_call(world: Env, started: Path, go: Path) -> subprocess.Popen[str]:
    command = f"touch {started}; while [ ! -e {go} ]; do sleep 0.05; done; echo finished"
    return subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "tool", "shell", "--json", json.dumps({"command": command})],
        cwd=world.project,
        env=world.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("replace", [False, True], ids=["deleted", "replaced"])
def test_a_home_removed_during_a_tool_call_fails_the_call(world: Env, replace: bool) -> None:
    assert world.run("jobs", "list", "--json").code == 0  # the home exists, with its state.db
    assert world.fermix_home.is_dir()
    started, go = world.root / "started", world.root / "go"
    proc = _long_shell_call(world, started, go)
    try:
        _wait_for(started.exists)
        shutil.rmtree(world.fermix_home)
        if replace:
            world.fermix_home.mkdir()
        go.touch()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, err)
    assert out == ""
    error = json.loads(err)["error"]
    assert error["code"] == "home_vanished"
    assert ("replaced" if replace else "deleted") in error["message"]


def test_an_untouched_home_passes(world: Env) -> None:
    started, go = world.root / "started", world.root / "go"
    assert world.tool("shell", {"command": "echo warm"}).code == 0
    go.touch()
    proc = _long_shell_call(world, started, go)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "finished" in json.loads(out)["output"]


def test_a_commit_into_a_deleted_home_is_refused_and_rolled_back(tmp_path: Path) -> None:
    home = tmp_path / "fh"
    db = StateDB(home / "state.db", migrations=[])
    try:
        with db.write() as c:
            c.execute("CREATE TABLE t (x)")
        shutil.rmtree(home)
        with pytest.raises(Exception) as info, db.write() as c:
            c.execute("INSERT INTO t VALUES (1)")
        assert getattr(info.value, "code", None) == "home_vanished"
    finally:
        db.close()


def test_identity_reports_what_changed(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "state.db").write_text("")
    ident = HomeIdentity.capture(home, home / "state.db")
    assert ident is not None and ident.problem() is None
    with open(home / "state.db") as held:  # SQLite holds its file open, so its inode is not reused
        (home / "state.db").unlink()
        (home / "state.db").write_text("x")
        assert "replaced by another file" in (ident.problem() or "")
        (home / "state.db").unlink()
        assert "deleted" in (ident.problem() or "")
    held.close()
    shutil.rmtree(home)
    home.mkdir()  # the old directory is still held open by the identity: a new inode
    assert "replaced by another directory" in (ident.problem() or "")
    ident.release()
    assert HomeIdentity.capture(tmp_path / "missing") is None
