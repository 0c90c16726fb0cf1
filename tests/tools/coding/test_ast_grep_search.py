"""ast_grep search and read-only rewrite previews: rows, previews, byte ranges, limits, modes, languages."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from search_fixture import make_tree

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.astgrep import languages as ast_lang
from fermix_cli.tools.coding.astgrep import matches as ast_search
from fermix_cli.tools.coding.astgrep import tool as ag
from tests.conftest import Env, unreadable

PY = 'import logging\n\ndef f(x):\n    print("é", x)\n    foo(print(1,\n      2))\n    return x\n'


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def err(invoke, args: dict) -> ToolError:
    with pytest.raises(ToolError) as e:
        invoke("ast_grep", args)
    return e.value


def test_search_rows(world: Env, invoke) -> None:
    make_tree(world.project, {"app.py": PY, "web/a.js": "console.log(1);\nconsole.log(a, b);\nlog(2);\n"})
    r = invoke("ast_grep", {"pattern": "print($$$ARGS)"})
    assert r["output"] == 'app.py:4:    print("é", x)\napp.py:5:    foo(print(1,'
    assert r["files_matched"] == 1 and r["truncated"] is False and r["partial"] is False
    r = invoke("ast_grep", {"pattern": "console.log($A)", "path": "web"})
    assert r["output"] == "web/a.js:1:console.log(1);"  # $A is exactly one node
    m = r["matches"][0]
    assert (m["line"], m["column"], m["end_line"], m["end_column"], m["byte_start"], m["byte_end"]) == (
        1,
        1,
        1,
        15,
        0,
        14,
    )


def test_rewrite_preview_golden_and_files_untouched(world: Env, invoke) -> None:
    make_tree(world.project, {"app.py": PY})
    before = digest(world.project)
    r = invoke(
        "ast_grep", {"pattern": "print($$$ARGS)", "rewrite": "logging.info($$$ARGS)", "path": "app.py"}
    )
    assert r["output"] == "\n".join(
        [
            "@@ app.py:4 bytes[30:44] @@",
            '-    print("é", x)',
            '+    logging.info("é", x)',
            "@@ app.py:5 bytes[53:70] @@",
            "-    foo(print(1,",
            "-      2))",
            "+    foo(logging.info(1,",
            "+      2))",
        ]
    )
    assert digest(world.project) == before  # nothing is ever written
    src = PY.encode()
    first, second = r["matches"]
    assert src[first["byte_start"] : first["byte_end"]] == 'print("é", x)'.encode()  # é is 2 bytes
    assert src[second["byte_start"] : second["byte_end"]] == b"print(1,\n      2)"
    assert first["replacement"] == 'logging.info("é", x)'


def test_overlapping_matches_get_independent_previews(world: Env, invoke) -> None:
    make_tree(world.project, {"n.py": "f(f(1))\n"})
    r = invoke("ast_grep", {"pattern": "f($A)", "rewrite": "g($A)"})
    assert (
        r["output"]
        == "@@ n.py:1 bytes[0:7] @@\n-f(f(1))\n+g(f(1))\n@@ n.py:1 bytes[2:6] @@\n-f(f(1))\n+f(g(1))"
    )


def test_metavariables_in_rewrites(world: Env, invoke) -> None:
    make_tree(world.project, {"m.py": "add(a, b)\nadd()\n"})
    r = invoke("ast_grep", {"pattern": "add($X, $Y)", "rewrite": "$Y + $X  # $_ $MISSING"})
    # As the ast-grep CLI fills templates: a metavariable the match did not bind becomes empty.
    assert r["output"].splitlines()[2] == "+b + a  #  "
    r = invoke("ast_grep", {"pattern": "add($$$A)", "rewrite": "plus($$$A)"})
    assert [ln for ln in r["output"].splitlines() if ln.startswith("+")] == ["+plus(a, b)", "+plus()"]


def test_replacement_estimate_cap(world: Env, invoke, monkeypatch) -> None:
    monkeypatch.setattr(ast_search, "REPLACEMENT_CAP", 50)
    make_tree(world.project, {"m.py": "f(" + "x" * 40 + ")\nf(y)\n"})
    r = invoke("ast_grep", {"pattern": "f($A)", "rewrite": "g($A)"})
    assert r["replacements_skipped"] == 1 and r["partial"] is True
    assert r["output"].startswith("@@ m.py:2 bytes[")


def test_limit_counts_lines_and_cuts_previews(world: Env, invoke) -> None:
    make_tree(world.project, {"m.py": "".join(f"print({i})\n" for i in range(200))})
    r = invoke("ast_grep", {"pattern": "print($A)"})
    assert r["returned"] == 100 and r["limit"] == 100 and r["truncated"] is True
    assert r["output"].endswith(
        "\n\n[incomplete: 100 matches left out (limit); stopped at limit=100; raise limit (at most 500) or "
        "narrow path]"
    )
    assert r["complete"] is False and r["omitted"] == [
        {
            "reason": "limit",
            "count": 100,
            "unit": "match",
            "how": "stopped at limit=100; raise limit (at most 500) or narrow path",
        }
    ]
    r = invoke("ast_grep", {"pattern": "print($A)", "limit": 500})
    assert r["limit"] == 500 and r["returned"] == 200 and r["truncated"] is False
    r = invoke("ast_grep", {"pattern": "print($A)", "rewrite": "p($A)", "limit": 4})
    assert r["output"].split("\n\n")[0].splitlines() == [
        "@@ m.py:1 bytes[0:8] @@",
        "-print(0)",
        "+p(0)",
        "@@ m.py:2 bytes[9:17] @@",
    ]
    assert r["truncated"] is True and r["matches"][-1]["preview_cut"] is True


def test_output_cap_64_kib(world: Env, invoke) -> None:
    make_tree(world.project, {"m.py": "".join(f"print({i}, '{'z' * 500}')\n" for i in range(300))})
    r = invoke("ast_grep", {"pattern": "print($$$A)", "limit": 500})
    assert r["truncated"] is True and len(r["output"].encode()) <= 65_536
    assert 100 < r["returned"] < 300
    (o,) = r["omitted"]
    assert (o["reason"], o["count"]) == ("output_cap", 300 - r["returned"])
    assert "64 KiB output cap" in o["how"] and "[incomplete:" in r["output"]


def test_mode_specific_fields(world: Env, invoke) -> None:
    make_tree(world.project, {"m.py": "x = 1\n"})
    e = err(invoke, {"operation": "outline", "pattern": ""})
    assert e.code == "invalid_input" and e.details["fields"] == ["pattern"]
    assert '"pattern":null' in e.message
    e = err(invoke, {"operation": "outline", "pattern": "$A", "rewrite": "x"})
    assert e.details["fields"] == ["pattern", "rewrite"]
    e = err(invoke, {"pattern": "$A", "pub_members": False, "view": "names"})
    assert e.code == "invalid_input" and e.details["fields"] == ["view", "pub_members"]
    assert '"pub_members":null' in e.message
    assert err(invoke, {}).code == "invalid_input"
    assert err(invoke, {"pattern": ""}).code == "invalid_input"
    assert err(invoke, {"operation": None, "pattern": "x"}).code == "invalid_input"
    assert err(invoke, {"operation": "replace", "pattern": "x"}).code == "invalid_input"
    # null means omitted for every other field, so providers can send every key.
    r = invoke("ast_grep", {"pattern": "x = $A", "items": None, "view": None, "name": None,
                            "symbol_type": None, "pub_members": None, "rewrite": None})  # fmt: skip
    assert r["output"] == "m.py:1:x = 1"
    r = invoke("ast_grep", {"operation": "outline", "pattern": None, "rewrite": None, "path": "m.py"})
    assert r["symbols_returned"] == 1


def test_pattern_and_rewrite_size_limits(world: Env, invoke) -> None:
    make_tree(world.project, {"m.py": "x = 1\n"})
    assert err(invoke, {"pattern": "x" * 4097}).code == "invalid_pattern"
    assert err(invoke, {"pattern": "x", "rewrite": "y" * 4097}).code == "invalid_rewrite"
    assert invoke("ast_grep", {"pattern": "x", "rewrite": "y" * 4096})["returned"] == 3


def test_unknown_languages_do_not_crash(world: Env, invoke) -> None:
    make_tree(world.project, {"m.cob": "DISPLAY 'X'.\n", "m.py": "x = 1\n"})
    e = err(invoke, {"pattern": "x", "language": "cobol"})
    assert e.code == "invalid_language" and "python" in e.message
    e = err(invoke, {"pattern": "x", "path": "m.cob"})
    assert e.code == "invalid_language"
    r = invoke("ast_grep", {"pattern": "x = $A"})  # the .cob file is simply not searched
    assert r["output"] == "m.py:1:x = 1" and r["files_unsupported"] == 1 and r["partial"] is False
    assert invoke("ast_grep", {"pattern": "x = $A", "language": "PY"})["output"] == "m.py:1:x = 1"


def test_explicit_language_forces_parsing_and_strict_patterns(world: Env, invoke) -> None:
    make_tree(world.project, {"script": "print(1)\n", "a.rs": "fn f() {}\n"})
    r = invoke("ast_grep", {"pattern": "print($A)", "path": "script", "language": "python"})
    assert r["output"] == "script:1:print(1)"
    e = err(invoke, {"pattern": "a b c", "language": "python"})
    assert e.code == "invalid_pattern" and "Multiple AST nodes" in e.message


def test_mixed_language_pattern_failure_is_partial(world: Env, invoke) -> None:
    make_tree(world.project, {"a.py": "def f(): pass\n", "b.js": "function f() {}\n"})
    r = invoke("ast_grep", {"pattern": "def $F(): pass"})
    assert r["output"].startswith("a.py:1:def f(): pass")
    assert r["partial"] is True and set(r["pattern_errors"]) == {"javascript"}
    assert r["pattern_errors"]["javascript"].startswith("Multiple AST nodes are detected")
    assert "\n\n[incomplete: pattern does not compile for javascript: Multiple AST nodes" in r["output"]
    assert r["complete"] is False and [o["reason"] for o in r["omitted"]] == ["pattern_error"]
    assert r["omitted"][0]["count"] == 1 and r["omitted"][0]["unit"] == "language"


def test_skipped_files_are_reported(world: Env, invoke) -> None:
    make_tree(
        world.project,
        {
            "big.py": "x = 1\n" * 50_000,  # over the reference's 256 KiB: searched whole now
            "bad.py": b"x = 1\n\xff\n",
            "ok.py": "x = 1\n",
            "deep.py": "x = " + "(" * 80 + "1" + ")" * 80 + "\n",  # no node-count gate either
            ".hidden.py": "x = 1\n",
        },
    )
    r = invoke("ast_grep", {"pattern": "x = $A", "limit": 500})
    assert r["output"].splitlines()[0] == "big.py:1:x = 1"
    assert r["matches_total"] == 50_002 and r["files_matched"] == 3
    assert r["files_skipped"] == 1 and r["partial"] is True
    assert r["skip_reasons"] == {"invalid_utf8": 1}
    assert r["skipped_files"] == [{"path": "bad.py", "reason": "invalid_utf8"}]
    assert "[incomplete: 1 file left out (invalid_utf8); their text is not UTF-8" in r["output"]
    assert "search them with grep (e.g. bad.py)]" in r["output"]
    assert r["more"]["count"] == 50_002 - 500
    assert "[incomplete: 49,502 matches left out (limit)" in r["output"]
    assert [(o["reason"], o["count"]) for o in r["omitted"]] == [("limit", 49_502), ("invalid_utf8", 1)]


@pytest.mark.parametrize("op", ["search", "outline"])
def test_skipped_files_below_a_path_are_named_from_the_working_directory(world: Env, invoke, op: str) -> None:
    """A file skipped in `path` is named as the rows name files (from cwd, or absolute outside it), so
    the next call opens that file and not one of the same name in cwd."""
    make_tree(
        world.project, {"src/ok.py": "x = 1\n", "src/secret.py": b"x = 2\n\xff\n", "secret.py": "x = 3\n"}
    )
    args = {"pattern": "x = $A", "path": "src"} if op == "search" else {"operation": "outline", "path": "src"}
    r = invoke("ast_grep", args)
    if op == "search":
        assert r["output"].splitlines()[0] == "src/ok.py:1:x = 1"
    assert r["skipped_files"] == [{"path": "src/secret.py", "reason": "invalid_utf8"}]
    assert "(e.g. src/secret.py)]" in r["output"] and r["omitted"][-1]["how"].endswith("(e.g. src/secret.py)")
    outside = world.home / "granted"
    make_tree(outside, {"bad.py": b"x = 2\n\xff\n"})
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text(f'[sandbox]\nallowed_roots = ["{outside}"]\n')
    r = invoke("ast_grep", {**args, "path": str(outside)})
    assert r["skipped_files"] == [{"path": str(outside / "bad.py"), "reason": "invalid_utf8"}]
    assert f"(e.g. {outside / 'bad.py'})]" in r["output"]


def test_no_node_count_gate(world: Env, invoke) -> None:
    make_tree(world.project, {"many.py": "".join(f"x{i} = {i}\n" for i in range(5000))})
    r = invoke("ast_grep", {"pattern": "x1 = 1"})
    assert r["skip_reasons"] == {} and r["output"] == "many.py:2:x1 = 1"


def test_pattern_node_limit(world: Env, invoke) -> None:
    make_tree(world.project, {"m.py": "x = 1\n"})
    big = "f(" + ", ".join(f"a{i}" for i in range(200)) + ")"
    e = err(invoke, {"pattern": big, "language": "python"})
    assert e.code == "invalid_pattern" and "more than 256" in e.message


def test_no_file_or_byte_cap_on_tree_scans(world: Env, invoke) -> None:
    make_tree(world.project, {f"f{i}.py": "x = 1\n" for i in range(5)})
    r = invoke("ast_grep", {"pattern": "x = 1"})
    assert r["files_scanned"] == 5 and r["scan_stop"] is None and r["partial"] is False
    assert r["returned"] == 5 and r["truncated"] is False
    assert r["output"].splitlines() == [f"f{i}.py:1:x = 1" for i in range(5)]  # path order


def test_deadline_returns_partial(world: Env, invoke, monkeypatch) -> None:
    monkeypatch.setattr(ag, "DEADLINE_S", -1.0)
    make_tree(world.project, {"m.py": "x = 1\n"})
    r = invoke("ast_grep", {"pattern": "x = 1"})
    assert r["timed_out"] is True and r["partial"] is True
    assert "[incomplete: an unknown number of files left out (timeout)" in r["output"]
    assert "raise" not in r["output"] and r["complete"] is False


def test_empty_worksets_succeed(world: Env, invoke) -> None:
    make_tree(world.project, {"readme.md": "nothing to parse\n"})
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["output"] == "[no matches]" and r["partial"] is False and r["files_matched"] == 0


def test_explicit_file_bypasses_ignore_but_not_sandbox(world: Env, invoke) -> None:
    make_tree(world.project, {".gitignore": "gen/\n", "gen/g.py": "x = 1\n"})
    assert invoke("ast_grep", {"pattern": "x = 1"})["output"] == "[no matches]"
    assert invoke("ast_grep", {"pattern": "x = 1", "path": "gen/g.py"})["output"] == "gen/g.py:1:x = 1"
    (world.home / ".ssh").mkdir()
    (world.home / ".ssh" / "k.py").write_text("x = 1\n")
    assert err(invoke, {"pattern": "x = 1", "path": "~/.ssh/k.py"}).code == "protected_path"
    assert err(invoke, {"pattern": "x = 1", "path": "../"}).code == "outside_cwd"
    assert err(invoke, {"pattern": "x = 1", "path": str(world.home)}).code == "outside_root"
    assert err(invoke, {"pattern": "x = 1", "path": "gone.py"}).code == "not_found"


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a.rs", "rust"),
        ("a.TSX", "tsx"),
        ("a.mjs", "javascript"),
        ("a.pyi", "python"),
        ("x", None),
        ("a.cob", None),
    ],
)
def test_language_inference(path: str, language: str | None) -> None:
    assert ast_lang.language_for_path(path) == language


def test_every_listed_language_parses() -> None:
    import time

    for lang in sorted(ast_lang.LANGUAGES):
        assert ast_lang.parse("", lang, time.monotonic() + 5).root.root().kind()


def test_unreadable_files_and_directories_are_reported(
    world: Env, invoke, monkeypatch, tmp_path: Path
) -> None:
    make_tree(world.project, {"a.py": "x = 1\n", "secret.py": "x = 2\n", "locked/b.py": "x = 3\n"})
    with unreadable(monkeypatch, "ast_grep", tmp_path, world.project / "secret.py", world.project / "locked"):
        r = invoke("ast_grep", {"pattern": "x = $A", "language": "python"})
    assert r["output"].splitlines()[0] == "a.py:1:x = 1"
    assert r["matches_total"] == 1 and r["partial"] is True
    assert r["skip_reasons"] == {"unreadable": 2}
    # A directory the walk could not enter is not an unreadable file.
    assert r["files_skipped"] == 1 and r["directories_skipped"] == 1
    error = "Permission denied (os error 13)"
    assert sorted(r["skipped_files"], key=lambda f: f["path"]) == [
        {"path": "locked", "reason": "unreadable", "error": error, "kind": "directory"},
        {"path": "secret.py", "reason": "unreadable"},
    ]
    (o,) = r["omitted"]
    assert (o["reason"], o["count"], o["unit"]) == ("unreadable", 2, "path")
    assert "fix their permissions" in o["how"] and f"locked/: {error}" in o["how"] and "secret.py" in o["how"]
    assert "[incomplete: 2 paths left out (unreadable); they could not be read" in r["output"]


def test_the_engine_log_is_read_to_its_end() -> None:
    """ast-grep writes a line per file and its summary last: a log of any length (here 10 MiB, past
    the 8 MiB that used to be read) is counted whole."""
    from fermix_cli.core.search.ripgrep import scratch_file
    from fermix_cli.tools.coding.astgrep.cli import Scan, read_inspect

    n = 140_000
    with scratch_file() as f:
        for i in range(n):
            f.write(
                f"sg: entity|file|pkg/module_{i:06d}_with_a_long_enough_name.py: language=Python\n".encode()
            )
        f.write(b"sg: entity|file|pkg/last.py: skipped=invalidUtf8\r\n")
        f.write(b"ERROR: ./pkg/locked: Permission denied (os error 13)\n")
        f.write(f"sg: summary|file: scannedFileCount={n},skippedFileCount=1\n".encode())
        f.flush()
        assert f.tell() > 10 << 20
        scan = Scan()
        read_inspect(f, scan, None, 5)
    assert scan.files_scanned == n and scan.languages == {"python"}
    assert scan.skipped == {"invalid_utf8": 1}
    assert scan.skipped_files == [{"path": "pkg/last.py", "reason": "invalid_utf8"}]
    assert scan.unreadable == [("pkg/locked", "Permission denied (os error 13)")]


@pytest.mark.parametrize(
    ("script", "said"),
    [
        ('exec {real} --no-such-flag "$@"', "unexpected argument '--no-such-flag'"),
        ("kill -9 $$", "exit status -9"),
    ],
)
def test_a_failed_engine_is_an_error_not_no_matches(
    world: Env, invoke, monkeypatch, tmp_path: Path, script: str, said: str
) -> None:
    """The CLI failing (its own error, or killed) is `search_failed` with what it said, never an
    empty result that reads as "no matches"."""
    from fermix_cli.core.search import engines

    make_tree(world.project, {"a.py": "x = 1\n"})
    wrapper = tmp_path / "ast-grep"
    wrapper.write_text("#!/bin/sh\n" + script.format(real=engines.ast_grep()) + "\n")
    wrapper.chmod(0o755)
    monkeypatch.setattr(engines, "ast_grep", lambda: str(wrapper))
    e = err(invoke, {"pattern": "x = $A"})
    assert e.code == "search_failed" and said in e.message
    assert e.details["returncode"] != 0


def test_a_match_cut_off_by_the_deadline_is_dropped(world: Env, invoke, monkeypatch, tmp_path: Path) -> None:
    """The CLI killed at the deadline in the middle of a JSON line: the whole lines before it are kept,
    the cut one is dropped, and the result says it timed out."""
    import json

    from fermix_cli.core.search import engines

    make_tree(world.project, {"a.py": "x = 1\n"})
    whole = subprocess_json(engines.ast_grep(), world.project)
    wrapper = tmp_path / "ast-grep"
    wrapper.write_text(f"#!/bin/sh\nprintf '%s\\n' '{whole}'\nprintf '{whole[:40]}'\nexec sleep 30\n")
    wrapper.chmod(0o755)
    monkeypatch.setattr(engines, "ast_grep", lambda: str(wrapper))
    monkeypatch.setattr(ag, "DEADLINE_S", 1.0)
    r = invoke("ast_grep", {"pattern": "x = $A"})
    assert r["timed_out"] is True and r["partial"] is True
    assert r["matches_total"] == 1 and r["output"].startswith("a.py:1:x = 1")
    assert json.loads(whole)["file"] == "a.py"


def subprocess_json(binary: str, cwd: Path) -> str:
    """One match as the real CLI prints it (a line of `--json=stream`)."""
    import subprocess

    done = subprocess.run(
        [binary, "run", "-p", "x = $A", "-l", "python", "--json=stream", "a.py"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_failed_listing_is_an_error_not_a_timeout(world: Env, invoke, monkeypatch, tmp_path: Path) -> None:
    """`rg --files` beside the scan failing is the listing's error, raised to the caller (it used to
    die in its thread and leave the scan marked as timed out)."""
    from fermix_cli.core.search import engines

    make_tree(world.project, {"a.py": "x = 1\n"})
    wrapper = tmp_path / "rg"
    wrapper.write_text("#!/bin/sh\necho 'rg: the listing broke' >&2\nexit 2\n")
    wrapper.chmod(0o755)
    monkeypatch.setattr(engines, "rg", lambda: str(wrapper))
    e = err(invoke, {"pattern": "x = $A"})
    assert e.code == "search_failed" and "the listing broke" in e.message


# ----- the audit's findings: the CLI's answer, whole, and typed errors -----------------------------


def _bytes_name(root: Path, name: bytes, data: bytes) -> None:
    import os

    with open(os.path.join(os.fsencode(root), name), "wb") as f:
        f.write(data)


def test_matches_in_names_that_are_not_utf8_are_counted(world: Env, invoke) -> None:
    """The CLI names such a file with U+FFFD, a name that is not the file's: its matches are left
    out, counted as `invalid_utf8_name` and named with \\xNN escapes, never dropped silently."""
    _bytes_name(world.project, b"bad\xffname.py", b"foo(12)\n")
    _bytes_name(world.project, b"bad\xfe.py", b"foo(3)\n\xff\n")  # its text is not UTF-8 either
    _bytes_name(world.project, b"ok.py", b"foo(1)\n")
    for args in ({"pattern": "foo($A)", "language": "python"}, {"pattern": "foo($A)"}):
        r = invoke("ast_grep", args)
        assert r["output"].startswith("ok.py:1:foo(1)\n\n")
        assert r["matches_total"] == 1 and r["partial"] is True
        assert r["skip_reasons"] == {"invalid_utf8_name": 1, "invalid_utf8": 1}
        assert sorted(r["skipped_files"], key=lambda f: f["path"]) == [
            {"path": "bad\\xfe.py", "reason": "invalid_utf8"},
            {"path": "bad\\xffname.py", "reason": "invalid_utf8_name", "matches": 1},
        ]
        assert "[incomplete: 1 file left out (invalid_utf8_name);" in r["output"]
        assert "bad\\xffname.py" in r["output"] and "\ufffd" not in r["output"]


def test_a_skipped_name_with_a_line_break_is_counted(world: Env, invoke) -> None:
    """The CLI's log names the file as it is, so its line spans two lines of stderr: read as one."""
    make_tree(world.project, {"nl\nbad.py": b"foo(1)\n# \xff\n", "ok.py": "foo(2)\n"})
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["output"].startswith("ok.py:1:foo(2)")
    assert r["skip_reasons"] == {"invalid_utf8": 1} and r["partial"] is True
    assert r["skipped_files"] == [{"path": "nl\nbad.py", "reason": "invalid_utf8"}]


