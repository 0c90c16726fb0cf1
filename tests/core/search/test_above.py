"""Ignore rules of the directories above a walk's root: restated relative to the root for rg, so a
search of a subdirectory leaves out what Git leaves out (core/search/above.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.search.above import restate
from tests.conftest import Env


@pytest.mark.parametrize(
    ("line", "rel", "want"),
    [
        ("src/gen/*.py", "src", ["/gen/*.py"]),
        ("/src/gen/*.py", "src", ["/gen/*.py"]),
        ("!src/gen/keep.py", "src", ["!/gen/keep.py"]),
        ("src/gen/", "src", ["/gen/"]),
        ("s*/gen/*.py", "src", ["/gen/*.py"]),  # a leading component that matches the root's name
        ("src/gen/*.py", "src/gen", ["/*.py"]),
        ("src/**/out.py", "src", ["/**/out.py"]),  # (`/**/` matches no directory too)
        ("src/**/out.py", "src/a", ["/**/out.py"]),  # `**` takes the root's `a`, or more
        ("**/gen/*.py", "src/a", ["/**/gen/*.py"]),
        ("**/a/*.py", "src/a", ["/**/a/*.py", "/*.py"]),  # the root may be the `a`
        ("lib/gen/*.py", "src", []),  # about another directory
        ("src/gen", "src/gen", []),  # about the root itself
        ("src", "src/gen", ["src"]),  # a name at any depth: below the root too
        ("*/x/y", "a/b", []),  # `*` names a, then `x` is not b
        ("*.log", "src", ["*.log"]),  # no inner `/`: a name at any depth, the same below the root
        ("!keep.log", "src", ["!keep.log"]),
        ("build/", "src", ["build/"]),
        ("# src/gen/x", "src", []),
        ("", "src", []),
    ],
)
def test_a_rule_from_above_is_restated_as_what_it_means_below_the_root(
    line: str, rel: str, want: list[str]
) -> None:
    assert sorted(restate(line, rel)) == sorted(want)


def _repo(root: Path, gitignore: str, files: list[str], text: str = "needle\n") -> Path:
    """A Git repository at `root` with this top `.gitignore` and these files (each holding `text`)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text(gitignore)
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _git_ignored(repo: Path, paths: list[str]) -> set[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), "check-ignore", "--no-index", *paths], capture_output=True, text=True
    )
    return set(done.stdout.split())


@pytest.mark.parametrize("rule", ["src/gen/*.py", "/src/gen/*.py", "**/gen/*.py", "src/*/out.py", "src/gen/"])
def test_a_subdirectory_search_leaves_out_what_git_leaves_out(world: Env, invoke: Any, rule: str) -> None:
    """rg applies some rules of the repository's top `.gitignore` only in a walk from the top; every
    search tool, walking from `src` or `src/gen`, leaves out exactly what `git check-ignore` says."""
    files = ["src/gen/out.py", "src/gen/keep.py", "src/main.py", "src/gen/deep/x.py"]
    repo = _repo(world.project, rule + "\n!src/gen/keep.py\n", files)
    visible = set(files) - _git_ignored(repo, files)
    for path in ("src", "src/gen"):
        want = {f for f in visible if f.startswith(path + "/")}
        if rule == "src/gen/" and path == "src/gen":
            # Git ignores the directory searched itself; named as `path`, it is searched, as rg
            # searches a directory it is given (its own rules still apply inside).
            want = {f for f in files if f.startswith(path + "/")}
        r = invoke("grep", {"patterns": ["needle"], "mode": "raw", "path": path, "limit": 100})
        assert {h["path"] for h in r["hits"]} == want, (rule, path)
        r = invoke("content_search", {"pattern": "needle", "path": path})
        assert {m["path"] for m in r["matches"]} == {str(repo / f) for f in want}, (rule, path)
        r = invoke("find", {"query": "py", "path": path, "limit": 100})
        assert {x["path"] for x in r["results"]} == want, (rule, path)
        r = invoke("glob_search", {"pattern": "**/*.py", "path": path})
        assert set(r["paths"]) == {str(repo / f) for f in want}, (rule, path)


