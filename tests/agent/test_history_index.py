"""The transcripts' search index, kept up to date in batches (core/ftsbatch.py).

A stored message is noted as pending; a run's end and every full-text search index the pending ones.
Editing or deleting a message, indexed or pending, keeps FTS5's external-content index consistent.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fermix_cli.agent.messages import ModelResponse, Usage
from fermix_cli.agent.migrations import fts_in_batches, session_parents, transcripts
from fermix_cli.agent.transcripts import Transcript
from fermix_cli.core import ftsbatch
from fermix_cli.core.state import StateDB
from tests.conftest import Env


def fixed_clock() -> datetime:
    return datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def db(tmp_path: Path) -> StateDB:
    d = StateDB(tmp_path / "state.db")
    yield d
    d.close()


def start(t: Transcript, prompt: str, session: str = "s_test") -> str:
    return t.start_run(
        session, prompt=prompt, provider="mock", model="m", toolset=None, origin="cli", trust="operator"
    )


def finish(t: Transcript, run_id: str) -> None:
    t.finish_run(run_id, status="completed", response="", iterations=1, usage=Usage(), error=None)


def indexed(db: StateDB, word: str) -> int:
    return int(db.query("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (word,))[0][0])


def pending(db: StateDB) -> int:
    return int(db.query("SELECT count(*) FROM messages_fts_pending")[0][0])


def integrity_ok(db: StateDB) -> None:
    """FTS5's own check raises "database disk image is malformed" when its index is inconsistent (a
    `delete` that named values it never indexed, say); with nothing pending, the index must also
    match the messages table row for row (rank 1)."""
    db.conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
    if pending(db) == 0:
        db.conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")


def test_a_turn_notes_its_messages_and_the_run_end_indexes_them(db: StateDB) -> None:
    t = Transcript(db, fixed_clock)
    run = start(t, "the ocelot sleeps")
    t.add_turn("s_test", run, ModelResponse(text="a margay answers"), [])
    assert pending(db) == 2 and indexed(db, "ocelot") == 0  # nothing indexed inside the turn's commit
    finish(t, run)
    assert pending(db) == 0 and indexed(db, "ocelot") == 1 and indexed(db, "margay") == 1
    integrity_ok(db)


def test_a_search_during_a_run_sees_the_run_so_far(db: StateDB) -> None:
    t = Transcript(db, fixed_clock)
    run = start(t, "where is the quagga")
    hits = t.search("quagga")
    assert [h["run_id"] for h in hits] == [run]
    assert pending(db) == 0
    assert t.search("quagga") == hits  # nothing pending: one read, the same answer


def test_edits_and_deletes_keep_the_index_consistent_whether_indexed_or_pending(db: StateDB) -> None:
    t = Transcript(db, fixed_clock)
    done = start(t, "alpha indexed", session="s_a")
    finish(t, done)  # indexed
    start(t, "beta pending", session="s_b")  # pending
    assert pending(db) == 1
    with db.write() as c:
        c.execute("UPDATE messages SET content = replace(content, 'alpha', 'gamma')")
        c.execute("UPDATE messages SET content = replace(content, 'beta', 'delta')")
    integrity_ok(db)
    assert indexed(db, "alpha") == 0 and indexed(db, "gamma") == 1
    assert indexed(db, "delta") == 0 and pending(db) == 1  # still pending, indexed with its new text
    ftsbatch.catch_up(db, "messages_fts")
    assert indexed(db, "delta") == 1 and indexed(db, "beta") == 0
    integrity_ok(db)
    with db.write() as c:
        c.execute("DELETE FROM conversations")  # cascades to every message
    assert indexed(db, "gamma") == 0 and indexed(db, "delta") == 0 and pending(db) == 0
    integrity_ok(db)


def test_a_reused_message_id_is_indexed_once(db: StateDB) -> None:
    """Without AUTOINCREMENT SQLite reuses the largest id after it is deleted: the pending note of the
    deleted row goes with it, so the new row is noted (and indexed) on its own."""
    t = Transcript(db, fixed_clock)
    first = start(t, "okapi one", session="s_a")
    (old_id,) = db.query("SELECT max(id) FROM messages")[0]
    with db.write() as c:
        c.execute("DELETE FROM conversations WHERE id = 's_a'")
    assert pending(db) == 0
    second = start(t, "tapir two", session="s_b")
    assert db.query("SELECT max(id) FROM messages")[0][0] == old_id
    finish(t, second)
    assert indexed(db, "okapi") == 0 and indexed(db, "tapir") == 1
    integrity_ok(db)
    assert first != second


def test_a_run_that_died_is_indexed_by_the_next_run_end(db: StateDB) -> None:
    t = Transcript(db, fixed_clock)
    start(t, "the dhole was here", session="s_dead")  # never finished: the process died
    finish(t, start(t, "next", session="s_next"))
    assert indexed(db, "dhole") == 1 and pending(db) == 0


def test_the_migration_keeps_an_existing_index(tmp_path: Path) -> None:
    """A state file indexed by the old per-row triggers moves over with nothing pending."""
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    transcripts(conn)
    session_parents(conn)
    conn.execute(
        "INSERT INTO conversations (id, origin, trust, created_at, updated_at) VALUES ('s', 'cli', 'operator', 'x', 'x')"
    )
    conn.execute(
        "INSERT INTO messages (conversation_id, seq, role, kind, content, created_at)"
        " VALUES ('s', 1, 'user', 'text', 'the serval', 'x')"
    )
    fts_in_batches(conn)
    assert conn.execute("SELECT count(*) FROM messages_fts_pending").fetchone()[0] == 0
    assert (
        conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'serval'").fetchone()[0] == 1
    )
    conn.execute("DELETE FROM messages")
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_index_pending_counts_what_it_indexed(db: StateDB) -> None:
    t = Transcript(db, fixed_clock)
    start(t, "one")
    with db.write() as c:
        assert ftsbatch.index_pending(c, "messages_fts") == 1
        assert ftsbatch.index_pending(c, "messages_fts") == 0


def test_a_state_it_may_not_write_is_searched_as_it_is(db: StateDB, caplog: pytest.LogCaptureFixture) -> None:
    start(Transcript(db, fixed_clock), "the fossa")
    db.conn.execute("PRAGMA query_only = ON")  # as a read-only file: every write fails
    assert Transcript(db, fixed_clock).search("fossa") == []
    assert "left out of this search" in caplog.text
    db.conn.execute("PRAGMA query_only = OFF")
    assert [h["role"] for h in Transcript(db, fixed_clock).search("fossa")] == ["user"]


def test_memory_recall_searches_the_running_conversation(world: Env) -> None:
    """memory_recall's history search, called by the model in the middle of a run, finds that run's
    own earlier messages (they are still pending in the index)."""
    script = [
        {"tool_calls": [{"name": "memory_recall", "arguments": {"search": "aardwolf", "source": "history"}}]},
        {"text": "done"},
    ]
    (world.project / "s.json").write_text(json.dumps(script))
    r = world.run("ask", "--json", "--provider", "mock", "-m", "s.json", "the aardwolf eats termites")
    [call] = r.json()["tool_calls"]
    assert call["ok"] and "content=the aardwolf eats termites" in call["output"], call


def test_a_name_that_is_not_an_identifier_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    with pytest.raises(ValueError, match="not an SQL identifier"):
        ftsbatch.declare(conn, "t; DROP TABLE x", "messages", ("content",))
    with pytest.raises(ValueError, match="not an SQL identifier"):
        ftsbatch.declare(conn, "t_fts", "messages", ("content--",))
    conn.close()


def test_an_index_not_declared_is_named_in_the_error(db: StateDB) -> None:
    with db.write() as c, pytest.raises(LookupError, match="memories_fts is not declared"):
        ftsbatch.index_pending(c, "memories_fts")


def test_a_turn_s_commit_writes_fewer_pages(db: StateDB) -> None:
    """What the batches are for: a turn's commit no longer writes FTS5 segment pages."""
    t = Transcript(db, fixed_clock)
    run = start(t, "warm up")
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def frames() -> int:
        return int(db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])

    before = frames()
    t.add_turn("s_test", run, ModelResponse(text="pangolin " * 40), [])
    batched = frames() - before
    finish(t, run)
    with db.write() as c:  # the per-row trigger, as it was
        c.execute("DROP TRIGGER messages_fts_insert")
        c.execute(
            "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN"
            " INSERT INTO messages_fts(rowid, role, kind, content) VALUES (new.id, new.role, new.kind, new.content);"
            " END"
        )
    run = start(t, "again")
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = frames()
    t.add_turn("s_test", run, ModelResponse(text="pangolin " * 40), [])
    assert batched < frames() - before
