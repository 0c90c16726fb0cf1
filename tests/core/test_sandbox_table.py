"""Sandbox table tests: every row is an attack or a legal call; denied rows change nothing and leak nothing."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env

SECRETS = ("SECRET-OUTSIDE", "SECRET-EVIL", "SECRET-SSH", "SECRET-GH", "SECRET-CONFIG", "SECRET-BLOCKED")


def build_layout(world: Env, config: str = "") -> None:
    h, p = world.home, world.project
    (p / "ok.txt").write_text("fine\n")
    (p / "sub").mkdir()
    (p / "sub" / "deep.txt").write_text("deep\n")
    (h / "outside").mkdir()
    (h / "outside" / "secret.txt").write_text("SECRET-OUTSIDE\n")
    (h / "project-evil").mkdir()
    (h / "project-evil" / "secret.txt").write_text("SECRET-EVIL\n")
    (h / ".ssh").mkdir()
    (h / ".ssh" / "id_rsa").write_text("SECRET-SSH\n")
    (h / ".SSH").mkdir()
    (h / ".SSH" / "id_rsa").write_text("SECRET-SSH upper\n")
    (h / ".ssh-backup").mkdir()
    (h / ".ssh-backup" / "id_rsa").write_text("SECRET-SSH backup\n")
    (h / ".config" / "gh").mkdir(parents=True)
    (h / ".config" / "gh" / "hosts.yml").write_text("SECRET-GH\n")
    (h / ".config" / "other.txt").write_text("not secret\n")
    (h / ".bashrc").write_text("# SECRET-SSH in a startup file\n")
    (p / "blocked").mkdir()
    (p / "blocked" / "b.txt").write_text("SECRET-BLOCKED\n")
    (p / ".git").mkdir()
    (p / ".git" / "config").write_text("[core]\n")
    os.symlink("../outside/secret.txt", p / "link_out_file")
    os.symlink("../outside", p / "link_out_dir")
    os.symlink(str(h / ".ssh"), p / "link_ssh")
    os.symlink("../outside/new.txt", p / "dangling_out")
    os.symlink("new_inside.txt", p / "dangling_in")
    os.symlink("loop_b", p / "loop_a")
    os.symlink("loop_a", p / "loop_b")
    for i in range(70):
        os.symlink(f"chain_{i + 1}", p / f"chain_{i}")
    os.symlink("ok.txt", p / "chain_70")
    for i in range(10):
        os.symlink(f"short_{i + 1}", p / f"short_{i}")
    os.symlink("ok.txt", p / "short_10")
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nblocked_roots = ["{p / "blocked"}"]\n{config}# SECRET-CONFIG\n'
    )


def snapshot(root: Path, world: Env) -> dict[str, Any]:
    """Every path under root with its type, mode and content hash, minus fermix's own traces, logs, caches."""
    out: dict[str, Any] = {}
    skip = (
        str(world.fermix_home / "traces"),
        str(world.fermix_home / "logs"),
        str(world.fermix_home / "workspace"),
        str(world.fermix_home / "run"),
    )
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if full.startswith(skip):
                continue
            st = os.lstat(full)
            if os.path.islink(full):
                out[full] = ("link", os.readlink(full))
            elif os.path.isfile(full):
                out[full] = ("file", st.st_mode, hashlib.sha256(Path(full).read_bytes()).hexdigest())
            else:
                out[full] = ("dir", st.st_mode)
    return out


def call(world: Env, tool: str, args: dict[str, Any], **ctx: Any) -> tuple[Any, ToolError | None]:
    c = world.context(**ctx)
    try:
        return default_registry().invoke(tool, args, c), None
    except ToolError as e:
        return None, e
    finally:
        c.close()


def _abs(world: Env, path: str) -> str:
    return path.replace("$HOME", str(world.home)).replace("$P", str(world.project))


