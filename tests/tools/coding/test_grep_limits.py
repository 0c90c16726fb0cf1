"""grep: every limit, every input error, ignore/hidden rules and sandbox denials."""

from __future__ import annotations

import os
import re
import time

import pytest
from search_fixture import FIXTURE, make_tree

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.grep import tool as grep_mod
from tests.conftest import Env, stall_rg, unreadable


def err(invoke, args: dict, **ctx) -> ToolError:
    with pytest.raises(ToolError) as e:
        invoke("grep", args, **ctx)
    return e.value


# ----- input validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"patterns": []}, "invalid_input"),
        ({"patterns": ["a"] * 9}, "invalid_input"),
        ({"patterns": "run"}, "invalid_input"),
        ({"patterns": [""]}, "invalid_pattern"),
        ({"patterns": ["ok", ""]}, "invalid_pattern"),
        ({"patterns": ["x" * 1025]}, "invalid_pattern"),
        ({"patterns": ["é" * 513]}, "invalid_pattern"),  # 1,026 bytes
        ({"patterns": ["a"], "limit": 0}, "invalid_input"),
        ({"patterns": ["a"], "offset": -1}, "invalid_input"),
        ({"patterns": ["a"], "context": -1}, "invalid_input"),
        ({"patterns": ["a"], "mode": "fancy"}, "invalid_input"),
        ({"patterns": ["a"], "pattern": "a"}, "invalid_input"),
        ({"patterns": ["a"], "limit": True}, "invalid_input"),
    ],
)
def test_invalid_input(world: Env, invoke, args: dict, code: str) -> None:
    assert err(invoke, args).code == code


def test_patterns_at_the_limits_are_accepted(world: Env, invoke) -> None:
    make_tree(world.project, {"a.txt": "x" * 1024 + "\n"})
    r = invoke("grep", {"patterns": ["x" * 1024] + [f"p{i}" for i in range(7)], "mode": "raw"})
    assert r["returned"] == 1 and len(r["matchers"]) == 8


@pytest.mark.parametrize("field", ["path", "mode", "limit", "context"])
def test_null_fields_are_refused(world: Env, invoke, field: str) -> None:
    # grep's schema publishes no null (its seed says nothing of null): leave a field out instead.
    make_tree(world.project, {"a.txt": "run\n"})
    with pytest.raises(ToolError) as e:
        invoke("grep", {"patterns": ["run"], field: None})
    assert e.value.code == "invalid_input" and f"{field} is null" in e.value.message


def test_limit_and_context_at_their_maximum(world: Env, invoke) -> None:
    make_tree(world.project, {"a.txt": "".join(f"hit {i}\n" for i in range(600))})
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw", "limit": 500, "context": 20})
    assert r["limit"] == 500 and r["context"] == 20 and r["returned"] == 500


# ----- paths and the sandbox -----------------------------------------------------------------


def test_missing_path_is_not_found(world: Env, invoke) -> None:
    assert err(invoke, {"patterns": ["x"], "path": "nope"}).code == "not_found"


def test_relative_paths_cannot_leave_the_working_directory(world: Env, invoke) -> None:
    (world.project / "sub").mkdir()
    # Outside every root too: the cwd rule answers first, since no grant would make a relative path legal.
    assert err(invoke, {"patterns": ["x"], "path": "sub/../../"}).code == "outside_cwd"
    # Inside a granted root but outside the working directory: relative paths still cannot go there.
    make_tree(world.home, {"granted/a.txt": "x\n"})
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nallowed_roots = ["{world.home / "granted"}"]\n'
    )
    e = err(invoke, {"patterns": ["x"], "path": "../granted"})
    assert e.code == "outside_cwd" and "leaves the working directory" in e.message
    assert invoke("grep", {"patterns": ["x"], "path": str(world.home / "granted")})["returned"] == 1


def test_paths_outside_roots_and_protected_paths_are_refused(world: Env, invoke) -> None:
    (world.home / "outside").mkdir()
    (world.home / "outside" / "s.txt").write_text("SECRET\n")
    (world.home / ".ssh").mkdir()
    (world.home / ".ssh" / "id_rsa").write_text("SECRET\n")
    assert err(invoke, {"patterns": ["SECRET"], "path": str(world.home / "outside")}).code == "outside_root"
    assert err(invoke, {"patterns": ["SECRET"], "path": str(world.home / ".ssh" / "id_rsa")}).code == (
        "protected_path"
    )
    assert err(invoke, {"patterns": ["SECRET"], "path": "~/.ssh"}).code == "protected_path"