def test_perforce_rule_files_above_the_root_apply_below_it(world: Env, invoke: Any) -> None:
    """A `.p4ignore` in a directory above the search root applies to the root's files, as Perforce
    reads the rule files of a directory's parents (fermix applies them; rg does not know them)."""
    (world.project / ".p4ignore").write_text("*.log\nsrc/gen/...\n")
    for rel in ("src/a.log", "src/a.py", "src/gen/b.py", "src/other/c.py"):
        (world.project / rel).parent.mkdir(parents=True, exist_ok=True)
        (world.project / rel).write_text("needle\n")
    r = invoke("grep", {"patterns": ["needle"], "mode": "raw", "path": "src"})
    assert {h["path"] for h in r["hits"]} == {"src/a.py", "src/other/c.py"}
    r = invoke("find", {"query": "c", "path": "src"})
    assert [x["path"] for x in r["results"]] == ["src/other/c.py"]


def test_the_repository_s_exclude_file_weighs_less_than_every_gitignore(world: Env, invoke: Any) -> None:
    """Git: `.git/info/exclude` ranks below every `.gitignore`; from a subdirectory too."""
    repo = _repo(world.project, "!keep.py\n", ["sub/keep.py", "sub/other.py"])
    (repo / ".git" / "info" / "exclude").write_text("*.py\n")
    assert _git_ignored(repo, ["sub/keep.py", "sub/other.py"]) == {"sub/other.py"}
    for path in (".", "sub"):
        r = invoke("grep", {"patterns": ["needle"], "mode": "raw", "path": path})
        assert {h["path"] for h in r["hits"]} == {"sub/keep.py"}, path


def test_an_escaped_trailing_space_survives_the_restating(world: Env, invoke: Any) -> None:
    repo = _repo(world.project, "sub/trail\\ \n", ["sub/trail ", "sub/trail"])
    ignored = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--ignored", "--untracked-files=all", "-z"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    assert "!! sub/trail " in ignored and "?? sub/trail" in ignored
    r = invoke("glob_search", {"pattern": "**", "path": "sub"})
    assert r["paths"] == [str(repo / "sub" / "trail")]


def test_a_glob_prefix_below_a_directory_ignored_from_above_the_root_is_never_listed(
    world: Env, invoke: Any
) -> None:
    """`src/gen/` in the repository's top `.gitignore`, glob_search run from `src` with a pattern that
    starts with `gen/`: never listed (rg's own check of such a prefix answered now and then)."""
    _repo(world.project, "src/gen/\n", ["src/gen/deep/x.py", "src/a.py"])
    for _ in range(10):
        assert invoke("glob_search", {"pattern": "gen/deep/x.py", "path": "src"})["paths"] == []


@pytest.mark.parametrize(
    ("global_rules", "top_rules", "want"),
    [
        ("sub/other.py\n", "", {"sub/keep.py", "sub/sub/other.py"}),  # a path rule, from the top
        ("*.py\n", "!*.py\n", {"sub/keep.py", "sub/other.py", "sub/sub/other.py"}),  # it weighs least
    ],
)
def test_the_global_excludes_file_is_read_as_git_reads_it_from_a_subdirectory(
    world: Env,
    invoke: Any,
    monkeypatch: pytest.MonkeyPatch,
    global_rules: str,
    top_rules: str,
    want: set[str],
) -> None:
    """rg reads Git's global excludes file relative to where its walk starts, and above the
    `.gitignore` files; from a subdirectory fermix restates it, relative to the repository's top and
    below everything else, as Git has it."""
    config = world.root / "xdg"
    (config / "git").mkdir(parents=True)
    (config / "git" / "ignore").write_text(global_rules)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    files = ["sub/keep.py", "sub/other.py", "sub/sub/other.py"]
    repo = _repo(world.project, top_rules, files)
    assert set(files) - _git_ignored(repo, files) == want  # git, with the same environment
    for path in (".", "sub"):
        r = invoke("grep", {"patterns": ["needle"], "mode": "raw", "path": path})
        assert {h["path"] for h in r["hits"]} == want, path


def test_core_excludes_file_in_git_config_is_found(world: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from fermix_cli.core.search.above import global_excludes_file

    home = world.root / "h"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert global_excludes_file() == str(home / ".config" / "git" / "ignore")
    (home / ".gitconfig").write_text('[user]\n\tname = x\n[core]\n\texcludesFile = "~/my ignore" ; note\n')
    assert global_excludes_file() == str(home / "my ignore")