def test_extension_table_agrees_with_the_cli(tmp_path: Path) -> None:
    """Every extension fermix knows is one the bundled CLI gives the same language, and the other way
    round for the extensions it is known to take (probed through its own `--inspect entity` log)."""
    import subprocess

    from fermix_cli.core.search import engines
    from fermix_cli.tools.coding.astgrep.cli import language_name

    extra = ["hxx", "toml", "txt", "md"]  # hxx: fermix used to call it C++, the CLI does not know it
    for ext in [*ast_lang.EXTENSIONS, *extra]:
        (tmp_path / f"f.{ext}").write_text("x\n")
    done = subprocess.run(
        [engines.ast_grep(), "run", "-p", "x", "--inspect", "entity", "--json=stream"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    got = {}
    for line in done.stderr.splitlines():
        if line.startswith("sg: entity|file|f."):
            name, _, what = line[len("sg: entity|file|f.") :].rpartition(": ")
            got[name] = language_name(what.partition("=")[2])
    want = {ext: ast_lang.language_for_path(f"f.{ext}") for ext in [*ast_lang.EXTENSIONS, *extra]}
    assert got == {ext: lang for ext, lang in want.items() if lang is not None}


def test_files_the_cli_knows_are_never_unsupported(world: Env, invoke) -> None:
    make_tree(
        world.project,
        {"a.js": "let x = 1\n", "b.py3": "foo(1)\n", "c.bzl": "foo(2)\n", "d.cu": "foo(3);\n"},
    )
    r = invoke("ast_grep", {"pattern": "let $A = 1"})
    assert r["output"].startswith("a.js:1:let x = 1")
    assert r["files_unsupported"] == 0 and r["partial"] is True
    assert set(r["pattern_errors"]) == {"python"}  # b.py3 and c.bzl: the CLI logs skipped=error
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["output"] == "b.py3:1:foo(1)\nc.bzl:1:foo(2)\nd.cu:1:foo(3);"
    assert r["files_unsupported"] == 0 and r["files_scanned"] == 4


def test_upper_case_extensions_are_searched(world: Env, invoke) -> None:
    """The CLI's walk matches extensions by case; fermix (and the CLI given the file) does not: search
    and outline agree on a/UP.PY and a/x.Py."""
    make_tree(
        world.project, {"a/UP.PY": "def f():\n    foo(10)\n", "a/x.Py": "foo(11)\n", "a/y.py": "foo(12)\n"}
    )
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["output"] == "a/UP.PY:2:    foo(10)\na/x.Py:1:foo(11)\na/y.py:1:foo(12)"
    assert r["files_scanned"] == 3 and r["partial"] is False
    assert invoke("ast_grep", {"pattern": "foo($A)", "language": "python"})["matches_total"] == 3
    r = invoke("ast_grep", {"operation": "outline", "path": "a"})
    assert [(s["path"], s["item"]["name"]) for s in r["symbols"]] == [("a/UP.PY", "f")]
    assert r["files_scanned"] == 3


def test_empty_files_are_not_an_omission_and_big_ones_say_how(world: Env, invoke) -> None:
    make_tree(world.project, {"__init__.py": "", "a.py": "foo(1)\n"})
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["output"] == "a.py:1:foo(1)" and r["partial"] is False and r["skip_reasons"] == {}
    # The CLI skips a file over 3,000,000 bytes and 200,000 lines in its walk, not when given it.
    make_tree(world.project, {"big.py": "foo(2)\n" + "x = 1  # padding padding padding\n" * 210_000})
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["skip_reasons"] == {"too_large": 1} and r["partial"] is True
    assert r["skipped_files"] == [{"path": "big.py", "reason": "too_large"}]
    assert "name the file as path to search it (up to 16 MiB)" in r["output"]
    r = invoke("ast_grep", {"pattern": "foo($A)", "path": "big.py"})
    assert r["output"] == "big.py:1:foo(2)" and r["partial"] is False


def test_a_named_file_is_parsed_up_to_16_mib_then_reported(world: Env, invoke, monkeypatch) -> None:
    """The parser holds about 150 bytes per byte of source: a named file past the bound is left out with
    a reason that says so and what to use instead, never handed over to take the machine's memory."""
    from fermix_cli.tools.coding.astgrep import cli

    monkeypatch.setattr(cli, "NAMED_FILE_MAX_BYTES", 4096)  # the bound's logic, at a test's size
    make_tree(
        world.project, {"edge.py": "foo(1)\n" + "#" * (4096 - 8) + "\n", "over.py": "foo(2)\n" + "#" * 4096}
    )
    assert (world.project / "edge.py").stat().st_size == 4096
    r = invoke("ast_grep", {"pattern": "foo($A)", "path": "edge.py"})
    assert r["output"] == "edge.py:1:foo(1)" and r["complete"] is True
    r = invoke("ast_grep", {"pattern": "foo($A)", "path": "over.py"})
    assert (r["matches_total"], r["complete"], r["skip_reasons"]) == (0, False, {"too_large_to_parse": 1})
    assert "search it with grep" in r["output"] and "over.py" in r["output"]


def test_skip_reasons_are_snake_case() -> None:
    from fermix_cli.tools.coding.astgrep.cli import skip_reason

    assert [skip_reason(r) for r in ("invalidUtf8", "permissionDenied", "fileTooLarge", "ioError")] == [
        "invalid_utf8",
        "unreadable",
        "too_large",
        "io_error",
    ]


def test_patterns_and_rewrites_may_start_with_a_dash(world: Env, invoke) -> None:
    make_tree(world.project, {"a.py": "x = -y\n"})
    r = invoke("ast_grep", {"pattern": "-$A", "language": "python"})
    assert r["output"] == "a.py:1:x = -y"
    r = invoke("ast_grep", {"pattern": "-$A", "rewrite": "-z", "path": "a.py"})
    assert r["matches"][0]["replacement"] == "-z"
    r = invoke("ast_grep", {"pattern": "-$A", "rewrite": "--help"})
    assert r["matches"][0]["replacement"] == "--help"


def test_a_nul_byte_is_a_typed_error_and_a_line_break_is_legal(world: Env, invoke) -> None:
    make_tree(world.project, {"a.py": "foo(1)\nif x:\n    y = 1\n"})
    e = err(invoke, {"pattern": "foo(\x00)", "language": "python"})
    assert e.code == "invalid_pattern" and "NUL" in e.message
    assert err(invoke, {"pattern": "foo(\x00)"}).code == "invalid_pattern"
    e = err(invoke, {"pattern": "foo($A)", "rewrite": "a\x00b"})
    assert e.code == "invalid_rewrite" and "NUL" in e.message
    r = invoke("ast_grep", {"pattern": "if $C:\n    $B", "language": "python"})
    assert r["output"] == "a.py:2:if x:"


def test_one_file_with_an_inferred_language(world: Env, invoke) -> None:
    make_tree(world.project, {"a.py": "foo(1)\n"})
    e = err(invoke, {"pattern": "fn $A() {}", "path": "a.py"})
    assert e.code == "invalid_pattern" and "python" in e.message
    r = invoke("ast_grep", {"pattern": "foo($A)", "path": "a.py"})
    assert r["output"] == "a.py:1:foo(1)"
    assert r["files_scanned"] == 1 and r["languages"] == ["python"]


def test_a_pattern_with_an_error_node(world: Env, invoke) -> None:
    """The CLI warns that such a pattern "contains an ERROR node": strict, it is refused; else the
    language is reported in pattern_errors, never a clean "no matches"."""
    make_tree(world.project, {"a.py": "foo(1)\n", "b.js": "foo(2)\n"})
    e = err(invoke, {"pattern": "foo($A", "language": "python"})
    assert e.code == "invalid_pattern" and "ERROR node" in e.message
    r = invoke("ast_grep", {"pattern": "foo($A"})
    assert r["partial"] is True and set(r["pattern_errors"]) == {"python", "javascript"}
    assert "ERROR node" in r["pattern_errors"]["python"] and r["languages"] == []
    e = err(invoke, {"pattern": "foo($A", "path": "a.py"})
    assert e.code == "invalid_pattern"


def test_a_pattern_over_256_nodes_is_refused_not_matched(world: Env, invoke) -> None:
    """One or the other: strict (a language, or one file), it is refused before searching; in a tree,
    a language it is refused for is a pattern error, and none of that language's matches are shown."""
    big = "f(" + ", ".join(f"a{i}" for i in range(200)) + ")"
    make_tree(world.project, {"m.py": big + "\n", "n.js": "g(1)\n"})
    e = err(invoke, {"pattern": big, "path": "m.py"})
    assert e.code == "invalid_pattern" and "more than 256" in e.message
    r = invoke("ast_grep", {"pattern": big})
    assert "more than 256" in r["pattern_errors"]["python"] and "python" not in r["languages"]
    assert r["matches_total"] == 0 and r["partial"] is True
    assert r["output"].startswith("[no matches]\n\n")
    assert (
        "[incomplete: pattern does not compile for python: pattern has more than 256 syntax nodes (1 match"
        in r["output"]
    )


def test_every_answer_says_whether_it_is_complete(world: Env, invoke) -> None:
    """`complete` and `omitted`, as every search tool's answer has them; `bytes_read` is what fermix
    read (one file fed to the CLI), and null for a tree, which the CLI reads itself."""
    make_tree(world.project, {"a.py": "foo(1)\nfoo(2)\n", "b.py": "foo(3)\n"})
    r = invoke("ast_grep", {"pattern": "foo($A)"})
    assert r["complete"] is True and r["omitted"] == [] and "[incomplete" not in r["output"]
    assert r["bytes_read"] is None and r["files_scanned"] == 2
    r = invoke("ast_grep", {"pattern": "foo($A)", "path": "a.py"})
    assert r["complete"] is True and r["bytes_read"] == len("foo(1)\nfoo(2)\n")
    r = invoke("ast_grep", {"pattern": "foo($A)", "limit": 2})
    assert r["complete"] is False and r["more"]["count"] == 1
    assert r["omitted"] == [
        {
            "reason": "limit",
            "count": 1,
            "unit": "match",
            "how": "stopped at limit=2; raise limit (at most 500) or narrow path",
        }
    ]
    assert r["output"] == (
        "a.py:1:foo(1)\na.py:2:foo(2)\n\n[incomplete: 1 match left out (limit); stopped at limit=2; raise "
        "limit (at most 500) or narrow path]"
    )
    r = invoke("ast_grep", {"operation": "outline", "language": "python"})
    assert r["complete"] is True and r["omitted"] == []
