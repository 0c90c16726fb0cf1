"""The examples docs/tools/ prints (each tool's metadata examples), run as written against a fresh home.

Most examples name what only the reader has (a file, a job id, a repository, a chat): in a fresh home those
fail, but only because that thing is missing, never as bad input, a refusal or a bug. An example that names
only what fermix ships (a bundled skill and its references) needs nothing else, so it must succeed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.registry import ToolSpec, default_registry
from tests.conftest import REPO

# What the world lacks in a fresh home with an empty project: the example's file, id, repository, chat,
# timezone, vision model or an optional tool (the coding-agent CLIs, an MCP server, git itself).
MISSING_HERE = frozenset(
    {
        "not_found",
        "invalid_repo",
        "executable_not_found",
        "no_active_channel",
        "no_recent_reminder",
        "timezone_not_configured",
        "no_vision_model",
        "unknown_tool",
    }
)


def offline(spec: ToolSpec) -> bool:
    """Runs here without a network, a model, a desktop or a command: safe to run as documented."""
    local = spec.policy_class in ("read_only", "read_write")
    return spec.kind == "builtin" and (local or (spec.policy_class == "exec" and spec.hints.read_only))


def names_only_what_fermix_ships(spec: ToolSpec, args: Mapping[str, Any]) -> bool:
    return spec.name == "skill_view" or "skill://" in json.dumps(dict(args))


EXAMPLES = [
    pytest.param(spec, dict(ex.args), id=f"{spec.name}-{i}")
    for spec in default_registry().all()
    if offline(spec)
    for i, ex in enumerate(spec.examples)
]


def test_the_examples_cover_the_offline_tools() -> None:
    assert len(EXAMPLES) >= 60
    assert {"skill_view-1", "read-2"} <= {p.id for p in EXAMPLES}


@pytest.mark.parametrize(("spec", "args"), EXAMPLES)
def test_a_documented_example_runs_as_written_in_a_fresh_home(
    tmp_path: Path, spec: ToolSpec, args: dict[str, Any]
) -> None:
    home = tmp_path / "home"
    project = home / "project"  # inside the home: a root in the default sandbox mode
    project.mkdir(parents=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FERMIX_", "PYTEST_")) and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }
    env.update(HOME=str(home), FERMIX_HOME=str(home / ".fermix"), PYTHONPATH=str(REPO), NO_COLOR="1")
    r = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "tool", spec.name, "--json", json.dumps(args)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    shown = f"fermix tool {spec.name} --json '{json.dumps(args)}'"
    if names_only_what_fermix_ships(spec, args):
        assert r.returncode == 0, f"{shown}: {r.stderr}"
        return
    if r.returncode == 0:
        return
    error = json.loads(r.stderr)["error"]
    assert error["code"] in MISSING_HERE, f"{shown} failed as written: {r.stderr}"
    if r.returncode == 2:  # only the tool itself may be missing (not registered here), never the input
        assert error["code"] == "unknown_tool" and spec.name in error["message"], f"{shown}: {r.stderr}"
    else:
        assert r.returncode == 1, f"{shown}: {r.stderr}"
