"""Fixtures for the git tool tests (helpers in gitworld.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Env, needs_git
from tests.tools.git.gitworld import IDENTITY, Git, plain


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here runs the real git: skipped, with the reason, where it is not installed."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(needs_git)


@pytest.fixture
def git(world: Env) -> Git:
    return Git(world)


@pytest.fixture
def repo(world: Env) -> Path:
    """The project as a repository with one commit on main, and a git identity in fermix config."""
    p = world.project
    plain(p, "init", "-q", "-b", "main")
    (p / "app.py").write_text("print('v1')\n")
    plain(p, "add", "app.py")
    plain(p, "commit", "-q", "-m", "first")
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(IDENTITY)
    return p
