"""`fermix ask` as users run it: a real process, the echo and mock providers, files on disk, exit codes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Env


def calls(*items: dict[str, Any], **extra: Any) -> str:
    """An echo prompt asking for these tool calls (one step)."""
    return json.dumps({"tool_calls": list(items), **extra})


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def ask_json(
    world: Env, *args: str, input: str | None = None, guest: bool = False
) -> tuple[int, dict[str, Any]]:
    r = world.run(*(("--trust", "guest") if guest else ()), "ask", "--json", *args, input=input)
    assert r.stdout, r.stderr
    return r.code, r.json()


def write_script(world: Env, responses: Any, name: str = "script.json") -> Path:
    path = world.project / name
    path.write_text(json.dumps(responses))
    return path


# ----- plain answers ------------------------------------------------------------------------------


def test_echo_streams_its_input_as_json(world: Env) -> None:
    r = world.run("ask", "-m", "echo", "hello", "there")
    assert r.code == 0, r.stderr
    echoed = json.loads(r.stdout)
    assert echoed["prompt"] == "hello there"
    assert "file_read" in echoed["tools"] and "file_write" in echoed["tools"]
    assert echoed["tool_results"] == []


def test_json_output_shape(world: Env) -> None:
    code, out = ask_json(world, "-m", "echo", "hi")
    assert code == 0
    assert {"status", "response", "session_id", "tool_calls", "usage"} <= set(out)
    assert out["status"] == "ok"
    assert json.loads(out["response"])["prompt"] == "hi"
    assert out["tool_calls"] == []
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0
    assert out["provider"] == "echo" and out["model"] == "echo"


def test_system_prompt_replaces_the_default(world: Env) -> None:
    _, out = ask_json(world, "-m", "echo", "--system", "You are terse.", "hi")
    assert json.loads(out["response"])["system"] == "You are terse."
    _, out = ask_json(world, "-m", "echo", "hi")
    assert "You are fermix" in json.loads(out["response"])["system"]


def test_stdin_is_read_with_flag(world: Env) -> None:
    code, out = ask_json(world, "-m", "echo", "--stdin", "summarise:", input="line one\nline two\n")
    assert code == 0
    assert json.loads(out["response"])["prompt"] == "summarise:\n\nline one\nline two"


def test_empty_message_is_a_usage_error(world: Env) -> None:
    r = world.run("ask", "-m", "echo", "   ")
    assert r.code == 2
    assert r.error()["code"] == "usage"


def test_no_provider_names_the_fix(world: Env) -> None:
    r = world.run("ask", "hello")
    assert r.code == 1
    err = r.error()
    assert err["code"] == "no_provider"
    assert (
        "OPENAI_API_KEY" in err["message"]
        and "fermix config set fermix_core.agent.provider" in err["message"]
    )
    assert r.stdout == ""


def test_unknown_provider_is_bad_input(world: Env) -> None:
    r = world.run("ask", "--provider", "nope", "hi")
    assert r.code == 2
    assert r.error()["code"] == "invalid_provider"


def test_configured_default_provider_is_used(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.agent]\nprovider = "echo"\nmodel = "parrot"\n'
    )
    code, out = ask_json(world, "hi")
    assert code == 0 and out["provider"] == "echo" and out["model"] == "parrot"


# ----- the loop through real tools -----------------------------------------------------------------


def test_tool_calls_run_and_results_return_to_the_model(world: Env) -> None:
    (world.project / "notes.txt").write_text("alpha\nbeta\n")
    prompt = calls(call("file_read", path="notes.txt"), call("file_write", path="out.txt", content="done\n"))
    code, out = ask_json(world, "-m", "echo", prompt)
    assert code == 0, out
    assert (world.project / "out.txt").read_text() == "done\n"
    results = json.loads(out["response"])["tool_results"]
    assert [r["name"] for r in results] == ["file_read", "file_write"]
    assert results[0]["output"] == "alpha\nbeta"
    assert [c["name"] for c in out["tool_calls"]] == ["file_read", "file_write"]
    assert out["tool_calls"][0]["arguments"] == {"path": "notes.txt"}
    assert all(c["ok"] for c in out["tool_calls"])
    assert out["iterations"] == 2


def test_tool_errors_go_back_to_the_model(world: Env) -> None:
    code, out = ask_json(world, "-m", "echo", calls(call("file_read", path="missing.txt"), call("file_read")))
    assert code == 0
    results = json.loads(out["response"])["tool_results"]
    assert results[0]["is_error"] and results[0]["output"].startswith("not_found: ")
    assert results[1]["is_error"] and results[1]["output"].startswith("invalid_input: path")
    assert [c.get("error_code") for c in out["tool_calls"]] == ["not_found", "invalid_input"]
    assert "Traceback" not in out["response"]


def test_every_call_gets_a_unique_id_recorded_in_tool_calls(world: Env) -> None:
    (world.project / "a.txt").write_text("a")
    prompt = calls(call("file_read", path="a.txt"), call("glob_search", pattern="*.txt"))
    ids: list[str] = []
    for _ in range(2):
        _, out = ask_json(world, "-m", "echo", prompt)
        ids += [c["id"] for c in out["tool_calls"]]
    assert len(ids) == 4 == len(set(ids))
    db = sqlite3.connect(world.fermix_home / "state.db")
    rows = db.execute("SELECT id, tool, ok, origin FROM tool_calls ORDER BY started_at").fetchall()
    assert sorted(r[0] for r in rows) == sorted(ids)
    assert {r[1] for r in rows} == {"file_read", "glob_search"}


def test_unknown_tool_is_answered_as_unknown_capability(world: Env) -> None:
    code, out = ask_json(world, "-m", "echo", calls(call("rm_rf_everything", path="/")))
    assert code == 0
    result = json.loads(out["response"])["tool_results"][0]
    assert result["output"] == "unknown_tool: Unknown capability: rm_rf_everything"


def test_tools_flag_limits_what_is_offered_and_run(world: Env) -> None:
    _, out = ask_json(
        world, "-m", "echo", "--tools", "file_read", calls(call("file_write", path="x", content=""))
    )
    assert json.loads(out["response"])["tools"] == ["file_read"]
    assert (
        json.loads(out["response"])["tool_results"][0]["output"]
        == "unknown_tool: Unknown capability: file_write"
    )
    assert not (world.project / "x").exists()
    _, out = ask_json(world, "-m", "echo", "--tools", "", "hi")
    assert json.loads(out["response"])["tools"] == []


def test_tools_flag_errors(world: Env) -> None:
    r = world.run("ask", "-m", "echo", "--tools", "no_such_tool", "hi")
    assert r.code == 2 and r.error()["code"] == "unknown_tool"
    r = world.run("ask", "-m", "echo", "--tools", "file_read", "--toolset", "coding", "hi")
    assert r.code == 2 and r.error()["code"] == "usage"
    r = world.run("ask", "-m", "echo", "--toolset", "everything", "hi")
    assert r.code == 2 and r.error()["code"] == "invalid_toolset"
    r = world.run("--trust", "guest", "ask", "-m", "echo", "--tools", "file_write", "hi")
    assert r.code == 3 and r.error()["code"] == "policy_denied"


def test_coding_toolset_is_selectable(world: Env) -> None:
    _, out = ask_json(world, "-m", "echo", "--toolset", "coding", "hi")
    offered = json.loads(out["response"])["tools"]
    assert "tool_help" in offered
    assert "file_write" not in offered and "model_routing_config" not in offered
    assert set(offered) <= {
        "read",
        "hash_edit",
        "write",
        "grep",
        "find",
        "list_files",
        "ast_grep",
        "bash",
        "web",
        "view_image",
        "subagents",
        "tool_help",
    }


# ----- policy: a guest never sees or runs more than read_only ------------------------------------------


def test_guest_never_sees_or_runs_tools_above_read_only(world: Env) -> None:
    (world.project / "secret.txt").write_text("owner data")
    prompt = calls(
        call("file_write", path="pwned.txt", content="x"),
        call("file_edit", path="secret.txt", old_string="owner", new_string="guest"),
        call("file_read", path="secret.txt"),
        call("model_routing_config", action="set", key="subagent_model", value="x"),
    )
    code, out = ask_json(world, "-m", "echo", prompt, guest=True)
    assert code == 0
    echoed = json.loads(out["response"])
    # Only read_only tools that are not owner-only are offered.
    from fermix_cli.core.registry import default_registry

    # The registry itself: `tool list` leaves out tools that need a conversation channel.
    catalog = {
        s.name: {"policy_class": s.policy_class, "owner_only": s.owner_only} for s in default_registry().all()
    }
    assert echoed["tools"], "a guest still gets the harmless tools"
    for name in echoed["tools"]:
        assert catalog[name]["policy_class"] == "read_only" and not catalog[name]["owner_only"], name
    assert "file_write" not in echoed["tools"] and "file_read" not in echoed["tools"]
    for result in echoed["tool_results"]:
        assert result["is_error"]
        assert result["output"] == f"unknown_tool: Unknown capability: {result['name']}"
    assert not (world.project / "pwned.txt").exists()
    assert (world.project / "secret.txt").read_text() == "owner data"
    assert not (world.fermix_home / "config.toml").exists()
    db = sqlite3.connect(world.fermix_home / "state.db")
    codes = {r[0] for r in db.execute("SELECT error_code FROM tool_calls")}
    assert codes == {"policy_denied"}


def test_a_guest_session_stays_guest_when_continued(world: Env) -> None:
    _, out = ask_json(world, "-m", "echo", "hi", guest=True)
    _, out2 = ask_json(
        world,
        "-m",
        "echo",
        "--session",
        out["session_id"],
        calls(call("file_write", path="p.txt", content="x")),
    )
    assert "file_write" not in json.loads(out2["response"])["tools"]
    assert not (world.project / "p.txt").exists()


# ----- bounds: iteration cap, repeated calls, Ctrl-C ---------------------------------------------------


def test_iteration_cap_stops_with_a_status_naming_it(world: Env) -> None:
    (world.project / "a.txt").write_text("a")
    steps = [[call("glob_search", pattern=f"{i}*")] for i in range(40)]
    code, out = ask_json(world, "-m", "echo", json.dumps({"tool_calls": steps}))
    assert code == 1
    assert out["status"] == "max_iterations"
    assert out["iterations"] == 25
    assert out["error"]["code"] == "max_iterations" and "25" in out["error"]["message"]
    assert "fermix_core.agent.max_iterations" in out["error"]["message"]
    ran = [c for c in out["tool_calls"] if c["ok"]]
    assert len(ran) == 24
    assert out["tool_calls"][-1]["error_code"] == "cancelled"

    code, out = ask_json(world, "-m", "echo", "--max-iterations", "3", json.dumps({"tool_calls": steps}))
    assert (
        out["status"] == "max_iterations"
        and out["iterations"] == 3
        and "--max-iterations" in out["error"]["message"]
    )


def test_iteration_cap_comes_from_config(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text("[fermix_core.agent]\nmax_iterations = 2\n")
    steps = [[call("glob_search", pattern=f"{i}*")] for i in range(5)]
    _, out = ask_json(world, "-m", "echo", json.dumps({"tool_calls": steps}))
    assert out["status"] == "max_iterations" and out["iterations"] == 2


def test_repeated_identical_calls_warn_then_stop(world: Env) -> None:
    (world.project / "a.txt").write_text("a")
    prompt = json.dumps({"tool_calls": [[call("file_read", path="a.txt")]], "repeat": True})
    code, out = ask_json(world, "-m", "echo", prompt)
    assert code == 1
    assert out["status"] == "loop_detected"
    assert out["error"]["code"] == "loop_detected" and "file_read" in out["error"]["message"]
    codes = [c.get("error_code") for c in out["tool_calls"]]
    assert codes == [None, None, "repeated_call", "cancelled"]
    assert "repeated_call: file_read was called 3 times in a row" in out["tool_calls"][2]["output"]
    assert out["iterations"] == 4


def test_different_arguments_are_not_a_loop(world: Env) -> None:
    (world.project / "a.txt").write_text("a\nb\nc\nd\ne\n")
    steps = [[call("file_read", path="a.txt", offset=i)] for i in range(1, 6)]
    code, out = ask_json(world, "-m", "echo", json.dumps({"tool_calls": steps}))
    assert code == 0 and out["status"] == "ok" and len(out["tool_calls"]) == 5


@pytest.mark.parametrize("limit", [(), ("--timeout", "60000")])
def test_ctrl_c_stops_cleanly(world: Env, limit: tuple[str, ...]) -> None:
    # With a time limit armed, a real Ctrl-C is still an interruption, not a timeout.
    script = write_script(
        world, [{"tool_calls": [call("glob_search", pattern="*")]}, {"text": "late", "delay": 30}]
    )
    args = ["ask", "--json", *limit, "--provider", "mock", "-m", str(script), "go"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", *args],
        cwd=world.project,
        env=world.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    db_path = world.fermix_home / "state.db"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # wait until the tool has run and the slow model call began
        if db_path.exists():
            with sqlite3.connect(db_path) as db:
                try:
                    if db.execute("SELECT count(*) FROM messages WHERE role='tool'").fetchone()[0]:
                        break
                except sqlite3.OperationalError:
                    pass
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    record = json.loads(out)
    assert record["status"] == "interrupted"
    assert record["tool_calls"][0]["ok"]
    assert "Traceback" not in err
    r = world.run("logs", "--json")
    assert r.json()[-1]["status"] == "interrupted"


# ----- --timeout / -t ---------------------------------------------------------------------------------


def test_timeout_stops_a_running_tool_and_ends_the_run_timeout(world: Env) -> None:
    from tests.conftest import processes_with

    marker = f"fermix-timeout-{os.getpid()}-{time.monotonic_ns()}"
    script = write_script(
        world,
        [{"tool_calls": [call("shell", command=f"sleep 30 # {marker}")]}, {"text": "never asked"}],
    )
    t0 = time.monotonic()
    code, out = ask_json(world, "--provider", "mock", "-m", str(script), "-t", "1500", "go")
    assert time.monotonic() - t0 < 15
    assert code == 1
    assert out["status"] == "timeout"
    assert out["error"]["code"] == "timeout" and out["error"]["details"] == {"timeout_ms": 1500}
    assert "1500 ms" in out["error"]["message"] and "--timeout MS" in out["error"]["message"]
    [shell] = out["tool_calls"]
    assert shell["error_code"] == "interrupted" and "time limit" in shell["output"]
    assert processes_with(marker) == []  # the command's process group was stopped with the run
    assert world.run("logs", "--json").json()[-1]["status"] == "timeout"


def test_timeout_abandons_the_model_call_in_flight(world: Env) -> None:
    from tests.agent.model_server import ModelServer, Reply

    server = ModelServer()
    try:
        world.fermix_home.mkdir(exist_ok=True)
        (world.fermix_home / "config.toml").write_text(
            f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{server.base}/v1"\n'
            'default_model = "slow"\n[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
        )
        server.queue(Reply("text", text="too late", delay=30))
        t0 = time.monotonic()
        r = world.run("ask", "--provider", "local", "--timeout", "1000", "hello")
        elapsed = time.monotonic() - t0
    finally:
        server.close()
    assert r.code == 1 and elapsed < 15, (r.code, elapsed)
    error = r.error()
    assert error["code"] == "timeout" and "1000 ms" in error["message"]
    assert world.run("logs", "--json").json()[-1]["status"] == "timeout"


def test_a_run_inside_its_time_limit_ends_as_usual(world: Env) -> None:
    code, out = ask_json(world, "-m", "echo", "-t", "60000", "hello")
    assert (code, out["status"]) == (0, "ok")
    r = world.run("ask", "-m", "echo", "--timeout", "0", "hello")
    assert r.code == 2 and "--timeout" in r.stderr


def test_chat_is_ask_and_s_names_the_session(world: Env) -> None:
    code, out = ask_json(world, "-m", "echo", "-s", "notes", "first")
    assert (code, out["session_id"]) == (0, "notes")
    r = world.run("chat", "--json", "-m", "echo", "-s", "notes", "second")
    assert r.code == 0, r.stderr
    second = r.json()
    assert second["status"] == "ok" and second["session_id"] == "notes"
    assert json.loads(second["response"])["previous_messages"] == 2
    assert world.run("chat", "--help").code == 0
    assert " chat " not in world.run("--help").stdout  # an alias: help lists `ask` once


# ----- sessions ---------------------------------------------------------------------------------------


def test_session_continues_with_history(world: Env) -> None:
    _, first = ask_json(world, "-m", "echo", "first")
    _, second = ask_json(world, "-m", "echo", "--session", first["session_id"], "second")
    assert second["session_id"] == first["session_id"]
    assert json.loads(second["response"])["previous_messages"] == 2
    _, third = ask_json(world, "-m", "echo", "-c", "third")
    assert third["session_id"] == first["session_id"]
    assert json.loads(third["response"])["previous_messages"] == 4
    _, fresh = ask_json(world, "-m", "echo", "fresh")
    assert fresh["session_id"] != first["session_id"]
    assert json.loads(fresh["response"])["previous_messages"] == 0


def test_global_session_option_and_env(world: Env) -> None:
    _, out = ask_json(world, "-m", "echo", "one")
    r = world.run("--session", out["session_id"], "ask", "--json", "-m", "echo", "two")
    assert r.json()["session_id"] == out["session_id"]
    r = world.run("ask", "--json", "-m", "echo", "--session", "my-notes", "three")
    assert r.json()["session_id"] == "my-notes"
    r = world.run("ask", "-m", "echo", "--session", "bad id!", "x")
    assert r.code == 2


# ----- the mock provider --------------------------------------------------------------------------------


def test_mock_replays_a_script_with_tool_calls(world: Env) -> None:
    (world.project / "a.txt").write_text("mock me")
    script = write_script(
        world,
        [
            {
                "text": "Let me look.",
                "tool_calls": [{"id": "t1", "name": "file_read", "arguments": {"path": "a.txt"}}],
            },
            {"chunks": ["It says ", "mock me."], "usage": {"input_tokens": 11, "output_tokens": 4}},
        ],
    )
    r = world.run("ask", "--provider", "mock", "-m", str(script), "what is in a.txt?")
    assert r.code == 0, r.stderr
    assert r.stdout == "Let me look.\nIt says mock me.\n"
    _, out = ask_json(world, "--provider", "mock", "-m", str(script), "again")
    assert out["response"] == "It says mock me."
    assert out["tool_calls"][0]["output"] == "mock me"


def test_mock_script_from_config_and_errors(world: Env) -> None:
    script = write_script(world, {"responses": [{"error": {"code": "rate_limited", "message": "slow down"}}]})
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(f'[fermix_core.providers.mock]\nscript = "{script}"\n')
    code, out = ask_json(world, "-m", "mock", "hi")
    assert code == 1 and out["status"] == "error" and out["error"]["code"] == "rate_limited"
    r = world.run("ask", "-m", "mock", "hi")
    assert r.code == 1 and r.error()["code"] == "rate_limited"


def test_mock_script_problems_are_reported(world: Env) -> None:
    bad = write_script(world, [{"text": "x", "surprise": 1}], "bad.json")
    r = world.run("ask", "--provider", "mock", "-m", str(bad), "hi")
    assert r.code == 2 and r.error()["code"] == "invalid_script" and "surprise" in r.error()["message"]
    r = world.run("ask", "--provider", "mock", "hi")
    assert r.code == 2 and "FERMIX_MOCK_SCRIPT" in r.error()["message"]
    short = write_script(world, [{"tool_calls": [call("glob_search", pattern="*")]}], "short.json")
    code, out = ask_json(world, "--provider", "mock", "-m", str(short), "hi")
    assert (
        code == 1
        and out["error"]["code"] == "provider_error"
        and "has 1 responses" in out["error"]["message"]
    )


def test_empty_reply_is_a_failure(world: Env) -> None:
    script = write_script(world, [{"text": ""}])
    code, out = ask_json(world, "--provider", "mock", "-m", str(script), "hi")
    assert code == 1 and out["error"]["code"] == "provider_error" and "empty" in out["error"]["message"]


def test_ask_starts_without_http_or_rich_markdown(world: Env) -> None:
    # Nor the other command groups' modules (the click tree is built for `ask` alone), nor pydantic.
    others = [
        "fermix_cli.cli.jobs_cmd",
        "fermix_cli.cli.events_cmd",
        "fermix_cli.cli.browser_cmd",
        "pydantic",
        "fermix_cli.harness.delivery",  # no coding run in this session: one read, not the engine
    ]
    r, loaded = world.imports_of(
        ["ask", "-m", "echo", "hi"], ["httpx", "httpcore", "rich.markdown", "rich.live", *others]
    )
    assert r.code == 0, r.stderr
    assert loaded == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
def test_tool_fast_path_still_skips_agent_modules(world: Env) -> None:
    (world.project / "n.txt").write_text("x")
    argv = ["tool", "file_read", "--json", '{"path":"n.txt"}']
    r, loaded = world.imports_of(argv, ["fermix_cli.agent.*", "typer", "rich", "httpx"])
    assert r.code == 0, r.stderr
    assert loaded == []


# ----- a run whose process is stopped or dies -------------------------------------------------------


def _slow_ask(world: Env) -> tuple[subprocess.Popen[str], Path]:
    """`fermix ask` whose model takes 30 s to answer, started; returns once its run is stored."""
    import sqlite3
    import sys
    import time

    script = write_script(world, [{"delay": 30, "text": "late"}], "slow.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "ask", "--provider", "mock", "-m", str(script), "wait"],
        cwd=world.project, env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    db = world.fermix_home / "state.db"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if db.exists():
            with contextlib.suppress(sqlite3.Error):
                conn = sqlite3.connect(db)
                try:
                    if conn.execute("SELECT 1 FROM runs WHERE status = 'running'").fetchone():
                        return proc, db
                finally:
                    conn.close()
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run never started")


def _run_status(db: Path) -> tuple[str, str | None]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        status, error = conn.execute("SELECT status, error_json FROM runs").fetchone()
    finally:
        conn.close()
    return status, None if error is None else json.loads(error)["code"]


def test_a_killed_ask_leaves_no_run_running_for_good(world: Env) -> None:
    """SIGKILL leaves the run `running` (nothing can run in the process); `fermix doctor` says so, and
    the next `fermix logs` (or `ask`, `agent`) ends it `interrupted`: its process is gone."""
    import signal

    proc, db = _slow_ask(world)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _run_status(db) == ("running", None)
    doctor = world.run("doctor", "--json")
    (check,) = [c for c in doctor.json()["checks"] if c["name"] == "agent runs"]
    assert check["status"] == "warn" and check["data"]["orphaned"] == 1
    assert world.run("logs", "--json").code == 0
    assert _run_status(db) == ("interrupted", "interrupted")
    (check,) = [c for c in world.run("doctor", "--json").json()["checks"] if c["name"] == "agent runs"]
    assert check["status"] == "ok"


def starts(db: Path) -> list[tuple[str, str, str, str | None]]:
    """(tool, status, args_json, run_id) of every tool_call_starts row."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT tool, status, args_json, run_id FROM tool_call_starts").fetchall()
    finally:
        conn.close()


