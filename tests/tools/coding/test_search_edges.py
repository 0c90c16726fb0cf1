"""The search tools (grep, content_search, glob_search, find, list_files, ast_grep) at the edges the
audit of the search contract found: bad ignore rules, catch-all globs, FIFOs, unreadable roots and
file names with control characters."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from search_fixture import make_tree

from tests.conftest import Env, Result

# ----- a line of an ignore file that rg cannot parse ---------------------------------------------


def test_a_bad_ignore_rule_is_a_warning_in_every_search_tool(world: Env, invoke) -> None:
    """rg warns about a line it cannot parse and searches without that rule (as `rg` itself does): the
    answer is whole and says which line to fix, whether the file is in a parent of the root (where rg
    exits 2) or inside it, and the other rules of that file still apply."""
    (world.home / ".gitignore").write_text("a[\n")  # a parent of the search root
    make_tree(
        world.project,
        {
            ".ignore": "b{\nskipped.txt\n",
            "f.txt": "needle\n",
            "skipped.txt": "needle\n",
            "sub/g.py": "needle()\n",
        },
    )
    results = {
        "grep": invoke("grep", {"patterns": ["needle"], "mode": "raw"}),
        "content_search": invoke("content_search", {"pattern": "needle"}),
        "glob_search": invoke("glob_search", {"pattern": "**/*"}),
        "find": invoke("find", {"query": "g"}),
    }
    assert results["grep"]["output"].split("\n\n")[0] == "f.txt:1:needle\nsub/g.py:1:needle()"
    assert [m["path"] for m in results["content_search"]["matches"]] == [
        str(world.project / "f.txt"),
        str(world.project / "sub/g.py"),
    ]
    assert results["glob_search"]["paths"] == [
        str(world.project / ".ignore"),
        str(world.project / "f.txt"),
        str(world.project / "sub/g.py"),
    ]
    assert [r["path"] for r in results["find"]["results"]] == ["sub/g.py"]
    for tool, r in results.items():
        assert r["complete"] is True and r["omitted"] == [], tool
        warnings = r["warnings"]
        assert [(w["reason"], w["line"]) for w in warnings] == [("bad_ignore_rule", 1)] * 2, tool
        assert warnings[0]["path"] == str(world.home / ".gitignore"), tool
        assert warnings[1]["path"].endswith(".ignore"), tool
        assert (
            "error parsing glob 'a['" in warnings[0]["message"] and "fix the line" in warnings[0]["message"]
        )
    for tool in ("grep", "find"):
        out = results[tool]["output"]
        assert (
            f"[warning: line 1 of {world.home / '.gitignore'} does not parse (error parsing glob 'a['" in out
        )
        assert "[warning: line 1 of .ignore does not parse (error parsing glob 'b{'" in out, tool
    # ast_grep, search and outline alike, lists its files with rg: the same warnings, in JSON and text.
    for args in ({"pattern": "needle()", "language": "python"}, {"operation": "outline"}):
        r = invoke("ast_grep", args)
        if "pattern" in args:
            assert [m["path"] for m in r["matches"]] == ["sub/g.py"]
        assert r["complete"] is True and r["omitted"] == [], args
        assert r["warnings"] == results["find"]["warnings"], args
        assert r["output"].endswith(
            "\n\n" + "\n".join(f"[warning: {w['message']}]" for w in results["find"]["warnings"])
        ), args


def test_bad_ignore_rules_in_the_text_of_glob_and_content_search(world: Env) -> None:
    (world.home / ".gitignore").write_text("a[\n")
    make_tree(world.project, {"f.txt": "needle\n"})
    for tool, args in (("content_search", {"pattern": "needle"}), ("glob_search", {"pattern": "*.txt"})):
        done = world.tool(tool, args, "--text")
        assert done.code == 0, done.stderr
        assert done.stdout.splitlines()[1].startswith(
            f"[warning: line 1 of {world.home / '.gitignore'} does not parse (error parsing glob 'a['"
        ), tool


def test_rg_messages_about_ignore_files_are_read_as_warnings() -> None:
    from fermix_cli.core.search.ripgrep import ignore_file_warnings

    # rg writes the bad lines of one directory's ignore files as one message, a line each; a name with
    # a line break spans two lines; anything else stays rg's message.
    msgs = [
        "rg: ./.ignore: line 1: error parsing glob 'b{': unclosed alternate group; missing '}'\n"
        "./.ignore: line 2: error parsing glob '\\': dangling '\\'\n"
        "./.gitignore: line 1: error parsing glob 'a[': unclosed character class; missing ']'",
        "rg: ./we\nird/.gitignore: line 3: error parsing glob '[z': unclosed character class; missing ']'",
        "rg: /up/.gitignore: line 1: error parsing glob 'a[': unclosed character class; missing ']'",
        "rg: ./locked: Permission denied (os error 13)",
    ]
    bad, rest = ignore_file_warnings(msgs, "/root")
    assert [(b.path, b.line) for b in bad] == [
        ("/root/.ignore", 1),
        ("/root/.ignore", 2),
        ("/root/.gitignore", 1),
        ("/root/we\nird/.gitignore", 3),
        ("/up/.gitignore", 1),
    ]
    assert bad[0].error == "error parsing glob 'b{': unclosed alternate group; missing '}'"
    assert rest == ["rg: ./locked: Permission denied (os error 13)"]
    # The same rule named twice (rg reads a directory's rules for each path it is given) is one warning.
    assert len(ignore_file_warnings([msgs[2], msgs[2]], "/root")[0]) == 1


def test_many_bad_ignore_rules_are_listed_up_to_a_cap(world: Env, invoke) -> None:
    make_tree(world.project, {".gitignore": "".join(f"x{i}[\n" for i in range(25)), "f.txt": "needle\n"})
    r = invoke("grep", {"patterns": ["needle"]})
    assert r["complete"] is True and len(r["warnings"]) == 20
    assert r["warnings"][-1]["message"].endswith("(5 more bad lines of ignore files are not listed)")
    assert r["warnings"][-1]["more"] == 5 and [w["line"] for w in r["warnings"]] == list(range(1, 21))
    notes = [ln for ln in r["output"].splitlines() if ln.startswith("[warning: ")]
    assert len(notes) == 3 and notes[2].startswith(
        "[warning: 23 more lines of ignore files do not parse (e.g. .gitignore line 3, .gitignore line 4"
    )


# ----- globs that match everything ---------------------------------------------------------------

SKIPPED_TREE = {
    ".git/config": "[core]\n\tnote = needle\n",
    "target/out.txt": "needle\n",
    ".hidden/h.txt": "needle\n",
    ".env": "needle\n",
    "src/s.txt": "needle\n",
    "src/t.log": "needle\n",
    ".gitignore": "*.log\n",
}


@pytest.mark.parametrize(
    ("globs", "expected"),
    [
        (["*"], ["src/s.txt", "src/t.log"]),  # a glob naming an ignored file includes it, as in rg
        (["**"], ["src/s.txt", "src/t.log"]),
        (["**/*"], ["src/s.txt", "src/t.log"]),
        (["*.txt"], ["src/s.txt"]),
        (["*", "!*.log"], ["src/s.txt"]),
        ([".env"], [".env"]),  # a glob that names a hidden file still finds it
        (["**/.*"], [".env"]),
        ([".env", "!.env"], []),
        (["**/.git/**", "target/**", ".git/*"], []),  # .git and target/ are never searched
    ],
)
def test_globs_never_bring_in_git_target_or_hidden_files(
    world: Env, invoke, globs: list[str], expected: list[str]
) -> None:
    """rg's override globs win over its hidden filter and the last matching one decides: grep's
    exclusions (`.git`, `target/`, hidden files) come after the caller's globs, so `*` cannot undo them."""
    make_tree(world.project, SKIPPED_TREE)
    r = invoke("grep", {"patterns": ["needle"], "mode": "raw", "glob": globs})
    assert sorted({h["path"] for h in r["hits"]}) == expected
    assert r["complete"] is True


