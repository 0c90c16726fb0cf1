"""The shared walker: path order, ignore layers (fast path == pathspec), Perforce settings, bounds."""

from __future__ import annotations

import os
from pathlib import Path

import pathspec
from hypothesis import given, settings
from hypothesis import strategies as st

from fermix_cli.core.search.p4ignore import P4Rules, parse_settings, resolve_p4, translate_rules
from fermix_cli.core.search.walk import WalkOptions, WalkStats, _IgnoreLayer, walk


def make(root: Path, files: list[str]) -> None:
    for rel in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")


def rels(root: Path, **opts) -> list[str]:
    return [e.rel for e in walk(str(root), None, WalkOptions(**opts), WalkStats())]


def test_paths_come_out_byte_sorted(tmp_path: Path) -> None:
    names = ["a/b/x", "a-b", "a.b", "a b", "a/z", "aa", "B", "_", "é", "a/b-c/y"]
    make(tmp_path, names)
    got = rels(tmp_path)
    assert got == sorted(names, key=lambda s: s.encode())
    with_dirs = [
        e.rel + ("/" if e.is_dir else "")
        for e in walk(str(tmp_path), None, WalkOptions(include_dirs=True), WalkStats())
    ]
    assert with_dirs == sorted(with_dirs, key=lambda s: s.encode())  # as find shows them: dirs end in /
    with_dirs = [p.rstrip("/") for p in with_dirs]
    assert with_dirs.index("a") < with_dirs.index("a/b") < with_dirs.index("a/b/x")


def test_hidden_and_skip_names(tmp_path: Path) -> None:
    make(tmp_path, [".h/x", ".f", "v/x", "target/x", "sub/target/y", ".git/config"])
    assert rels(tmp_path) == [".f", ".h/x", "sub/target/y", "target/x", "v/x"]
    stats = WalkStats()
    got = [
        e.rel
        for e in walk(
            str(tmp_path), None, WalkOptions(hidden=False, skip_names=frozenset({".git", "target"})), stats
        )
    ]
    assert got == ["v/x"] and stats.hidden == 2


def test_entry_cap_and_deadline(tmp_path: Path) -> None:
    make(tmp_path, [f"f{i}" for i in range(10)])
    stats = WalkStats()
    got = list(walk(str(tmp_path), None, WalkOptions(max_entries=4, count_root=True), stats))
    assert len(got) == 3 and stats.stopped == "max_entries" and stats.entries == 4
    stats = WalkStats()
    assert list(walk(str(tmp_path), None, WalkOptions(deadline=0.0), stats)) == []
    assert stats.stopped == "deadline"


def test_unreadable_directories_are_counted(tmp_path: Path, monkeypatch) -> None:
    make(tmp_path, ["locked/x", "ok/y"])
    real = os.scandir
    locked = str(tmp_path / "locked")

    def scandir(path):  # as if the directory's mode were 000 (tests may run as root)
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    stats = WalkStats()
    assert [e.rel for e in walk(str(tmp_path), None, WalkOptions(), stats)] == ["ok/y"]
    assert stats.errors == 1


def test_perforce_rules_in_a_walk(tmp_path: Path) -> None:
    make(tmp_path, [".p4ignore", "a.o", "deep/er/b.o", "keep.c", ".p4root", "p4.cfg"])
    (tmp_path / ".p4ignore").write_text("*.o\n")
    p4 = P4Rules(excluded_names=frozenset({".p4root", ".p4config", "p4.cfg"}))
    assert rels(tmp_path, perforce=p4) == [".p4ignore", "keep.c"]
    assert rels(tmp_path) == [".p4ignore", ".p4root", "a.o", "deep/er/b.o", "keep.c", "p4.cfg"]


def test_perforce_global_rule_files(tmp_path: Path) -> None:
    make(tmp_path, ["x.log", "y.txt"])
    rules = tmp_path.parent / "global-rules"
    rules.write_text("*.log\n")
    p4 = P4Rules(ignore_names=(), global_files=(str(rules),))
    assert rels(tmp_path, perforce=p4) == ["y.txt"]


# ----- the fast ignore check agrees with pathspec -------------------------------------------------

