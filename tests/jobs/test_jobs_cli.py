"""`fermix jobs list|show|add|pause|resume|rm|runs|run-now|inbox|install` through the real CLI."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.jobs.jobs_world import NOW, Jobs, later


def test_jobs_help_lists_every_command(jobs: Jobs) -> None:
    r = jobs.cli("jobs", "--help")
    assert r.code == 0
    for command in (
        "list",
        "show",
        "add",
        "pause",
        "resume",
        "rm",
        "runs",
        "run-now",
        "inbox",
        "install",
        "run",
    ):
        assert f" {command} " in r.stdout


def test_add_list_show_pause_resume_rm(jobs: Jobs) -> None:
    r = jobs.cli("jobs", "add", "Morning digest", "-s", "0 8 * * 1-5", "--tz", "Europe/Berlin", "--task", "Summarise.",
                 "--allow", "memory_recall", "--allow", "list_jobs", "--inbox", "owner")  # fmt: skip
    assert r.code == 0, r.stderr
    assert r.stdout.startswith(
        "Scheduled job morning-digest (Morning digest): cron `0 8 * * 1-5` in Europe/Berlin"
    )
    listing = jobs.cli("jobs", "list")
    assert listing.stdout.startswith("morning-digest") and "never run" in listing.stdout
    shown = jobs.cli("jobs", "show", "morning-digest")
    assert "schedule   0 8 * * 1-5 (cron, Europe/Berlin)" in shown.stdout
    assert "tools      list_jobs, memory_recall" in shown.stdout
    assert 'delivery   channel {"platform": "inbox", "recipient": "owner"}' in shown.stdout
    as_json = json.loads(jobs.cli("jobs", "show", "morning-digest", "--json").stdout)
    assert as_json["job"]["id"] == "morning-digest" and as_json["runs"] == []
    assert jobs.cli("jobs", "pause", "morning-digest").stdout.startswith("Paused job morning-digest")
    assert json.loads(jobs.cli("jobs", "list", "--state", "paused", "--json").stdout)["total"] == 1
    assert jobs.cli("jobs", "resume", "morning-digest").stdout.startswith(
        "Resumed job morning-digest; next run "
    )
    assert jobs.cli("jobs", "rm", "morning-digest").stdout.startswith("Removed job morning-digest")
    assert jobs.cli("jobs", "list").stdout.startswith("No scheduled jobs.")


def test_cli_errors_use_the_envelope_and_exit_codes(jobs: Jobs) -> None:
    r = jobs.cli("jobs", "add", "x", "-s", "daily at 8am", "--task", "t")
    assert r.code == 2 and json.loads(r.stderr)["error"]["code"] == "invalid_schedule"
    r = jobs.cli("jobs", "pause", "ghost")
    assert r.code == 1 and json.loads(r.stderr)["error"]["code"] == "not_found"
    r = jobs.cli("jobs", "add", "x", "-s", "every 5 minutes")
    assert r.code == 2 and "give exactly one of --task and --command" in r.stderr
    r = jobs.cli("jobs", "add", "x", "-s", "every 5 minutes", "--task", "t", "--target", "[1]")
    assert r.code == 2 and "must be a JSON object" in r.stderr
    r = jobs.cli("--trust", "guest", "jobs", "list")
    assert r.code == 3 and json.loads(r.stderr)["error"]["code"] == "policy_denied"


def test_command_jobs_are_added_from_the_cli_only(jobs: Jobs) -> None:
    r = jobs.cli(
        "jobs",
        "add",
        "Disk check",
        "-s",
        "every 5 minutes",
        "--command",
        "df -h /",
        "--delivery",
        "local",
        "--json",
    )
    assert r.code == 0, r.stderr
    job = json.loads(r.stdout)["job"]
    assert (job["kind"], job["command"], job["task_prompt"]) == ("command", "df -h /", None)
    r = jobs.cli(
        "jobs", "add", "Bad", "-s", "every 5 minutes", "--command", "ls", "--provider", "mock", "--model", "m"
    )
    assert r.code == 2 and "a command job runs a shell command, not a model" in r.stderr
    r = jobs.cli("--trust", "guest", "jobs", "add", "G", "-s", "every 5 minutes", "--command", "ls")
    assert r.code == 3
    # The tool a model calls has no way to create one.
    r = jobs.cli(
        "tool",
        "schedule_job",
        "--json",
        '{"name":"x","schedule":"every 5 minutes","task":"t","command":"ls"}',
    )
    assert r.code == 2


def test_runs_show_and_inbox(jobs: Jobs) -> None:
    script = jobs.mock_script([{"text": "line one\nline two"}])
    jobs.add(
        "Digest",
        "every 1 minutes",
        provider="mock",
        model=script,
        delivery_target={"platform": "inbox", "recipient": "owner"},
    )
    jobs.tick(later(NOW, minutes=1, seconds=5))
    runs = jobs.cli("jobs", "runs", "digest")
    assert runs.code == 0 and " ok " in runs.stdout and "line one line two" in runs.stdout
    run_id = runs.stdout.split()[0]
    shown = jobs.cli("jobs", "show", run_id)
    assert shown.stdout.startswith(f"run_id         {run_id}") and shown.stdout.rstrip().endswith(
        "line one\nline two"
    )
    assert json.loads(jobs.cli("jobs", "show", run_id, "--json").stdout)["status"] == "ok"
    inbox = jobs.cli("jobs", "inbox")
    assert inbox.stdout.splitlines()[0].startswith("--- 2026-03-02T08:00:35.000000Z  digest  " + run_id)
    assert (
        json.loads(jobs.cli("jobs", "inbox", "owner", "--json").stdout)["messages"][0]["text"]
        == "line one\nline two"
    )
    assert jobs.cli("jobs", "inbox", "nobody").stdout.strip() == "Inbox nobody is empty."
    assert jobs.cli("jobs", "inbox", "../x").code == 2
    assert "No runs of" in jobs.cli("jobs", "runs", "digest", "--status", "error").stdout


# ----- install -----------------------------------------------------------------------------------


def _fake(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_bin(jobs: Jobs) -> Path:
    """A fake `crontab` keeping the table in a file, and a fake `systemctl` logging its arguments."""
    bin_dir = jobs.world.root / "bin"
    table = jobs.world.root / "crontab.txt"
    _fake(bin_dir, "crontab", f"""