def test_the_other_search_tools_never_list_git(world: Env, invoke) -> None:
    make_tree(world.project, SKIPPED_TREE)
    r = invoke("content_search", {"pattern": "needle"})
    assert sorted(m["path"] for m in r["matches"]) == [
        str(world.project / p) for p in (".env", ".hidden/h.txt", "src/s.txt", "target/out.txt")
    ]
    r = invoke("glob_search", {"pattern": "**"})
    assert not any("/.git/" in p for p in r["paths"]) and str(world.project / ".env") in r["paths"]
    assert invoke("find", {"query": "config"})["results"] == []


# ----- a FIFO named as path ----------------------------------------------------------------------


def test_content_search_skips_a_fifo_named_as_path_at_once(world: Env, invoke) -> None:
    """As grep does: rg would block on the FIFO until the deadline; the answer says what it is instead."""
    os.mkfifo(world.project / "q.txt")
    start = time.monotonic()
    r = invoke("content_search", {"pattern": "x", "path": "q.txt", "timeout_ms": 5000})
    assert time.monotonic() - start < 2.5  # not the deadline
    assert r["matches"] == [] and r["total_matches"] == 0 and r["complete"] is False
    assert r["omitted"] == [
        {
            "reason": "special",
            "count": 1,
            "unit": "file",
            "how": f"{world.project / 'q.txt'} is a FIFO, not a regular file, so it was not read (content_search "
            "reads regular files only: a FIFO or device can block or never end)",
        }
    ]