def test_absolute_paths_outside_cwd_follow_the_capability(world: Env, invoke) -> None:
    (world.project / "in").mkdir()
    (world.project / "in" / "a.txt").write_text("hit\n")
    grant = world.home / "granted"
    grant.mkdir()
    (grant / "b.txt").write_text("hit\n")
    world.fermix_home.mkdir()
    cfg = world.fermix_home / "config.toml"
    cfg.write_text(f'[sandbox]\nallowed_roots = ["{grant}"]\n')
    r = invoke("grep", {"patterns": ["hit"], "path": str(grant), "mode": "raw"})
    assert r["output"] == f"{grant}/b.txt:1:hit"  # outside cwd: shown absolute
    cfg.write_text(
        f'[sandbox]\nallowed_roots = ["{grant}"]\n[capabilities.tools.grep]\nabsolute_paths = false\n'
    )
    e = err(invoke, {"patterns": ["hit"], "path": str(grant)})
    assert e.code == "absolute_path_denied" and "capabilities.tools.grep.absolute_paths" in e.message
    # An absolute path inside the working directory is still fine.
    r = invoke("grep", {"patterns": ["hit"], "path": str(world.project / "in"), "mode": "raw"})
    assert r["output"] == "in/a.txt:1:hit"


def test_blocked_roots_inside_the_tree_are_pruned(world: Env, invoke) -> None:
    make_tree(world.project, {"ok/a.txt": "SECRET ok\n", "blocked/b.txt": "SECRET blocked\n"})
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(
        f'[sandbox]\nblocked_roots = ["{world.project / "blocked"}"]\n'
    )
    r = invoke("grep", {"patterns": ["SECRET"], "mode": "raw"})
    assert r["output"] == "ok/a.txt:1:SECRET ok"
    # The blocked root is excluded before rg reads it (a glob), so there is nothing to count after.
    assert r["skipped"]["denied"] == 0 and r["complete"] is True


def test_symlinks_out_of_the_roots_are_not_followed(world: Env, invoke) -> None:
    (world.home / "outside").mkdir()
    (world.home / "outside" / "s.txt").write_text("SECRET\n")
    os.symlink(world.home / "outside" / "s.txt", world.project / "link.txt")
    os.symlink(world.home / "outside", world.project / "linkdir")
    (world.project / "in.txt").write_text("SECRET inside\n")
    os.symlink(world.project / "in.txt", world.project / "alias.txt")
    r = invoke("grep", {"patterns": ["SECRET"], "mode": "raw"})
    # rg follows no symlink while walking, in the tree or out of it (as rg itself does).
    assert r["output"] == "in.txt:1:SECRET inside"
    assert r["skipped"]["denied"] == 0


# ----- filters ---------------------------------------------------------------------------------


def test_hidden_ignored_target_and_git_are_skipped(world: Env, invoke) -> None:
    make_tree(world.project, FIXTURE)
    make_tree(world.project, {".git/config": "run\n", "sub/target/x.rs": "run\n", "sub/targets.rs": "run\n"})
    r = invoke("grep", {"patterns": ["{}"], "mode": "raw"})
    # build/ (.gitignore), vendor/ (.ignore), target/, .hidden/ hold `fn run() {}`; all skipped.
    assert r["output"].split("\n")[0] == "[no matches]" and r["primary_total"] == 0
    r = invoke("grep", {"patterns": ["^run$"], "mode": "raw"})
    # debug.log (.gitignore), scratch.tmp (.p4ignore) and .git/config are skipped too, by design; the
    # binary bin/blob.dat is not searched either, and that one the answer reports.
    assert r["output"].split("\n\n") == [
        "sub/targets.rs:1:run",
        "[incomplete: 1 file left out (binary); 1 holds binary data from the start (a NUL byte) and was "
        "not searched; to search them as text run `rg -a PATTERN PATH` in the shell (e.g. bin/blob.dat)]",
    ]
    assert r["complete"] is False and [o["reason"] for o in r["omitted"]] == ["binary"]


def test_an_explicit_file_bypasses_hidden_and_ignore_filters(world: Env, invoke) -> None:
    make_tree(world.project, FIXTURE)
    for path in (".hidden/h.rs", "build/out.rs", "vendor/x.rs", "debug.log", "scratch.tmp"):
        r = invoke("grep", {"patterns": ["run"], "path": path, "mode": "raw"})
        assert r["returned"] == 1 and r["output"].startswith(f"{path}:1:"), path