if [ "$1" = "-l" ]; then
  if [ -f {table} ]; then cat {table}; exit 0; fi
  echo "no crontab for tester" >&2; exit 1
fi
if [ "$1" = "-" ]; then cat > {table}; exit 0; fi
exit 2
""")  # fmt: skip
    _fake(bin_dir, "systemctl", f'echo "$@" >> {jobs.world.root / "systemctl.log"}\n')
    return bin_dir


def _path_env(fake_bin: Path) -> dict[str, str]:
    return {"PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}"}


def test_install_prints_a_cron_line_that_runs_this_fermix(jobs: Jobs) -> None:
    r = jobs.cli("jobs", "install")
    assert r.code == 0
    line = r.stdout.strip()
    assert line.startswith("* * * * * ") and " jobs run --quiet " in line
    assert f"FERMIX_HOME={jobs.world.fermix_home}" in line
    assert line.endswith(f"# fermix jobs run (home: {jobs.world.fermix_home})")
    assert (jobs.world.fermix_home / "logs").is_dir()  # the redirection target's directory exists
    assert "crontab -e" in r.stderr


def test_the_printed_cron_command_works(jobs: Jobs) -> None:
    """Run the line's command the way cron would: sh -c, a bare environment."""
    import subprocess

    jobs.add("Digest", "every 1 minutes", provider="echo", model="echo")
    line = jobs.cli("jobs", "install").stdout.strip()
    command = line.split(" ", 5)[5].rsplit(" # ", 1)[0]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(jobs.world.home), "FERMIX_NOW": "2026-03-02T08:00:35Z"}
    proc = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [r["status"] for r in jobs.runs("digest")] == ["ok"]


