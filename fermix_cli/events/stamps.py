"""The fixed-width UTC stamps of the temporal columns (string order is time order); cheap to import."""

from __future__ import annotations

from datetime import UTC, datetime

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(FORMAT)


def parse_ts(text: str) -> datetime:
    # fromisoformat reads the trailing Z (3.11+) and is some twenty times faster than strptime
    return datetime.fromisoformat(text)
