"""Which context owns a state connection: a derived context never closes one it did not open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fermix_cli.core.context import ToolContext
from fermix_cli.core.paths import resolve_paths


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(paths=resolve_paths(str(tmp_path / "fh")), os_home=str(tmp_path), cwd=str(tmp_path))


def _usable(db: object) -> bool:
    try:
        db.query("SELECT 1")  # type: ignore[attr-defined]
    except sqlite3.ProgrammingError:  # "Cannot operate on a closed database."
        return False
    return True


def test_a_child_closing_leaves_the_parents_connection_open(tmp_path: Path) -> None:
    parent = _ctx(tmp_path)
    db = parent.state
    child = parent.derive(origin="subagent")
    assert child.state is db
    child.close()
    assert _usable(db) and parent.state is db
    parent.close()
    assert not _usable(db)


def test_a_lent_connection_outlives_the_borrower(tmp_path: Path) -> None:
    parent = _ctx(tmp_path)
    lender = parent.state
    lent = lender.lend()
    try:
        child = parent.derive(state=lent)
        assert child.state is lent
        child.close()
        assert _usable(lent)
    finally:
        lender.take_back(lent)
    parent.close()


def test_own_state_opens_and_closes_its_own(tmp_path: Path) -> None:
    parent = _ctx(tmp_path)
    db = parent.state
    child = parent.derive(own_state=True)
    mine = child.state
    assert mine is not db
    child.close()
    assert not _usable(mine) and _usable(db)
    parent.close()


@pytest.mark.parametrize("how", ["inherited", "lent"])
def test_a_connection_the_child_opens_after_closing_is_its_own(tmp_path: Path, how: str) -> None:
    parent = _ctx(tmp_path)
    db = parent.state
    child = parent.derive() if how == "inherited" else parent.derive(state=db)
    child.close()
    again = child.state  # reopened by the child: its own now
    assert again is not db
    child.close()
    assert not _usable(again) and _usable(db)
    parent.close()
