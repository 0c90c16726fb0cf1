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
