"""Submodules have configs of their own, and git runs a child git inside a submodule more often than
its options say (add of a directory, checkout and commit listing local changes, status and diff when
.gitmodules sets `ignore = none`). The git tools keep git out where they can, and give every
submodule git directory the repository's checks, so a filter set there never runs."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import Env
from tests.tools.git.gitworld import Git, payload, plain

FILE_OK = ("-c", "protocol.file.allow=always")


@pytest.fixture
def sub_repo(world: Env, repo: Path) -> Path:
    """`repo` with a submodule `sub` (its files under `* filter=x`) on main, and a branch b2 where the
    submodule is one commit further."""
    src = world.root / "subsrc"
    src.mkdir()
    plain(src, "init", "-q", "-b", "main")
    (src / ".gitattributes").write_text("* filter=x\n")
    (src / "a.txt").write_text("one\n")
    plain(src, "add", ".")
    plain(src, "commit", "-q", "-m", "one")
    plain(src, "checkout", "-q", "-b", "b2")
    (src / "a.txt").write_text("two\n")
    plain(src, "commit", "-q", "-am", "two")
    plain(src, "checkout", "-q", "main")
    plain(repo, *FILE_OK, "submodule", "-q", "add", str(src), "sub")
    plain(repo, "commit", "-q", "-m", "with sub")
    plain(repo, "checkout", "-q", "-b", "b2")
    plain(repo / "sub", "checkout", "-q", "origin/b2")
    plain(repo, "commit", "-q", "-am", "sub at two")
    plain(repo, "checkout", "-q", "main")
    plain(repo, "submodule", "-q", "update")
    assert (repo / "sub" / "a.txt").read_text() == "one\n"
    return repo


def _hostile(world: Env, config: Path) -> Path:
    """Set filter.x's clean and smudge in `config` to a payload; the payload's marker."""
    script, marker = payload(world)
    plain(config.parent, "config", "--file", str(config), "filter.x.clean", str(script))
    plain(config.parent, "config", "--file", str(config), "filter.x.smudge", str(script))
    return marker


def _assert_refused_before_anything_ran(git: Git, r, code: str, marker: Path) -> None:
    assert r.code != 0, r.stdout
    assert r.error()["code"] == code, r.stderr
    assert set(git.subcommands()) <= {"rev-parse", "config", "ls-files"}, git.subcommands()
    assert not marker.exists()


def test_the_submodule_payload_runs_under_plain_git(world: Env, sub_repo: Path) -> None:
    """The control: the fixed options of before (`diff.ignoreSubmodules=all`, `submodule.recurse=false`)
    do not keep git out of the submodule; its filter runs."""
    marker = _hostile(world, sub_repo / ".git" / "modules" / "sub" / "config")
    old_fixed = ("-c", "diff.ignoreSubmodules=all", "-c", "submodule.recurse=false")
    changed = sub_repo / "sub" / "a.txt"

    def touched(step: int) -> None:
        # A new mtime before a step: a command that refreshed the submodule's index (status does)
        # would otherwise leave the file clean for the next one, unless both ran in the same second.
        t = time.time() + 10 * step
        os.utime(changed, (t, t))

    touched(1)
    plain(sub_repo, *old_fixed, "status", "--ignore-submodules=none")
    assert marker.exists()
    marker.unlink()
    touched(2)
    plain(sub_repo, *old_fixed, "add", ".")
    assert marker.exists()
    marker.unlink()
    plain(sub_repo / "sub", "update-index", "-q", "--refresh")  # checkout needs it clean; cleaning runs it
    marker.unlink(missing_ok=True)
    plain(sub_repo, *old_fixed, "checkout", "-q", "--recurse-submodules", "b2")
    assert marker.exists()


@pytest.mark.parametrize(
    ("tool", "command", "args"),
    [
        ("git_read", "status", ["--ignore-submodules=none"]),
        ("git_read", "status", ["--ignore-sub=untracked"]),
        ("git_read", "status", ["--no-ignore-submodules"]),
        ("git_read", "diff", ["--ignore-submodules=dirty"]),
        ("git_read", "show", ["--submodule=diff", "HEAD"]),
        ("git_write", "checkout", ["--recurse-submodules", "b2"]),
        ("git_write", "checkout", ["--recurse-sub", "b2"]),
        ("git_write", "pull", ["--recurse-submodules=yes"]),
    ],
)
def test_arguments_that_go_into_submodules_are_refused(
    world: Env, git: Git, sub_repo: Path, tool: str, command: str, args: list[str]
) -> None:
    marker = _hostile(world, sub_repo / ".git" / "modules" / "sub" / "config")
    (sub_repo / "sub" / "a.txt").touch()
    r = git.tool(tool, {"command": command, "args": args})
    assert r.code == 3 and r.error()["code"] == "denied_arg" and r.error()["details"]["rule"] == "submodules"
    assert "submodule" in r.error()["message"]
    assert git.subcommands() == [] and not marker.exists()


@pytest.mark.parametrize(
    ("tool", "command", "args", "gitmodules_ignore"),
    [
        ("git_read", "status", [], "none"),
        ("git_read", "diff", [], "none"),
        ("git_read", "log", ["-1"], None),
        ("git_write", "add", ["."], None),
        ("git_write", "checkout", ["b2"], "none"),
        ("git_write", "commit", ["--allow-empty", "--allow-empty-message"], "none"),
    ],
)
def test_a_submodule_config_that_runs_programs_is_refused(
    world: Env,
    git: Git,
    sub_repo: Path,
    tool: str,
    command: str,
    args: list[str],
    gitmodules_ignore: str | None,
) -> None:
    config = sub_repo / ".git" / "modules" / "sub" / "config"
    marker = _hostile(world, config)
    if gitmodules_ignore:
        plain(sub_repo, "config", "--file", ".gitmodules", "submodule.sub.ignore", gitmodules_ignore)
    (sub_repo / "sub" / "a.txt").touch()
    head = plain(sub_repo, "rev-parse", "HEAD")
    r = git.tool(tool, {"command": command, "args": args})
    _assert_refused_before_anything_ran(git, r, "invalid_repo", marker)
    err = r.error()
    assert err["message"].startswith(f"submodule config {config} sets filter.x.clean, which can run programs")
    assert f"git config --file {config} --unset filter.x.clean" in err["message"]
    assert plain(sub_repo, "rev-parse", "HEAD") == head
    assert plain(sub_repo, "branch", "--show-current") == "main\n"


def test_an_embedded_submodule_without_gitmodules_is_checked(world: Env, git: Git, repo: Path) -> None:
    """A gitlink whose `.git` is a directory inside the work tree, with no .gitmodules entry: `git add`
    still runs a child git there."""
    inner = repo / "vendored"
    inner.mkdir()
    plain(inner, "init", "-q", "-b", "main")
    (inner / ".gitattributes").write_text("* filter=x\n")
    (inner / "a.txt").write_text("a\n")
    plain(inner, "add", ".")
    plain(inner, "commit", "-q", "-m", "inner")
    plain(repo, "add", "vendored")
    plain(repo, "commit", "-q", "-m", "gitlink")
    assert not (repo / ".gitmodules").exists()
    marker = _hostile(world, inner / ".git" / "config")
    (inner / "a.txt").touch()
    plain(repo, "add", "-u")  # plain git: the payload runs
    assert marker.exists()
    marker.unlink()
    (inner / "a.txt").touch()
    git.reset_log()
    r = git.tool("git_write", {"command": "add", "args": ["-u"]})
    _assert_refused_before_anything_ran(git, r, "invalid_repo", marker)


def test_nested_submodule_configs_are_checked(world: Env, git: Git, sub_repo: Path) -> None:
    """A submodule's own submodule git dir (`modules/sub/modules/inner`) gets the same check."""
    nested = sub_repo / ".git" / "modules" / "sub" / "modules" / "deps" / "inner"
    nested.parent.mkdir(parents=True)
    plain(sub_repo, "init", "-q", "--bare", str(nested))
    marker = _hostile(world, nested / "config")
    r = git.tool("git_read", {"command": "status"})
    _assert_refused_before_anything_ran(git, r, "invalid_repo", marker)
    assert str(nested / "config") in r.error()["message"]


