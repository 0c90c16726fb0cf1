"""The CLI contract of ARCHITECTURE section 6, driven through the real `fermix` process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, Env


@pytest.fixture
def notes(world: Env) -> Path:
    p = world.project / "notes.txt"
    p.write_text("one\ntwo\nthree\n")
    return p


def test_json_inline_success_prints_result_object(world: Env, notes: Path) -> None:
    r = world.tool("file_read", {"path": "notes.txt"})
    assert r.code == 0, r.stderr
    assert r.stderr == ""
    out = r.json()
    assert out["content"] == "one\ntwo\nthree"
    assert out["path"] == str(notes)
    assert "\n" not in r.stdout.rstrip("\n"), "compact when stdout is not a terminal"


def test_json_from_stdin(world: Env, notes: Path) -> None:
    r = world.run("tool", "file_read", "--json", "-", input='{"path": "notes.txt", "offset": 2}')
    assert r.code == 0, r.stderr
    assert r.json()["content"] == "two\nthree"


def test_json_from_file(world: Env, notes: Path) -> None:
    args = world.root / "args.json"
    args.write_text('{"path": "notes.txt", "limit": 1}')
    r = world.run("tool", "file_read", "--json", f"@{args}")
    assert r.code == 0, r.stderr
    assert r.json()["content"] == "one"


def test_json_file_missing_is_bad_input(world: Env) -> None:
    r = world.run("tool", "file_read", "--json", "@/nonexistent/args.json")
    assert r.code == 2
    assert r.error()["code"] == "invalid_json"


def test_flags_build_the_input(world: Env, notes: Path) -> None:
    r = world.run("tool", "file_read", "--path", "notes.txt", "--offset", "3")
    assert r.code == 0, r.stderr
    assert r.json()["content"] == "three"


def test_flags_override_json_keys(world: Env, notes: Path) -> None:
    r = world.run(
        "tool", "file_read", "--json", '{"path": "notes.txt", "offset": 1}', "--offset=2", "--limit", "1"
    )
    assert r.code == 0, r.stderr
    assert r.json()["content"] == "two"


def test_underscore_and_dash_flag_spellings(world: Env, notes: Path) -> None:
    for flag in ("--old-string", "--old_string"):
        notes.write_text("alpha beta\n")
        r = world.run("tool", "file_edit", "--path", "notes.txt", flag, "beta", "--new-string", "gamma")
        assert r.code == 0, r.stderr
        assert notes.read_text() == "alpha gamma\n"


def test_boolean_flags(world: Env) -> None:
    (world.project / "a.py").write_text("x = 1\ny = 22\n")
    r = world.run("tool", "content_search", "--pattern", "[0-9]{2}", "--regex")
    assert r.code == 0, r.stderr
    assert [m["line"] for m in r.json()["matches"]] == [2]
    r = world.run("tool", "content_search", "--pattern", "[0-9]{2}", "--no-regex")
    assert r.json()["matches"] == []
    r = world.run("tool", "file_write", "--path", "d/new.txt", "--content", "x", "--mkdir", "false")
    assert r.code == 1
    assert r.error()["code"] == "write_failed"
    assert not (world.project / "d").exists()


def test_bad_flag_value_names_the_flag(world: Env) -> None:
    r = world.run("tool", "file_read", "--path", "x", "--offset", "two")
    assert r.code == 2
    assert "--offset" in r.error()["message"]


def test_unknown_flag_is_exit_2(world: Env) -> None:
    r = world.run("tool", "file_read", "--path", "x", "--bogus", "1")
    assert r.code == 2
    assert r.stdout == ""
    assert r.error()["code"] == "unknown_flag"


def test_unknown_tool_is_exit_2(world: Env) -> None:
    r = world.run("tool", "no_such_tool", "--json", "{}")
    assert r.code == 2
    assert r.error()["code"] == "unknown_tool"


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ('{"path": "a", "path": "b"}', "duplicate key 'path'"),
        ('{"path": "a", "offset": NaN}', "NaN"),
        ('{"path": "a", "offset": Infinity}', "Infinity"),
        ('["notes.txt"]', "JSON object"),
        ('"notes.txt"', "JSON object"),
        ("{path: 1}", "malformed JSON"),
        ("", "malformed JSON"),
    ],
)
def test_malformed_json_is_exit_2(world: Env, payload: str, fragment: str) -> None:
    r = world.run("tool", "file_read", "--json", payload)
    assert r.code == 2
    assert r.stdout == ""
    err = r.error()
    assert err["code"] == "invalid_json"
    assert fragment in err["message"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"path": "notes.txt", "offset": True}, "offset"),
        ({"path": "notes.txt", "offset": 1.5}, "offset"),
        ({"path": "notes.txt", "offset": "2"}, "offset"),
        ({"path": "notes.txt", "limit": 10**40}, "limit"),
        ({"path": "notes.txt", "colour": "red"}, "colour"),
        ({"path": 7}, "path"),
        ({"path": "x" * 5000}, "path"),
        ({}, "path"),
    ],
)
def test_schema_violations_name_the_field(world: Env, notes: Path, args: dict, field: str) -> None:
    r = world.tool("file_read", args)
    assert r.code == 2, r.stdout
    err = r.error()
    assert err["code"] == "invalid_input"
    assert err["message"].startswith(f"{field}:")
    assert err["details"]["errors"][0]["field"] == field


@pytest.mark.parametrize(
    ("name", "args", "field"),
    [
        ("file_read", {"path": None}, "path"),
        ("file_read", {"path": "notes.txt", "offset": None}, "offset"),
        ("file_write", {"path": "n/x.txt", "content": "hi", "mkdir": None}, "mkdir"),
    ],
)
def test_null_is_refused_where_the_schema_has_no_null(
    world: Env, notes: Path, name: str, args: dict, field: str
) -> None:
    r = world.tool(name, args)
    assert r.code == 2, r.stdout
    err = r.error()
    assert err["code"] == "invalid_input" and f"{field} is null" in err["message"]
    assert "null" not in json.dumps(world.run("tool", name, "--schema").json())


def test_null_stands_for_omission_where_the_seed_says_so(world: Env) -> None:
    schema = world.run("tool", "ast_grep", "--schema").json()
    assert {"type": "null"} in schema["properties"]["pattern"]["anyOf"]
    r = world.tool("ast_grep", {"operation": "outline", "pattern": None, "rewrite": None, "path": "."})
    assert r.code in (0, 1), r.stderr  # accepted by validation; no null reaches the handler


def test_exit_1_tool_failure(world: Env) -> None:
    r = world.tool("file_read", {"path": "missing.txt"})
    assert r.code == 1
    assert r.stdout == ""
    assert r.error() == {
        "code": "not_found",
        "message": f"File not found: {world.project / 'missing.txt'}",
        "details": {"path": str(world.project / "missing.txt")},
    }


def test_exit_3_refused_by_sandbox(world: Env) -> None:
    r = world.tool("file_read", {"path": "/etc/hostname"})
    assert r.code == 3
    assert r.error()["code"] == "protected_path"
    r = world.tool("file_read", {"path": str(world.root)})
    assert r.code == 3
    assert r.error()["code"] == "outside_root"
    assert "fermix grant path" in r.error()["message"]


def test_exit_3_refused_by_trust(world: Env, notes: Path) -> None:
    r = world.run("--trust", "guest", "tool", "file_write", "--json", '{"path": "g.txt", "content": "x"}')
    assert r.code == 3
    assert r.error()["code"] == "policy_denied"
    assert not (world.project / "g.txt").exists()


def test_exit_4_internal_error_is_one_line_and_logged(world: Env) -> None:
    # A sitecustomize that breaks the handler at run time simulates a bug in a tool.
    hook = world.root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import fermix_cli.tools.files as f\n"
        "def boom(p, ctx):\n    raise RuntimeError('kaboom')\n"
        "f.TOOLS = tuple(s.replace(handler=boom) if s.name == 'file_read' else s for s in f.TOOLS)\n"
    )
    env = world.env | {"PYTHONPATH": f"{hook}{os.pathsep}{REPO}"}
    proc = subprocess.run(
        [os.sys.executable, "-m", "fermix_cli", "tool", "file_read", "--json", '{"path":"x"}'],
        capture_output=True, text=True, env=env, cwd=world.project,
    )  # fmt: skip
    assert proc.returncode == 4
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert json.loads(proc.stderr)["error"]["code"] == "internal_error"
    log = (world.fermix_home / "logs" / "fermix.log").read_text()
    assert "RuntimeError: kaboom" in log and "Traceback" in log


def test_schema_prints_input_schema(world: Env) -> None:
    r = world.run("tool", "file_read", "--schema")
    assert r.code == 0
    schema = r.json()
    assert schema["type"] == "object"
    assert schema["required"] == ["path"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["offset"]["type"] == "integer"


def test_pretty_indents(world: Env, notes: Path) -> None:
    r = world.tool("file_read", {"path": "notes.txt"}, "--pretty")
    assert r.code == 0
    assert r.stdout.startswith("{\n  ")
    assert json.loads(r.stdout)["lines"] == 3


def test_text_prints_what_a_model_sees(world: Env, notes: Path) -> None:
    r = world.tool("file_write", {"path": "w.txt", "content": "abc"}, "--text")
    assert r.code == 0
    assert r.stdout == f"Wrote 3 bytes to {world.project / 'w.txt'}\n"
    r = world.tool("file_read", {"path": "notes.txt"}, "--text")
    assert r.stdout == "one\ntwo\nthree\n"


def test_jsonl_one_envelope_per_line_in_order(world: Env, notes: Path) -> None:
    lines = [
        '{"path": "notes.txt", "limit": 1}',
        '{"path": "missing.txt"}',
        "",
        '{"path": "notes.txt", "offset": 3}',
        "not json",
        '{"path": "/etc/passwd"}',
    ]
    r = world.run("tool", "file_read", "--jsonl", input="\n".join(lines) + "\n")
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [e["ok"] for e in out] == [True, False, True, False, False]
    assert out[0]["result"]["content"] == "one"
    assert out[1]["error"]["code"] == "not_found"
    assert out[2]["result"]["content"] == "three"
    assert out[3]["error"]["code"] == "invalid_json"
    assert out[4]["error"]["code"] == "protected_path"
    assert r.code == 1  # the first failure's exit class
    assert r.stderr == ""


def test_jsonl_flags_apply_to_every_line(world: Env, notes: Path) -> None:
    r = world.run(
        "tool",
        "file_read",
        "--jsonl",
        "--limit",
        "1",
        input='{"path":"notes.txt"}\n{"path":"notes.txt","offset":2}\n',
    )
    assert r.code == 0
    assert [json.loads(x)["result"]["content"] for x in r.stdout.splitlines()] == ["one", "two"]


def test_jsonl_and_json_together_is_usage_error(world: Env) -> None:
    r = world.run("tool", "file_read", "--jsonl", "--json", "{}", input="")
    assert r.code == 2


def test_tool_list(world: Env) -> None:
    r = world.run("tool", "list", "--json")
    assert r.code == 0
    rows = r.json()
    names = [x["name"] for x in rows]
    assert names == sorted(names)
    assert {"file_read", "file_write", "file_edit", "glob_search", "content_search", "tool_help"} <= set(
        names
    )
    for row in rows:
        assert {"name", "category", "policy_class"} <= set(row)
    text = world.run("tool", "list")
    assert text.code == 0 and "file_read" in text.stdout


def test_tool_list_as_guest_hides_what_a_guest_cannot_run(world: Env) -> None:
    rows = world.run("--trust", "guest", "tool", "list", "--json").json()
    assert rows, "a guest still sees read-only tools"
    assert all(r["policy_class"] == "read_only" and not r["owner_only"] for r in rows)


def test_tool_help_flag(world: Env) -> None:
    r = world.run("tool", "file_read", "--help")
    assert r.code == 0
    assert "--offset" in r.stdout and "Exit codes" in r.stdout


def test_global_cwd_and_session_options(world: Env, notes: Path) -> None:
    sub = world.project / "sub"
    sub.mkdir()
    (sub / "x.txt").write_text("in sub\n")
    r = world.run("--cwd", str(sub), "--session", "s1", "tool", "file_read", "--json", '{"path": "x.txt"}')
    assert r.code == 0, r.stderr
    assert r.json()["content"] == "in sub"


def test_global_home_option(world: Env, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    r = world.run(
        "--home",
        str(other),
        "tool",
        "file_write",
        "--json",
        '{"path": "o.txt", "content": "x"}',
        cwd=tmp_path,
    )
    assert r.code == 0, r.stderr
    assert r.json()["path"] == str(other / "workspace" / "o.txt")


def test_readable_error_line_on_a_terminal(world: Env) -> None:
    script = shutil.which("script")
    if script is None:
        pytest.skip("util-linux `script` is needed to give stderr a terminal")
    cmd = f'cd {world.project} && {os.sys.executable} -m fermix_cli tool file_read --json \'{{"path":"missing"}}\''
    proc = subprocess.run([script, "-qec", cmd, "/dev/null"], capture_output=True, text=True, env=world.env)
    assert "fermix: not_found: File not found" in proc.stdout
    assert '{"error"' not in proc.stdout


def test_fast_path_imports_neither_typer_nor_rich(world: Env, notes: Path) -> None:
    heavy = ("typer", "rich", "click", "httpx", "trafilatura", "mcp")
    # Once the config is cached (every call but the first), not even dataclasses: it imports
    # inspect, and the two cost a machine call about 7 ms. Nor logging (4 ms) when nothing is logged.
    for watched in (heavy, (*heavy, "dataclasses", "inspect", "logging")):
        r, loaded = world.imports_of(["tool", "file_read", "--json", '{"path":"notes.txt"}'], watched)
        assert r.code == 0, r.stderr
        assert loaded == []


@pytest.mark.parametrize(
    "argv",
    [
        ["file_read", "--json", '{"path":"notes.txt"}'],
        ["file_read", "--path", "notes.txt", "--offset", "2"],  # flags: the schema is built
        ["file_read", "--json", '{"path":7}'],  # a refusal: the errors are made too
        ["grep", "--json", '{"patterns":["two"]}'],
        ["memory_recall", "--json", "{}"],
        ["file_read", "--schema"],
        ["grep", "--schema"],
    ],
)
def test_fast_path_does_not_import_pydantic(world: Env, notes: Path, argv: list[str]) -> None:
    # With a config file in place: it is validated by fermix's own Params on every call.
    assert world.tool("file_read", {"path": "notes.txt"}).code == 0
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text('[fermix_core.routing]\ncron_model = "small"\n')
    assert world.tool("file_read", {"path": "notes.txt"}).code == 0
    r, loaded = world.imports_of(["tool", *argv], ["pydantic", "pydantic_core"])
    assert r.code == (2 if '"path":7' in argv[-1] else 0), r.stderr
    assert loaded == []


def test_console_script_when_installed(world: Env, notes: Path) -> None:
    # The script pip installed beside this interpreter (the README runs .venv/bin/python, not PATH).
    beside = Path(sys.executable).parent / "fermix"
    exe = str(beside) if beside.exists() else shutil.which("fermix")
    if exe is None:
        pytest.skip("the fermix console script is not installed in this environment")
    proc = subprocess.run(
        [exe, "tool", "file_read", "--path", "notes.txt"],
        capture_output=True,
        text=True,
        env=world.env,
        cwd=world.project,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"] == "one\ntwo\nthree"


def test_no_arguments_prints_usage_and_exits_2(world: Env) -> None:
    r = world.run()
    assert r.code == 2
    assert "Usage" in r.stdout + r.stderr


def test_unknown_command_exits_2(world: Env) -> None:
    r = world.run("frobnicate")
    assert r.code == 2


def test_categories_follow_the_seed(world: Env) -> None:
    rows = {x["name"]: x for x in world.run("tool", "list", "--json").json()}
    # The seed puts the shell and directory-access requests under `system`, not `filesystem`.
    assert rows["shell"]["category"] == "system"
    assert rows["request_directory_access"]["category"] == "system"
    assert {rows[n]["category"] for n in ("file_read", "file_write", "file_edit")} == {"filesystem"}