def test_install_apply_is_idempotent_and_removable(jobs: Jobs, fake_bin: Path) -> None:
    table = jobs.world.root / "crontab.txt"
    table.write_text("0 3 * * * backup.sh\n")
    for _ in range(2):
        r = jobs.cli("jobs", "install", "--apply", **_path_env(fake_bin))
        assert r.code == 0, r.stderr
    lines = table.read_text().splitlines()
    assert lines[0] == "0 3 * * * backup.sh" and len(lines) == 2 and "jobs run --quiet" in lines[1]
    r = jobs.cli("jobs", "install", "--apply", "--remove", **_path_env(fake_bin))
    assert r.code == 0 and table.read_text().splitlines() == ["0 3 * * * backup.sh"]
    assert jobs.cli("jobs", "install", "--remove").code == 2


def test_install_into_an_empty_crontab(jobs: Jobs, fake_bin: Path) -> None:
    assert jobs.cli("jobs", "install", "--apply", **_path_env(fake_bin)).code == 0
    assert len((jobs.world.root / "crontab.txt").read_text().splitlines()) == 1


def test_install_without_crontab_says_what_to_do(jobs: Jobs, tmp_path: Path) -> None:
    empty = tmp_path / "nobin"
    empty.mkdir()
    r = jobs.cli("jobs", "install", "--apply", PATH=str(empty))
    assert r.code == 1
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "executable_not_found" and "use --systemd" in err["message"]


def test_systemd_units_printed_and_applied(jobs: Jobs, fake_bin: Path) -> None:
    r = jobs.cli("jobs", "install", "--systemd")
    assert "[Timer]\nOnCalendar=*-*-* *:*:00\n" in r.stdout and "ExecStart=" in r.stdout
    assert f'Environment="FERMIX_HOME={jobs.world.fermix_home}"' in r.stdout
    xdg = jobs.world.root / "xdg"
    r = jobs.cli("jobs", "install", "--systemd", "--apply", XDG_CONFIG_HOME=str(xdg), **_path_env(fake_bin))
    assert r.code == 0, r.stderr
    units = xdg / "systemd" / "user"
    assert "jobs run --quiet" in (units / "fermix-jobs.service").read_text()
    assert (units / "fermix-jobs.timer").read_text().startswith("[Unit]")
    log = (jobs.world.root / "systemctl.log").read_text().splitlines()
    assert log == ["--user daemon-reload", "--user enable --now fermix-jobs.timer"]
    r = jobs.cli(
        "jobs", "install", "--systemd", "--apply", "--remove", XDG_CONFIG_HOME=str(xdg), **_path_env(fake_bin)
    )
    assert r.code == 0 and not (units / "fermix-jobs.service").exists()


def test_systemd_unit_quotes_a_home_with_spaces_and_percent_signs(jobs: Jobs, tmp_path: Path) -> None:
    # systemd.exec splits Environment= on spaces and expands %-specifiers and $VARS in ExecStart=: a home
    # such as "my fermix 100%" must reach the service whole and literal.
    spaced = tmp_path / "my fermix 100%"
    spaced.mkdir()
    r = jobs.cli("jobs", "install", "--systemd", FERMIX_HOME=str(spaced))
    assert r.code == 0, r.stderr
    lines = r.stdout.splitlines()
    quoted = str(spaced).replace("%", "%%")
    assert f'Environment="FERMIX_HOME={quoted}"' in lines
    [start] = [line for line in lines if line.startswith("ExecStart=")]
    assert start.startswith('ExecStart="') and start.endswith(" jobs run --quiet")


# ----- removal and the job's output directory ------------------------------------------------------