def test_a_submodule_git_dir_outside_the_roots_is_refused(world: Env, git: Git, sub_repo: Path) -> None:
    outside = world.root / "elsewhere-sub.git"
    shutil.move(sub_repo / ".git" / "modules" / "sub", outside)
    plain(world.root, "config", "--file", str(outside / "config"), "core.worktree", str(sub_repo / "sub"))
    (sub_repo / "sub" / ".git").write_text(f"gitdir: {outside}\n")
    assert plain(sub_repo / "sub", "rev-parse", "--absolute-git-dir").strip() == str(outside)
    r = git.tool("git_read", {"command": "status"})
    assert r.code == 3, r.stderr
    err = r.error()
    assert err["code"] == "outside_root" and f"submodule git dir {outside}" in err["message"]


def test_a_submodule_work_tree_outside_the_repository_is_refused(
    world: Env, git: Git, sub_repo: Path
) -> None:
    plain(sub_repo, "config", "--file", ".git/modules/sub/config", "core.worktree", str(world.root))
    r = git.tool("git_read", {"command": "status"})
    assert r.code == 1 and r.error()["code"] == "invalid_repo"
    assert "sets core.worktree to" in r.error()["message"]


def test_status_and_diff_stay_out_of_submodules_whatever_gitmodules_says(git: Git, sub_repo: Path) -> None:
    """`--ignore-submodules=all` goes on the command line: .gitmodules' `ignore = none` cannot lower it.
    A clean submodule is fine: the git tools work in the repository."""
    plain(sub_repo, "config", "--file", ".gitmodules", "submodule.sub.ignore", "none")
    plain(sub_repo, "commit", "-q", "-am", "ignore none")
    (sub_repo / "sub" / "a.txt").write_text("dirty\n")
    assert plain(sub_repo, "status", "--porcelain") == " M sub\n"  # plain git looks inside
    r = git.tool("git_read", {"command": "status", "args": ["--porcelain"]})
    assert r.code == 0, r.stderr
    assert r.json()["output"] == ""
    r = git.tool("git_read", {"command": "diff", "args": ["--ignore-submodules=all"]})
    assert r.code == 0 and r.json()["output"] == ""
    (sub_repo / "new.txt").write_text("n\n")
    r = git.tool("git_write", {"command": "add", "args": ["new.txt"]})
    assert r.code == 0, r.stderr
    assert plain(sub_repo, "diff", "--cached", "--name-only") == "new.txt\n"
