"""`fermix skills run|check`: the policy skill_run applies, and evals files read like any skill file."""

from __future__ import annotations

import json
import os

from tests.conftest import Env
from tests.skills.test_skills import mock_config, write_skill

EVALS = {"skill": "x", "cases": [{"name": "c", "prompt": "say ok", "expectations": ["ok"]}]}


def _runs(world: Env) -> int:
    ctx = world.context()
    try:
        return int(ctx.state.query("SELECT count(*) AS n FROM runs")[0]["n"])
    finally:
        ctx.close()


def test_a_guest_cannot_run_a_skill_from_the_skills_commands_either(world: Env) -> None:
    d = write_skill(world.fermix_home / "skills", "greet", "name: greet\ndescription: g\nallowed_tools: []")
    (d / "evals").mkdir()
    (d / "evals" / "evals.json").write_text(json.dumps(EVALS))
    mock_config(world, {"responses": [{"text": "ok"}], "repeat_last": True})
    tool = world.run("--trust", "guest", "tool", "skill_run", "--json", '{"name":"greet","task":"say hi"}')
    assert tool.code == 3 and tool.error()["code"] == "policy_denied"
    for argv in (["skills", "run", "greet", "say hi"], ["skills", "check"], ["skills", "check", "greet"]):
        r = world.run("--trust", "guest", *argv)
        assert (r.code, r.stdout) == (3, ""), (argv, r.stdout, r.stderr)
        assert r.error() == tool.error(), argv  # the same refusal as `fermix tool skill_run`
    assert _runs(world) == 0
    r = world.run("--trust", "guest", "skills", "check", "--no-evals", "--json")  # validating runs nothing
    assert r.code == 0, r.stderr
    assert r.json()["evals"] == [] and r.json()["skills"] == 2
    r = world.run("skills", "run", "greet", "say hi")  # the owner still runs it
    assert r.code == 0 and r.stdout.strip() == "ok"


def test_bad_evals_files_are_reported_per_skill_while_the_others_run(world: Env) -> None:
    skills = world.fermix_home / "skills"
    for name in ("fine", "fifo", "linked", "huge", "deep"):
        d = write_skill(skills, name, f"name: {name}\ndescription: {name}\nallowed_tools: []")
        (d / "evals").mkdir()
    (skills / "fine" / "evals" / "evals.json").write_text(json.dumps(EVALS))
    os.mkfifo(skills / "fifo" / "evals" / "evals.json")  # plain open() waits forever for a writer
    outside = world.root / "elsewhere.json"
    outside.write_text(json.dumps(EVALS))
    os.symlink(outside, skills / "linked" / "evals" / "evals.json")
    big = {"skill": "huge", "cases": [{"name": f"c{n}", "prompt": "p" * 100} for n in range(12_000)]}
    (skills / "huge" / "evals" / "evals.json").write_text(json.dumps(big))  # about 1.4 MB
    (skills / "deep" / "evals" / "evals.json").write_text("[" * 200_000)
    mock_config(world, {"responses": [{"text": "ok"}], "repeat_last": True})

    r = world.run("skills", "check", "--json", timeout=30)
    assert r.code == 1 and "Traceback" not in r.stderr, r.stderr
    report = r.json()
    assert [(e["code"], e["path"]) for e in report["errors"]] == [
        ("invalid_evals", str(skills / name)) for name in ("deep", "fifo", "huge", "linked")
    ]
    messages = {os.path.basename(e["path"]): e["message"] for e in report["errors"]}
    assert "not a regular file" in messages["fifo"].lower()
    assert "symbolic link" in messages["linked"]
    assert "refused, not truncated" in messages["huge"]
    assert "as JSON" in messages["deep"]
    ours = [(e["skill"], e["passed"]) for e in report["evals"] if e["skill"] != "repo_overview"]  # bundled
    assert ours == [("fine", True)]


def test_a_guest_lists_names_and_descriptions_only(world: Env) -> None:
    skills = world.fermix_home / "skills"
    write_skill(skills, "fine", "name: fine\ndescription: does fine things")
    write_skill(skills, "bad", "name: bad\ndescription: [x")
    r = world.run("--trust", "guest", "tool", "skill_list")
    assert r.code == 0, r.stderr
    assert str(world.fermix_home) not in r.stdout and "site-packages" not in r.stdout
    bundled = next(s for s in r.json()["skills"] if s["name"] == "repo_overview")
    assert r.json() == {
        "skills": [{"name": "fine", "description": "does fine things"}, bundled],
    }
    assert set(bundled) == {"name", "description"}
    owner = world.tool("skill_list").json()  # the owner still sees where each lives, and the load errors
    assert owner["skills"][0] == {
        "name": "fine",
        "description": "does fine things",
        "path": str(skills / "fine"),
        "origin": "home",
    }
    assert [e["path"] for e in owner["errors"]] == [str(skills / "bad" / "SKILL.md")]
    r = world.run("--trust", "guest", "skills", "list")
    assert r.code == 0 and str(world.fermix_home) not in r.stdout + r.stderr
    assert r.stdout.split()[:3] == ["fine", "-", "does"]
