"""The README's quick start: its tool call works wherever the checkout lives; its test command where git is not installed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import GIT_MISSING, REPO, Env


def quick_start_call() -> list[str]:
    """The arguments of the README's quick-start tool call (what follows `.venv/bin/fermix`)."""
    for line in (REPO / "README.md").read_text().splitlines():
        if line.startswith("    ") and ".venv/bin/fermix tool " in line:
            return shlex.split(line.split(".venv/bin/fermix ", 1)[1])
    raise AssertionError("the README has no quick-start tool call")


def test_the_quick_start_call_works_from_a_checkout_outside_the_home(world: Env) -> None:
    checkout = world.root / "srv" / "fermix"
    checkout.mkdir(parents=True)
    r = world.run(*quick_start_call(), cwd=checkout)
    assert r.code == 0, r.stderr
    assert r.json()


def test_the_quick_start_call_works_from_a_checkout_inside_the_home(world: Env) -> None:
    checkout: Path = world.project
    r = world.run(*quick_start_call(), cwd=checkout)
    assert r.code == 0, r.stderr


# What runs git: fermix's git tools, and coding-run set-ups that make a checkout.
NEEDS_GIT = [
    "tests/tools/git",
    "tests/harness/test_launch_guards.py::test_a_directory_that_is_not_a_checkout_holds_everything_beneath_it",
    "tests/harness/test_runs.py::test_one_run_per_worktree",
]


def test_the_suite_skips_what_needs_git_with_the_reason_where_git_is_missing(tmp_path: Path) -> None:
    """The README's test command on a machine without git: skips that name it, no FileNotFoundError."""
    no_git = tmp_path / "bin"  # an empty PATH: no git on it (the interpreter is named by its full path)
    no_git.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FERMIX_")) and k != "PATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *NEEDS_GIT],
        cwd=REPO,
        env={**env, "PATH": str(no_git)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    tail = proc.stdout[-3000:]
    assert proc.returncode == 0, tail
    summary = tail.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ skipped in [\d.]+s( \(.*\))?", summary), summary
    assert int(summary.split()[0]) >= 30
    assert "SKIPPED [" in tail and GIT_MISSING in tail