def test_a_finished_run_leaves_no_start_behind(world: Env) -> None:
    """A turn's first call is recorded as it ends, its last with the turn: both replace their starts."""
    script = write_script(
        world,
        [
            {"tool_calls": [call("file_write", path="a.txt", content="x"), call("shell", command="echo hi")]},
            {"text": "done"},
        ],
    )
    code, out = ask_json(world, "--provider", "mock", "-m", str(script), "go")
    assert code == 0 and [c["ok"] for c in out["tool_calls"]] == [True, True], out
    db = world.fermix_home / "state.db"
    assert starts(db) == []
    conn = sqlite3.connect(db)
    try:
        assert sorted(conn.execute("SELECT tool, ok FROM tool_calls").fetchall()) == [
            ("file_write", 1),
            ("shell", 1),
        ]
    finally:
        conn.close()
    assert [c["status"] for c in world.run("logs", "--calls", "--json").json()] == ["ok", "ok"]


def test_a_killed_ask_leaves_the_record_that_its_shell_call_started(world: Env) -> None:
    """SIGKILL while `shell` runs: the call's result is never stored, but its start is, before the
    command ran; `fermix logs` then shows the call interrupted within its interrupted run, and the
    command itself does not outlive the killed fermix."""
    from tests.conftest import processes_with

    marker = f"fermix-started-{os.getpid()}-{time.monotonic_ns()}"
    script = write_script(
        world, [{"tool_calls": [call("shell", command=f"sleep 30 # {marker}")]}, {"text": "never asked"}]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "ask", "--provider", "mock", "-m", str(script), "go"],
        cwd=world.project, env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(marker), "the shell command never started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    db = world.fermix_home / "state.db"
    ((tool, status, args, run_id),) = starts(db)
    assert (tool, status) == ("shell", "started") and marker in args
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM tool_calls").fetchone() == (0,)
        assert conn.execute("SELECT id FROM runs").fetchall() == [(run_id,)]
    finally:
        conn.close()
    # The command's lifeline ended with fermix: nothing of it is left running.
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []
    (check,) = [c for c in world.run("doctor", "--json").json()["checks"] if c["name"] == "tool calls"]
    assert check["status"] == "warn" and check["data"]["orphaned"] == 1

    r = world.run("logs", "--json")
    assert r.code == 0, r.stderr
    (run,) = r.json()
    assert run["status"] == "interrupted"
    (shell,) = run["tool_calls"]
    assert shell["name"] == "shell" and shell["arguments"] == {"command": f"sleep 30 # {marker}"}
    assert shell["ok"] is False and shell["error_code"] == "interrupted" and shell["status"] == "interrupted"
    assert "killed or crashed" in shell["output"]
    assert [(t, s) for t, s, _, _ in starts(db)] == [("shell", "interrupted")]
    text = world.run("logs")
    assert f'· shell {{"command": "sleep 30 # {marker}"}}' in text.stdout
    assert "✗ interrupted shell" in text.stdout
    (listed,) = world.run("logs", "--calls", "--json").json()
    assert (listed["tool"], listed["status"], listed["origin"]) == ("shell", "interrupted", "cli")
    (check,) = [c for c in world.run("doctor", "--json").json()["checks"] if c["name"] == "tool calls"]
    assert check["status"] == "ok"


