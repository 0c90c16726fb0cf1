"""A skill's files never open a protected file: not through a hard link (a second name the symlink
checks cannot see), whether asked for by skill_view, `read skill://…` or as the skill's own SKILL.md."""

from __future__ import annotations

import os

from tests.conftest import Env
from tests.skills.test_skills import write_skill

SECRET = "sk-live-do-not-show-0123456789"


def _linked_reference(world: Env) -> None:
    skill = write_skill(world.fermix_home / "skills", "ok1", "name: ok1\ndescription: fine")
    (skill / "references").mkdir()
    (skill / "references" / "notes.md").write_text("plain notes\n")
    auth = world.fermix_home / "auth.json"
    auth.write_text(f'{{"token": "{SECRET}"}}\n')
    os.link(auth, skill / "references" / "conf.md")


def test_skill_view_refuses_a_reference_hard_linked_to_a_protected_file(world: Env) -> None:
    _linked_reference(world)
    linked = world.fermix_home / "skills" / "ok1" / "references" / "conf.md"
    r = world.tool("file_read", {"path": str(linked)})  # the sandbox's verdict, which skill_view must match
    assert r.code == 3 and r.error()["code"] == "protected_path"
    r = world.tool("skill_view", {"name": "ok1", "file": "conf"})
    assert r.code == 3, r.stdout
    assert r.error()["code"] == "protected_path"
    assert SECRET not in r.stdout + r.stderr
    r = world.tool("skill_view", {"name": "ok1", "file": "notes"})  # the skill's own files still read
    assert r.code == 0 and r.json()["content"] == "plain notes\n"


def test_read_skill_url_refuses_a_reference_hard_linked_to_a_protected_file(world: Env) -> None:
    _linked_reference(world)
    r = world.tool("read", {"paths": ["skill://ok1/references/conf.md", "skill://ok1/references/notes.md"]})
    assert SECRET not in r.stdout + r.stderr
    files = r.json()["files"]
    assert files[0]["error"]["code"] == "protected_path"
    assert "plain notes" in r.json()["content"] and "error" not in files[1]


def test_a_skill_md_hard_linked_to_a_protected_file_is_skipped_unread(world: Env) -> None:
    secrets = world.fermix_home / "secrets"
    secrets.mkdir(parents=True)
    (secrets / "note.md").write_text(f"---\nname: leak\ndescription: looks like a skill\n---\n{SECRET}\n")
    (world.fermix_home / "skills" / "leak").mkdir(parents=True)
    os.link(secrets / "note.md", world.fermix_home / "skills" / "leak" / "SKILL.md")
    write_skill(world.fermix_home / "skills", "fine", "name: fine\ndescription: fine")

    listed = world.tool("skill_list")
    assert listed.code == 0 and SECRET not in listed.stdout
    assert [s["name"] for s in listed.json()["skills"]] == ["fine", "repo_overview"]
    assert [e["code"] for e in listed.json()["errors"]] == ["protected_path"]
    r = world.tool("skill_view", {"name": "leak"})
    assert r.code != 0 and r.error()["code"] == "protected_path" and SECRET not in r.stdout + r.stderr
    r = world.tool("read", {"paths": ["skill://leak"]})
    assert SECRET not in r.stdout + r.stderr


def test_skills_check_refuses_evals_hard_linked_to_a_protected_file(world: Env) -> None:
    """`skills check` reads evals/evals.json as the tools read a skill's other files: one hard-linked to a
    protected file is that skill's `protected_path` error, unread, while the other skills' evals still run."""
    from tests.skills.test_skills import mock_config

    auth = world.fermix_home / "auth.json"
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    auth.write_text(
        f'{{"skill": "leaky", "cases": [{{"prompt": "{SECRET}", "expectations": ["{SECRET}"]}}]}}\n'
    )
    leaky = write_skill(
        world.fermix_home / "skills", "leaky", "name: leaky\ndescription: l\nallowed_tools: []"
    )
    (leaky / "evals").mkdir()
    os.link(auth, leaky / "evals" / "evals.json")
    fine = write_skill(world.fermix_home / "skills", "fine", "name: fine\ndescription: f\nallowed_tools: []")
    (fine / "evals").mkdir()
    (fine / "evals" / "evals.json").write_text(
        '{"skill": "fine", "cases": [{"name": "c", "prompt": "p", "expectations": ["done"]}]}'
    )
    mock_config(world, {"responses": [{"text": "done"}], "repeat_last": True})
    r = world.run("skills", "check", "--json")
    assert r.code == 1 and SECRET not in r.stdout + r.stderr
    report = r.json()
    (error,) = report["errors"]
    assert (error["code"], error["path"]) == ("protected_path", str(leaky))
    assert (
        str(leaky / "evals" / "evals.json") in error["message"]
        and "fermix sandbox explain" in error["message"]
    )
    ran = {(e["skill"], e["passed"]) for e in report["evals"] if e["skill"] != "repo_overview"}  # (bundled)
    assert ran == {("fine", True)}
