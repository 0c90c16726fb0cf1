"""The pure parts of finding submodule git directories: the gitlink listing parser, `.git` files, and the
walk of `<gitdir>/modules`."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from fermix_cli.tools.git.submodules import (
    GitlinkListing,
    checked_out_git_dir,
    common_dir,
    module_git_dirs,
    read_gitfile,
)

OID = "a" * 40
LISTING = (
    f"100644 {OID} 0\tREADME.md\0"
    f"160000 {OID} 0\tvendor/lib\0"
    f"120000 {OID} 0\tlink\0"
    f"160000 {OID} 1\tconflicted\0"
    f"160000 {OID} 2\tconflicted\0"
    f"160000 {OID} 0\tname with\ttab and ünïcode\0"
    f"100644 {OID} 0\tnot-160000 {OID} 0\tx\0"
).encode()
GITLINKS = ["vendor/lib", "conflicted", "name with\ttab and ünïcode"]


@given(st.lists(st.integers(min_value=0, max_value=len(LISTING)), max_size=12))
def test_gitlinks_are_found_whatever_the_chunks(cuts: list[int]) -> None:
    listing = GitlinkListing()
    bounds = [0, *sorted(cuts), len(LISTING)]
    for a, b in itertools.pairwise(bounds):
        listing.feed(LISTING[a:b])
    assert list(listing.paths) == GITLINKS


def test_gitfile_targets(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    gitfile = tmp_path / "sub" / ".git"
    gitfile.write_text("gitdir: ../.git/modules/sub\n")
    assert read_gitfile(str(gitfile)) == f"{tmp_path}/sub/../.git/modules/sub"
    gitfile.write_text("gitdir: /abs/where\r\n")
    assert read_gitfile(str(gitfile)) == "/abs/where"
    for bad in ("", "gitdir:", "gitdir: \n", "not a gitfile\n"):
        gitfile.write_text(bad)
        assert read_gitfile(str(gitfile)) is None, bad
        assert checked_out_git_dir(str(tmp_path / "sub")) is None
    gitfile.unlink()
    (tmp_path / "sub" / ".git").mkdir()
    assert checked_out_git_dir(str(tmp_path / "sub")) == str(tmp_path / "sub" / ".git")


def test_common_dir(tmp_path: Path) -> None:
    gd = tmp_path / "wt"
    gd.mkdir()
    assert common_dir(str(gd)) == str(gd)
    (tmp_path / "main").mkdir()
    (gd / "commondir").write_text("../main\n")
    assert common_dir(str(gd)) == str(tmp_path / "main")


def _git_dir(p: Path) -> Path:
    p.mkdir(parents=True)
    (p / "HEAD").write_text("ref: refs/heads/main\n")
    return p


def test_module_walk_finds_nested_and_slashed_names_and_stops_at_the_limit(tmp_path: Path) -> None:
    top = tmp_path / "top.git"
    a = _git_dir(top / "modules" / "a")
    slashed = _git_dir(top / "modules" / "libs" / "b")  # a submodule named "libs/b"
    nested = _git_dir(a / "modules" / "inner")
    (a / "objects" / "ab").mkdir(parents=True)  # a git dir is entered only through its modules/
    _git_dir(a / "objects" / "ab" / "decoy")
    found = module_git_dirs([str(top)], limit=10)
    assert found is not None and sorted(found) == sorted(map(str, (a, slashed, nested)))
    assert module_git_dirs([str(top)], limit=2) is None
    assert module_git_dirs([str(tmp_path / "none.git")], limit=10) == []
