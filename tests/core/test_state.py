"""state.db: migrations, pragmas, permissions, and concurrent first starts."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.migrations import LEGACY_ORDER, Migration, all_migrations, applied_names, run_order
from fermix_cli.core.migrations import MIGRATIONS as KERNEL_MIGRATIONS
from fermix_cli.core.state import StateDB
from tests.conftest import Env

MIGRATIONS = all_migrations()


def test_fresh_database_is_migrated_wal_and_private(tmp_path: Path) -> None:
    home = tmp_path / "fh"
    db = StateDB(home / "state.db")
    assert db.schema_version == len(MIGRATIONS)
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    assert db.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    with db.write() as c:
        c.execute("INSERT INTO tool_calls VALUES ('a','s','t','cli','operator','{}',1,NULL,NULL,'x',1.0)")
    assert stat.S_IMODE(os.stat(home / "state.db").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    for suffix in ("-wal", "-shm"):
        p = home / f"state.db{suffix}"
        if p.exists():
            assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0
    db.close()


def test_write_rolls_back_on_error(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db")
    with pytest.raises(RuntimeError), db.write() as c:
        c.execute("INSERT INTO tool_calls VALUES ('a','s','t','cli','operator','{}',1,NULL,NULL,'x',1.0)")
        raise RuntimeError("boom")
    assert db.query("SELECT count(*) FROM tool_calls")[0][0] == 0


def test_migrations_apply_in_order_once(tmp_path: Path) -> None:
    calls: list[str] = []

    def m1(c: sqlite3.Connection) -> None:
        calls.append("m1")
        c.execute("CREATE TABLE a (x)")

    def m2(c: sqlite3.Connection) -> None:
        calls.append("m2")
        c.execute("CREATE TABLE b (x)")

    one, two = Migration("m1", m1), Migration("m2", m2)
    StateDB(tmp_path / "s.db", [one]).close()
    db = StateDB(tmp_path / "s.db", [one, two])
    assert calls == ["m1", "m2"]
    assert db.schema_version == 2
    db.close()
    StateDB(tmp_path / "s.db", [one, two]).close()
    assert calls == ["m1", "m2"]


def test_newer_database_is_refused(tmp_path: Path) -> None:
    StateDB(tmp_path / "s.db").close()
    c = sqlite3.connect(tmp_path / "s.db")
    c.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    c.close()
    with pytest.raises(ToolError) as e:
        StateDB(tmp_path / "s.db")
    assert e.value.code == "state_too_new"


def test_failed_migration_leaves_the_old_version(tmp_path: Path) -> None:
    def ok(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE a (x)")

    def bad(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE b (x)")
        raise sqlite3.OperationalError("broken migration")

    StateDB(tmp_path / "s.db", [Migration("ok", ok)]).close()
    with pytest.raises(sqlite3.OperationalError):
        StateDB(tmp_path / "s.db", [Migration("ok", ok), Migration("bad", bad)])
    c = sqlite3.connect(tmp_path / "s.db")
    assert c.execute("PRAGMA user_version").fetchone()[0] == 1
    assert c.execute("SELECT count(*) FROM sqlite_master WHERE name='b'").fetchone()[0] == 0


def test_five_processes_start_on_an_empty_home_at_once(world: Env) -> None:
    """One schema, no error: migrations run inside BEGIN IMMEDIATE."""
    gate = world.root / "go"
    script = (
        "import os, sys, time\n"
        f"while not os.path.exists({str(gate)!r}): time.sleep(0.001)\n"
        "from fermix_cli.__main__ import main\n"
        "sys.exit(main(['state', 'status', '--json']))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=world.env, cwd=world.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(5)
    ]  # fmt: skip
    gate.touch()
    outs = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert json.loads(out)["schema_version"] == len(MIGRATIONS)
    c = sqlite3.connect(world.fermix_home / "state.db")
    assert c.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert c.execute("SELECT count(*) FROM sqlite_master WHERE name='tool_calls'").fetchone()[0] == 1


def test_pure_tools_never_open_the_database(world: Env) -> None:
    (world.project / "a.txt").write_text("x")
    assert world.tool("file_read", {"path": "a.txt"}).code == 0
    assert world.tool("tool_help", {"name": "file_read"}).code == 0
    assert not (world.fermix_home / "state.db").exists()


def test_recorded_calls_land_in_tool_calls(world: Env, invoke) -> None:
    (world.project / "a.txt").write_text("x")
    invoke("file_read", {"path": "a.txt"}, record_calls=True, session_id="sess-1")
    with pytest.raises(ToolError):
        invoke("file_read", {"path": "missing"}, record_calls=True, session_id="sess-1")
    rows = (
        sqlite3.connect(world.fermix_home / "state.db")
        .execute("SELECT tool, ok, error_code, session_id FROM tool_calls ORDER BY started_at")
        .fetchall()
    )
    assert rows == [("file_read", 1, None, "sess-1"), ("file_read", 0, "not_found", "sess-1")]


@pytest.mark.parametrize("version", range(1, len(LEGACY_ORDER) + 1))
def test_a_numbered_database_upgrades_without_running_anything_twice(tmp_path: Path, version: int) -> None:
    """A state.db from before migrations had names: user_version N stands for the first N of the old list."""
    by_name = {m.name: m for m in MIGRATIONS}
    c = sqlite3.connect(tmp_path / "s.db")
    for name in LEGACY_ORDER[:version]:
        by_name[name].apply(c)  # a second CREATE TABLE of any of these would fail
    c.execute(f"PRAGMA user_version = {version}")
    c.commit()
    c.close()
    db = StateDB(tmp_path / "s.db")
    assert db.schema_version == len(MIGRATIONS)
    with db.write() as w:  # an up-to-date numbered file keeps its number until the next migration
        applied = applied_names(w)
    assert sorted(applied) == sorted(m.name for m in MIGRATIONS)
    assert applied[:version] == list(LEGACY_ORDER[:version])
    db.close()


def test_migrations_run_kernel_first_then_domains_in_catalog_order(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "s.db")
    applied = [r[0] for r in db.query("SELECT name FROM _fermix_migrations ORDER BY rowid")]
    assert applied == [m.name for m in MIGRATIONS]
    kernel = [m.name for m in KERNEL_MIGRATIONS]
    assert applied[: len(kernel)] == kernel == ["core_001_tool_calls", "core_003_tool_call_starts"]
    # the access family's table kept its first name when the family took it over
    assert "core_002_directory_access_requests" in applied[len(kernel) :]
    db.close()


def test_after_waits_for_another_domains_migration() -> None:
    def noop(c: sqlite3.Connection) -> None:
        pass

    a, c = Migration("a_001", noop), Migration("c_001", noop)
    late = Migration("b_001", noop, after=("c_001",))
    assert [m.name for m in run_order([a, late, c])] == ["a_001", "c_001", "b_001"]
    with pytest.raises(ValueError, match="unknown"):
        run_order([Migration("x", noop, after=("nowhere",))])


# ----- state.db is opened only as a regular file: never through a link -------------------------


def _link_state(world: Env, kind: str) -> Path:
    """Make state.db (or its WAL) a link of `kind`; return where a followed link would write."""
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    elsewhere = world.root / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "stolen.db"
    if kind == "dangling":
        os.symlink(target, world.fermix_home / "state.db")
    elif kind == "existing":
        sqlite3.connect(target).close()
        os.symlink(target, world.fermix_home / "state.db")
    elif kind == "wal":
        target = elsewhere / "stolen.db-wal"
        os.symlink(target, world.fermix_home / "state.db-wal")
    elif kind == "fifo":
        os.mkfifo(world.fermix_home / "state.db")
    return target


@pytest.mark.parametrize("kind", ["dangling", "existing", "wal", "fifo"])
@pytest.mark.parametrize(
    "argv",
    [
        ["tool", "memory_store", "--json", '{"key":"k","value":"v","category":"preference"}'],
        ["tool", "list_jobs", "--json", "{}"],
        ["jobs", "run"],
    ],
)
def test_a_linked_state_db_is_refused_and_nothing_is_written_elsewhere(
    world: Env, kind: str, argv: list[str]
) -> None:
    target = _link_state(world, kind)
    before = target.stat().st_mtime_ns if target.exists() else None
    r = world.run(*argv, timeout=30)
    assert r.code == 1, r
    assert "Traceback" not in r.stderr
    assert "state.db" in r.stderr
    after = target.stat().st_mtime_ns if target.exists() else None
    assert after == before
    assert sorted(p.name for p in target.parent.iterdir()) == ([target.name] if before else [])
