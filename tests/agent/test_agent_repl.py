"""`fermix agent` driven through a pipe, as a script or a test would: turns, slash commands, sessions."""

from __future__ import annotations

import json

from tests.conftest import Env


def repl(world: Env, *lines: str, args: tuple[str, ...] = ("-m", "echo")) -> tuple[int, str]:
    r = world.run("agent", *args, input="".join(line + "\n" for line in lines))
    return r.code, r.stdout + r.stderr


def test_a_turn_with_tool_panels(world: Env) -> None:
    (world.project / "a.txt").write_text("panel content")
    code, out = repl(
        world, json.dumps({"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]})
    )
    assert code == 0, out
    assert "fermix agent · echo/echo · session s_" in out
    assert "─ file_read ─" in out and '"path": "a.txt"' in out
    assert "✓ file_read" in out and "panel content" in out
    runs = world.run("logs", "--json").json()
    assert len(runs) == 1 and runs[0]["tool_calls"][0]["name"] == "file_read"


def test_failed_tool_panel_and_slash_commands(world: Env) -> None:
    code, out = repl(
        world,
        json.dumps({"tool_calls": [{"name": "file_read", "arguments": {"path": "missing"}}]}),
        "/tools",
        "/sessions",
        "/help",
        "/frob",
        "/exit",
        "never sent",
    )
    assert code == 0
    assert "✗ file_read (not_found)" in out
    assert "file_write" in out and "read_write" in out  # /tools
    assert "1 run(s)" in out  # /sessions
    assert "/new" in out and "start a new session" in out  # /help
    assert "unknown command /frob" in out
    assert all(r["prompt"] != "never sent" for r in world.run("logs", "--json").json())


def test_new_and_continue(world: Env) -> None:
    repl(world, "first", "/new", "second")
    runs = world.run("logs", "--json").json()
    assert [r["prompt"] for r in runs] == ["first", "second"]
    assert runs[0]["session_id"] != runs[1]["session_id"]
    _, out = repl(world, "third", args=("-m", "echo", "-c"))
    assert "(continued)" in out
    runs = world.run("logs", "--json").json()
    assert runs[-1]["session_id"] == runs[1]["session_id"]
    assert json.loads(runs[-1]["response"])["previous_messages"] == 2


def test_switch_session(world: Env) -> None:
    first = world.run("ask", "--json", "-m", "echo", "seed").json()
    _, out = repl(world, f"/session {first['session_id']}", "more", "/session nope")
    assert "no session nope" in out
    runs = world.run("logs", "--json", "--session", first["session_id"]).json()
    assert [r["prompt"] for r in runs] == ["seed", "more"]


def test_errors_are_shown_and_the_session_goes_on(world: Env) -> None:
    (world.project / "s.json").write_text(json.dumps([{"text": ""}, {"text": "fine"}]))
    code, out = repl(world, "one", "two", args=("--provider", "mock", "-m", "s.json"))
    assert code == 0
    assert "provider_error: the model returned an empty reply" in out
    assert "fine" in out


def test_agent_start_errors_use_the_error_envelope(world: Env) -> None:
    r = world.run("agent", input="hi\n")
    assert r.code == 1 and r.error()["code"] == "no_provider"


def test_an_interactive_turn_gets_100_model_calls_not_the_one_shot_25(world: Env) -> None:
    # Reference 15: a one-shot run gets 25 iterations, an interactive turn 100.
    steps = [[{"name": "glob_search", "arguments": {"pattern": f"{i}*"}}] for i in range(30)]
    code, out = repl(world, json.dumps({"tool_calls": steps}))
    assert code == 0, out
    run = world.run("logs", "--json").json()[-1]
    assert run["status"] == "ok", run.get("error")
    assert run["iterations"] == 31 and len(run["tool_calls"]) == 30


def test_an_interactive_turn_stops_at_the_long_run_cap(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text("[fermix_core.agent]\nmax_iterations_scheduled = 3\n")
    steps = [[{"name": "glob_search", "arguments": {"pattern": f"{i}*"}}] for i in range(10)]
    repl(world, json.dumps({"tool_calls": steps}))
    run = world.run("logs", "--json").json()[-1]
    assert (run["status"], run["iterations"]) == ("max_iterations", 3)
    assert "fermix_core.agent.max_iterations_scheduled" in run["error"]["message"]
