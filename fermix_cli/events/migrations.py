"""The events domain's state.db tables, as an ordered list of named migrations.

Append new migrations at the end, named `events_NNN_<what>`. Never edit, rename or reorder one that has
shipped: state.db records the names it has applied.
"""

from __future__ import annotations

import sqlite3

from ..core.migrations import Migration


def temporal_events(db: sqlite3.Connection) -> None:
    """Events and their materialised reminders (fermix_cli/events).

    Dedupe is backed by a partial unique index on (owner_id, dedupe_key) among active events. A reminder
    row is unique per (event, revision, occurrence, rule) and a snooze per (source, time). `due` is a
    partial index over pending rows only, so a tick over 50 000 planned reminders reads the few due.
    """
    db.execute(
        """
        CREATE TABLE temporal_events (
            id TEXT PRIMARY KEY,
            owner_id TEXT NOT NULL,
            title TEXT NOT NULL,
            description TEXT,
            kind TEXT NOT NULL,
            recurrence TEXT NOT NULL CHECK (recurrence IN ('none', 'yearly')),
            time_kind TEXT NOT NULL CHECK (time_kind IN ('date', 'datetime')),
            event_date TEXT,
            event_time TEXT,
            fold INTEGER NOT NULL DEFAULT 0,
            month INTEGER,
            day INTEGER,
            timezone TEXT NOT NULL,
            leap_day_policy TEXT,
            next_date TEXT NOT NULL,
            next_at TEXT NOT NULL,
            plan TEXT NOT NULL,
            no_reminders INTEGER NOT NULL DEFAULT 0,
            followup INTEGER NOT NULL DEFAULT 0,
            delivery_target TEXT NOT NULL,
            delivery_source TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'completed', 'cancelled')),
            dedupe_key TEXT NOT NULL,
            revision INTEGER NOT NULL DEFAULT 1,
            materialized_through TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            cancelled_at TEXT,
            completed_at TEXT
        )
        """
    )
    db.execute(
        "CREATE UNIQUE INDEX temporal_events_identity ON temporal_events(owner_id, dedupe_key)"
        " WHERE status = 'active'"
    )
    db.execute("CREATE INDEX temporal_events_upcoming ON temporal_events(status, next_date, id)")
    db.execute(
        """
        CREATE TABLE reminder_occurrences (
            id TEXT PRIMARY KEY,
            event_id TEXT NOT NULL REFERENCES temporal_events(id) ON DELETE CASCADE,
            revision INTEGER NOT NULL,
            occurrence_key TEXT NOT NULL,
            rule_id TEXT NOT NULL,
            scheduled_for TEXT NOT NULL,
            valid_until TEXT NOT NULL,
            boundary TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN
                ('pending', 'delivering', 'delivered', 'failed', 'expired', 'superseded', 'cancelled')),
            attempt_count INTEGER NOT NULL DEFAULT 0 CHECK (attempt_count BETWEEN 0 AND 5),
            next_attempt_at TEXT,
            claimed_by TEXT,
            lease_until TEXT,
            sent_at TEXT,
            last_error TEXT CHECK (last_error IS NULL OR length(CAST(last_error AS BLOB)) <= 500),
            last_error_code TEXT,
            platform TEXT,
            address TEXT,
            conversation_id TEXT,
            source_reminder_id TEXT REFERENCES reminder_occurrences(id),
            followup_status TEXT,
            created_at TEXT NOT NULL,
            CHECK (status != 'delivered' OR sent_at IS NOT NULL),
            CHECK (status != 'delivering' OR claimed_by IS NOT NULL)
        )
        """
    )
    db.execute(
        "CREATE UNIQUE INDEX reminder_occurrences_slot ON reminder_occurrences"
        "(event_id, revision, occurrence_key, rule_id) WHERE source_reminder_id IS NULL"
    )
    db.execute(
        "CREATE UNIQUE INDEX reminder_occurrences_snooze ON reminder_occurrences(source_reminder_id, scheduled_for)"
        " WHERE source_reminder_id IS NOT NULL"
    )
    db.execute(
        "CREATE INDEX reminder_occurrences_due ON reminder_occurrences(next_attempt_at) WHERE status = 'pending'"
    )
    db.execute(
        "CREATE INDEX reminder_occurrences_sending ON reminder_occurrences(lease_until) WHERE status = 'delivering'"
    )
    db.execute("CREATE INDEX reminder_occurrences_event ON reminder_occurrences(event_id, scheduled_for)")
    db.execute(
        "CREATE INDEX reminder_occurrences_recent ON reminder_occurrences(conversation_id, sent_at)"
        " WHERE status = 'delivered'"
    )
    db.execute(
        "CREATE INDEX reminder_occurrences_failed ON reminder_occurrences(status) WHERE status = 'failed'"
    )


MIGRATIONS = (Migration("events_001_temporal_events", temporal_events),)
