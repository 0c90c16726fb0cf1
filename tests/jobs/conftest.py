"""Fixtures for the scheduled-jobs tests."""

from __future__ import annotations

import pytest

from tests.conftest import Env
from tests.jobs.jobs_world import Jobs


@pytest.fixture
def jobs(world: Env) -> Jobs:
    return Jobs(world)
