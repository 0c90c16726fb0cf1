"""`read` end to end: hashline output on real files, selectors, multi-path sections, limits, paths, skills."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from coding_world import cli, config, snapshots

from fermix_cli.core.errors import ToolError
from tests.conftest import Env

NUMBERED = "".join(f"line {n}\n" for n in range(1, 1001))


def read(invoke, *paths: str, **ctx: object) -> dict:
    return invoke("read", {"paths": list(paths)}, **ctx)


def error(invoke, *paths: str, **ctx: object) -> ToolError:
    with pytest.raises(ToolError) as e:
        invoke("read", {"paths": list(paths)}, **ctx)
    return e.value


def test_hashline_output_and_result_fields(world: Env, invoke) -> None:
    (world.project / "greet.py").write_text(
        'def greet(name):\n    msg = "Hello, " + name\n    print(msg)\ngreet("world")\n'
    )
    result = read(invoke, "greet.py")
    assert result["content"] == (
        '[greet.py#C918]\n1:def greet(name):\n2:    msg = "Hello, " + name\n3:    print(msg)\n4:greet("world")'
    )
    assert result["files"] == [
        {
            "entry": "greet.py",
            "path": "greet.py",
            "tag": "C918",
            "lines": 4,
            "shown": [1, 4],
            "next_line": None,
        }
    ]


def test_model_text_is_the_hashline_text(world: Env) -> None:
    (world.project / "a.txt").write_text("a\nb\nc\n")
    out = world.tool("read", {"paths": ["a.txt"]}, "--text")
    assert out.code == 0 and out.stdout.rstrip("\n") == "[a.txt#D988]\n1:a\n2:b\n3:c"


def rows_of(content: str) -> list[int]:
    return [int(r.split(":", 1)[0]) for r in content.split("\n") if r[:1].isdigit()]


@pytest.mark.parametrize(
    ("entry", "first", "last", "footer"),
    [
        ("big.txt", 1, 400, "[600 more lines in file. Use :401 to continue]"),
        ("big.txt:10", 10, 409, "[591 more lines in file. Use :410 to continue]"),
        ("big.txt:10+", 10, 409, "[591 more lines in file. Use :410 to continue]"),
        ("big.txt:10-", 10, 409, "[591 more lines in file. Use :410 to continue]"),
        ("big.txt:995+", 995, 1000, None),
        ("big.txt:-5", 1, 8, None),
        ("big.txt:31-31", 30, 34, None),
        ("big.txt:20+1", 19, 23, None),
        ("big.txt:1-3000", 1, 1000, None),
        ("big.txt:998-1000", 997, 1000, None),
    ],
)
def test_selectors_pick_windows_with_padding(world: Env, invoke, entry, first, last, footer) -> None:
    (world.project / "big.txt").write_text(NUMBERED)
    content = read(invoke, entry)["content"]
    head, *_ = content.split("\n")
    assert head == "[big.txt#" + read(invoke, "big.txt:1+1")["files"][0]["tag"] + "]"
    numbers = rows_of(content)
    assert numbers == list(range(first, last + 1))
    assert all(row == f"{n}:line {n}" for n, row in zip(numbers, content.split("\n")[1:], strict=False))
    if footer:
        assert content.endswith("\n\n" + footer)
    else:
        assert "more lines in file" not in content


def test_bounded_windows_stop_at_3000_lines(world: Env, invoke) -> None:
    (world.project / "huge.txt").write_text("".join(f"{n}\n" for n in range(1, 5001)))
    content = read(invoke, "huge.txt:1-4000")["content"]
    assert rows_of(content) == list(range(1, 3001))
    assert content.endswith("[2000 more lines in file. Use :3001 to continue]")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("big.txt:raw:50-52", "line 50\nline 51\nline 52"),
        ("big.txt:50-52:raw", "line 50\nline 51\nline 52"),
        ("big.txt:raw:999+", "line 999\nline 1000"),
        ("big.txt:raw:-2", "line 1\nline 2"),
    ],
)
def test_raw_is_verbatim_without_header_or_padding(world: Env, invoke, entry: str, expected: str) -> None:
    (world.project / "big.txt").write_text(NUMBERED)
    assert read(invoke, entry)["content"] == expected


def test_raw_keeps_the_window_and_footer(world: Env, invoke) -> None:
    (world.project / "big.txt").write_text(NUMBERED)
    content = read(invoke, "big.txt:raw")["content"]
    assert content.split("\n")[:2] == ["line 1", "line 2"]
    assert content.endswith("line 400\n\n[600 more lines in file. Use :401 to continue]")


def test_an_entry_naming_an_existing_file_has_no_selector(world: Env, invoke) -> None:
    (world.project / "notes:1-2").write_text("x\ny\nz\nw\nv\n")
    assert rows_of(read(invoke, "notes:1-2")["content"]) == [1, 2, 3, 4, 5]
    assert rows_of(read(invoke, "notes:1-2:2-2")["content"]) == [
        1,
        2,
        3,
        4,
        5,
    ]  # 1..5: padded, clipped at EOF


def test_empty_file_bom_crlf_and_long_lines(world: Env, invoke) -> None:
    (world.project / "e.txt").write_text("")
    assert read(invoke, "e.txt")["content"] == "[e.txt#5D05]\n[The file is empty.]"
    (world.project / "f.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert read(invoke, "f.txt")["content"] == "[f.txt#0127]\n1:one\n2:two"
    (world.project / "wide.txt").write_text("w" * 800 + "\n")
    assert read(invoke, "wide.txt")["content"].split("\n")[1] == "1:" + "w" * 768 + "…[+32 chars]"


def test_multiple_entries_get_file_sections_and_errors(world: Env, invoke) -> None:
    (world.project / "a.txt").write_text("a\nb\n")
    result = read(invoke, "a.txt", "missing.txt", "a.txt:5-x", "a.txt:2")
    assert result["content"] == (
        "--- FILE: a.txt ---\n[a.txt#9A46]\n1:a\n2:b\n\n"
        "--- FILE: missing.txt ---\nERROR: File not found: missing.txt\n\n"
        "--- FILE: a.txt:5-x ---\nERROR: Invalid selector ':5-x'. Use :N, :-M, :N-M, :N+, :N+K, :raw, or a range "
        "combined with raw (e.g. :raw:50-100).\n\n"
        "--- FILE: a.txt:2 ---\n[a.txt#9A46]\n2:b"
    )
    assert [f.get("error", {}).get("code") for f in result["files"]] == [
        None,
        "not_found",
        "invalid_selector",
        None,
    ]


def test_every_entry_failing_fails_the_call_with_the_listing(world: Env) -> None:
    out = world.tool("read", {"paths": ["nope.txt", "gone.txt"]})
    assert out.code == 1 and out.stdout == ""
    err = out.error()
    assert err["code"] == "not_found"
    assert err["message"] == (
        "--- FILE: nope.txt ---\nERROR: File not found: nope.txt\n\n--- FILE: gone.txt ---\nERROR: File not found: gone.txt"
    )


def test_every_entry_failing_differently_fails_under_a_code_that_covers_them(world: Env) -> None:
    (world.project / "big.txt").write_text("1\n2\n")
    out = world.tool("read", {"paths": ["nope1", "big.txt:7-3"]})
    assert out.code == 1 and out.stdout == ""
    err = out.error()
    assert err["code"] == "read_entries_failed"
    assert err["message"].startswith(
        "--- FILE: nope1 ---\nERROR: File not found: nope1\n\n--- FILE: big.txt:7-3 ---"
    )
    assert err["details"]["entries"] == [
        {"entry": "nope1", "code": "not_found"},
        {"entry": "big.txt:7-3", "code": "invalid_selector"},
    ]
    bad = world.tool("read", {"paths": ["big.txt:0", "big.txt:9"]})  # both bad input, codes differ: exit 2
    assert (bad.code, bad.error()["code"]) == (2, "read_entries_failed")
    alike = world.tool("read", {"paths": ["big.txt:0", "big.txt:7-3"]})
    assert (alike.code, alike.error()["code"]) == (2, "invalid_selector")


def test_reading_past_an_empty_file_advises_only_what_works(world: Env, invoke) -> None:
    (world.project / "e.txt").write_text("")
    e = error(invoke, "e.txt:2")
    assert (e.code, e.message) == (
        "invalid_range",
        "Line 2 is beyond end of file (0 lines total). The file is empty; use :1 (or no selector) to read it.",
    )
    assert read(invoke, "e.txt:1")["content"] == "[e.txt#5D05]\n[The file is empty.]"  # the advice works


def test_single_entry_errors(world: Env, invoke) -> None:
    (world.project / "dir").mkdir()
    (world.project / "bad.txt").write_bytes(b"ok\n\xff\xfe")
    (world.project / "short.txt").write_text("1\n2\n3\n")
    cases = [
        ("missing.txt", "not_found", "File not found: missing.txt"),
        ("dir", "is_directory", "dir is a directory; use find or list_files."),
        ("bad.txt", "not_utf8", "bad.txt is not valid UTF-8 text (first bad byte at offset 3)."),
        (
            "short.txt:7",
            "invalid_range",
            "Line 7 is beyond end of file (3 lines total). Use :1 to read from the start, or :3 to read the last line.",
        ),
        (
            "short.txt:0",
            "invalid_selector",
            "Invalid selector ':0'. Use :N, :-M, :N-M, :N+, :N+K, :raw, or a range combined with raw (e.g. :raw:50-100).",
        ),
        (
            "short.txt:7-3",
            "invalid_selector",
            "Invalid selector ':7-3'. Use :N, :-M, :N-M, :N+, :N+K, :raw, or a range combined with raw (e.g. :raw:50-100).",
        ),
        (
            "https://example.com/a",
            "unsupported_target",
            'read does not fetch URLs; use web {"operation":"open","url":"https://example.com/a"}',
        ),
        (
            "ftp://example.com/a",
            "unsupported_target",
            "Unsupported read target scheme ftp://; read takes local paths and skill:// references.",
        ),
    ]
    for entry, code, message in cases:
        e = error(invoke, entry)
        assert (e.code, e.message) == (code, message), entry


def test_fifo_is_refused_without_blocking(world: Env, invoke) -> None:
    os.mkfifo(world.project / "pipe")
    e = error(invoke, "pipe")
    assert (e.code, e.message) == (
        "not_regular_file",
        "pipe is not a regular file; only text files can be read.",
    )


def test_one_mib_limit_is_inclusive_and_reports_the_real_size(world: Env, invoke) -> None:
    (world.project / "edge.txt").write_bytes(b"x" * 1_048_575 + b"\n")
    assert read(invoke, "edge.txt:1+1")["files"][0]["lines"] == 1
    (world.project / "big.bin").write_bytes(b"x" * 3_000_000)
    e = error(invoke, "big.bin")
    assert (e.code, e.message) == (
        "too_large",
        "big.bin is 3000000 bytes; read is limited to 1 MiB files. Use grep, or bash for large files.",
    )


def test_output_cap_cuts_a_section_and_skips_later_entries(world: Env, invoke) -> None:
    row = "y" * 700
    for n in range(4):
        (world.project / f"p{n}.txt").write_text(f"{row}\n" * 400)
    result = read(invoke, "p0.txt", "p1.txt", "p2.txt", "p3.txt", "p0.txt:raw")
    content = result["content"]
    assert len(content.encode()) <= 1_048_576
    sections = content.split("\n\n--- FILE: ")
    assert sections[3].startswith("p3.txt ---\n[p3.txt#") and "more lines in file. Use :" in sections[3]
    assert sections[4] == "p0.txt:raw ---\nERROR: not read: output cap (1 MiB) reached"
    cut = result["files"][3]
    assert cut["next_line"] == cut["shown"][1] + 1 < 400
    assert result["files"][4]["error"]["code"] == "output_cap"


def test_entries_past_the_output_cap_report_the_cap_in_json_as_in_text(world: Env, invoke) -> None:
    row = "é" * 700  # 1,400 bytes a row: three files of 740 rows overrun the cap within two
    for name in ("m1.txt", "m2.txt", "m3.txt"):
        (world.project / name).write_text(f"{row}\n" * 740)
    result = read(invoke, "m1.txt:1-3000", "m2.txt:1-3000", "m3.txt", "nope.txt", "m1.txt:9-3")
    sections = result["content"].split("\n\n--- FILE: ")
    capped = "ERROR: not read: output cap (1 MiB) reached"
    assert sections[2:] == [f"m3.txt ---\n{capped}", f"nope.txt ---\n{capped}", f"m1.txt:9-3 ---\n{capped}"]
    for described in result["files"][2:]:
        assert described["error"] == {
            "code": "output_cap",
            "message": "not read: output cap (1 MiB) reached",
            "details": {},
        }, described["entry"]


# ----- schema -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("paths", "field"),
    [([], "paths"), (["a"] * 9, "paths"), (["   "], "paths[0]"), (["a", ""], "paths[1]"), ([3], "paths[0]")],
)
def test_paths_must_be_one_to_eight_non_blank_strings(world: Env, paths, field: str) -> None:
    out = world.tool("read", {"paths": paths})
    assert out.code == 2
    assert out.error()["code"] == "invalid_input" and out.error()["message"].startswith(field + ":")


def test_missing_paths_is_bad_input(world: Env) -> None:
    out = world.tool("read", {})
    assert out.code == 2 and out.error()["message"].startswith("paths: Field required")


# ----- recording ----------------------------------------------------------------------------------


def test_hashline_reads_record_snapshots_per_session_and_raw_reads_do_not(world: Env) -> None:
    (world.project / "big.txt").write_text(NUMBERED)
    assert cli(world, "read", {"paths": ["big.txt:raw:1-5"]}, session="s1").code == 0
    assert snapshots(world) == []
    assert cli(world, "read", {"paths": ["big.txt:31-31", "big.txt:100+2"]}, session="s1").code == 0
    assert cli(world, "read", {"paths": ["big.txt:-2"]}, session="s2").code == 0
    rows = snapshots(world)
    canonical = os.path.realpath(world.project / "big.txt")
    assert [(r["session_id"], r["path"], r["seen"]) for r in rows] == [
        ("s1", canonical, "30-34,99-104"),
        ("s2", canonical, "1-5"),
    ]
    assert rows[0]["text"] == NUMBERED and rows[0]["tag"] == rows[1]["tag"]


def test_default_session_when_none_is_given(world: Env) -> None:
    (world.project / "a.txt").write_text("a\n")
    assert world.tool("read", {"paths": ["a.txt"]}).code == 0
    assert [r["session_id"] for r in snapshots(world)] == ["default"]
    env_session = world.run("tool", "read", "--json", '{"paths":["a.txt"]}')
    assert env_session.code == 0


def test_fermix_session_env_keys_the_snapshots(world: Env) -> None:
    import subprocess
    import sys

    (world.project / "a.txt").write_text("a\n")
    env = {**world.env, "FERMIX_SESSION": "from-env"}
    subprocess.run(
        [sys.executable, "-m", "fermix_cli", "tool", "read", "--json", '{"paths":["a.txt"]}'],
        cwd=world.project,
        env=env,
        check=True,
        capture_output=True,
    )
    assert [r["session_id"] for r in snapshots(world)] == ["from-env"]


# ----- paths --------------------------------------------------------------------------------------


def test_absolute_paths_show_cwd_relative_inside_and_absolute_outside(world: Env, invoke) -> None:
    (world.project / "src").mkdir()
    (world.project / "src" / "a.txt").write_text("a\n")
    workspace = world.fermix_home / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "w.txt").write_text("w\n")
    assert read(invoke, str(world.project / "src" / "a.txt"))["content"].startswith("[src/a.txt#")
    outside = os.path.realpath(workspace / "w.txt")
    assert read(invoke, str(workspace / "w.txt"))["content"].startswith(f"[{outside}#")


def test_absolute_paths_outside_cwd_follow_the_capability(world: Env, invoke) -> None:
    workspace = world.fermix_home / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "w.txt").write_text("w\n")
    (world.project / "in.txt").write_text("i\n")
    config(world, "[capabilities.tools.read]\nabsolute_paths = false\n")
    e = error(invoke, str(workspace / "w.txt"))
    cwd = os.path.realpath(world.project)
    assert (e.code, e.message) == (
        "absolute_path_denied",
        f"{os.path.realpath(workspace / 'w.txt')} is outside the working directory {cwd}, and "
        "capabilities.tools.read.absolute_paths is false. Use a path inside the working directory.",
    )
    assert read(invoke, str(world.project / "in.txt"))["files"][0]["path"] == "in.txt"
    out = world.tool("read", {"paths": [str(workspace / "w.txt")]})
    assert out.code == 3


def test_relative_paths_cannot_leave_the_working_directory(world: Env, invoke) -> None:
    sub = world.project / "sub"
    sub.mkdir()
    (world.project / "top.txt").write_text("t\n")
    (sub / "link.txt").symlink_to(world.project / "top.txt")
    (sub / "inner.txt").write_text("i\n")
    top = os.path.realpath(world.project / "top.txt")
    for entry in ("../top.txt", "link.txt"):
        e = error(invoke, entry, cwd=str(sub))
        assert (e.code, e.message) == (
            "outside_cwd",
            f"Relative path {entry} leaves the working directory {os.path.realpath(sub)} (it resolves to {top}). "
            "Relative paths cannot escape the working directory; pass the absolute path instead.",
        )
    assert read(invoke, str(world.project / "top.txt"), cwd=str(sub))["files"][0]["path"] == top
    assert read(invoke, "inner.txt", cwd=str(sub))["files"][0]["path"] == "inner.txt"


def test_a_relative_path_leaving_cwd_and_the_roots_is_told_to_go_absolute(world: Env, invoke) -> None:
    sub = world.project / "sub"
    sub.mkdir()
    (world.root / "outside.txt").write_text("o\n")
    e = error(invoke, "../../outside.txt", cwd=str(sub))
    assert e.code == "outside_cwd"  # not outside_root: a grant would not make a relative path legal
    assert e.message.endswith(
        "Relative paths cannot escape the working directory; pass the absolute path instead."
    )


def test_a_symlink_inside_cwd_is_shown_as_its_real_path(world: Env, invoke) -> None:
    (world.project / "real.txt").write_text("r\n")
    (world.project / "alias.txt").symlink_to("real.txt")
    assert read(invoke, "alias.txt")["content"].startswith("[real.txt#")


def test_sandbox_denials(world: Env) -> None:
    outside = world.root / "outside.txt"
    outside.write_text("secret\n")
    (world.home / ".ssh").mkdir()
    (world.home / ".ssh" / "config").write_text("Host x\n")
    denied = world.tool("read", {"paths": [str(outside)]})
    assert denied.code == 3 and denied.error()["code"] == "outside_root"
    protected = world.tool("read", {"paths": ["~/.ssh/config"]})
    assert protected.code == 3 and protected.error()["code"] == "protected_path"
    state = world.tool("read", {"paths": [str(world.fermix_home / "state.db")]})
    assert state.code == 3 and state.error()["code"] == "protected_path"
    (world.project / "ok.txt").write_text("ok\n")
    mixed = world.tool("read", {"paths": ["ok.txt", str(outside)]})
    assert mixed.code == 0
    assert "--- FILE: ok.txt ---\n[ok.txt#" in mixed.json()["content"]
    assert f"ERROR: Path is outside the sandbox roots: {outside}." in mixed.json()["content"]
    assert "secret" not in mixed.stdout


def test_guest_may_not_read(world: Env) -> None:
    (world.project / "a.txt").write_text("a\n")
    out = world.run("--trust", "guest", "tool", "read", "--json", '{"paths":["a.txt"]}')
    assert out.code == 3 and out.error()["code"] == "policy_denied"


# ----- skill:// -----------------------------------------------------------------------------------


def make_skill(world: Env, directory: str, name: str) -> Path:
    root = world.fermix_home / "skills" / directory
    (root / "references").mkdir(parents=True)
    (root / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: d\n---\nline one\nline two\nline three\n"
    )
    (root / "references" / "guide.md").write_text("g1\ng2\n")
    return root


def test_skill_definition_and_reference_reads_are_verbatim(world: Env, invoke) -> None:
    make_skill(world, "rev-dir", "review")
    content = read(invoke, "skill://review")["content"]
    assert content == "---\nname: review\ndescription: d\n---\nline one\nline two\nline three"
    assert read(invoke, "skill://review:5-6")["content"] == "line one\nline two"
    assert read(invoke, "skill://review/references/guide.md")["content"] == "g1\ng2"
    files = read(invoke, "skill://review")["files"]
    assert files[0]["tag"] is None and files[0]["path"] == "skill://review"
    assert snapshots(world) == []


def test_skill_refusals(world: Env, invoke) -> None:
    root = make_skill(world, "review", "review")
    (root / "references" / "link.md").symlink_to(root / "references" / "guide.md")
    (world.root / "elsewhere").mkdir()
    (root / "escape").symlink_to(world.root / "elsewhere")
    (world.root / "elsewhere" / "x.md").write_text("x\n")
    cases = [
        (
            "skill://nope",
            "not_found",
            "Unknown skill: nope. read takes skill://<name> for a discovered skill (discovered: repo_overview, review).",
        ),
        (
            "skill://review/../review/SKILL.md",
            "invalid_path",
            'Skill reference must be a relative path inside the skill without "..": ../review/SKILL.md',
        ),
        (
            "skill://review/references/link.md",
            "symlink_refused",
            "read refuses skill://review/references/link.md: skill references cannot be symbolic links.",
        ),
        (
            "skill://review/references",
            "is_directory",
            "skill://review/references is a directory; use find or list_files.",
        ),
        ("skill://review/missing.md", "not_found", "File not found: skill://review/missing.md"),
        (
            "skill://review/escape/x.md",
            "outside_root",
            f"Skill reference escape/x.md resolves outside the skill directory {os.path.realpath(root)}.",
        ),
    ]
    for entry, code, message in cases:
        e = error(invoke, entry)
        assert (e.code, e.message) == (code, message), entry
