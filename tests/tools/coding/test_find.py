"""find: golden rankings on the fixture tree, kinds, paging, limits, ignore rules and path checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from search_fixture import FIXTURE, make_tree

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding import find as find_mod
from fermix_cli.tools.coding.fuzzy import Query, token_points
from tests.conftest import Env


@pytest.fixture
def proj(world: Env) -> Path:
    make_tree(world.project, FIXTURE)
    return world.project


def ranked(r: dict) -> list[tuple[str, int]]:
    return [(x["path"], x["score"]) for x in r["results"]]


def test_golden_rankings(proj: Path, invoke) -> None:
    r = invoke("find", {"query": "run"})
    assert r["output"] == "src/run.rs\ndocs/running.md\nsrc/lib/runner.py"
    assert ranked(r) == [("src/run.rs", 1002), ("docs/running.md", 798), ("src/lib/runner.py", 794)]
    r = invoke("find", {"query": "src rs"})
    assert ranked(r) == [("src/run.rs", 1105), ("src/main.rs", 1104)]
    r = invoke("find", {"query": "rnr"})
    assert ranked(r) == [("src/run.rs", 232), ("src/lib/runner.py", 209), ("src/main.rs", 116)]
    r = invoke("find", {"query": "DEBUG", "kind": "mixed"})
    assert r["output"] == "target/debug/\ntarget/debug/y.rs"
    assert ranked(r) == [("target/debug/", 995), ("target/debug/y.rs", 440)]


def test_complete_scan_metadata(proj: Path, invoke) -> None:
    r = invoke("find", {"query": "run"})
    assert r["scan_complete"] is True and r["total_matched_exact"] is True and r["index_ready"] is True
    assert r["total_matched"] == 3 and r["returned"] == 3 and r["has_more"] is False
    assert r["truncated"] is False and r["next_offset"] is None
    assert r["entry_limit_reached"] is False and r["timed_out"] is False
    assert r["walk_errors"] == 0 and r["walk_entries_omitted"] == 0
    assert r["complete"] is True and r["omitted"] == []
    # rg lists the 8 visible files: hidden ones (.gitignore, .ignore, .p4ignore, .hidden/) and
    # ignored ones (build/, debug.log, vendor/, scratch.tmp) are left out, .git is never visited.
    assert r["entries_scanned"] == 8


def test_kinds(proj: Path, invoke) -> None:
    assert invoke("find", {"query": "src", "kind": "directories"})["output"] == "src/\nsrc/lib/"
    files = invoke("find", {"query": "src"})["output"].splitlines()
    assert files and not any(p.endswith("/") for p in files)
    mixed = invoke("find", {"query": "lib", "kind": "mixed"})
    assert mixed["output"] == "src/lib/\nsrc/lib/runner.py"
    assert [x["kind"] for x in mixed["results"]] == ["directory", "file"]


def test_paging(world: Env, invoke) -> None:
    make_tree(world.project, {f"d/item{i:03d}.txt": "" for i in range(250)})
    r = invoke("find", {"query": "item", "limit": 200})
    assert r["limit"] == 200 and r["returned"] == 200 and r["has_more"] is True and r["next_offset"] == 200
    assert r["output"].endswith("\n\n[50 more results; use offset=200]")
    assert r["truncated"] is True and r["total_matched"] == 250
    nxt = invoke("find", {"query": "item", "offset": 200})
    assert nxt["returned"] == 50 and nxt["has_more"] is False
    first = invoke("find", {"query": "item", "limit": 3})
    assert first["output"].splitlines()[:3] == ["d/item000.txt", "d/item001.txt", "d/item002.txt"]
    assert (
        invoke("find", {"query": "item", "offset": 999})["output"]
        == "[no results at offset=999; 250 in total]"
    )


def test_every_token_must_match(proj: Path, invoke) -> None:
    assert invoke("find", {"query": "run zzz"})["output"] == "[no matches]"
    assert invoke("find", {"query": "  run  "})["query"] == "run"
    r = invoke("find", {"query": "lib/ run", "kind": "mixed"})
    assert r["output"] == "src/lib/runner.py"


def test_query_validation(world: Env, invoke) -> None:
    for args, code in (
        ({"query": "   "}, "invalid_query"),
        ({"query": "x" * 513}, "query_too_long"),
        ({}, "invalid_input"),
        ({"query": "x", "kind": "links"}, "invalid_input"),
        ({"query": "x", "limit": 0}, "invalid_input"),
    ):
        with pytest.raises(ToolError) as e:
            invoke("find", args)
        assert e.value.code == code, args
    assert invoke("find", {"query": " " + "x" * 512 + " "})["query"] == "x" * 512


def test_path_must_be_an_existing_directory(proj: Path, invoke) -> None:
    with pytest.raises(ToolError) as e:
        invoke("find", {"query": "x", "path": "src/run.rs"})
    assert e.value.code == "invalid_path"
    with pytest.raises(ToolError) as e:
        invoke("find", {"query": "x", "path": "nope"})
    assert e.value.code == "not_found"
    with pytest.raises(ToolError) as e:
        invoke("find", {"query": "x", "path": "../"})
    assert e.value.code == "outside_cwd"  # checked before the roots: going absolute is the advice that works
    with pytest.raises(ToolError) as e:
        invoke("find", {"query": "x", "path": str(proj.parent)})
    assert e.value.code == "outside_root"
    r = invoke("find", {"query": "run", "path": "src"})
    assert r["output"] == "src/run.rs\nsrc/lib/runner.py"  # still shown relative to cwd


def test_outside_cwd_paths_are_absolute_and_follow_the_capability(world: Env, invoke) -> None:
    grant = world.home / "granted"
    make_tree(grant, {"notes/plan.md": ""})
    world.fermix_home.mkdir()
    cfg = world.fermix_home / "config.toml"
    cfg.write_text(f'[sandbox]\nallowed_roots = ["{grant}"]\n')
    r = invoke("find", {"query": "plan", "path": str(grant)})
    assert r["output"] == f"{grant}/notes/plan.md"
    cfg.write_text(
        f'[sandbox]\nallowed_roots = ["{grant}"]\n[capabilities.tools.find]\nabsolute_paths = false\n'
    )
    with pytest.raises(ToolError) as e:
        invoke("find", {"query": "plan", "path": str(grant)})
    assert e.value.code == "absolute_path_denied"
    with pytest.raises(ToolError) as e:
        invoke("find", {"query": "plan", "path": "../granted"})
    assert e.value.code == "outside_cwd"


def test_protected_and_outside_paths_are_refused(world: Env, invoke) -> None:
    (world.home / ".ssh").mkdir()
    (world.home / "outside").mkdir()
    for path, code in (("~/.ssh", "protected_path"), (str(world.home / "outside"), "outside_root")):
        with pytest.raises(ToolError) as e:
            invoke("find", {"query": "id", "path": path})
        assert e.value.code == code


def test_protected_entries_are_never_found_in_open_mode(world: Env, invoke) -> None:
    make_tree(world.home, {".ssh/id_rsa": "k", "notes/id_list.txt": "", "keys/.pgpass": ""})
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text('[sandbox]\nmode = "open"\n')
    (world.fermix_home / "keep").mkdir()
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nmode = "open"\nblocked_roots = ["{world.home / "keys"}"]\n'
    )
    make_tree(world.home, {"keys/id_ed25519": ""})
    r = invoke("find", {"query": "id", "path": "~"})
    assert r["output"] == f"{world.home}/notes/id_list.txt"
    assert r["complete"] is True  # the blocked keys/ directory is excluded before rg lists it


def test_no_entry_limit_the_whole_tree_is_ranked(world: Env, invoke) -> None:
    # The reference's 100,000-entry cap is gone: what is listed is ranked (see test_agreement_rg).
    make_tree(world.project, {f"a{i:02d}.txt": "" for i in range(30)})
    r = invoke("find", {"query": "a", "limit": 5})
    assert r["entries_scanned"] == 30 and r["entry_limit_reached"] is False
    assert r["scan_complete"] is True and r["total_matched"] == 30 and r["has_more"] is True
    assert r["complete"] is False and r["omitted"][0]["reason"] == "page"
    assert r["omitted"][0]["count"] == 25 and "offset=5" in r["omitted"][0]["how"]


def test_deadline_makes_a_partial_scan(world: Env, invoke, monkeypatch) -> None:
    monkeypatch.setattr(find_mod, "FIND_DEADLINE_S", -1.0)
    make_tree(world.project, {"a.txt": ""})
    r = invoke("find", {"query": "a"})
    assert r["timed_out"] is True and r["scan_complete"] is False and r["has_more"] is None


def test_ignore_rules_and_hidden_entries(world: Env, invoke) -> None:
    make_tree(
        world.project,
        {
            ".gitignore": "gen/\n",
            "gen/alpha.txt": "",
            "src/alpha.txt": "",
            ".hidden/alpha.txt": "",
            ".alpha.txt": "",
            "src/.ignore": "alpha.txt\n",
            "src/sub/alpha.txt": "",
        },
    )
    r = invoke("find", {"query": "alpha"})
    # src/.ignore applies below src too (gitignore semantics), so nothing but the hidden ones is left.
    assert r["output"] == "[no matches]"
    (world.project / "src" / ".ignore").write_text("/alpha.txt\n")
    assert invoke("find", {"query": "alpha"})["output"] == "src/sub/alpha.txt"


def test_special_files_and_symlinks(world: Env, invoke) -> None:
    make_tree(world.project, {"real/data.txt": ""})
    os.symlink(world.project / "real", world.project / "linked")
    os.symlink(world.project / "real" / "data.txt", world.project / "data_link.txt")
    os.mkfifo(world.project / "data.fifo")
    r = invoke("find", {"query": "data", "kind": "mixed"})
    # rg follows no symlink (file or directory) and lists regular files only (no FIFO).
    assert r["output"] == "real/data.txt"


def test_listing_cache_sees_new_files(world: Env, invoke) -> None:
    make_tree(world.project, {"one.txt": ""})
    assert invoke("find", {"query": "two"})["output"] == "[no matches]"
    (world.project / "two.txt").write_text("")
    os.utime(world.project, ns=(1, 1))  # a different mtime even on a coarse-clock filesystem
    assert invoke("find", {"query": "two"})["output"] == "two.txt"


@pytest.mark.parametrize(
    ("token", "rel", "points"),
    [
        ("run", "src/run.rs", (1000, True)),  # stem equals
        ("run.rs", "src/run.rs", (1000, True)),  # basename equals
        ("RUN", "src/run.rs", (1000, False)),
        ("ru", "src/run.rs", (800, True)),  # prefix
        ("Parser", "src/MyParser.ts", (650, True)),  # substring at a camel step
        ("arser", "src/MyParser.ts", (600, True)),  # substring, not at a boundary
        ("conf", "lib/my_conf.py", (650, True)),  # after `_`
        ("src", "src/lib/x.py", (450, True)),  # path segment start
        ("rc/l", "src/lib/x.py", (400, True)),  # path, not a segment start
        ("mps", "src/MyParser.ts", (200 + 15 + 15, False)),  # boundaries: start, camel step
        ("mypa", "src/my_parser.ts", (200 + 8 * 2 + 15 * 2, True)),
        ("scmy", "src/my_parser.ts", (100 + 8 * 1 + 15 * 2, True)),  # subsequence of the path
        ("mpr", "src/my_parser.ts", (200 + 15 + 15, True)),  # subsequence of the basename
        ("ab", "src/a_b.ts", None),  # too short for a subsequence
        ("zz", "src/a.ts", None),
    ],
)
def test_token_tiers(token: str, rel: str, points: tuple[int, bool] | None) -> None:
    base = rel.rsplit("/", 1)[-1]
    stem = base.rsplit(".", 1)[0]
    assert token_points(token, rel, base, stem) == points


@pytest.mark.parametrize(
    ("token", "rel", "points"),
    [
        # `İ` lowers to two characters (`i` and a combining dot): positions found in the lowered name
        # are mapped back to the name's own characters, so boundaries stay where they are.
        ("md", "İzmir.md", (650, True)),  # substring after `.`
        ("d", "İzmir.md", (600, True)),  # substring, not at a boundary (and no index past the end)
        ("zmr", "İİİ_zmr_x.md", (600 + 50, True)),
        ("imr", "İzmir.md", (200 + 15, False)),  # subsequence from the first letter, a boundary
        ("mrm", "İİİ/İzmir.md", (200 + 15, True)),  # m, r, then the `m` after `.` (a boundary)
        ("mirm", "İİİ/İzmir.md", (200 + 8 * 2 + 15, True)),  # m-i-r adjacent, then `.m`
    ],
)
def test_token_tiers_on_names_that_lowering_lengthens(token: str, rel: str, points: tuple[int, bool]) -> None:
    base = rel.rsplit("/", 1)[-1]
    assert token_points(token, rel, base, base.rsplit(".", 1)[0]) == points


def test_find_ranks_names_that_lowering_lengthens(world: Env, invoke) -> None:
    for name in ("İzmir.md", "İİİ.md", "notes.md"):
        (world.project / name).write_text("x\n")
    r = invoke("find", {"query": "d"})
    assert sorted(x["path"] for x in r["results"]) == ["notes.md", "İzmir.md", "İİİ.md"]
    r = invoke("find", {"query": "md"})
    assert dict(ranked(r))["İzmir.md"] == 650 - 0 - 6 + 10


def test_scores_penalise_depth_and_long_names() -> None:
    q = Query.parse("cfg")
    assert q.score("cfg.py") == 1000 - 0 - 3 + 10
    assert q.score("a/b/cfg.py") == 1000 - 10 - 3 + 10
    assert q.score("a/cfg_loader_for_everything_in_the_world.py") == 800 - 5 - 38 + 10
    assert q.score("a/cfg_" + "x" * 80) == 800 - 5 - 50 + 10  # the length penalty stops at 50
    assert q.score("a/CFG.py") == 1000 - 5 - 3  # no exact-case bonus
    assert q.score("a/c") is None


def test_a_matching_directory_without_listed_files_is_counted_not_dropped(world: Env, invoke) -> None:
    (world.project / "src" / "empty_cache").mkdir(parents=True)
    (world.project / "src" / "main.py").write_text("x\n")
    (world.project / "full_cache").mkdir()
    (world.project / "full_cache" / "a.txt").write_text("a\n")
    r = invoke("find", {"query": "cache", "kind": "directories"})
    assert [x["path"] for x in r["results"]] == ["full_cache/"]
    assert r["complete"] is False
    (gap,) = r["omitted"]
    assert (gap["reason"], gap["count"], gap["unit"]) == ("no_listed_files", 1, "directory")
    assert "src/empty_cache/" in gap["how"]
    assert "[incomplete: 1 directory left out (no_listed_files)" in r["output"]
    # Files only: directories are not asked for, so nothing is missing.
    assert invoke("find", {"query": "cache"})["complete"] is True


def test_batch_prefilter_agrees_with_could_match_path_by_path() -> None:
    import random

    rng = random.Random(15)
    alphabet = "abcUtil_-./[]^\\ü"
    paths = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(3000)]
    paths += ["src/util.py", "UTIL", "u/t/i/l", "a^b", "x\\y", "[ab]"]
    for text in ("util", "ut", "u", "ÜTIL", "a^b", "x\\y", "[ab]", "src/ util", "zzz", "l i t u"):
        q = Query.parse(text)
        assert q.survivors(paths) == [p for p in paths if q.could_match(p.lower())], text
    # A name with a line break is one candidate (the batch scan would split it): each path is tested alone.
    broken = ["uti\nl", "u\ntil", "a/util", "x\ny"]
    assert Query.parse("util").survivors(broken) == ["uti\nl", "u\ntil", "a/util"]
    # "İ".lower() is two characters long: offsets would not line up, so each path is tested alone.
    odd = ["İstanbul/util.py", "util.py", "other"]
    assert Query.parse("util").survivors(odd) == ["İstanbul/util.py", "util.py"]


def test_directories_without_listed_files_are_counted_at_any_depth_as_rg_walks(world: Env, invoke) -> None:
    """Every directory rg's walk enters that holds no listed file is counted, however deep; one rg does
    not enter (ignored by Git or Perforce rules, hidden, a symlink) is not, as find leaves it out."""
    make_tree(
        world.project,
        {
            ".gitignore": "build/\n*.log\n",
            ".p4ignore": "p4out/\n",
            "src/a.txt": "x",
            "lib/widget.txt": "x",
            "src/only_logs/widget_logs/a.log": "x",  # ignored files only
            "build/widget_built/a.txt": "x",  # below an ignored directory
            "p4out/widget_p4/a.txt": "x",  # below a Perforce-ignored directory
        },
    )
    for rel in ("src/emptyparent/widget_dir", "src/widget_empty", "a/b/c/widget_deep", "src/.hid/widget_h"):
        (world.project / rel).mkdir(parents=True)
    os.symlink(world.project / "src" / "emptyparent", world.project / "widget_link")
    r = invoke("find", {"query": "widget", "kind": "mixed"})
    assert r["output"].splitlines()[0] == "lib/widget.txt"
    (gap,) = r["omitted"]
    assert (gap["reason"], gap["count"]) == ("no_listed_files", 4)
    assert "e.g. a/b/c/widget_deep/, src/emptyparent/widget_dir/, src/only_logs/widget_logs/;" in gap["how"]
    for query in ("build", "p4out", "hid", "link"):
        r = invoke("find", {"query": query, "kind": "directories"})
        assert (r["output"], r["complete"]) == ("[no matches]", True), query


def test_the_look_for_directories_without_listed_files_stops_at_the_deadline(world: Env) -> None:
    (world.project / "a" / "widget").mkdir(parents=True)
    ctx = world.context()
    try:
        args = (str(world.project), set(), set(), Query.parse("widget"), ctx.sandbox)
        assert find_mod._fileless_dirs(*args, deadline=float("inf")) == (["a/widget"], True)
        assert find_mod._fileless_dirs(*args, deadline=0.0) == ([], False)
    finally:
        ctx.close()


def test_names_that_are_not_utf8_are_counted_never_shown_lossily(world: Env, invoke) -> None:
    make_tree(world.project, {"goodname.txt": "", os.fsdecode(b"bad\xffname.txt"): ""})
    (world.project / os.fsdecode(b"name\xfe_dir")).mkdir()
    r = invoke("find", {"query": "name", "kind": "mixed"})
    assert [x["path"] for x in r["results"]] == ["goodname.txt"]
    gap = {o["reason"]: o for o in r["omitted"]}
    assert (gap["invalid_utf8_name"]["count"], gap["invalid_utf8_name"]["unit"]) == (1, "path")
    assert "bad\\xffname.txt" in gap["invalid_utf8_name"]["how"]
    assert "name\\xfe_dir/" in gap["no_listed_files"]["how"]
    assert "[incomplete: 1 path left out (invalid_utf8_name);" in r["output"]
    assert "\ufffd" not in r["output"]
    r.pop("results")
    assert not any("\udcff" in str(v) or "\udcfe" in str(v) for v in r.values())


def test_results_inside_the_working_directory_are_relative_when_the_path_is_above_it(world: Env) -> None:
    """Seed 002: cwd-relative for paths within the working directory, absolute for the others, one
    result at a time, also when `path` is a directory above the working directory."""
    import json

    (world.project / "sub").mkdir()
    (world.project / "other").mkdir()
    (world.project / "sub" / "lib.py").write_text("x\n")
    (world.project / "other" / "lib.rs").write_text("x\n")
    assert world.run("grant", "path", str(world.project)).code == 0
    done = world.tool("find", {"query": "lib", "path": str(world.project)}, cwd=world.project / "sub")
    assert done.code == 0, done.stderr
    got = sorted(r["path"] for r in json.loads(done.stdout)["results"])
    assert got == sorted(["lib.py", str(world.project / "other" / "lib.rs")])
