"""Read-modify-write tools either apply their change or fail clearly: no exit 0 for a change that is gone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import Env

WRITERS = 32


def _spawn(world: Env, tool: str, args: dict[str, object]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "tool", tool, "--json", json.dumps(args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=world.project,
        env=world.env,
    )


def _finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str]]:
    out = []
    for proc in procs:
        _, stderr = proc.communicate(timeout=120)
        out.append((proc.returncode, stderr))
    return out


@pytest.mark.slow
def test_concurrent_file_edits_each_survive_or_fail(world: Env) -> None:
    target = world.project / "shared.txt"
    target.write_text("".join(f"line {i:02d} = old-{i:02d}\n" for i in range(WRITERS)))
    procs = [
        _spawn(
            world,
            "file_edit",
            {"path": "shared.txt", "old_string": f"old-{i:02d}", "new_string": f"new-{i:02d}"},
        )
        for i in range(WRITERS)
    ]
    results = _finish(procs)
    final = target.read_text()
    for i, (code, stderr) in enumerate(results):
        assert code in (0, 1), stderr
        if code == 0:
            assert f"new-{i:02d}" in final, f"edit {i} reported success but is gone"
        else:
            assert json.loads(stderr)["error"]["code"] in ("locked", "conflict"), stderr
    assert sum(code == 0 for code, _ in results) == WRITERS, "no edit should need to fail under the lock"


@pytest.mark.slow
def test_concurrent_memory_stores_each_survive(world: Env) -> None:
    assert world.tool("memory_store", {"key": "seed", "value": "v"}).code == 0  # state.db exists
    procs = [
        _spawn(world, "memory_store", {"key": f"k{i:02d}", "value": f"value {i}", "category": "context"})
        for i in range(16)
    ]
    results = _finish(procs)
    assert all(code == 0 for code, _ in results), results
    listed = world.tool("memory_recall", {"scope": "owner"}).json()
    keys = {m["key"] for m in listed["memories"]}
    assert {f"k{i:02d}" for i in range(16)} <= keys


CONFIG_SETS = {
    "fermix_core.jobs.max_concurrent_runs": "3",
    "fermix_core.jobs.transient_retries": "2",
    "fermix_core.jobs.retry_backoff_seconds": "45",
    "fermix_core.agent.max_iterations": "7",
    "fermix_core.agent.repeat_limit": "4",
    "fermix_core.routing.subagent_model": '"small-model"',
}


@pytest.mark.slow
def test_concurrent_config_sets_each_survive(world: Env) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "fermix_cli", "config", "set", key, value],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=world.project,
            env=world.env,
        )
        for key, value in CONFIG_SETS.items()
    ]
    results = _finish(procs)
    assert all(code == 0 for code, _ in results), results
    text = (world.fermix_home / "config.toml").read_text()
    for key, value in CONFIG_SETS.items():
        assert f"{key.rsplit('.', 1)[1]} = {value}" in text, (key, text)