# ----- an unreadable directory named as path -----------------------------------------------------


def _without_read_override(world: Env, tool: str, args: dict) -> Result:
    """`fermix tool TOOL` as a process that permissions bind: as root, with its read override dropped
    (`setpriv`, util-linux), since the directory refuses the search's own `chdir`, not only rg."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is needed to drop root's read override")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "fermix_cli", "tool", tool, "--json", json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("grep", {"patterns": ["x"], "path": "locked"}),
        ("content_search", {"pattern": "x", "path": "locked"}),
        ("glob_search", {"pattern": "*", "path": "locked"}),
        ("find", {"query": "a", "path": "locked"}),
        ("ast_grep", {"pattern": "x", "path": "locked"}),
        ("ast_grep", {"operation": "outline", "path": "locked"}),
    ],
)
def test_an_unreadable_directory_as_path_is_unreadable_not_a_disk_failure(
    world: Env, tool: str, args: dict
) -> None:
    make_tree(world.project, {"locked/a.py": "x = 1\n"})
    locked, error = _failing_below_locked(world, tool, args)
    assert error["code"] == "unreadable" and error["details"] == {"path": str(locked)}
    assert error["message"] == (
        f"Cannot search {locked}: permission denied (the directory must be readable and searchable); fix its "
        f"permissions (chmod u+rx {locked}) or search another path"
    )


def _failing_below_locked(world: Env, tool: str, args: dict) -> tuple[Path, dict]:
    """Run `tool` with the project's `locked` directory made unreadable (mode 0) for the call: the
    directory and the error the call failed with (exit 1, nothing on stdout)."""
    locked = world.project / "locked"
    locked.chmod(0)
    try:
        done = _without_read_override(world, tool, args)
    finally:
        locked.chmod(0o755)
    assert done.code == 1 and done.stdout == "", done.stderr
    return locked, json.loads(done.stderr)["error"]


@pytest.mark.parametrize(
    ("tool", "args", "leaf"),
    [
        ("grep", {"patterns": ["x"], "path": "locked/a.py"}, "a.py"),
        ("content_search", {"pattern": "x", "path": "locked/a.py"}, "a.py"),
        ("glob_search", {"pattern": "*", "path": "locked/sub"}, "sub"),
        # the directories a pattern starts with are reached as a path is (not an empty, complete answer)
        ("glob_search", {"pattern": "locked/sub/*.py"}, "sub"),
        ("glob_search", {"pattern": "locked/sub/b.py"}, "sub"),
        ("find", {"query": "a", "path": "locked/sub"}, "sub"),
        ("list_files", {"path": "locked/sub"}, "sub"),
        ("ast_grep", {"pattern": "x", "path": "locked/a.py"}, "a.py"),
        ("ast_grep", {"operation": "outline", "path": "locked/a.py"}, "a.py"),
        ("read", {"paths": ["locked/a.py"]}, "a.py"),
        ("file_read", {"path": "locked/a.py"}, "a.py"),
        ("write", {"path": "locked/new.py", "content": "y\n"}, "new.py"),
        ("file_write", {"path": "locked/new.py", "content": "y\n"}, "new.py"),
    ],
)
def test_a_path_inside_an_unsearchable_directory_is_unreadable_not_invalid(
    world: Env, tool: str, args: dict, leaf: str
) -> None:
    """Resolving a path below a directory that refuses to be searched fails as `unreadable`, naming that
    directory and the fix, in every tool that resolves paths (it was `invalid_path`, "Cannot resolve
    path …: Permission denied", which tells nobody what to do); nothing is written."""
    make_tree(world.project, {"locked/a.py": "x = 1\n", "locked/sub/b.py": "x = 2\n"})
    locked, error = _failing_below_locked(world, tool, args)
    assert error["code"] == "unreadable", error
    assert error["details"] == {"path": str(locked / leaf), "directory": str(locked)}
    assert error["message"] == (
        f"Cannot reach {locked / leaf}: permission denied by the directory {locked} (a directory must be "
        f"searchable to reach anything inside it); fix its permissions (chmod u+rx {locked}) or use another "
        "path"
    )
    assert sorted(p.name for p in locked.iterdir()) == ["a.py", "sub"]


# ----- names with control characters -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("plain.py", "plain.py"),
        ("café ü.py", "café ü.py"),
        ("back\\slash.py", "back\\slash.py"),  # nothing to escape: shown as it is
        ("real\nnl.py", "real\\x0anl.py"),
        ("tab\tx\r.py", "tab\\x09x\\x0d.py"),
        ("del\x7f\x1b.py", "del\\x7f\\x1b.py"),
        ("nel\x85 ls\u2028 ps\u2029.py", "nel\\u0085 ls\\u2028 ps\\u2029.py"),
        ("both\\n\n.py", "both\\\\n\\x0a.py"),  # once escaped, a backslash is doubled: $'…' reads it back
        (os.fsdecode(b"bad\xff\n.py"), "bad\\xff\\x0a.py"),
    ],
)
def test_printable_names(name: str, shown: str) -> None:
    from fermix_cli.core.search.names import printable

    assert printable(name) == shown
    assert printable(shown) == shown  # what it shows needs nothing more


