"""What git may reach besides the repository's own history: never a file that its config names (a
commit template, an order file)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Env
from tests.tools.git.gitworld import Git, plain


def test_a_configured_commit_template_is_not_read(world: Env, git: Git, repo: Path) -> None:
    """`commit.template` in the repository config is the twin of the refused `-t`: a file outside the
    roots never lands in a commit."""
    secret = world.root / "secret.txt"
    secret.write_text("TOP-SECRET-TEMPLATE\n")
    plain(repo, "config", "commit.template", str(secret))
    r = git.tool("git_write", {"command": "commit", "args": ["--allow-empty", "--allow-empty-message"]})
    assert r.code == 0, r.stderr
    assert "TOP-SECRET" not in plain(repo, "log", "-1", "--format=%B")
    assert plain(repo, "log", "-1", "--format=%B").strip() == ""


def test_a_configured_order_file_is_not_read(world: Env, git: Git, repo: Path) -> None:
    """`diff.orderFile` is the twin of the refused `-O`: a file outside the roots does not order (and
    so leak through) a diff."""
    order = world.root / "order.txt"
    order.write_text("z.txt\na.txt\n")
    (repo / "a.txt").write_text("a\n")
    (repo / "z.txt").write_text("z\n")
    plain(repo, "add", ".")
    plain(repo, "commit", "-q", "-m", "two files")
    plain(repo, "config", "diff.orderFile", str(order))
    assert plain(repo, "show", "--name-only", "--format=", "HEAD") == "z.txt\na.txt\n"  # plain git reads it
    r = git.tool("git_read", {"command": "show", "args": ["--name-only", "--format=", "HEAD"]})
    assert r.code == 0, r.stderr
    assert r.json()["output"] == "a.txt\nz.txt\n"
    r = git.tool("git_read", {"command": "diff", "args": ["--name-only", "HEAD~1"]})
    assert r.code == 0 and r.json()["output"] == "a.txt\nz.txt\n"
