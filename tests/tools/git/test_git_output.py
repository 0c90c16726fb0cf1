"""What the git tools report when git prints a lot or runs too long: a write is never stopped for its
output volume, a stopped git is never a success, and a model sees the output it got."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fermix_cli.core.errors import ToolError
from tests.conftest import Env
from tests.tools.git.gitworld import REAL_GIT, Git, plain

LONG = "f" * 200  # 5,500 files whose `add '...'` lines pass 1 MiB together


def _many_files(repo: Path, n: int = 5500) -> None:
    d = repo / "many"
    d.mkdir()
    for i in range(n):
        (d / f"{LONG}{i:05d}").write_text("x\n")


def test_a_write_past_the_output_cap_runs_to_its_end(git: Git, repo: Path) -> None:
    """`git add -v .` printing more than 1 MiB stages every file; the result says its output was cut."""
    _many_files(repo)
    r = git.tool("git_write", {"command": "add", "args": ["-v", "."]})
    assert r.code == 0, r.stderr[-2000:]
    out = r.json()
    assert out["truncated"] is True and out["exit_code"] == 0
    assert len(out["output"].encode()) <= 1024 * 1024
    assert out["notes"] == [
        "output cut at 1 MiB: git ran to its end and the rest of its output was discarded"
    ]
    assert len(plain(repo, "ls-files", "many").splitlines()) == 5500
    plain(repo, "reset", "-q")
    r = git.run("tool", "git_write", "--json", '{"command":"add","args":["-v","."]}', "--text")
    assert r.code == 0, r.stderr[-2000:]
    assert r.stdout.endswith(
        "[output cut at 1 MiB: git ran to its end and the rest of its output was discarded]\n"
    )
    assert len(plain(repo, "ls-files", "many").splitlines()) == 5500


def test_a_failed_write_past_the_cap_is_git_failed(git: Git, repo: Path) -> None:
    """Cut output does not hide a failure: git's own non-zero exit after more than 1 MiB of output is
    `git_failed` (an empty repository under `zzz/` fails `git add` after every `many/` file was listed)."""
    _many_files(repo)
    plain(repo / "many", "init", "-q", "../zzz")
    r = git.tool("git_write", {"command": "add", "args": ["-v", "."]})
    assert r.code == 1, r.stderr[-500:]
    err = r.error()
    assert err["code"] == "git_failed" and err["details"]["exit_code"] == 128
    assert err["details"]["truncated"] is True
    assert err["message"].startswith("git add failed (exit 128)")
    assert plain(repo, "ls-files", "many") == ""


def test_a_read_past_the_cap_is_a_success_that_says_so(git: Git, repo: Path) -> None:
    _many_files(repo)
    plain(repo, "add", ".")
    plain(repo, "commit", "-q", "-m", "many")
    r = git.tool("git_read", {"command": "show", "args": ["--name-only", "HEAD"]})
    assert r.code == 0, r.stderr[-500:]
    out = r.json()
    assert out["truncated"] is True and out["exit_code"] == 124
    assert out["notes"] == [
        "output cut at 1 MiB: git was stopped there; narrow the command, e.g. with -n or a path"
    ]
    r = git.run("tool", "git_read", "--text", "--command", "show", "--args", "--name-only")
    assert r.stdout.endswith("git was stopped there; narrow the command, e.g. with -n or a path]\n")


def _slow_git(world: Env, monkeypatch: pytest.MonkeyPatch, subcommand: str) -> None:
    """A git that prints a line, then hangs, for one subcommand."""
    wrap = world.root / "slowgit"
    wrap.mkdir()
    (wrap / "git").write_text(
        f'#!/bin/sh\ncase "$*" in *" {subcommand}"*) echo "partial line from git"; sleep 20;; esac\n'
        f'exec "{REAL_GIT}" "$@"\n'
    )
    (wrap / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrap}:{os.environ['PATH']}")


@pytest.mark.parametrize(("tool", "command", "args"), [("git_write", "add", ["."]), ("git_read", "log", [])])
def test_a_timeout_is_an_error_that_shows_the_output_so_far(
    world: Env, repo: Path, monkeypatch: pytest.MonkeyPatch, tool: str, command: str, args: list[str]
) -> None:
    from fermix_cli.core.registry import default_registry
    from fermix_cli.tools.git import run as gitrun

    _slow_git(world, monkeypatch, command)
    monkeypatch.setattr(gitrun, "GIT_TIMEOUT_S", 0.5)
    ctx = world.context()
    t0 = time.monotonic()
    try:
        with pytest.raises(ToolError) as e:
            default_registry().invoke(tool, {"command": command, "args": args}, ctx)
        ok, text, payload = default_registry().invoke_for_model(tool, {"command": command, "args": args}, ctx)
    finally:
        ctx.close()
    assert time.monotonic() - t0 < 20
    assert e.value.code == "timeout" and e.value.message == f"git {command} timed out after 0.5s"
    assert e.value.details["output"] == "partial line from git\n"
    assert not ok and payload["code"] == "timeout"
    assert text.startswith(f"timeout: git {command} timed out after 0.5s")
    assert text.endswith("output so far:\npartial line from git\n")