def test_a_name_with_a_line_break_is_one_line_in_every_text(world: Env, invoke) -> None:
    """The text a model reads shows such a name escaped, so one path never reads as two; JSON carries
    the name as it is."""
    make_tree(world.project, {"real\nnl.py": "print(3)\n", "tab\tx.py": "print(3)\n"})
    r = invoke("grep", {"patterns": ["print\\(3"]})
    assert (
        r["output"]
        == "grouped_v1\n## real\\x0anl.py\n1:[match] print(3)\n\n## tab\\x09x.py\n1:[match] print(3)"
    )
    assert [h["path"] for h in r["hits"]] == ["real\nnl.py", "tab\tx.py"]
    r = invoke("grep", {"patterns": ["print\\(3"], "mode": "raw", "context": 1})
    assert r["output"] == "real\\x0anl.py:1:print(3)\n--\ntab\\x09x.py:1:print(3)"
    r = invoke("find", {"query": "py"})
    assert sorted(r["output"].split("\n")) == ["real\\x0anl.py", "tab\\x09x.py"]
    assert sorted(x["path"] for x in r["results"]) == ["real\nnl.py", "tab\tx.py"]
    r = invoke("list_files", {})
    assert r["output"] == "real\\x0anl.py\ntab\\x09x.py"
    assert [e["name"] for e in r["entries"]] == ["real\nnl.py", "tab\tx.py"]
    r = invoke("ast_grep", {"pattern": "print($A)", "language": "python"})
    assert r["output"].split("\n\n")[0] == "real\\x0anl.py:1:print(3)\ntab\\x09x.py:1:print(3)"
    assert [m["path"] for m in r["matches"]] == ["real\nnl.py", "tab\tx.py"]
    r = invoke("ast_grep", {"pattern": "print($A)", "rewrite": "p($A)", "path": "real\nnl.py"})
    assert r["output"].startswith("@@ real\\x0anl.py:1 bytes[0:8] @@\n-print(3)\n+p(3)")


def test_ast_grep_on_an_unreadable_named_file_says_it_left_the_file_out(world: Env) -> None:
    """As a tree-wide scan skips a file it cannot read, so does a search of that one file: `unreadable`
    in the answer, complete false, not a disk failure telling the user to check free space."""
    make_tree(world.project, {"u.py": "print(1)\n"})
    target = world.project / "u.py"
    target.chmod(0)
    try:
        done = _without_read_override(world, "ast_grep", {"pattern": "print($A)", "path": "u.py"})
    finally:
        target.chmod(0o644)
    assert done.code == 0, done.stderr
    r = json.loads(done.stdout)
    assert (r["complete"], r["skip_reasons"], r["skipped_files"]) == (
        False,
        {"unreadable": 1},
        [{"path": "u.py", "reason": "unreadable"}],
    )
    assert "fix their permissions" in r["output"]