RULE = st.sampled_from(
    ["*.log", "!keep.log", "build/", "/root.txt", "a/**/b", "!a/x/b", "doc", "*.py", "!*.py", "src/*.gen",
     "**/tmp", "[ab].c", "x?z", "!build/", "# comment", "", "\\#hash", "dir/sub/", "!dir/sub/keep", "*/",
     "**/", "!doc/", "**", "*"]
)  # fmt: skip
PATH = st.lists(
    st.sampled_from(["a", "b", "x", "build", "src", "doc", "tmp", "dir", "sub"]), min_size=1, max_size=4
).map("/".join)
LEAF = st.sampled_from(
    ["keep.log", "app.log", "root.txt", "b", "m.py", "q.gen", "a.c", "xyz", "keep", "#hash"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(RULE, max_size=8), PATH, LEAF, st.booleans())
def test_fast_ignore_verdict_matches_pathspec(rules: list[str], base: str, leaf: str, is_dir: bool) -> None:
    layer = _IgnoreLayer.build(rules, "", 0)
    path = f"{base}/{leaf}"
    expected = pathspec.GitIgnoreSpec.from_lines(rules).check_file(path + ("/" if is_dir else "")).include
    got = None if layer is None else layer.verdict(path, is_dir)
    assert got == expected


def test_a_rule_for_every_directory_is_honoured(tmp_path: Path) -> None:
    # `*/` ignores every directory; `!keep/` brings one back. (The walk once missed `*/` and `**/`.)
    make(tmp_path, ["top.txt", "a/x", "b/c/y", "keep/z"])
    (tmp_path / ".gitignore").write_text("*/\n!keep/\n")
    assert rels(tmp_path) == [".gitignore", "keep/z", "top.txt"]
    (tmp_path / ".gitignore").write_text("**/\n")
    assert rels(tmp_path) == [".gitignore", "top.txt"]


def test_lines_git_drops_do_not_break_the_walk(tmp_path: Path) -> None:
    # pathspec raised on each of these, and every search below such a file failed.
    make(tmp_path, ["a.log", "b.txt"])
    (tmp_path / ".gitignore").write_text("!\nfoo\\\n[z-a]x\n*.log\n")
    assert rels(tmp_path) == [".gitignore", "b.txt"]


# ----- Perforce settings resolution ---------------------------------------------------------------


def test_settings_files_are_parsed() -> None:
    assert parse_settings("# c\nP4IGNORE = a;b\nP4CONFIG=.p4config\nEMPTY=\nnoequals\n") == {
        "P4IGNORE": "a;b",
        "P4CONFIG": ".p4config",
    }
    assert translate_rules("...\n*.o\nfoo/.../bar") == ["**", "*.o", "foo/**/bar"]


def test_p4_defaults(tmp_path: Path) -> None:
    r = resolve_p4(str(tmp_path), env={}, home=str(tmp_path / "home"), platform="linux")
    assert r.ignore_names == (".p4ignore", "p4ignore.txt") and r.global_files == ()
    assert r.excluded_names == frozenset({".p4root"}) and r.source == "default"


def test_p4_precedence_config_then_enviro_then_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = home / "ws" / "deep"
    work.mkdir(parents=True)
    env = {"P4IGNORE": "from-env"}
    assert resolve_p4(str(work), env=env, home=str(home), platform="linux").ignore_names == ("from-env",)
    (home / ".p4enviro").write_text("P4IGNORE=from-enviro;/abs/rules;~/mine\nP4CONFIG=.p4cfg\n")
    r = resolve_p4(str(work), env=env, home=str(home), platform="linux")
    assert r.source == "p4enviro" and r.ignore_names == ("from-enviro",)
    assert r.global_files == ("/abs/rules", f"{home}/mine")
    assert r.excluded_names == frozenset({".p4root", ".p4config", ".p4cfg"})
    (home / "ws" / ".p4cfg").write_text("P4IGNORE=from-config\n")
    r = resolve_p4(str(work), env=env, home=str(home), platform="linux")
    assert r.source == "p4config" and r.ignore_names == ("from-config",)
    # macOS and Windows have no default P4ENVIRO; an explicit one still works.
    r = resolve_p4(str(work), env=env, home=str(home), platform="darwin")
    assert r.source == "environment"
    r = resolve_p4(
        str(work), env={**env, "P4ENVIRO": str(home / ".p4enviro")}, home=str(home), platform="darwin"
    )
    assert r.source == "p4config"


def test_p4_lists_are_bounded(tmp_path: Path) -> None:
    env = {"P4IGNORE": ";".join(f"f{i}" for i in range(40))}
    r = resolve_p4(str(tmp_path), env=env, home=str(tmp_path), platform="linux")
    assert len(r.ignore_names) == 16
