"""The grant commands' rules: grants under a blocked root, relative grant paths, relative `[sandbox]` roots
in config.toml, and how a refused grant reads on a terminal."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Env


@pytest.fixture
def granted(world: Env) -> Path:
    """A directory outside every root (and outside the home), with a file in it."""
    d = world.root / "elsewhere" / "g"
    d.mkdir(parents=True)
    (d / "f.txt").write_text("granted content\n")
    return d


def config_text(world: Env) -> str:
    path = world.fermix_home / "config.toml"
    return path.read_text() if path.exists() else ""


# ----- grants under a blocked root --------------------------------------------------------------


def test_a_grant_under_a_blocked_root_is_refused_and_explained(world: Env) -> None:
    blocked = world.home / "blk"
    (blocked / "sub").mkdir(parents=True)
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(f'[sandbox]\nblocked_roots = ["{blocked}"]\n')
    before = config_text(world)
    for target in (blocked / "sub", blocked):
        r = world.run("grant", "path", str(target))
        assert r.code == 3, r.stderr
        err = r.error()
        assert err["code"] == "blocked_root"
        assert err["details"] == {"path": str(target), "blocked_root": str(blocked)}
        assert "blocked roots beat grants" in err["message"]
    assert config_text(world) == before  # nothing written
    # An entry that is there anyway (written by hand) is shown as refused, not as a root.
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nblocked_roots = ["{blocked}"]\nallowed_roots = ["{blocked / "sub"}"]\n'
    )
    data = world.run("sandbox", "explain", "--json").json()
    assert data["refused_grants"] == [str(blocked / "sub")]
    assert all(r["path"] != str(blocked / "sub") for r in data["roots"])
    text = world.run("sandbox", "explain").stdout
    assert f"refused grants (unsafe, or inside a blocked root; ignored):\n  {blocked / 'sub'}\n" in text
    # A grant of an ancestor of a blocked root is still fine: the blocked part stays blocked.
    outer = world.home / "outer"
    (outer / "blk").mkdir(parents=True)
    (world.fermix_home / "config.toml").write_text(f'[sandbox]\nblocked_roots = ["{outer / "blk"}"]\n')
    assert world.run("grant", "path", str(outer)).code == 0


# ----- relative paths to grant and revoke -------------------------------------------------------


def test_relative_grant_and_revoke_paths_are_the_callers(world: Env, granted: Path) -> None:
    r = world.run("grant", "path", ".", cwd=granted)
    assert r.code == 0, r.stderr
    assert r.stdout == f"granted: {granted}\n"
    assert world.tool("file_read", {"path": str(granted / "f.txt")}).code == 0
    r = world.run("revoke", "path", ".", cwd=granted)
    assert r.code == 0, r.stderr
    assert r.stdout == f"revoked: {granted}\n"
    # From the parent, by name; and through --cwd, which stands for the caller's directory.
    r = world.run("sandbox", "grant", "g", cwd=granted.parent)
    assert r.code == 0 and r.stdout == f"granted: {granted}\n", r.stderr
    r = world.run("--cwd", str(granted.parent), "sandbox", "revoke", "./g/../g")
    assert r.code == 0 and r.stdout == f"revoked: {granted}\n", r.stderr
    assert "allowed_roots = []" in config_text(world)


# ----- relative roots in config.toml ------------------------------------------------------------


@pytest.mark.parametrize("key", ["allowed_roots", "blocked_roots"])
@pytest.mark.parametrize("entry", ["amem/g", ".", "~other/dir", "./x"])
def test_relative_sandbox_roots_are_an_invalid_config(world: Env, key: str, entry: str) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(f'[sandbox]\n{key} = ["/srv/ok", "{entry}"]\n')
    (world.project / "a.txt").write_text("x")
    r = world.tool("file_read", {"path": "a.txt"})
    assert r.code == 2, r.stderr
    err = r.error()
    assert err["code"] == "invalid_config"
    assert err["details"]["key"] == f"sandbox.{key}.1"
    assert repr(entry) in err["message"] and "write an absolute path" in err["message"]


@pytest.mark.parametrize("entry", ["~", "~/src", "/srv/data"])
def test_absolute_and_home_sandbox_roots_are_fine(world: Env, entry: str) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(f'[sandbox]\nblocked_roots = ["{entry}"]\n')
    assert world.run("sandbox", "explain", "--json").code == 0


# ----- how a refused grant reads on a terminal --------------------------------------------------


def test_a_refused_grant_on_a_terminal(world: Env) -> None:
    script = shutil.which("script")
    if script is None:
        pytest.skip("util-linux `script` is needed to give stderr a terminal")
    cmd = f"cd {world.project} && {sys.executable} -m fermix_cli grant path /"
    proc = subprocess.run([script, "-qec", cmd, "/dev/null"], capture_output=True, text=True, env=world.env)
    assert proc.returncode == 3  # a sandbox refusal (ARCHITECTURE section 6)
    assert (
        "fermix sandbox: unsafe_root: / cannot be granted (the filesystem root). Run: fermix sandbox explain"
        in proc.stdout
    )
    assert "allowed_roots" not in config_text(world)


@pytest.mark.parametrize(
    ("tool", "args", "target", "why"),
    [
        ("content_search", {"pattern": "x", "path": "/"}, "/", "the filesystem root"),
        ("file_write", {"path": "/fermix-never.txt", "content": "x"}, "/", "the filesystem root"),
        ("grep", {"patterns": ["x"], "path": "~/missing"}, "HOME", "the home directory itself"),
    ],
)
def test_a_refusal_outside_the_roots_never_suggests_a_grant_that_would_be_refused(
    world: Env, tool: str, args: dict, target: str, why: str
) -> None:
    """`outside_root` names the grant that would let the call through, except where that directory can
    never be granted (/, the home directory): then it says so instead of suggesting a failing command."""
    target = world.env["HOME"] if target == "HOME" else target
    done = world.tool(tool, args)
    error = json.loads(done.stderr)["error"]
    assert (done.code, error["code"]) == (3, "outside_root")
    assert "fermix grant path " + target not in error["message"]
    assert f"{target} can never be granted ({why})" in error["message"]
    assert not Path("/fermix-never.txt").exists()
    granted_dir = world.project.parent / "elsewhere"
    granted_dir.mkdir()
    error = json.loads(world.tool("content_search", {"pattern": "x", "path": str(granted_dir)}).stderr)[
        "error"
    ]
    assert f"To allow this directory, run: fermix grant path {granted_dir}," in error["message"]