def test_sigterm_ends_an_ask_interrupted(world: Env) -> None:
    import signal

    proc, db = _slow_ask(world)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert _run_status(db)[0] == "interrupted"


def _sleeping_shell_call(world: Env) -> tuple[str, Path, str]:
    """An echo prompt whose one call runs `sleep 302.<unique digits>` in shell (60 s timeout), the FIFO
    the command writes its process group to once it runs, and the sleep's marker."""
    import secrets

    marker = f"302.{secrets.randbelow(10**9):09d}"
    fifo = world.root / f"group-{marker}"
    os.mkfifo(fifo)
    command = f"echo $$ > {fifo}; sleep {marker}"
    return calls(call("shell", command=command, timeout_ms=60000)), fifo, marker


def _group_when_running(proc: subprocess.Popen[str], fifo: Path) -> int:
    import select

    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        got = b""
        while not got.endswith(b"\n"):
            ready, _, _ = select.select([reader], [], [], 300)
            if not ready:
                proc.kill()
                raise AssertionError(f"the command never started: {proc.communicate()}")
            got += os.read(reader, 64)
        return int(got)
    finally:
        os.close(reader)


@pytest.mark.parametrize("command", ["ask", "agent"])
def test_a_closed_terminal_s_sighup_ends_the_running_command_s_group(world: Env, command: str) -> None:
    """SIGHUP (the terminal closed, ssh dropped) stops `ask` and `agent` as SIGTERM does: the shell call
    in flight has its process group killed (it is in its own session, so the hangup reaches only fermix),
    the run is stored `interrupted`; `ask` exits 130 as for any interruption, `agent` 129."""
    from tests.conftest import survivors

    prompt, fifo, marker = _sleeping_shell_call(world)
    argv = [sys.executable, "-m", "fermix_cli", command, "-m", "echo"]
    proc = subprocess.Popen(
        argv + ([prompt] if command == "ask" else []),
        cwd=world.project, env=world.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    pgid = 0
    try:
        assert proc.stdin is not None
        if command == "agent":
            proc.stdin.write(prompt + "\n")
            proc.stdin.flush()
        pgid = _group_when_running(proc, fifo)
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == (130 if command == "ask" else 129), err
        assert survivors(pgid, marker) == [], "the command's group outlived fermix's SIGHUP"
        assert _run_status(world.fermix_home / "state.db")[0] == "interrupted"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in survivors(pgid, marker, safety_net=0) if pgid else ():
            os.kill(pid, signal.SIGKILL)


def test_a_process_owner_is_gone_only_when_certainly_gone() -> None:
    import os
    import sys

    from fermix_cli.core.procid import owner_gone, owner_identity, process_start

    me = owner_identity()
    assert not owner_gone(me)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(child.pid)
    child.wait()
    host = os.uname().nodename
    assert owner_gone(f"{host}:{child.pid}:{start or ''}")
    assert owner_gone(f"{host}:{os.getpid()}:another-boot:1")  # the pid, reused by a later process
    assert not owner_gone(f"elsewhere.example:{child.pid}:{start}")  # another host: never a guess


def test_a_lone_surrogate_in_a_call_s_arguments_is_printed_as_json_escapes(world: Env) -> None:
    """The call's arguments keep the model's `\\ud800` (its input check refuses them); `ask --json` and
    `logs --json` print them as JSON escapes instead of failing to encode them."""
    script = write_script(
        world,
        [
            {"tool_calls": [{"name": "file_read", "arguments": '{"path": "x\\ud800.txt"}'}]},
            {"text": "finished"},
        ],
    )
    code, out = ask_json(world, "--provider", "mock", "-m", str(script), "go")
    assert code == 0 and out["response"] == "finished"
    r = world.run("logs", "--json")
    assert r.code == 0, r.stderr
    assert "\\ud800" in r.stdout and "x\\ud800.txt" in json.dumps(r.json())


def test_sigterm_ends_an_agent_session_s_turn_interrupted(world: Env) -> None:
    """`fermix agent` stopped by SIGTERM mid-turn: the turn's run is stored `interrupted` (not left
    `running`), and the session ends with 143."""
    import signal
    import sqlite3
    import sys
    import time

    script = write_script(world, [{"delay": 30, "text": "late"}], "slow.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "agent", "--provider", "mock", "-m", str(script)],
        cwd=world.project, env=world.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write("wait\n")
    proc.stdin.flush()
    db = world.fermix_home / "state.db"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.Error):
            conn = sqlite3.connect(db)
            try:
                if conn.execute("SELECT 1 FROM runs WHERE status = 'running'").fetchone():
                    break
            finally:
                conn.close()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert _run_status(db)[0] == "interrupted"


def test_model_arguments_are_parsed_as_strictly_as_cli_input(world: Env) -> None:
    # Duplicate keys, NaN and numbers past a float: refused as `fermix tool --json` refuses them, and
    # nothing runs (the last duplicate would have won with a lenient parse).
    dup = {"name": "file_write", "arguments": '{"path": "a.txt", "path": "b.txt", "content": "x"}'}
    nan = {"name": "file_read", "arguments": '{"path": "notes.txt", "limit": NaN}'}
    big = {"name": "file_read", "arguments": '{"path": "notes.txt", "limit": 1e400}'}
    (world.project / "notes.txt").write_text("alpha\n")
    code, out = ask_json(world, "-m", "echo", calls(dup, nan, big))
    assert code == 0, out
    assert [c.get("error_code") for c in out["tool_calls"]] == ["invalid_json"] * 3
    assert "duplicate key 'path'" in out["tool_calls"][0]["output"]
    assert not (world.project / "a.txt").exists() and not (world.project / "b.txt").exists()
