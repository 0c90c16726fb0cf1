"""The fixed-width UTC stamps of the temporal columns (string order is time order); cheap to import."""

from __future__ import annotations

from datetime import UTC, datetime


def ts(moment: datetime) -> str:
    utc = moment.astimezone(UTC)
    # `2026-03-02T08:00:00.000000Z`; not strftime: its %Y does not zero-pad years before 1000.
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S.%fZ}"


def parse_ts(text: str) -> datetime:
    # fromisoformat reads the trailing Z (3.11+) and is some twenty times faster than strptime
    return datetime.fromisoformat(text)