DENIED = [
    # (tool, args, expected code)
    ("file_read", {"path": "../outside/secret.txt"}, "outside_root"),
    ("file_read", {"path": "sub/../../outside/secret.txt"}, "outside_root"),
    ("file_read", {"path": "$HOME/project/../outside/secret.txt"}, "outside_root"),
    ("file_read", {"path": "$HOME/project-evil/secret.txt"}, "outside_root"),
    ("file_read", {"path": "../project-evil/secret.txt"}, "outside_root"),
    ("file_read", {"path": "link_out_file"}, "outside_root"),
    ("file_read", {"path": "link_out_dir/secret.txt"}, "outside_root"),
    ("file_read", {"path": "link_ssh/id_rsa"}, "protected_path"),
    ("file_read", {"path": "loop_a"}, "too_many_symlinks"),
    ("file_read", {"path": "chain_0"}, "too_many_symlinks"),
    ("file_read", {"path": "$HOME/.ssh/id_rsa"}, "protected_path"),
    ("file_read", {"path": "~/.ssh/id_rsa"}, "protected_path"),
    ("file_read", {"path": "/etc/passwd"}, "protected_path"),
    ("file_read", {"path": "/proc/self/environ"}, "protected_path"),
    ("file_read", {"path": "blocked/b.txt"}, "blocked_root"),
    ("file_read", {"path": "$HOME/.fermix/config.toml"}, "protected_path"),
    ("file_read", {"path": ""}, "invalid_path"),
    ("file_read", {"path": "ok.txt\x00"}, "invalid_path"),
    ("file_read", {"path": "C:\\Windows\\win.ini"}, "invalid_path"),
    ("file_write", {"path": "../outside/new.txt", "content": "x"}, "outside_root"),
    ("file_write", {"path": "link_out_dir/new.txt", "content": "x"}, "outside_root"),
    ("file_write", {"path": "link_out_file", "content": "x"}, "outside_root"),
    ("file_write", {"path": "dangling_out", "content": "x"}, "outside_root"),
    ("file_write", {"path": "../project-evil/secret.txt", "content": "x"}, "outside_root"),
    ("file_write", {"path": ".git/config", "content": "x"}, "protected_path"),
    ("file_write", {"path": ".git/hooks/pre-commit", "content": "x"}, "protected_path"),
    ("file_write", {"path": "blocked/new.txt", "content": "x"}, "blocked_root"),
    ("file_write", {"path": "$HOME/.bashrc", "content": "x"}, "protected_path"),
    ("file_write", {"path": "loop_a/x", "content": "x"}, "too_many_symlinks"),
    ("file_edit", {"path": "sub/../ok.txt", "old_string": "fine", "new_string": "x"}, "invalid_path"),
    ("file_edit", {"path": "link_out_file", "old_string": "SECRET", "new_string": "x"}, "outside_root"),
    ("glob_search", {"pattern": "*", "path": "../outside"}, "invalid_path"),
    ("glob_search", {"pattern": "*", "path": "$HOME/outside"}, "outside_root"),
    ("glob_search", {"pattern": "/etc/*"}, "invalid_pattern"),
    ("glob_search", {"pattern": "../outside/*"}, "invalid_pattern"),
    ("content_search", {"pattern": "SECRET", "path": "$HOME/outside"}, "outside_root"),
    ("content_search", {"pattern": "SECRET", "path": "$HOME/.ssh"}, "protected_path"),
    ("content_search", {"pattern": "SECRET", "path": "../outside"}, "invalid_path"),
]


@pytest.mark.parametrize(
    ("tool", "args", "code"), DENIED, ids=[f"{t}-{c}-{i}" for i, (t, _, c) in enumerate(DENIED)]
)
def test_denied_changes_nothing_and_leaks_nothing(
    world: Env, tool: str, args: dict[str, Any], code: str
) -> None:
    build_layout(world)
    args = {k: _abs(world, v) if isinstance(v, str) else v for k, v in args.items()}
    before = snapshot(world.root, world)
    result, err = call(world, tool, args)
    assert result is None, f"expected {code}, got a result: {result}"
    assert err is not None and err.code == code, err
    assert snapshot(world.root, world) == before
    text = err.message + repr(err.details)
    assert not any(s in text for s in SECRETS)


ALLOWED = [
    ("file_read", {"path": "ok.txt"}, "fine"),
    ("file_read", {"path": "sub/../ok.txt"}, "fine"),
    ("file_read", {"path": "$P/sub/deep.txt"}, "deep"),
    ("file_read", {"path": "short_0"}, "fine"),
    ("file_read", {"path": "$HOME/.config/other.txt"}, "outside_root"),  # not a root in standard mode
]


@pytest.mark.parametrize(("tool", "args", "expect"), ALLOWED)
def test_allowed_rows(world: Env, tool: str, args: dict[str, Any], expect: str) -> None:
    build_layout(world)
    args = {k: _abs(world, v) for k, v in args.items()}
    result, err = call(world, tool, args)
    if expect == "outside_root":
        assert err is not None and err.code == "outside_root"
    else:
        assert err is None, err
        assert result["content"] == expect


def test_a_dangling_symlink_inside_root_is_refused_not_followed(world: Env) -> None:
    """fermix-behaviour §7 [R]: never write through a final symlink, even one that leads inside a root."""
    build_layout(world)
    result, err = call(world, "file_write", {"path": "dangling_in", "content": "made"})
    assert result is None and err is not None and err.code == "symlink_refused", err
    assert not (world.project / "new_inside.txt").exists()
    assert os.path.islink(world.project / "dangling_in")


