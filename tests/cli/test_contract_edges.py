"""Edges of the CLI contract (ARCHITECTURE section 6): input that JSON cannot carry back out, a home or
session that cannot be used, closed streams, oversized `--jsonl` lines, flag spellings, and what a Typer
command does with an error it did not expect. Each drives the real `fermix` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.jsonin import MAX_INPUT_BYTES, json_text
from tests.conftest import REPO, Env, Result


def strict_json(text: str) -> Any:
    """`text` parsed as standard JSON: NaN and Infinity are not JSON."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in the output is not valid JSON: {text!r}")

    return json.loads(text, parse_constant=refuse)


def run_raw(world: Env, argv: list[str | bytes], *, env: dict[str, Any] | None = None, **kw: Any) -> Result:
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", *argv],
        capture_output=True,
        cwd=world.project,
        env=env or world.env,
        timeout=60,
        **kw,
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def notes(world: Env) -> Path:
    p = world.project / "notes.txt"
    p.write_text("one\ntwo 22\nthree\n")
    return p


# ----- numbers JSON cannot carry -----------------------------------------------------------------


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1E999", "123456789e9999"])
def test_an_overflowing_json_number_is_invalid_json(world: Env, notes: Path, number: str) -> None:
    payload = f'{{"path":"notes.txt","limit":{number}}}'
    for argv, stdin in ((["--json", payload], None), (["--json", "-"], payload)):
        r = world.run("tool", "file_read", *argv, input=stdin)
        assert r.code == 2, r.stderr
        err = strict_json(r.stderr)["error"]
        assert err["code"] == "invalid_json" and "too large" in err["message"]
    r = world.run("tool", "file_read", "--jsonl", input=payload + "\n")
    assert r.code == 2
    assert strict_json(r.stdout)["error"]["code"] == "invalid_json"


def test_an_overflowing_float_field_is_refused_before_the_browser_starts(world: Env) -> None:
    r = world.run("tool", "browser", "--json", '{"action":"click","x":1e400,"y":5}')
    assert r.code == 2
    assert strict_json(r.stderr)["error"]["code"] == "invalid_json"


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity", "1e400", "1_0", " 5", "٣"])
def test_a_number_flag_takes_only_a_finite_json_number(world: Env, value: str) -> None:
    r = world.run("tool", "browser", "--action", "click", "--x", value, "--y", "1")
    assert r.code == 2, r.stderr
    err = strict_json(r.stderr)["error"]
    assert err["code"] == "invalid_input" and err["message"].startswith("--x:")


def test_an_integer_flag_with_more_digits_than_python_converts_is_bad_input(world: Env) -> None:
    r = world.run("tool", "file_read", "--path", "notes.md", "--limit", "1" + "0" * 5000)
    assert r.code == 2, r.stderr
    err = strict_json(r.stderr)["error"]
    assert err["code"] == "invalid_input" and err["message"].startswith("--limit:")
    assert "too many digits" in err["message"] and len(err["message"]) < 300


def test_output_is_valid_json_whatever_floats_a_value_holds() -> None:
    value = {"got": float("inf"), "low": float("-inf"), "nan": float("nan"), "list": [1.5, float("inf")]}
    for kw in ({}, {"indent": 2}, {"separators": (",", ":")}):
        out = strict_json(json_text(value, **kw))
        assert out == {"got": "Infinity", "low": "-Infinity", "nan": "NaN", "list": [1.5, "Infinity"]}
    assert strict_json(json_text({"s": "\ud800", "x": float("inf")})) == {"s": "\ud800", "x": "Infinity"}


# ----- a home that is a file ---------------------------------------------------------------------


@pytest.mark.parametrize("below", [False, True], ids=["home-is-a-file", "home-below-a-file"])
def test_a_home_that_is_a_file_is_a_typed_error_for_tool_calls(world: Env, notes: Path, below: bool) -> None:
    home_file = world.root / "homefile"
    home_file.write_text("not a directory")
    home = home_file / "sub" if below else home_file
    env = world.env | {"FERMIX_HOME": str(home)}
    for argv in (["tool", "file_read", "--path", "notes.txt"], ["tool", "list"], ["tool", "memory_list"]):
        r = run_raw(world, list(argv), env=env)
        assert r.code == 1, (argv, r.stderr)
        err = json.loads(r.stderr)["error"]
        assert err["code"] == "home_not_directory", (argv, err)
        assert f"fermix home is not a directory: {home}" in err["message"]
        assert "FERMIX_HOME" in err["message"] and err["details"]["path"] == str(home_file)


@pytest.mark.parametrize(
    "argv", [["state", "status"], ["memory", "list"], ["logs"], ["runs", "list"], ["inbox", "list"]]
)
def test_a_home_that_is_a_file_is_a_typed_error_for_commands(world: Env, argv: list[str]) -> None:
    home_file = world.root / "homefile"
    home_file.write_text("")
    r = run_raw(world, list(argv), env=world.env | {"FERMIX_HOME": str(home_file)})
    assert "Traceback" not in r.stderr
    assert r.code == 1, r.stderr
    assert json.loads(r.stderr)["error"]["code"] == "home_not_directory"


