"""A job bound to a skill runs inside the skill's confinement: its tools and its policy, never wider."""

from __future__ import annotations

import json

from tests.jobs.jobs_world import Jobs


def _skill(jobs: Jobs, name: str, front: str) -> None:
    d = jobs.world.fermix_home / "skills" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n{front}\n---\nStay read-only.\n")


def test_a_skills_policy_confines_its_job(jobs: Jobs) -> None:
    """`policy: read_only` with no allowed_tools: the job may use the read-only tools, and shell is refused."""
    target = jobs.world.project / "pwned"
    _skill(jobs, "ro", "policy: read_only")
    script = jobs.mock_script(
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": f"touch {target}"}}]},
            {"text": "done"},
        ]
    )
    jobs.add("Ro", "every 1 hours", task="go", provider="mock", model=script, skill_name="ro")
    r = jobs.cli("jobs", "run-now", "ro", "--json")
    assert r.code == 0, r.stdout + r.stderr
    run = json.loads(r.stdout)
    assert run["status"] == "ok", run
    assert not target.exists()
    detail = jobs.call("get_job_run", {"run_id": run["run_id"]})["run"]
    assert [(f["tool"], f["code"]) for f in detail["tool_failures"]] == [("shell", "policy_denied")]
    # what the model is offered: read-only tools only
    jobs.add("Ro2", "every 1 hours", task="go", provider="echo", model="echo", skill_name="ro")
    r = jobs.cli("jobs", "run-now", "ro2", "--json")
    assert r.code == 0, r.stdout + r.stderr
    seen = json.loads(json.loads(r.stdout)["final_response"])
    assert "shell" not in seen["tools"] and "file_write" not in seen["tools"]
    assert "glob_search" in seen["tools"]


def test_the_same_job_without_the_skill_runs_shell(jobs: Jobs) -> None:
    """The control for the test above: the script does write the file when nothing confines it."""
    target = jobs.world.project / "pwned"
    script = jobs.mock_script(
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": f"touch {target}"}}]},
            {"text": "done"},
        ]
    )
    jobs.add("Free", "every 1 hours", task="go", provider="mock", model=script)
    r = jobs.cli("jobs", "run-now", "free", "--json")
    assert r.code == 0, r.stdout + r.stderr
    assert target.exists()


def test_a_skills_policy_and_tools_both_apply(jobs: Jobs) -> None:
    """allowed_tools [shell, glob_search] with policy read_only: shell is named but outside the policy."""
    target = jobs.world.project / "pwned"
    _skill(jobs, "mixed", "allowed_tools: [shell, glob_search]\npolicy: [read_only]")
    script = jobs.mock_script(
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": f"touch {target}"}}]},
            {"text": "done"},
        ]
    )
    jobs.add("Mixed", "every 1 hours", task="go", provider="mock", model=script, skill_name="mixed")
    r = jobs.cli("jobs", "run-now", "mixed", "--json")
    assert r.code == 0, r.stdout + r.stderr
    assert not target.exists()
    detail = jobs.call("get_job_run", {"run_id": json.loads(r.stdout)["run_id"]})["run"]
    assert [(f["tool"], f["code"]) for f in detail["tool_failures"]] == [("shell", "policy_denied")]