@pytest.mark.parametrize(
    "path",
    [
        "$HOME/.ssh/id_rsa",
        "$HOME/.SSH/id_rsa",
        "$HOME/.ssh-backup/id_rsa",
        "$HOME/.config/gh/hosts.yml",
        "$HOME/.BashRC",
    ],
)
def test_protected_names_in_open_mode_and_case_variants(world: Env, path: str) -> None:
    build_layout(world, config="")
    cfg = world.fermix_home / "config.toml"
    cfg.write_text('[sandbox]\nmode = "open"\n')
    _, err = call(world, "file_read", {"path": _abs(world, path)})
    assert err is not None and err.code == "protected_path", err


def test_open_mode_reads_home_but_never_protected(world: Env) -> None:
    build_layout(world)
    (world.fermix_home / "config.toml").write_text('[sandbox]\nmode = "open"\n')
    result, err = call(world, "file_read", {"path": str(world.home / "outside" / "secret.txt")})
    assert err is None and result["content"] == "SECRET-OUTSIDE"
    hits, err = call(world, "content_search", {"pattern": "SECRET", "path": str(world.home)})
    assert err is None
    found = {m["path"] for m in hits["matches"]}
    assert str(world.home / "outside" / "secret.txt") in found
    assert not any(
        "/.ssh" in f.lower() or ".config/gh" in f or ".bashrc" in f or "config.toml" in f for f in found
    )


def test_protected_paths_inside_a_grant(world: Env) -> None:
    build_layout(world)
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nallowed_roots = ["{world.home / ".config"}"]\n'
    )
    ok, err = call(world, "file_read", {"path": str(world.home / ".config" / "other.txt")})
    assert err is None and ok["content"] == "not secret"
    _, err = call(world, "file_read", {"path": str(world.home / ".config" / "gh" / "hosts.yml")})
    assert err is not None and err.code == "protected_path"
    globbed, err = call(world, "glob_search", {"pattern": "**/*", "path": str(world.home / ".config")})
    assert err is None
    assert globbed["paths"] == [str(world.home / ".config" / "other.txt")]


def test_blocked_root_inside_a_root(world: Env) -> None:
    build_layout(world)
    hits, err = call(world, "content_search", {"pattern": "SECRET"})
    assert err is None
    assert all("/blocked/" not in m["path"] for m in hits["matches"])
    globbed, _ = call(world, "glob_search", {"pattern": "**/*.txt"})
    assert str(world.project / "blocked" / "b.txt") not in globbed["paths"]
    assert str(world.project / "ok.txt") in globbed["paths"]


def test_sibling_sharing_the_root_prefix_is_outside(world: Env) -> None:
    build_layout(world)
    _, err = call(world, "glob_search", {"pattern": "*", "path": str(world.home / "project-evil")})
    assert err is not None and err.code == "outside_root"


def test_search_never_follows_symlinks_out(world: Env) -> None:
    build_layout(world)
    hits, err = call(world, "content_search", {"pattern": "SECRET"})
    assert err is None
    assert hits["matches"] == []
    globbed, _ = call(world, "glob_search", {"pattern": "**/*"})
    assert not any("outside" in p or "link_ssh" in p for p in globbed["paths"])


@pytest.mark.parametrize(
    "target",
    [
        "/",
        "$HOME",
        "$HOME/..",
        "$HOME/.fermix",
        "$HOME/.ssh",
        "$HOME/.config/gh",
        "/proc",
        "/etc",
        "/usr/lib",
        "/dev",
    ],
)
def test_unsafe_grants_are_refused(world: Env, target: str) -> None:
    build_layout(world)
    before = (world.fermix_home / "config.toml").read_text()
    r = world.run("grant", "path", _abs(world, target))
    assert r.code == 3, r.stderr
    assert r.error()["code"] == "unsafe_root"
    assert (world.fermix_home / "config.toml").read_text() == before


def test_a_safe_grant_then_revoke(world: Env) -> None:
    build_layout(world)
    r = world.run("grant", "path", str(world.home / "outside"))
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == f"granted: {world.home / 'outside'}"
    assert world.tool("file_read", {"path": str(world.home / "outside" / "secret.txt")}).code == 0
    r = world.run("revoke", "path", str(world.home / "outside"))
    assert r.code == 0 and r.stdout.strip() == f"revoked: {world.home / 'outside'}"
    assert world.tool("file_read", {"path": str(world.home / "outside" / "secret.txt")}).code == 3


def test_denials_are_traced(world: Env) -> None:
    build_layout(world)
    call(world, "file_read", {"path": str(world.home / "outside" / "secret.txt")})
    traces = list((world.fermix_home / "traces").glob("*/sandbox_event.jsonl"))
    assert traces and "outside_root" in traces[0].read_text()
