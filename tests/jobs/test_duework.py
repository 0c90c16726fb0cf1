"""`fermix jobs run` drives every due-work source in the catalog, importing only what a source needs."""

from __future__ import annotations

from tests.jobs.jobs_world import Jobs


def test_an_idle_tick_imports_no_other_domain_and_no_runner(jobs: Jobs) -> None:
    assert jobs.tick()["status"] == "idle"  # creates and migrates state.db
    r, loaded = jobs.world.imports_of(
        ["jobs", "run", "--json"],
        [
            "fermix_cli.jobs.runner",
            "fermix_cli.core.config",
            "fermix_cli.core.params",
            "fermix_cli.agent.*",
            # The memory review's source (jobs.memoryreview, with memory.duework) is loaded; nothing else.
            "fermix_cli.memory.review",
            "fermix_cli.memory.store",
            "fermix_cli.memory.profiles",
            "fermix_cli.harness.delivery",
            "fermix_cli.channels.*",  # the owner's sender lent to the sources imports them only to send
            "fermix_cli.browser.launcher",
            "fermix_cli.tools.*",
            "fermix_cli.jobs.migrations",
        ],
        env=jobs.env(),
    )
    assert r.code == 0, r.stderr
    assert loaded == []
