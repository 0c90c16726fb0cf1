"""`fermix skills reload [--json]`: the rescan from the command line (reference 17)."""

from __future__ import annotations

from tests.conftest import Env
from tests.skills.test_skills import write_skill


def test_skills_reload_reports_what_changed(world: Env) -> None:
    r = world.run("skills", "reload", "--json")
    assert r.code == 0, r.stderr
    assert r.json()["added"] == ["repo_overview"] and r.json()["errors"] == []  # the bundled skill
    skills = world.fermix_home / "skills"
    write_skill(skills, "notes", "name: notes\ndescription: n")
    write_skill(skills, "dated", "name: dated\ndescription: d\nupdated: 2024-02-30")
    r = world.run("skills", "reload", "--json")
    assert r.code == 0, r.stderr
    out = r.json()
    assert (out["added"], out["removed"], out["changed"], out["skills"]) == (["notes"], [], [], 2)
    assert [(e["code"], e["path"]) for e in out["errors"]] == [
        ("invalid_frontmatter", str(skills / "dated" / "SKILL.md"))
    ]
    write_skill(skills, "notes", "name: notes\ndescription: changed")
    r = world.run("skills", "reload")
    assert r.code == 0, r.stderr
    assert r.stdout.splitlines() == ["changed: notes", "2 skill(s) loaded."]
    assert f"not loaded: {skills / 'dated' / 'SKILL.md'}:4: " in r.stderr and "Traceback" not in r.stderr
    r = world.run("skills", "reload")
    assert r.code == 0 and r.stdout.splitlines() == ["No change since the last reload.", "2 skill(s) loaded."]
    # what the command recorded is what the tool compares with next
    assert world.tool("skill_reload").json()["changed"] == []
