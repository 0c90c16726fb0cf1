"""What git may reach besides the repository's own history: never a protected path inside its work
tree, never a file that its config names (a commit template, an order file)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Env
from tests.tools.git.gitworld import IDENTITY, Git, plain


def test_a_repository_holding_protected_paths_is_refused(world: Env, git: Git) -> None:
    """A dotfiles repository at the home, in open mode (the home is a root): file tools refuse the key
    and ~/.bashrc, so git may neither show the key nor check out over ~/.bashrc."""
    home = world.home
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY----- KEYDATA\n")
    (home / ".bashrc").write_text("alias ll='ls -l'\n")
    plain(home, "init", "-q", "-b", "main")
    plain(home, "add", ".ssh/id_ed25519", ".bashrc")
    plain(home, "commit", "-q", "-m", "dotfiles")
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text('[sandbox]\nmode = "open"\n' + IDENTITY)
    r = git.tool("file_read", {"path": str(home / ".ssh" / "id_ed25519")})
    assert r.code == 3 and r.error()["code"] == "protected_path"  # the control

    r = git.tool("git_read", {"command": "show", "args": ["HEAD:.ssh/id_ed25519"], "repo": str(home)})
    assert r.code == 3, r.stdout
    err = r.error()
    assert err["code"] == "protected_path" and "KEYDATA" not in r.stdout + r.stderr
    assert err["message"].startswith(
        f"the repository {home} holds the protected path {home / '.ssh'} in its work tree"
    )
    assert "Use git from your own terminal" in err["message"]
    assert err["details"] == {"path": str(home / ".ssh"), "toplevel": str(home)}

    (home / ".bashrc").write_text("echo changed by me\n")
    r = git.tool("git_write", {"command": "checkout", "args": ["--", ".bashrc"], "repo": str(home)})
    assert r.code == 3 and r.error()["code"] == "protected_path"
    assert (home / ".bashrc").read_text() == "echo changed by me\n"
    assert set(git.subcommands()) == {"rev-parse"}


def test_a_repository_holding_the_fermix_home_is_refused(world: Env, git: Git, repo: Path) -> None:
    """The fermix home inside a project (its config.toml, state.db) is protected like ~/.ssh."""
    fermix_home = repo / ".fermix-here"
    fermix_home.mkdir()
    (fermix_home / "config.toml").write_text(IDENTITY)
    r = git.tool("git_read", {"command": "status"}, env={"FERMIX_HOME": str(fermix_home)})
    assert r.code == 3 and r.error()["code"] == "protected_path"
    assert r.error()["details"]["path"].startswith(str(fermix_home))


def test_a_repository_holding_a_blocked_root_is_refused(world: Env, git: Git, repo: Path) -> None:
    (repo / "keys").mkdir()
    (repo / "keys" / "k.txt").write_text("BLOCKED-CONTENT\n")
    plain(repo, "add", "keys")
    plain(repo, "commit", "-q", "-m", "keys")
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nblocked_roots = ["{repo / "keys"}"]\n' + IDENTITY
    )
    r = git.tool("git_read", {"command": "show", "args": ["HEAD:keys/k.txt"]})
    assert r.code == 3 and r.error()["code"] == "blocked_root"
    assert "BLOCKED-CONTENT" not in r.stdout + r.stderr
    assert "holds the blocked root" in r.error()["message"]


def test_an_ordinary_repository_is_not_refused(git: Git, repo: Path) -> None:
    """The protected names only matter where they are: a project with its own `.ssh` directory or
    `config.toml` is not the home's or the fermix home's."""
    (repo / ".ssh").mkdir()
    (repo / ".ssh" / "config").write_text("Host x\n")
    (repo / "config.toml").write_text("a = 1\n")
    r = git.tool("git_write", {"command": "add", "args": [".ssh", "config.toml"]})
    assert r.code == 0, r.stderr


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
