"""What `fermix doctor` says about coding runs: read without migrating or writing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..core.state import schema_missing


def run_counts(state_db: Path) -> dict[str, int]:
    """Coding runs that are active, and outcomes dead-lettered; zeros before the ledger exists."""
    if not state_db.exists():
        return {"active": 0, "dead_lettered": 0}
    conn = sqlite3.connect(f"{state_db.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
    try:
        active = conn.execute(
            "SELECT count(*) FROM coding_runs WHERE status IN ('starting', 'running')"
        ).fetchone()[0]
        dead = conn.execute(
            "SELECT count(*) FROM coding_runs WHERE delivery_state = 'dead_letter'"
        ).fetchone()[0]
    except sqlite3.Error as e:
        if not schema_missing(e):
            raise  # unreadable: the caller says so
        return {"active": 0, "dead_lettered": 0}  # no harness table yet (an older state.db)
    finally:
        conn.close()
    return {"active": int(active), "dead_lettered": int(dead)}
