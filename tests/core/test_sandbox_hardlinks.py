"""A hard link inside a root to a protected file is refused: the sandbox compares inodes.

Through the real CLI. Hard links to ordinary files (pnpm stores, `cp -al` backups) stay usable.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import Env

SECRET = "SECRET-KEY-MATERIAL"


def _layout(world: Env) -> None:
    (world.home / ".ssh").mkdir()
    (world.home / ".ssh" / "id_ed25519").write_text(SECRET + "\n")
    os.link(world.home / ".ssh" / "id_ed25519", world.project / "innocent.txt")
    (world.project / "plain.txt").write_text("plain words\n")
    os.link(world.project / "plain.txt", world.project / "plain-link.txt")


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("file_read", {"path": "innocent.txt"}),
        ("read", {"paths": ["innocent.txt"]}),
        ("file_write", {"path": "innocent.txt", "content": "overwritten\n"}),
        ("file_edit", {"path": "innocent.txt", "old_string": "SECRET", "new_string": "x"}),
    ],
)
def test_a_hard_link_to_a_protected_file_is_refused(world: Env, tool: str, args: dict[str, str]) -> None:
    _layout(world)
    r = world.tool(tool, args)
    assert r.code == 3, r
    assert r.error()["code"] == "protected_path"
    assert SECRET not in r.stdout + r.stderr
    assert (world.home / ".ssh" / "id_ed25519").read_text() == SECRET + "\n"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("content_search", {"pattern": "SECRET", "path": "."}),
        ("grep", {"patterns": ["SECRET"], "path": "."}),
    ],
)
def test_searches_never_show_a_linked_protected_file(world: Env, tool: str, args: dict[str, object]) -> None:
    _layout(world)
    r = world.tool(tool, args)
    assert SECRET not in r.stdout + r.stderr, r


def test_hard_links_to_ordinary_files_stay_readable(world: Env) -> None:
    _layout(world)
    r = world.tool("file_read", {"path": "plain-link.txt"})
    assert r.code == 0 and json.loads(r.stdout)["content"] == "plain words"


@pytest.mark.parametrize(
    ("tool", "args", "names"),
    [
        ("list_files", {"path": "."}, lambda r: [e.rstrip("/@") for e in r["output"].splitlines()]),
        ("find", {"query": "txt"}, lambda r: [x["path"] for x in r["results"]]),
        ("glob_search", {"pattern": "*.txt"}, lambda r: [os.path.basename(p) for p in r["paths"]]),
    ],
)
def test_listings_leave_out_a_linked_protected_file_and_count_it(
    world: Env, tool: str, args: dict, names
) -> None:
    """Protected paths are never listed, under another name either: every listing tool leaves the link
    out (list_files counted it as an ordinary file) and keeps ordinary hard links."""
    _layout(world)
    r = world.tool(tool, args)
    assert r.code == 0, r
    got = names(json.loads(r.stdout))
    assert "innocent.txt" not in got and {"plain.txt", "plain-link.txt"} <= set(got)
