"""skill_reload refreshes the running agent's skills: a skill made in a session is callable in it."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Env

SKILL = (
    "---\nname: fresh\ndescription: A skill made in this session\n"
    "provider: echo\nmodel: echo\nallowed_tools: []\n---\nAnswer briefly.\n"
)


def _calls(*calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in calls]})


def _make_and_reload(world: Env) -> str:
    path = world.fermix_home / "skills" / "fresh" / "SKILL.md"
    return _calls(
        ("skill_create", {"name": "fresh", "description": "A skill made in this session"}),
        ("file_write", {"path": str(path), "content": SKILL}),
        ("skill_reload", {}),
    )


def _tool_calls(world: Env) -> list[tuple[str, int, str | None]]:
    ctx = world.context()
    try:
        rows = ctx.state.query("SELECT tool, ok, error_code FROM tool_calls ORDER BY started_at")
    finally:
        ctx.close()
    return [(r["tool"], r["ok"], r["error_code"]) for r in rows]


def _reply_to(world: Env, prompt: str) -> dict[str, Any]:
    """What the echo model answered to `prompt` (its last reply: the tools it was offered ...)."""
    r = world.run("logs", "--json")
    assert r.code == 0, r.stderr
    [run] = [x for x in r.json() if x["prompt"] == prompt]
    return dict(json.loads(run["response"]))


def test_a_reloaded_skill_is_callable_and_listed_on_the_next_turn(world: Env) -> None:
    first, second = _make_and_reload(world), _calls(("fresh", {"task": "say hi"}))
    r = world.run("agent", "-m", "echo", input=first + "\n" + second + "\n")
    assert r.code == 0, r.stdout + r.stderr
    calls = _tool_calls(world)
    assert ("skill_reload", 1, None) in calls
    assert ("fresh", 1, None) in calls, calls  # the skill ran, as itself
    assert "fresh" in _reply_to(world, first)["tools"]  # offered from the step after the reload
    assert "fresh" in _reply_to(world, second)["tools"]  # and on the next turn


def test_a_session_narrowed_by_tools_stays_narrowed_after_a_reload(world: Env) -> None:
    first, second = _make_and_reload(world), _calls(("fresh", {"task": "say hi"}))
    tools = "skill_create,file_write,skill_reload"
    r = world.run("agent", "-m", "echo", "--tools", tools, input=first + "\n" + second + "\n")
    assert r.code == 0, r.stdout + r.stderr
    calls = _tool_calls(world)
    assert ("skill_reload", 1, None) in calls
    assert ("fresh", 0, "policy_denied") in calls, calls
    offered = _reply_to(world, second)
    assert sorted(offered["tools"]) == ["file_write", "skill_create", "skill_reload"]
    assert offered["tool_results"][0]["output"] == "unknown_tool: Unknown capability: fresh"


def test_a_run_confined_by_a_skills_policy_does_not_gain_the_reloaded_skill(world: Env) -> None:
    """A skill run under `policy: read_write` may reload skills, but a new skill (class exec) stays out."""
    path = world.fermix_home / "skills" / "fresh" / "SKILL.md"
    script = world.root / "maker-script.json"
    script.write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {"name": "skill_create", "arguments": {"name": "fresh", "description": "d"}}
                    ]
                },
                {"tool_calls": [{"name": "file_write", "arguments": {"path": str(path), "content": SKILL}}]},
                {"tool_calls": [{"name": "skill_reload", "arguments": {}}]},
                {"tool_calls": [{"name": "fresh", "arguments": {"task": "t"}}]},
                {"text": "made"},
            ]
        )
    )
    maker = world.fermix_home / "skills" / "maker"
    maker.mkdir(parents=True)
    (maker / "SKILL.md").write_text(
        f"---\nname: maker\ndescription: m\npolicy: read_write\nprovider: mock\nmodel: {script}\n---\nMake.\n"
    )
    r = world.tool("skill_run", {"name": "maker", "task": "make a skill"})
    assert r.code == 0 and r.json()["status"] == "completed", r.stdout + r.stderr
    calls = _tool_calls(world)
    assert ("skill_reload", 1, None) in calls
    assert ("fresh", 0, "policy_denied") in calls, calls


def test_a_reloaded_skills_own_confinement_still_applies(world: Env) -> None:
    """The new skill (allowed_tools: []) runs with no tools, though the session may run shell."""
    target = world.project / "pwned"
    script = world.root / "skill-script.json"
    script.write_text(
        json.dumps(
            [{"tool_calls": [{"name": "shell", "arguments": {"command": f"touch {target}"}}]}, {"text": "ok"}]
        )
    )
    skill = SKILL.replace("provider: echo\nmodel: echo", f"provider: mock\nmodel: {script}")
    path = world.fermix_home / "skills" / "fresh" / "SKILL.md"
    make = _calls(
        ("skill_create", {"name": "fresh", "description": "d"}),
        ("file_write", {"path": str(path), "content": skill}),
        ("skill_reload", {}),
    )
    r = world.run("agent", "-m", "echo", input=make + "\n" + _calls(("fresh", {"task": "go"})) + "\n")
    assert r.code == 0, r.stdout + r.stderr
    calls = _tool_calls(world)
    assert ("fresh", 1, None) in calls and ("shell", 0, "policy_denied") in calls, calls
    assert not target.exists()
