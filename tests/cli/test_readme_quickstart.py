"""The README's first command ends in a real tool call; it must work wherever the checkout lives."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.conftest import REPO, Env


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
