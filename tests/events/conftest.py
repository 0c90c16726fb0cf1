"""Fixtures for the events tests."""

from __future__ import annotations

import pytest

from tests.channels.standins import telegram
from tests.conftest import Env
from tests.events.world import Events

__all__ = ["ev", "telegram"]


@pytest.fixture
def ev(world: Env, monkeypatch: pytest.MonkeyPatch) -> Events:
    # In-process calls are the owner's own CLI turns, even when the suite runs under a fermix shell.
    monkeypatch.delenv("FERMIX_SPAWNED", raising=False)
    events = Events(world)
    events.config()
    return events