# ----- an unexpected error in a Typer command ------------------------------------------------------


def test_a_bug_in_a_command_is_one_line_exit_4_and_logged(world: Env) -> None:
    hook = world.root / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import fermix_cli.cli.state_cmd as s\n"
        "def boom():\n    raise RuntimeError('kaboom in a command')\n"
        "s.known_count = boom\n"
    )
    env = world.env | {"PYTHONPATH": f"{hook}{os.pathsep}{REPO}"}
    r = run_raw(world, ["state", "status"], env=env)
    assert r.code == 4, r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert json.loads(r.stderr)["error"]["code"] == "internal_error"
    log = (world.fermix_home / "logs" / "fermix.log").read_text()
    assert "RuntimeError: kaboom in a command" in log and "Traceback" in log


def test_a_command_whose_reader_goes_away_exits_quietly(world: Env) -> None:
    """`fermix memory list | head -1`: like a tool call, a command whose reader is gone exits 0, silently."""
    r = world.tool("memory_store", {"key": "k", "value": "v"})
    assert r.code == 0, r.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "memory", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=world.env,
        cwd=world.project,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before the command writes its first line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, stderr
    assert stderr == ""


# ----- session ids -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("session", "why"),
    [
        (b"a\xff", "not valid UTF-8"),
        (b"a\x01b", "control character"),
        (b"a\nb", "control character"),
        (b"s" * 257, "257 characters"),
    ],
)
def test_a_malformed_session_id_is_a_usage_error(world: Env, notes: Path, session: bytes, why: str) -> None:
    r = run_raw(world, ["--session", session, "tool", "file_read", "--path", "notes.txt"])
    assert r.code == 2, r.stderr
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "usage" and "--session" in err["message"] and why in err["message"]
    env = {os.fsencode(k): os.fsencode(v) for k, v in world.env.items()} | {b"FERMIX_SESSION": session}
    r = run_raw(world, ["tool", "file_read", "--path", "notes.txt"], env=env)  # type: ignore[arg-type]
    assert r.code == 2, r.stderr
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "usage" and "FERMIX_SESSION" in err["message"] and why in err["message"]


def test_a_session_id_of_256_printable_characters_is_taken(world: Env, notes: Path) -> None:
    r = world.run("--session", "é" * 255 + "x", "tool", "file_read", "--path", "notes.txt")
    assert r.code == 0, r.stderr


# ----- --jsonl and oversized lines ---------------------------------------------------------------


def test_jsonl_answers_every_line_after_an_oversized_one(world: Env, notes: Path) -> None:
    lines = [
        b'{"path":"notes.txt","limit":1}\n',
        b'{"path":"notes.txt","content":"' + b"x" * (MAX_INPUT_BYTES + 10) + b'"}\n',
        b'{"path":"notes.txt","offset":3}\n',
        b'{"path":"missing.txt"}\n',
    ]
    r = run_raw(world, ["tool", "file_read", "--jsonl"], input=b"".join(lines))
    out = [strict_json(x) for x in r.stdout.splitlines()]
    assert [e["ok"] for e in out] == [True, False, True, False]
    assert out[0]["result"]["content"] == "one"
    assert out[1]["error"]["code"] == "invalid_json" and out[1]["error"]["details"]["line_skipped"]
    assert out[2]["result"]["content"] == "three"
    assert out[3]["error"]["code"] == "not_found"
    assert r.code == 2  # the first failure's exit class


@pytest.mark.parametrize("end", [b"", b"\n", b"\r\n"])
def test_a_jsonl_line_of_exactly_the_limit_is_taken_whatever_its_end(end: bytes) -> None:
    import io

    from fermix_cli.core.jsonin import read_bounded_line

    body = b'{"k":"' + b"x" * (MAX_INPUT_BYTES - 8) + b'"}'
    assert len(body) == MAX_INPUT_BYTES
    after = b'{"next":1}\n' if end else b""  # a line without its end is the input's last
    stream = io.BytesIO(body + end + after)
    assert read_bounded_line(stream) == body + end
    assert read_bounded_line(stream) == after
    over = io.BytesIO(b"x" + body + end + after)
    with pytest.raises(ToolError) as e:
        read_bounded_line(over)
    assert e.value.details["line_skipped"] is True  # its rest read and dropped (or the input ended)


def test_jsonl_parses_a_line_of_exactly_the_limit_with_its_newline(world: Env) -> None:
    body = b'{"path":"' + b"x" * (MAX_INPUT_BYTES - 11) + b'"}'
    assert len(body) == MAX_INPUT_BYTES
    r = run_raw(world, ["tool", "file_read", "--jsonl"], input=body + b"\r\n")
    [out] = [strict_json(x) for x in r.stdout.splitlines()]
    assert out["error"]["code"] != "invalid_json", out  # parsed: refused by the tool, not by the size


# ----- closed streams ----------------------------------------------------------------------------


def _closing(fd: int) -> Any:
    return lambda: os.close(fd)


