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


# ----- sandbox changes during a session ------------------------------------------------------------


def _read_call(path: object) -> str:
    return json.dumps({"tool_calls": [{"name": "file_read", "arguments": {"path": str(path)}}]})


def test_a_revoke_during_a_session_is_seen_at_the_next_call(world: Env) -> None:
    """`fermix revoke path` from another terminal while `fermix agent` runs: its next read is refused."""
    import queue
    import subprocess
    import sys
    import threading

    granted = world.root / "elsewhere" / "g"
    granted.mkdir(parents=True)
    (granted / "f.txt").write_text("the secret")
    assert world.run("grant", "path", str(granted)).code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "agent", "-m", "echo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=world.env,
        cwd=world.project,
    )
    stdout = proc.stdout
    assert proc.stdin is not None and stdout is not None
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def until(marker: str) -> str:
        seen = ""
        while marker not in seen:
            seen += lines.get(timeout=60)
        return seen

    try:
        proc.stdin.write(_read_call(granted / "f.txt") + "\n")
        proc.stdin.flush()
        assert "✓ file_read" in until("previous_messages")
        assert world.run("revoke", "path", str(granted)).code == 0
        proc.stdin.write(_read_call(granted / "f.txt") + "\n")
        proc.stdin.close()
        assert "✗ file_read (outside_root)" in until("previous_messages")
    finally:
        proc.wait(timeout=60)


def test_confirm_in_the_session_lets_its_retry_through(world: Env) -> None:
    target = world.home / "other"
    target.mkdir()
    (target / "notes.md").write_text("hello")
    token = world.tool("request_directory_access", {"path": str(target), "reason": "r"}).json()["token"]
    code, out = repl(
        world, _read_call(target / "notes.md"), f"/confirm {token}", _read_call(target / "notes.md")
    )
    assert code == 0, out
    assert "✗ file_read (outside_root)" in out and f"granted: {target}" in out
    assert out.index("✓ file_read") > out.index(f"granted: {target}")


def test_the_approval_prompt_shows_exactly_what_it_was_given(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No markup is interpreted, and a newline or escape in the model's reason cannot forge a line."""
    import io

    from rich.console import Console

    from fermix_cli.cli.agent_cmd import make_confirm
    from fermix_cli.cli.render import RichObserver

    buffer = io.StringIO()
    console = Console(file=buffer, width=400, force_terminal=False, color_system=None)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    confirm = make_confirm(console, RichObserver(console), interactive=True)
    reason = "tidy up [/] [bold]now[/bold]\nconfig change: nothing\x1b[2K"
    answer = confirm(
        "Allow fermix to access /tmp/[x]?",
        {"reason": reason, "config change": '[sandbox] allowed_roots += ["/tmp/[x]"]'},
    )
    assert answer is False
    shown = buffer.getvalue()
    assert "  reason: tidy up [/] [bold]now[/bold]␤config change: nothing\\x1b[2K\n" in shown
    assert '  config change: [sandbox] allowed_roots += ["/tmp/[x]"]\n' in shown
    assert "Allow fermix to access /tmp/[x]?" in shown
    assert "\nconfig change: nothing" not in shown  # the forged line is not a line