def test_ancestor_gitignore_and_negation(world: Env, invoke) -> None:
    make_tree(
        world.project,
        {
            ".git/HEAD": "x\n",
            ".gitignore": "*.gen\n!keep.gen\n",
            "sub/a.gen": "hit\n",
            "sub/keep.gen": "hit\n",
            "sub/deeper/.gitignore": "!*.gen\n",
            "sub/deeper/b.gen": "hit\n",
        },
    )
    r = invoke("grep", {"patterns": ["hit"], "path": "sub", "mode": "raw"})
    assert r["output"] == "sub/deeper/b.gen:1:hit\nsub/keep.gen:1:hit"


def test_perforce_ignore_settings_are_resolved(world: Env, invoke, monkeypatch) -> None:
    make_tree(
        world.project,
        {"a.bak": "hit\n", "b.old": "hit\n", "c.txt": "hit\n", "rules.p4": "*.bak\n", ".p4root": "hit\n"},
    )
    for var in ("P4IGNORE", "P4CONFIG", "P4ENVIRO"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("P4IGNORE", "rules.p4")
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw"})
    assert r["output"] == "b.old:1:hit\nc.txt:1:hit"
    # A P4CONFIG file found upwards wins over the environment, and is itself never searched.
    (world.project / "p4.cfg").write_text("P4IGNORE=other.p4\nhit\n")
    (world.project / "other.p4").write_text("*.old\n")
    monkeypatch.setenv("P4CONFIG", "p4.cfg")
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw"})
    assert r["output"] == "a.bak:1:hit\nc.txt:1:hit"


# ----- file and call limits ----------------------------------------------------------------------


def test_binary_and_invalid_utf8_files_are_skipped_and_counted(world: Env, invoke) -> None:
    head = b"hit\n" + b"x" * 8000 + b"\x00"  # a NUL in the first block rg reads: binary, skipped
    late = b"hit\n" + b"x" * 200_000 + b"\x00hit\n"  # searched up to its NUL, then left
    make_tree(
        world.project,
        {"a.bin": head, "b.txt": late, "c.txt": b"hit \xc3\x28\n", "d.txt": b"no\xff\n", "e.txt": b"hit\n"},
    )
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw"})
    assert r["output"].split("\n\n")[0] == "b.txt:1:hit\ne.txt:1:hit"
    # a.bin is not searched at all (rg's --json never mentions it); b.txt is searched up to its NUL.
    assert r["skipped"]["binary"] == 2 and r["skipped"]["invalid_utf8"] == 1
    assert r["complete"] is False
    assert [(o["reason"], o["count"], o["unit"]) for o in r["omitted"]] == [
        ("binary", 2, "file"),
        ("invalid_utf8", 1, "line"),
    ]
    assert (
        "[incomplete: 2 files left out (binary); 1 holds binary data from the start (a NUL byte) and was "
        "not searched; 1 was searched only up to a NUL byte after the first matches; to search them as "
        "text run `rg -a PATTERN PATH` in the shell (e.g. a.bin, b.txt)]"
    ) in r["output"]


def test_a_file_past_the_old_4_mib_cap_is_searched_to_its_end(world: Env, invoke) -> None:
    # Caps are on output, not on what is searched: both ends of a 6 MiB file are found.
    body = b"needle first\n" + (b"x" * 99 + b"\n") * 60_000 + b"needle last\n"
    (world.project / "big.txt").write_bytes(body)
    r = invoke("grep", {"patterns": ["needle"], "mode": "raw"})
    assert [h["line"] for h in r["hits"]] == [1, 60_002]
    assert r["scan_complete"] is True and r["complete"] is True and r["truncated"] is False
    assert r["bytes_scanned"] == len(body)


def test_the_deadline_kills_rg_and_the_answer_says_so(world: Env, invoke, monkeypatch, tmp_path) -> None:
    # rg behind a wrapper that stalls before it starts: the deadline kills the whole process group.
    stall_rg(monkeypatch, tmp_path)  # the real rg, after a stall only the deadline's kill ends
    monkeypatch.setattr(grep_mod, "DEADLINE_S", 0.3)
    make_tree(world.project, {"a.txt": "hit\n"})
    start = time.monotonic()
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw"})
    assert time.monotonic() - start < 5
    assert r["scan_stop"] == "deadline" and "deadline" in r["truncation_reasons"]
    assert r["complete"] is False and r["has_more"] is None and r["total_exact"] is False
    assert "[incomplete: an unknown number of files left out (timeout)" in r["output"]


def test_per_file_cap_in_ranked_mode(world: Env, invoke) -> None:
    make_tree(world.project, {"many.py": "".join(f"x = hit{i}\n" for i in range(8)), "one.py": "hit\n"})
    r = invoke("grep", {"patterns": ["hit"]})
    assert r["output"].splitlines()[:7] == [
        "grouped_v1",
        "## many.py",
        "1:[match] x = hit0",
        "2:[match] x = hit1",
        "3:[match] x = hit2",
        "4:[match] x = hit3",
        "5:[match] x = hit4",
    ]
    assert r["per_file"] == {"many.py": {"hits": 8, "shown": 5, "omitted": 3}}
    assert r["truncation_reasons"] == ["per_file_cap"] and r["omitted_total"] == 3
    assert (r["primary_total"], r["hits_total"]) == (6, 9)
    assert "[3 more hits beyond 5 per file are not listed" in r["output"]
    raw = invoke("grep", {"patterns": ["hit"], "mode": "raw"})
    assert raw["returned"] == 9 and raw["per_file"] == {}  # no per-file cap in raw mode


def test_definitions_outrank_earlier_plain_matches(world: Env, invoke) -> None:
    body = "".join(f"use_it(thing{i})\n" for i in range(6)) + "def thing():\n    pass\n"
    make_tree(world.project, {"m.py": body})
    r = invoke("grep", {"patterns": ["thing"]})
    assert r["output"].splitlines()[1:] == [
        "## m.py",
        "1:[match] use_it(thing0)",
        "2:[match] use_it(thing1)",
        "3:[match] use_it(thing2)",
        "4:[match] use_it(thing3)",
        "--",
        "7:[def-like] def thing():",
        "",
        "[2 more hits beyond 5 per file are not listed; narrow path or use mode=raw]",
    ]


def test_output_cap_stops_at_a_whole_record(world: Env, invoke) -> None:
    make_tree(world.project, {"long.txt": "".join(f"hit {i} " + "z" * 900 + "\n" for i in range(500))})
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw", "limit": 500})
    assert r["truncation_reasons"] == ["output_cap"] and r["has_more"] is True
    assert len(r["output"].encode()) <= 65_536
    rows = r["output"].split("\n\n")[0].splitlines()
    assert len(rows) == r["returned"] and r["next_offset"] == r["returned"] < 500
    assert all(row.startswith("long.txt:") and row.endswith("z") for row in rows)
    assert r["output"].endswith(f"[output capped at 64 KiB; use offset={r['returned']}]")
    nxt = invoke("grep", {"patterns": ["hit"], "mode": "raw", "offset": r["next_offset"], "limit": 1})
    assert nxt["hits"][0]["line"] == r["returned"] + 1


def test_long_lines_are_cut_at_1000_characters(world: Env, invoke) -> None:
    make_tree(world.project, {"a.txt": "hit" + "é" * 1200 + "\n"})
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw"})
    assert r["output"] == "a.txt:1:hit" + "é" * 997 + "…"
    assert r["hits"][0]["text"] == "hit" + "é" * 1200  # the JSON keeps the whole line


def test_crlf_lines_and_files_without_a_final_newline(world: Env, invoke) -> None:
    make_tree(world.project, {"a.txt": b"one\r\nhit two\r\nthree hit"})
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw", "context": 1})
    assert r["output"] == "a.txt-1-one\na.txt:2:hit two\na.txt:3:three hit"


def test_import_and_definition_labels(world: Env, invoke) -> None:
    src = (
        "import thing\n"
        "from thing import x\n"
        "const thing = require('thing')\n"
        "export { a } from 'thing'\n"
        "#include <thing.h>\n"
        "pub(crate) async fn thing() {}\n"
        "thing := func() {}\n"
        "const thing2 = (a) => a\n"
        "call(thing)\n"
    )
    make_tree(world.project, {"m.txt": src})
    r = invoke("grep", {"patterns": ["thing"], "mode": "ranked", "limit": 50})
    labels = {h["line"]: h["label"] for h in r["hits"]}
    # Five kept: the three definitions, the one plain match, then the first import.
    assert labels == {6: "def-like", 7: "def-like", 8: "def-like", 9: "match", 1: "import"}


def test_type_and_glob_filters_and_their_errors(world: Env, invoke) -> None:
    make_tree(world.project, {"a.py": "hit\n", "b.rs": "hit\n", "docs/c.md": "hit\n"})
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw", "type": ["py", "md"]})
    assert r["output"] == "a.py:1:hit\ndocs/c.md:1:hit"
    r = invoke("grep", {"patterns": ["hit"], "mode": "raw", "glob": ["!docs/**"]})
    assert r["output"] == "a.py:1:hit\nb.rs:1:hit"
    r = invoke("grep", {"patterns": ["HIT"], "mode": "raw", "case_insensitive": True, "glob": ["*.rs"]})
    assert r["output"] == "b.rs:1:hit" and r["case_insensitive"] is True
    assert err(invoke, {"patterns": ["hit"], "type": ["nosuch"]}).code == "invalid_type"
    assert err(invoke, {"patterns": ["hit"], "glob": ["["]}).code == "invalid_glob"


def test_per_file_errors_are_reported_and_fatal_ones_raise() -> None:
    # The machine's tests run as root, who reads every file, so rg's stderr is given here as rg writes it.
    from fermix_cli.core.search.report import unreadable_omission
    from fermix_cli.core.search.ripgrep import PatternError, _raise_for

    per_file = "rg: ./locked.txt: Permission denied (os error 13)\nrg: ./glob-dir/x: Permission denied (os error 13)\n"
    _raise_for(per_file)  # exit 2 with only per-file errors: the answer reports them
    _raise_for("rg: one.txt: Permission denied (os error 13)\n", "one.txt")
    o = unreadable_omission(per_file.splitlines())
    assert o is not None and (o.reason, o.count, o.unit) == ("unreadable", 2, "path")
    assert "./locked.txt: Permission denied" in o.how
    with pytest.raises(PatternError):
        _raise_for("rg: regex parse error:\n    (\n    ^\nerror: unclosed group\n")
    with pytest.raises(ToolError) as e:
        _raise_for(per_file + "rg: error parsing glob '[': unclosed character class; missing ']'\n")
    assert e.value.code == "invalid_glob"
    with pytest.raises(ToolError) as e:
        _raise_for("rg: something else went wrong\n")
    assert e.value.code == "search_failed"


def test_what_rg_could_not_read_is_reported_by_every_search_tool(
    world: Env, invoke, monkeypatch, tmp_path
) -> None:
    """The real rg, with root's read override dropped: a directory it cannot list and a file it cannot
    read make every search incomplete, named, instead of a quiet "no more matches"."""
    make_tree(world.project, {"ok.txt": "needle\n", "secret.txt": "needle\n", "locked/in.txt": "needle\n"})
    with unreadable(monkeypatch, "rg", tmp_path, world.project / "secret.txt", world.project / "locked"):
        results = {
            "grep": invoke("grep", {"patterns": ["needle"]}),
            "content_search": invoke("content_search", {"pattern": "needle"}),
            "glob_search": invoke("glob_search", {"pattern": "**/*.txt"}),
            "find": invoke("find", {"query": "txt"}),
        }
    denied = "Permission denied (os error 13)"
    for tool, r in results.items():
        assert r["complete"] is False, tool
        (o,) = r["omitted"]
        assert o["reason"] == "unreadable" and o["unit"] == "path", tool
        assert f"./locked: {denied}" in o["how"], tool
        # Reading a file's content fails only for the searches; the listings never open files.
        assert o["count"] == (2 if tool in ("grep", "content_search") else 1), tool
    assert "[incomplete: 2 paths left out (unreadable)" in results["grep"]["output"]
    assert [m["path"] for m in results["content_search"]["matches"]] == [str(world.project / "ok.txt")]
    assert "[incomplete: 1 path left out (unreadable)" in results["find"]["output"]


# ----- names, encodings and pages the audit found wrong ----------------------------------------


@pytest.mark.parametrize("mode", ["ranked", "raw"])
def test_a_file_name_that_is_not_utf8_is_left_out_and_named_escaped(world: Env, invoke, mode: str) -> None:
    """As every search tool does: no answer can carry such a name (U+FFFD would name a file that does
    not exist; a raw byte makes the JSON invalid UTF-8), so its matches are counted, and it is named."""
    (world.project / os.fsdecode(b"bad\xffname.txt")).write_bytes(b"needle\nneedle again\n")
    (world.project / "good.txt").write_text("needle\n")
    r = invoke("grep", {"patterns": ["needle"], "mode": mode})
    assert [h["path"] for h in r["hits"]] == ["good.txt"]
    assert r["output"].encode("utf-8") and r["complete"] is False
    assert [(o["reason"], o["count"], o["unit"]) for o in r["omitted"]] == [("invalid_utf8_name", 2, "line")]
    assert (
        "bad\\xffname.txt" in r["omitted"][0]["how"]
        and "[incomplete: 2 lines left out (invalid_utf8_name)" in r["output"]
    )
    # A search that does not meet that file says nothing of it.
    r = invoke("grep", {"patterns": ["needle"], "mode": mode, "path": "good.txt"})
    assert r["complete"] is True and r["omitted"] == []


def _rg_lines(cwd, *args: str) -> list[str]:
    """The real rg's text output (sorted by path, so in grep's raw order), one row per line."""
    import subprocess

    from fermix_cli.core.search import engines

    done = subprocess.run(
        [engines.rg(), "--no-config", "--sort", "path", "--no-heading", "-n", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    return done.stdout.decode("utf-8", "replace").splitlines()


def test_lines_that_are_not_utf8_neither_shift_pages_nor_change_totals(world: Env, invoke) -> None:
    make_tree(
        world.project,
        {"a.txt": b"needle \xff 1\nneedle \xff 2\nneedle good 3\n", "b.txt": "needle b\n"},
    )
    pages = [
        invoke("grep", {"patterns": ["needle"], "mode": "raw", "limit": 1, "offset": o}) for o in (0, 1, 2)
    ]
    # rg's valid matches, in path order: the lines that are not UTF-8 are the ones left out.
    valid = [ln for ln in _rg_lines(world.project, "needle") if "\ufffd" not in ln]
    assert valid == ["a.txt:3:needle good 3", "b.txt:1:needle b"]
    assert [p["output"].split("\n\n")[0] for p in pages[:2]] == valid
    assert [(p["returned"], p["primary_total"], p["has_more"], p["next_offset"]) for p in pages] == [
        (1, 2, True, 1),
        (1, 2, False, None),
        (0, 2, False, None),
    ]
    assert all(p["omitted"][-1]["reason"] == "invalid_utf8" and p["omitted"][-1]["count"] == 2 for p in pages)
    # Invalid lines only past the lines read for the first page: counted there too.
    (world.project / "a.txt").write_bytes(b"needle 1\nneedle 2\nneedle \xff 3\n")
    pages = [
        invoke("grep", {"patterns": ["needle"], "mode": "raw", "limit": 1, "offset": o}) for o in (0, 1, 2)
    ]
    assert [(p["returned"], p["primary_total"], p["has_more"]) for p in pages] == [
        (1, 3, True),
        (1, 3, True),
        (1, 3, False),
    ]
    assert [[(o["reason"], o["count"]) for o in p["omitted"]][-1] for p in pages] == [("invalid_utf8", 1)] * 3


def test_ranked_mode_counts_every_line_past_those_it_labels(world: Env, invoke, monkeypatch) -> None:
    monkeypatch.setattr(grep_mod, "RANKED_KEEP", 2)
    make_tree(
        world.project,
        {
            "a.txt": b"needle \xff 1\nneedle \xff 2\nneedle 3\nneedle \xff 4\nneedle 5\n",
            "b.txt": "needle b\n",
        },
    )
    r = invoke("grep", {"patterns": ["needle"]})
    assert [(h["path"], h["line"]) for h in r["hits"]] == [("a.txt", 3), ("a.txt", 5), ("b.txt", 1)]
    assert (r["primary_total"], r["hits_total"], r["files_matched"]) == (3, 3, 2)
    assert r["skipped"]["invalid_utf8"] == 1
    assert [(o["reason"], o["count"]) for o in r["omitted"]] == [("invalid_utf8", 3)]


def test_context_in_files_with_a_bom_agrees_with_rg(world: Env, invoke) -> None:
    # rg drops a UTF-8 BOM and transcodes UTF-16 (its offsets point into what it read, not the file).
    make_tree(
        world.project,
        {
            "bom.txt": b"\xef\xbb\xbfneedle 0\naa\nbb\nneedle\ncc\n",
            "u16.txt": "one\ntwo\nneedle\nfour\n".encode("utf-16"),
            "u16be.txt": b"\xfe\xff" + "one\r\nneedle\r\nthree".encode("utf-16-be"),
        },
    )
    r = invoke("grep", {"patterns": ["needle"], "mode": "raw", "context": 1})
    assert r["output"].splitlines() == _rg_lines(world.project, "-C1", "needle")
    assert r["output"].startswith("bom.txt:1:needle 0\nbom.txt-2-aa\nbom.txt-3-bb\nbom.txt:4:needle\n")
    ranked = invoke("grep", {"patterns": ["needle"], "context": 2, "path": "u16.txt"})
    assert ranked["output"] == "grouped_v1\n## u16.txt\n1-one\n2-two\n3:[match] needle\n4-four"


@pytest.mark.parametrize("mode", ["ranked", "raw"])
def test_a_hit_whose_context_passes_the_output_cap_is_cut_and_paging_moves_on(
    world: Env, invoke, mode: str
) -> None:
    line = "漢" * 1200
    body = "\n".join([line] * 20 + ["needle " + line] + [line] * 20 + ["needle two"]) + "\n"
    (world.project / "f.txt").write_text(body)
    first = invoke("grep", {"patterns": ["needle"], "context": 20, "mode": mode})
    assert len(first["output"].encode("utf-8")) <= 65_536
    assert [h["line"] for h in first["hits"]] == [21]
    assert (first["returned"], first["next_offset"], first["has_more"]) == (1, 2 - 1, True)
    shown = {int(n) for n in re.findall(r"^(?:f\.txt[-:])?(\d+)[-:]", first["output"], re.M)}
    assert 21 in shown and min(shown) > 1 and max(shown) < 41  # context trimmed around the hit, evenly
    assert shown == set(range(42 - max(shown), max(shown) + 1))
    cut = [o for o in first["omitted"] if o["reason"] == "context_cut"]
    assert cut == [
        {
            "reason": "context_cut",
            "count": 40 - (len(shown) - 1),
            "unit": "line",
            "how": f"the hit at f.txt:21 with its context passes the 64 KiB output cap, so {max(shown) - 21} "
            "of the 20 lines asked for on each side are shown; read the file around that line, or ask for "
            "less context",
        }
    ]
    assert first["complete"] is False and "[incomplete: " in first["output"]
    second = invoke("grep", {"patterns": ["needle"], "context": 20, "mode": mode, "offset": 1})
    assert [h["line"] for h in second["hits"]] == [42] and second["has_more"] is False
    assert second["complete"] is True


def test_a_special_file_named_as_path_is_skipped_at_once(world: Env, invoke) -> None:
    os.mkfifo(world.project / "pipe")
    start = time.monotonic()
    r = invoke("grep", {"patterns": ["hit"], "path": "pipe", "mode": "raw"})
    assert time.monotonic() - start < 5  # not the 10 s deadline
    assert r["scan_complete"] is True and r["scan_stop"] is None and r["returned"] == 0
    assert r["skipped"]["special"] == 1 and r["complete"] is False
    assert r["output"] == (
        "[no matches]\n[incomplete: 1 file left out (special); pipe is a FIFO, not a regular file, so "
        "it was not read (grep reads regular files only: a FIFO or device can block or never end)]"
    )


def test_a_file_with_binary_data_after_its_matches_counts_the_same_on_every_page(world: Env, invoke) -> None:
    """A walked file that rg stopped reading at a NUL byte past its first matches, with a matching line
    that is not UTF-8: counting its lines again must stop where the walk stopped (rg reads a file named
    to it past the NUL), so the total does not depend on the page size."""
    lines = []
    for i in range(1, 6001):
        if i == 4:
            lines.append(b"hit \xff bad line")
        elif i == 5000:
            lines.append(b"hit before nul \x00 here")
        else:
            lines.append(b"hit line %05d padpadpadpad" % i)
    (world.project / "mix.txt").write_bytes(b"\n".join(lines) + b"\n")
    totals, seen, offset = set(), [], 0
    while True:
        r = invoke("grep", {"patterns": ["hit"], "mode": "raw", "limit": 500, "offset": offset})
        totals.add(r["primary_total"])
        seen += [h["line"] for h in r["hits"]]
        if not r["has_more"]:
            break
        offset = r["next_offset"]
    assert len(totals) == 1 and len(seen) == len(set(seen)) == totals.pop()
    ranked = invoke("grep", {"patterns": ["hit"]})
    assert ranked["hits_total"] == len(seen)
    assert {o["reason"] for o in ranked["omitted"]} >= {"binary", "invalid_utf8"}


def test_the_whole_file_utf8_check_across_chunk_boundaries(tmp_path) -> None:
    """ASCII chunks are skipped by a byte scan, so the check must still see a character split across
    two 1 MiB reads, and a lead byte followed by ASCII in the next read."""
    from fermix_cli.tools.coding.grep.searcher import is_utf8_file

    m = 1 << 20
    cases = {
        "ascii": (b"a" * (3 * m), True),
        "split": (b"a" * (m - 1) + "é".encode() + b"b" * 100, True),
        "lead-then-ascii": (b"a" * (m - 1) + b"\xc3" + b"a" * 10, False),
        "cut-at-the-end": (b"a" * m + b"\xe2\x82", False),
        "bad-in-the-middle": (b"a" * m + b"x\xffy" + b"a" * m, False),
    }
    for name, (data, valid) in cases.items():
        (tmp_path / name).write_bytes(data)
        assert is_utf8_file(str(tmp_path / name)) is valid, name


def test_notes_naming_long_paths_keep_the_output_within_its_cap(world: Env, invoke) -> None:
    """A page filled to the output cap, then notes naming paths of some 500 bytes: the output stays
    within 65,536 UTF-8 bytes, each note cut to a fair share (the page's `offset=` kept) and a last line
    saying the JSON holds them whole."""
    deep = world.project / ("d" * 250)
    deep.mkdir()
    for k in range(3):
        (deep / (("b" * 240) + f"{k}.bin")).write_bytes(b"foo\0")
    for j in range(10):
        (world.project / f"f{j}.txt").write_text(("foo " + "é" * 400 + "\n") * 10)
    r = invoke("grep", {"patterns": ["foo"], "mode": "raw", "limit": 500})
    assert len(r["output"].encode("utf-8")) <= 65_536
    assert f"[output capped at 64 KiB; use offset={r['next_offset']}]" in r["output"]
    assert r["output"].endswith(
        "[notes cut to fit the output cap; `omitted` and `warnings` in the JSON hold them whole]"
    )
    binary = next(o for o in r["omitted"] if o["reason"] == "binary")
    assert binary["count"] == 3 and ("b" * 240) + "0.bin" in binary["how"]  # whole in the JSON


@pytest.mark.parametrize("context", [0, 1, 3])
def test_a_deep_raw_page_decodes_only_what_it_shows_and_answers_the_same(
    world: Env, invoke, monkeypatch: pytest.MonkeyPatch, context: int
) -> None:
    """A raw page deep in one big file skips the lines before it undecoded (900,000 lines took 20 s and
    2 GB): every page, with context, is what decoding everything gives."""
    lines = [f"foo {i}" if i % 7 else f"bar {i}" for i in range(3000)]
    (world.project / "big.txt").write_text("\n".join(lines) + "\n")
    (world.project / "zz.txt").write_text("foo last\n")
    pages = {}
    for offset in (0, 1, 5, 1500, 2560, 2567, 2571, 2575):  # 2567: a page that spans both files
        pages[offset] = invoke(
            "grep", {"patterns": ["foo"], "mode": "raw", "offset": offset, "limit": 7, "context": context}
        )
    monkeypatch.setattr(grep_mod, "_skip_before_page", lambda found, offset, n_ctx: 0)
    for offset, got in pages.items():
        want = invoke(
            "grep", {"patterns": ["foo"], "mode": "raw", "offset": offset, "limit": 7, "context": context}
        )
        assert got == want, offset
    assert pages[2571]["hits"][-1]["path"] == "zz.txt"  # the last page reaches the next file


def test_context_left_out_past_the_read_cap_is_counted_not_silent(
    world: Env, invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Context lines are not looked for past CONTEXT_READ_CAP (4 MiB; 64 KiB here) from a hit: lines
    beyond a longer neighbour are not shown, and the answer says how many and where."""
    from fermix_cli.tools.coding.grep import searcher

    monkeypatch.setattr(searcher, "CONTEXT_READ_CAP", 1 << 16)
    (world.project / "long.txt").write_text(
        "first\n" + "x" * 200_000 + "\nfoo\n" + "y" * 200_000 + "\nlast\n"
    )
    (world.project / "ok.txt").write_text("a\nfoo\nb\n")
    r = invoke("grep", {"patterns": ["foo"], "mode": "raw", "context": 2})
    assert r["output"].startswith("long.txt:3:foo\n--\nok.txt-1-a\nok.txt:2:foo\nok.txt-3-b\n")
    (o,) = [o for o in r["omitted"] if o["reason"] == "context_short"]
    assert (o["count"], o["unit"]) == (4, "line") and "long.txt:3" in o["how"] and r["complete"] is False
    r = invoke("grep", {"patterns": ["foo"], "mode": "raw", "context": 2, "path": "ok.txt"})
    assert r["complete"] is True  # short files near their ends are no omission