@pytest.mark.parametrize("argv", [["--json", "-"], ["--jsonl"]])
def test_a_closed_stdin_is_a_usage_error(world: Env, argv: list[str]) -> None:
    r = run_raw(world, ["tool", "file_read", *argv], stdin=subprocess.DEVNULL, preexec_fn=_closing(0))
    assert r.code == 2, r.stderr
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "usage" and "stdin is closed" in err["message"]


def test_a_closed_stdout_says_the_work_was_done(world: Env) -> None:
    r = run_raw(
        world,
        ["tool", "file_write", "--path", "w.txt", "--content", "kept"],
        preexec_fn=_closing(1),
    )
    assert r.code == 1, r.stderr
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "output_failed"
    assert "stdout is closed" in err["message"] and "work is done" in err["message"]
    assert (world.project / "w.txt").read_text() == "kept"


# ----- flags -------------------------------------------------------------------------------------


def _patterns(r: Result) -> list[str]:
    assert r.code == 0, r.stderr
    return [str(p) for p in r.json()["patterns"]]


def test_an_array_of_strings_flag_takes_a_plain_value_as_one_item(world: Env, notes: Path) -> None:
    grep = ("tool", "grep", "--mode", "raw", "--path", "notes.txt")
    r = world.run(*grep, "--patterns", "[0-9]+")
    assert _patterns(r) == ["[0-9]+"] and [h["line"] for h in r.json()["hits"]] == [2]
    assert _patterns(world.run(*grep, "--patterns", "[1]")) == ["[1]"]
    assert _patterns(world.run(*grep, "--patterns", "{2}")) == ["{2}"]
    assert _patterns(world.run(*grep, "--patterns", '["one","three"]')) == ["one", "three"]
    assert _patterns(world.run(*grep, "--patterns", '["a", 1]')) == ['["a", 1]']
    assert _patterns(world.run(*grep, "--patterns", "one", "--patterns", '["two","x"]')) == [
        "one",
        "two",
        "x",
    ]
    assert _patterns(world.run(*grep, "--patterns", '["[\\"x\\"]"]')) == ['["x"]']


def test_an_object_flag_that_is_not_json_names_the_flag(world: Env) -> None:
    r = world.run("tool", "event_store", "--title", "t", "--when", "{bad")
    assert r.code == 2
    err = r.error()
    assert err["code"] == "invalid_json" and err["message"].startswith("--when:")


@pytest.mark.parametrize(
    ("argv", "regex"),
    [
        (["--regex"], True),
        (["--regex", "yes"], True),
        (["--regex=yes"], True),
        (["--regex", "TRUE"], True),
        (["--regex=0"], False),
        (["--regex", "no"], False),
        (["--no-regex"], False),
    ],
)
def test_boolean_flag_spellings_agree(world: Env, notes: Path, argv: list[str], regex: bool) -> None:
    r = world.run("tool", "content_search", "--pattern", "[0-9]{2}", *argv)
    assert r.code == 0, r.stderr
    assert bool(r.json()["matches"]) is regex


@pytest.mark.parametrize(
    ("argv", "code", "fragment"),
    [
        (["--no-regex=false"], "usage", "--no-regex takes no value"),
        (["--no-regex=banana"], "usage", "--no-regex takes no value"),
        (["--regex", "banana"], "invalid_input", "--regex: 'banana' is not a valid boolean"),
        (["--regex=banana"], "invalid_input", "--regex: 'banana' is not a valid boolean"),
    ],
)
def test_bad_boolean_flags_are_usage_errors(world: Env, argv: list[str], code: str, fragment: str) -> None:
    r = world.run("tool", "content_search", "--pattern", "x", *argv)
    assert r.code == 2
    err = r.error()
    assert err["code"] == code and fragment in err["message"]


def test_json_given_twice_is_a_usage_error(world: Env, notes: Path) -> None:
    r = world.run("tool", "file_read", "--json", '{"path":"notes.txt"}', "--json", '{"path":"x"}')
    assert r.code == 2
    assert r.error()["code"] == "usage" and "--json given twice" in r.error()["message"]


def test_a_cwd_that_is_a_file_is_missing_working_dir(world: Env, notes: Path) -> None:
    for argv in (["tool", "file_read", "--path", "notes.txt"], ["tool", "shell", "--command", "true"]):
        r = world.run("--cwd", str(notes), *argv)
        assert r.code == 2, r.stderr
        err = r.error()
        assert err["code"] == "missing_working_dir" and str(notes) in err["message"]
    r = world.run("--cwd", str(world.project / "nowhere"), "tool", "file_read", "--path", "notes.txt")
    assert r.error()["code"] == "missing_working_dir"


def test_a_tool_call_from_another_thread_leaves_the_process_s_signal_handlers_alone() -> None:
    """SIGTERM and SIGHUP become SystemExit only for a call on the main thread (`fermix tool`); an
    embedding program calling in from a worker thread keeps its own handlers, and the call works."""
    import signal
    import threading

    from fermix_cli.cli import toolcall

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            toolcall._terminate_cleanly()
        except BaseException as e:  # a ValueError from signal.signal off the main thread
            errors.append(e)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    assert errors == []
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)) == before
