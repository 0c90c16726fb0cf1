"""Transcripts in state.db and `fermix logs`: same JSON as live output, FTS5 search kept in sync."""

from __future__ import annotations

import json
import sqlite3

from fermix_cli.agent.messages import Message, ToolCall
from fermix_cli.agent.transcripts import close_open_calls, fts_query
from tests.conftest import Env


def ask(world: Env, *args: str) -> dict:
    r = world.run("ask", "--json", "-m", "echo", *args)
    assert r.stdout, r.stderr
    return r.json()


def test_logs_json_has_the_same_shape_as_live_output(world: Env) -> None:
    (world.project / "a.txt").write_text("pelican facts")
    live = ask(world, json.dumps({"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]}))
    logged = world.run("logs", "--json").json()
    assert logged == [live]
    assert world.run("logs", "--json", "--session", live["session_id"]).json() == [live]


def test_logs_lists_newest_runs_oldest_first(world: Env) -> None:
    for word in ("one", "two", "three"):
        ask(world, word)
    runs = world.run("logs", "--json", "-n", "2").json()
    assert [r["prompt"] for r in runs] == ["two", "three"]


def test_logs_search_finds_prompts_answers_and_tool_output(world: Env) -> None:
    (world.project / "zebra.txt").write_text("the quagga is extinct")
    ask(world, "tell me about pelicans")
    hit = ask(world, json.dumps({"tool_calls": [{"name": "file_read", "arguments": {"path": "zebra.txt"}}]}))
    runs = world.run("logs", "--json", "-q", "quagga").json()
    assert [r["run_id"] for r in runs] == [hit["run_id"]]
    assert any("[quagga]" in m["snippet"] and m["role"] == "tool" for m in runs[0]["matches"])
    assert [r["prompt"] for r in world.run("logs", "--json", "-q", "pelicans").json()] == [
        "tell me about pelicans"
    ]
    assert world.run("logs", "--json", "-q", "nothing-like-this").json() == []
    # FTS syntax in the query is searched for literally, never an error.
    assert world.run("logs", "--json", "-q", 'pelicans" OR (').code == 0


def test_logs_text_output(world: Env) -> None:
    (world.project / "a.txt").write_text("hello")
    ask(
        world,
        json.dumps(
            {"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}, {"name": "file_read"}]}
        ),
    )
    r = world.run("logs")
    assert r.code == 0
    assert "· file_read" in r.stdout and "✓ file_read" in r.stdout and "✗ invalid_input file_read" in r.stdout
    assert "status ok" in r.stdout and "echo/echo" in r.stdout


def test_logs_sessions(world: Env) -> None:
    first = ask(world, "alpha question")
    ask(world, "--session", first["session_id"], "follow up")
    ask(world, "beta question")
    sessions = world.run("logs", "--sessions", "--json").json()
    assert [s["title"] for s in sessions] == ["beta question", "alpha question"]
    assert sessions[1]["runs"] == 2


def test_logs_on_a_fresh_home(world: Env) -> None:
    r = world.run("logs")
    assert r.code == 0 and r.stdout == "" and "no runs yet" in r.stderr
    assert world.run("logs", "--json").json() == []


def test_fts_index_follows_updates_and_deletes(world: Env) -> None:
    ask(world, "the ocelot sleeps")
    db = sqlite3.connect(world.fermix_home / "state.db")

    def count(word: str) -> int:
        return db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (word,)).fetchone()[
            0
        ]

    assert count("ocelot") >= 1
    db.execute("UPDATE messages SET content = replace(content, 'ocelot', 'margay')")
    db.commit()
    assert count("ocelot") == 0 and count("margay") >= 1
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("DELETE FROM conversations")
    db.commit()
    assert count("margay") == 0
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    assert db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")


def test_usage_is_recorded_per_message_and_per_run(world: Env) -> None:
    (world.project / "s.json").write_text(
        json.dumps(
            [
                {
                    "tool_calls": [{"name": "glob_search", "arguments": {"pattern": "*"}}],
                    "usage": {"input_tokens": 10, "output_tokens": 3},
                },
                {"text": "done", "usage": {"input_tokens": 20, "output_tokens": 5}},
            ]
        )
    )
    r = world.run("ask", "--json", "--provider", "mock", "-m", "s.json", "go")
    assert r.json()["usage"] == {"input_tokens": 30, "output_tokens": 8}
    db = sqlite3.connect(world.fermix_home / "state.db")
    rows = db.execute(
        "SELECT input_tokens, output_tokens FROM messages WHERE role='assistant' ORDER BY seq"
    ).fetchall()
    assert rows == [(10, 3), (20, 5)]


def test_history_repairs_calls_left_unanswered() -> None:
    call = ToolCall("file_read", "{}", "w1")
    history = [Message("user", "hi"), Message("assistant", "", [call]), Message("user", "again")]
    repaired = close_open_calls(history)
    assert [m.role for m in repaired] == ["user", "assistant", "tool", "user"]
    assert repaired[2].tool_call_id == "w1" and repaired[2].is_error
    answered = [*history[:2], Message("tool", "ok", tool_call_id="w1")]
    assert close_open_calls(answered) == answered


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('a "b" OR') == '"a" """b""" "OR"'
    assert fts_query("   ") == ""
