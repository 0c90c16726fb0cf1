"""`fermix skills run|check`: the policy skill_run applies, and evals files read like any skill file."""

from __future__ import annotations

import json

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
