"""list_files: a raw shallow listing; no ignore rules, no hidden filter, protected paths never listed."""

from __future__ import annotations

import os

import pytest
from search_fixture import FIXTURE, make_tree

from fermix_cli.core.errors import ToolError
from tests.conftest import Env


def test_raw_shallow_listing_golden(world: Env, invoke) -> None:
    make_tree(world.project, FIXTURE)
    os.symlink("src", world.project / "src_link")
    os.symlink("missing", world.project / "dangling")
    os.mkfifo(world.project / "pipe")
    r = invoke("list_files", {})
    assert r["output"] == "\n".join(
        [
            ".git/",
            ".gitignore",
            ".hidden/",
            ".ignore",
            ".p4ignore",
            "bad.txt",
            "bin/",
            "build/",
            "dangling@",
            "debug.log",
            "docs/",
            "pipe",
            "scratch.tmp",
            "src/",
            "src_link@",
            "target/",
            "vendor/",
        ]
    )
    assert r["kinds"] == {"file": 6, "dir": 8, "symlink": 2, "other": 1}
    assert (r["total"], r["returned"], r["has_more"], r["next_offset"]) == (17, 17, False, None)
    assert r["path"] == "."


def test_sorted_bytewise_and_one_level_only(world: Env, invoke) -> None:
    make_tree(world.project, {"B.txt": "", "a.txt": "", "_x": "", "é.txt": "", "z/deep/file": ""})
    assert invoke("list_files", {})["output"] == "B.txt\n_x\na.txt\nz/\né.txt"
    assert invoke("list_files", {"path": "z"})["output"] == "deep/"


def test_paging(world: Env, invoke) -> None:
    make_tree(world.project, {f"f{i:04d}": "" for i in range(5200)})
    r = invoke("list_files", {})
    assert r["limit"] == 500 and r["returned"] == 500 and r["has_more"] is True and r["next_offset"] == 500
    assert r["output"].endswith("f0499\n\n[4700 more entries; use offset=500]")
    assert r["complete"] is False
    assert r["omitted"] == [
        {"reason": "page", "count": 4700, "unit": "name", "how": "use offset=500 for the next page"}
    ]
    r = invoke("list_files", {"limit": 5000, "offset": 100})
    assert r["limit"] == 5000 and r["returned"] == 5000 and r["output"].startswith("f0100\n")
    r = invoke("list_files", {"offset": 5100})
    assert r["returned"] == 100 and r["has_more"] is False and r["complete"] is True
    assert invoke("list_files", {"offset": 6000})["output"] == "[no entries at offset=6000; 5200 in total]"


def test_empty_directory(world: Env, invoke) -> None:
    (world.project / "empty").mkdir()
    r = invoke("list_files", {"path": "empty"})
    assert r["output"] == "[empty directory]" and r["total"] == 0


def test_errors(world: Env, invoke) -> None:
    make_tree(world.project, {"f.txt": ""})
    (world.home / ".ssh").mkdir()
    (world.home / "outside").mkdir()
    for args, code in (
        ({"path": "f.txt"}, "invalid_path"),
        ({"path": "missing"}, "not_found"),
        ({"path": "../outside"}, "outside_cwd"),
        ({"path": str(world.home / "outside")}, "outside_root"),
        ({"path": "~/.ssh"}, "protected_path"),
        ({"limit": 0}, "invalid_input"),
        ({"offset": -1}, "invalid_input"),
        ({"recursive": True}, "invalid_input"),
    ):
        with pytest.raises(ToolError) as e:
            invoke("list_files", args)
        assert e.value.code == code, args


def test_protected_children_are_never_listed(world: Env, invoke) -> None:
    make_tree(
        world.home, {".ssh/id_rsa": "k", ".bashrc": "", ".netrc": "", "notes.txt": "", ".config/gh/x": ""}
    )
    make_tree(world.home, {".config/other.txt": ""})
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[sandbox]\nmode = "open"\n')
    r = invoke("list_files", {"path": "~"})
    names = r["output"].splitlines()
    assert ".ssh/" not in names and ".bashrc" not in names and ".netrc" not in names
    assert ".config/" in names and "notes.txt" in names and "project/" in names
    assert r["denied"] >= 3
    # The answer says what it left out, in its fields and in its text.
    assert r["complete"] is False
    (gap,) = r["omitted"]
    assert (gap["reason"], gap["count"], gap["unit"]) == ("denied", r["denied"], "name")
    assert names[-2:] == ["", f"[incomplete: {r['denied']} names left out (denied); {gap['how']}]"]
    r = invoke("list_files", {"path": "~/.config"})
    assert r[
        "output"
    ] == "other.txt\n\n[incomplete: 1 name left out (denied); protected or blocked by the " + (
        "sandbox, so never listed; `fermix sandbox explain` shows its rules]"
    )  # .config/gh is protected
    r = invoke("list_files", {"path": "~/project"})
    assert (r["complete"], r["omitted"]) == (True, [])


def test_absolute_paths_capability(world: Env, invoke) -> None:
    grant = world.home / "granted"
    make_tree(grant, {"a.txt": ""})
    world.fermix_home.mkdir()
    cfg = world.fermix_home / "config.toml"
    cfg.write_text(f'[sandbox]\nallowed_roots = ["{grant}"]\n')
    r = invoke("list_files", {"path": str(grant)})
    assert r["output"] == "a.txt" and r["path"] == str(grant)
    cfg.write_text(
        f'[sandbox]\nallowed_roots = ["{grant}"]\n[capabilities.tools.list_files]\nabsolute_paths = false\n'
    )
    with pytest.raises(ToolError) as e:
        invoke("list_files", {"path": str(grant)})
    assert e.value.code == "absolute_path_denied"
    assert invoke("list_files", {"path": str(world.project)})["path"] == "."


def test_invalid_capability_config_fails_closed(world: Env, invoke) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[capabilities.tools.find]\nabsolute_paths = "no"\n')
    with pytest.raises(ToolError) as e:
        invoke("list_files", {})
    assert e.value.code == "invalid_config" and "capabilities.tools.find.absolute_paths" in e.value.message


def test_names_that_are_not_utf8_are_counted_never_shown_lossily(world: Env, invoke) -> None:
    make_tree(world.project, {"good.txt": "", os.fsdecode(b"bad\xffname.txt"): ""})
    r = invoke("list_files", {})
    assert r["output"].startswith("good.txt\n\n[incomplete: 1 name left out (invalid_utf8_name);")
    assert r["entries"] == [{"name": "good.txt", "kind": "file"}] and r["total"] == 1
    (gap,) = r["omitted"]
    assert (gap["reason"], gap["count"], gap["unit"]) == ("invalid_utf8_name", 1, "name")
    assert "bad\\xffname.txt" in gap["how"] and r["complete"] is False
