"""A relative path names a file in the caller's directory or nothing: never a file somewhere else.

Run from a project outside the home (`/srv/project`), fermix used to resolve `README.md` inside its own
workspace and return that file. Now the call is refused with the ways to allow it, and each way works.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Env


@pytest.fixture
def srv(world: Env) -> Path:
    """A project outside the OS home, and a different README.md in the fermix workspace."""
    project = world.root / "srv" / "project"
    project.mkdir(parents=True)
    (project / "README.md").write_text("the project's readme\n")
    workspace = world.fermix_home / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "README.md").write_text("the workspace's readme\n")
    return project


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("file_read", {"path": "README.md"}),
        ("read", {"paths": ["README.md"]}),
        ("file_write", {"path": "NEW.md", "content": "x"}),
        ("glob_search", {"pattern": "*.md"}),
        ("grep", {"patterns": ["readme"]}),
        ("shell", {"command": "cat README.md"}),
    ],
)
def test_relative_from_outside_the_roots_is_refused(world: Env, srv: Path, tool: str, args: dict) -> None:
    r = world.tool(tool, args, cwd=srv)
    assert r.code == 3, r.stderr
    assert r.stdout == ""
    err = r.error()
    assert err["code"] == "outside_root"
    assert err["details"]["cwd"] == str(srv)
    assert f"fermix grant path {srv}" in err["message"]
    assert "--cwd" in err["message"]
    assert "workspace's readme" not in r.stderr
    assert not (srv / "NEW.md").exists()
    assert not (world.fermix_home / "workspace" / "NEW.md").exists()


def test_each_remedy_the_refusal_names_works(world: Env, srv: Path) -> None:
    workspace = world.fermix_home / "workspace"
    # An absolute path inside a root needs no cwd.
    r = world.tool("file_read", {"path": str(workspace / "README.md")}, cwd=srv)
    assert r.code == 0, r.stderr
    assert "workspace's readme" in r.stdout
    # --cwd with a directory inside a root anchors relative paths there.
    r = world.run("--cwd", str(workspace), "tool", "file_read", "--path", "README.md", cwd=srv)
    assert r.code == 0, r.stderr
    assert "workspace's readme" in r.stdout
    # A grant makes the directory a root: the file the user meant.
    assert world.run("grant", "path", str(srv), cwd=srv).code == 0
    r = world.tool("file_read", {"path": "README.md"}, cwd=srv)
    assert r.code == 0, r.stderr
    assert "project's readme" in r.stdout


def test_an_explicit_cwd_outside_the_roots_is_refused_not_replaced(world: Env, srv: Path) -> None:
    r = world.run("--cwd", str(srv), "tool", "file_read", "--path", "README.md")
    assert r.code == 3, r.stderr
    assert r.error()["details"]["cwd"] == str(srv)


def test_incidental_directories_keep_the_workspace_default(world: Env, srv: Path) -> None:
    """From the home itself or `/` (cron, services, login shells) relative paths mean the workspace."""
    for where in (world.home, Path("/")):
        r = world.tool("file_read", {"path": "README.md"}, cwd=where)
        assert r.code == 0, (where, r.stderr)
        assert "workspace's readme" in r.stdout


def test_a_project_inside_the_home_is_its_own_root(world: Env) -> None:
    (world.project / "README.md").write_text("inside the home\n")
    r = world.tool("file_read", {"path": "README.md"})
    assert r.code == 0, r.stderr
    assert "inside the home" in r.stdout
