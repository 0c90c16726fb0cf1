"""Fixtures for the hashline engine tests."""

from __future__ import annotations

import pytest
from hashline_workspace import Workspace


@pytest.fixture
def ws() -> Workspace:
    return Workspace()