# `fermix ARGV` in-process, SIGKILLed (as a timeout or the OOM killer would) when it starts deleting a
# directory tree: for `jobs rm`, once its delete has committed.
_KILLED_AT_RMTREE = """
import os, shutil, signal, sys
shutil.rmtree = lambda *a, **kw: os.kill(os.getpid(), signal.SIGKILL)
from fermix_cli.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def _past_run(jobs: Jobs, job_id: str, where: str | None = None) -> Path:
    """Output as a finished run leaves it (`jobs/<id>/<run>/output.md`)."""
    run = jobs.world.fermix_home / "jobs" / (where or job_id) / "run_old"
    run.mkdir(parents=True)
    (run / "output.md").write_text("old output\n")
    return run


def test_a_removal_killed_after_its_commit_leaves_nothing_for_a_job_added_later(jobs: Jobs) -> None:
    """`jobs rm` killed after its commit left `jobs/<id>/run_*` on disk forever."""
    import subprocess
    import sys

    assert jobs.cli("jobs", "add", "Digest", "-s", "every 5 minutes", "--task", "t").code == 0
    _past_run(jobs, "digest")
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_RMTREE, "jobs", "rm", "digest"],
        capture_output=True,
        text=True,
        cwd=jobs.world.project,
        env=jobs.env(),
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr
    assert jobs.job("digest") is None
    assert not (jobs.world.fermix_home / "jobs" / "digest").exists()  # set aside before the commit
    assert os.listdir(jobs.world.fermix_home / "jobs") != []  # the trash, until the next add or remove
    assert jobs.cli("jobs", "add", "Digest", "-s", "every 5 minutes", "--task", "t").code == 0
    assert os.listdir(jobs.world.fermix_home / "jobs") == []


def test_a_removal_that_does_not_commit_keeps_the_output(jobs: Jobs, monkeypatch: pytest.MonkeyPatch) -> None:
    from fermix_cli.core.errors import ToolError
    from fermix_cli.core.state import StateDB

    jobs.add("Digest")
    run = _past_run(jobs, "digest")

    def vanished(self: StateDB) -> None:
        raise ToolError("home_vanished", "the home went away", {})

    monkeypatch.setattr(StateDB, "check_home", vanished)
    assert jobs.error("remove_job", {"job_id": "digest"}).code == "home_vanished"
    monkeypatch.undo()
    assert jobs.job("digest") is not None and (run / "output.md").read_text() == "old output\n"
    assert os.listdir(jobs.world.fermix_home / "jobs") == ["digest"]


def test_an_add_or_remove_settles_what_killed_removals_left(jobs: Jobs) -> None:
    """Trash of a job still in state.db (its removal killed before the commit) goes back; other trash, and
    the output of a job no longer there (an older fermix's removal, killed after its commit), is deleted."""
    jobs.add("Digest")
    jobs.add("Other")
    kept = _past_run(jobs, "digest", ".trash-digest-0123456789ab")
    _past_run(jobs, "gone", ".trash-gone-x-0123456789ab")
    _past_run(jobs, "orphan")
    _past_run(jobs, "other")
    (jobs.world.fermix_home / "jobs" / ".unrelated").mkdir()
    assert jobs.cli("jobs", "rm", "other").code == 0
    assert sorted(os.listdir(jobs.world.fermix_home / "jobs")) == [".unrelated", "digest"]
    assert (
        jobs.world.fermix_home / "jobs" / "digest" / kept.name / "output.md"
    ).read_text() == "old output\n"
    _past_run(jobs, "orphan")
    assert jobs.add("Orphan")["id"] == "orphan"  # a job added under that id never sees the old output
    assert sorted(os.listdir(jobs.world.fermix_home / "jobs")) == [".unrelated", "digest"]


def test_show_finds_a_job_past_the_first_thousand(jobs: Jobs) -> None:
    """`jobs show` looks the job up by id; it listed the first 1000 jobs and said not_found past them."""
    import sqlite3

    jobs.add("Zeta", "every 1 hours")
    jobs.add("Filler", "every 1 hours")
    with sqlite3.connect(jobs.world.fermix_home / "state.db") as db:
        columns = [r[1] for r in db.execute("PRAGMA table_info(scheduled_jobs)")]
        picked = ", ".join(
            "? || id" if c == "id" else "'2000-01-01T00:00:00.000000Z'" if c == "created_at" else c
            for c in columns
        )
        for n in range(1000):  # older than Zeta: they come first in a listing
            db.execute(
                f"INSERT INTO scheduled_jobs ({', '.join(columns)}) SELECT {picked} FROM scheduled_jobs"
                " WHERE id = 'filler'",
                (f"c{n}-",),
            )
    r = jobs.cli("jobs", "show", "zeta", "--json")
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["job"]["id"] == "zeta"
    r = jobs.cli("jobs", "show", "nope", "--json")
    assert r.code == 1 and json.loads(r.stderr)["error"]["code"] == "not_found"
