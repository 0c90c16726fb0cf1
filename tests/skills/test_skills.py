"""Skills: SKILL.md parsing, discovery, the skill tools, confined runs, and skill:// reads."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from fermix_cli.core.skillfile import parse_skill
from tests.conftest import Env


def write_skill(root: Path, name: str, front: str, body: str = "Do the task well.") -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n")
    return d


def mock_config(world: Env, script: Any) -> Path:
    path = world.fermix_home / "script.json"
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(script))
    (world.fermix_home / "config.toml").write_text(
        f'[fermix_core.agent]\nprovider = "mock"\n\n[fermix_core.providers.mock]\nscript = "{path}"\n'
    )
    return path


def call(world: Env, name: str, args: dict[str, Any], **kw: Any) -> Any:
    ctx = world.context(**kw)
    try:
        return default_registry().invoke(name, args, ctx)
    finally:
        ctx.close()


# ----- parsing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "line"),
    [
        ("name: a\n", "invalid_frontmatter", 1),  # no opening ---
        ("---\nname: a\ndescription: d\n", "invalid_frontmatter", 1),  # no closing ---
        ("---\nname: a\ndescription: [unclosed\n---\nbody\n", "invalid_frontmatter_line", (3, 4)),
        ("---\nname: a\n  bad: indent\n---\nbody\n", "invalid_frontmatter_line", 3),
        ("---\ndescription: d\n---\nbody\n", "invalid_frontmatter", 2),  # missing name
        ("---\nname: a\n---\nbody\n", "invalid_frontmatter", 2),  # missing description
        ("---\nname: a b\ndescription: d\n---\nbody\n", "invalid_name", 2),
        ("---\nname: a\ndescription: d\nname: b\n---\nbody\n", "invalid_frontmatter", 4),  # duplicate
        ("---\nname: a\ndescription: d\npolicy: gui_control\n---\nbody\n", "invalid_frontmatter", 4),
        ("---\nname: a\ndescription: d\nmax_iterations: true\n---\nbody\n", "invalid_frontmatter", 4),
        ("---\nname: a\ndescription: d\nallowed_tools: 3\n---\nbody\n", "invalid_frontmatter", 4),
        ("---\nname: a\ndescription: d\n---\n\n   \n", "invalid_frontmatter", 5),  # empty body
        ("---\n- a\n- b\n---\nbody\n", "invalid_frontmatter", 2),  # not a mapping
    ],
)
def test_malformed_frontmatter_names_file_and_line(text: str, code: str, line: int | tuple[int, int]) -> None:
    with pytest.raises(ToolError) as e:
        parse_skill(text.encode(), "/s/a/SKILL.md", "/s/a")
    assert e.value.code == code
    # an unclosed flow list is reported at its line (pure-Python parser) or at the end (libyaml)
    lines = line if isinstance(line, tuple) else (line,)
    assert e.value.details["line"] in lines
    assert e.value.message.startswith(f"/s/a/SKILL.md:{e.value.details['line']}: "), e.value.message


def test_a_skill_md_saved_with_a_byte_order_mark_loads(world: Env) -> None:
    d = world.fermix_home / "skills" / "win"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_bytes(
        b"\xef\xbb\xbf---\r\nname: win\r\ndescription: From Notepad\r\n---\r\nDo it.\r\n"
    )
    listed = world.tool("skill_list").json()
    assert listed["errors"] == [] and {"win", "repo_overview"} == {s["name"] for s in listed["skills"]}
    view = world.tool("skill_view", {"name": "win"}).json()
    assert (view["description"], view["system_prompt"]) == ("From Notepad", "Do it.")
    # a BOM anywhere else is no exception to the rules: the file must still start with ---
    with pytest.raises(ToolError) as e:
        parse_skill(b"\n\xef\xbb\xbf---\nname: a\ndescription: d\n---\nbody\n", "/s/a/SKILL.md", "/s/a")
    assert e.value.code == "invalid_frontmatter"


def test_oversized_skill_is_refused() -> None:
    body = "x" * 70_000
    with pytest.raises(ToolError) as e:
        parse_skill(f"---\nname: a\ndescription: d\n---\n{body}".encode(), "/s/a/SKILL.md", "/s/a")
    assert e.value.code == "too_large"


def test_yaml_values_and_foreign_tool_names() -> None:
    text = (
        "---\nname: pdf-tools\ndescription: >\n  Work with PDFs\n  and forms\n"
        "allowed-tools: Read, Grep, Bash(git:*), WebFetch\nlicense: MIT\nmetadata:\n  version: 2\n---\n# Hi\n"
    )
    skill = parse_skill(text.encode(), "/s/p/SKILL.md", "/s/p")
    assert skill.description == "Work with PDFs and forms"
    assert skill.allowed_tools == ("file_read", "content_search", "web_fetch")
    assert skill.unmapped_tools == ("Bash(git:*)",)  # a narrowed shell is never granted as plain shell
    assert skill.metadata == {"license": "MIT", "metadata": {"version": 2}}
    assert skill.instructions == "# Hi"


# ----- the tools --------------------------------------------------------------------------------------


def test_create_list_reload_view(world: Env) -> None:
    made = call(world, "skill_create", {"name": "notes", "description": "Tidy: my notes"})
    skill_dir = Path(made["path"])
    assert made["created"] is True and skill_dir == world.fermix_home / "skills" / "notes"
    evals = json.loads((skill_dir / "evals" / "evals.json").read_text())
    assert evals["skill"] == "notes" and evals["cases"][0]["name"] == "selects_notes"
    view = call(world, "skill_view", {"name": "notes"})
    assert view["allowed_tools"] == [] and view["description"] == "Tidy: my notes"
    with pytest.raises(ToolError) as e:
        call(world, "skill_create", {"name": "notes", "description": "again"})
    assert e.value.code == "already_exists" and "already exists:" in e.value.message
    with pytest.raises(ToolError) as e:
        call(world, "skill_create", {"name": "../x", "description": "d"})
    assert e.value.code == "invalid_name"

    first = call(world, "skill_reload", {})
    assert "notes" in first["added"] and "repo_overview" in first["added"]
    (skill_dir / "SKILL.md").write_text("---\nname: notes\ndescription: changed\n---\nNew body\n")
    write_skill(world.fermix_home / "skills", "broken", "name: broken\ndescription: [x")
    write_skill(world.fermix_home / "skills", "shell", "name: shell\ndescription: shadow attempt")
    second = call(world, "skill_reload", {})
    assert second["changed"] == ["notes"] and second["added"] == [] and second["removed"] == []
    codes = {e["code"] for e in second["errors"]}
    assert {"invalid_frontmatter_line", "name_taken"} <= codes
    listed = {s["name"] for s in call(world, "skill_list", {})["skills"]}
    assert "shell" not in listed and "broken" not in listed and "notes" in listed
    # the built-in stays the built-in: `shell` resolves to the registry's tool
    assert default_registry().resolve("shell", world.context()).kind == "builtin"
    (skill_dir / "SKILL.md").unlink()
    (skill_dir / "evals" / "evals.json").unlink()
    assert call(world, "skill_reload", {})["removed"] == ["notes"]


def test_view_references_are_confined(world: Env, tmp_path: Path) -> None:
    d = write_skill(world.fermix_home / "skills", "guide", "name: guide\ndescription: g")
    (d / "references").mkdir()
    (d / "references" / "style.md").write_text("Use short sentences.")
    (d / "references" / "big.md").write_text("y" * 65_537)
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    os.symlink(outside, d / "references" / "linked.md")
    assert call(world, "skill_view", {"name": "guide", "file": "style"})["content"] == "Use short sentences."
    assert call(world, "skill_view", {"name": "guide"})["references"] == ["big", "linked", "style"]
    for file, code in [
        ("../SKILL", "invalid_reference_name"),
        ("Style", "invalid_reference_name"),
        ("nope", "reference_not_found"),
        ("linked", "symlink_refused"),
        ("big", "too_large"),
    ]:
        with pytest.raises(ToolError) as e:
            call(world, "skill_view", {"name": "guide", "file": file})
        assert e.value.code == code, file
    # a symlinked references/ directory is refused too
    d2 = write_skill(world.fermix_home / "skills", "guide2", "name: guide2\ndescription: g")
    os.symlink(d / "references", d2 / "references")
    with pytest.raises(ToolError) as e:
        call(world, "skill_view", {"name": "guide2", "file": "style"})
    assert e.value.code == "symlink_refused"


def test_read_skill_targets(world: Env) -> None:
    d = write_skill(world.fermix_home / "skills", "guide", "name: guide\ndescription: g", "Body here")
    (d / "references").mkdir()
    (d / "references" / "a.md").write_text("ref text")
    out = call(world, "read", {"paths": ["skill://guide", "skill://guide/references/a.md"]}, toolset="coding")
    text = json.dumps(out)
    assert "Body here" in text and "ref text" in text


def test_extra_roots_from_config_and_foreign_skill(world: Env) -> None:
    foreign = world.root / "other-agent-skills"
    write_skill(
        foreign,
        "summarize-file",
        "name: summarize-file\ndescription: Summarize a file\nallowed-tools: Read, Glob",
        "Read the file and summarize it.",
    )
    script = mock_config(
        world,
        [
            {"tool_calls": [{"name": "file_read", "arguments": {"path": "notes.txt"}}]},
            {"text": "summary: hello"},
        ],
    )
    with (world.fermix_home / "config.toml").open("a") as f:
        f.write(f'\n[fermix_core.skills]\nroots = ["{foreign}"]\n')
    (world.project / "notes.txt").write_text("hello world\n")
    assert script.exists()
    out = call(
        world, "skill_run", {"name": "summarize-file", "task": "summarize notes.txt"}, cwd=str(world.project)
    )
    assert out["status"] == "completed" and out["output"] == "summary: hello"
    assert out["tools"] == ["file_read", "glob_search"]


# ----- confinement ------------------------------------------------------------------------------------


def _calls(world: Env, session_prefix: str) -> list[tuple[str, int, str | None]]:
    ctx = world.context()
    try:
        rows = ctx.state.query(
            "SELECT tool, ok, error_code FROM tool_calls WHERE session_id LIKE ? ORDER BY started_at",
            (session_prefix + "%",),
        )
    finally:
        ctx.close()
    return [(r["tool"], r["ok"], r["error_code"]) for r in rows]


@pytest.mark.parametrize(
    ("toolset", "tools", "calls"),
    [
        ("fermix", ["file_read", "content_search", "glob_search"], ("file_read", {"path": "notes.txt"})),
        ("coding", ["read", "grep", "find"], ("read", {"paths": ["notes.txt"]})),
    ],
)
def test_a_foreign_skill_s_tools_resolve_in_the_caller_s_toolset(
    world: Env, toolset: str, tools: list[str], calls: tuple[str, dict[str, Any]]
) -> None:
    """A skill written for another agent (`allowed-tools: Read, Grep, Glob, LS`) gets the equivalents of
    the toolset it runs in: the personal set's file_read ..., or coding's read, grep and find."""
    write_skill(
        world.fermix_home / "skills",
        "look",
        "name: look\ndescription: Look at a file\nallowed-tools: Read, Grep, Glob, LS",
        "Read the file.",
    )
    name, args = calls
    mock_config(world, [{"tool_calls": [{"name": name, "arguments": args}]}, {"text": "seen"}])
    (world.project / "notes.txt").write_text("hello\n")
    out = call(
        world,
        "skill_run",
        {"name": "look", "task": "read notes.txt"},
        cwd=str(world.project),
        toolset=toolset,
    )
    assert (out["status"], out["output"]) == ("completed", "seen")
    # LS is coding's list_files; the personal set has no exact equivalent, so there it grants nothing.
    assert out["tools"] == ([*tools, "list_files"] if toolset == "coding" else tools)
    assert out.get("withheld_tools", []) == ([] if toolset == "coding" else ["LS"])
    assert _calls(world, "default:skill-look") == [(name, 1, None)]


def test_skill_naming_tools_its_caller_lacks_is_refused_at_execution(world: Env) -> None:
    write_skill(
        world.fermix_home / "skills",
        "writer",
        "name: writer\ndescription: w\nallowed_tools: [file_write, glob_search]",
    )
    mock_config(
        world,
        [
            {"tool_calls": [{"name": "file_write", "arguments": {"path": "x.txt", "content": "no"}}]},
            {"text": "done"},
        ],
    )
    # the caller is narrowed to read_only: file_write is withheld, and refused when called anyway
    out = call(
        world,
        "skill_run",
        {"name": "writer", "task": "write"},
        policy_ceiling=frozenset({"read_only", "exec"}),
    )
    assert out["tools"] == ["glob_search"] and out["withheld_tools"] == ["file_write"]
    assert not (world.project / "x.txt").exists()
    assert ("file_write", 0, "policy_denied") in _calls(world, "default:skill-writer")


def test_skill_policy_narrows_and_never_widens(world: Env) -> None:
    write_skill(
        world.fermix_home / "skills", "ro", "name: ro\ndescription: r\npolicy: read_only"
    )  # no allowed_tools: the caller's, within read_only
    mock_config(
        world,
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "touch pwned"}}]}, {"text": "ok"}],
    )
    out = call(world, "skill_run", {"name": "ro", "task": "t"}, cwd=str(world.project))
    assert "shell" not in out["tools"] and "glob_search" in out["tools"]
    assert not (world.project / "pwned").exists()
    assert ("shell", 0, "policy_denied") in _calls(world, "default:skill-ro")


def test_skill_recursion_stops_at_depth_four(world: Env) -> None:
    write_skill(
        world.fermix_home / "skills", "loop", "name: loop\ndescription: l\nallowed_tools: [skill_run]"
    )
    mock_config(
        world,
        {
            "responses": [
                {"tool_calls": [{"name": "skill_run", "arguments": {"name": "loop", "task": "again"}}]},
                {"text": "unwound"},
            ]
        },
    )
    out = call(world, "skill_run", {"name": "loop", "task": "go"})
    assert out["status"] == "completed"
    ctx = world.context()
    try:
        rows = ctx.state.query("SELECT error_code FROM tool_calls WHERE tool = 'skill_run' AND ok = 0")
        depths = ctx.state.query("SELECT count(*) AS n FROM conversations WHERE label = 'skill-loop'")
    finally:
        ctx.close()
    assert [r["error_code"] for r in rows] == ["depth_exceeded"]
    assert depths[0]["n"] == 4  # depths 1..4 ran; the fifth was refused
    with pytest.raises(ToolError) as e:
        call(world, "skill_run", {"name": "loop", "task": "go"}, depth=4)
    assert e.value.code == "depth_exceeded"


def test_cli_skills_commands(world: Env) -> None:
    r = world.run("skills", "new", "demo", "--description", "A demo skill")
    assert r.code == 0, r.stderr
    r = world.run("skills", "list", "--json")
    assert r.code == 0 and "demo" in {s["name"] for s in r.json()["skills"]}
    r = world.run("skills", "view", "demo")
    assert r.code == 0 and "Write this skill's instructions" in r.stdout
    mock_config(world, {"responses": [{"text": "did it"}], "repeat_last": True})
    r = world.run("skills", "check", "demo", "--json")
    assert r.code == 0, r.stderr
    assert r.json()["evals"][0]["passed"] is True and r.json()["evals"][0]["case"] == "selects_demo"
    r = world.run("skills", "run", "demo", "do it")
    assert r.code == 0 and r.stdout.strip() == "did it"
    write_skill(world.fermix_home / "skills", "bad", "name: bad\ndescription: [x")
    r = world.run("skills", "check", "--no-evals", "--json")
    assert r.code == 1
    assert any(
        e["code"] == "invalid_frontmatter_line" and "bad/SKILL.md:" in e["message"]
        for e in r.json()["errors"]
    )


# ----- audit fixes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "blank", ["allowed_tools:", "allowed_tools: ~", "allowed_tools: null", 'allowed_tools: ""']
)
def test_present_but_empty_allowed_tools_grants_no_tools(blank: str) -> None:
    skill = parse_skill(
        f"---\nname: a\ndescription: d\n{blank}\n---\nbody\n".encode(), "/s/a/SKILL.md", "/s/a"
    )
    assert skill.allowed_tools == () and "allowed_tools" not in skill.metadata


@pytest.mark.parametrize(
    "key", ["policy", "model", "provider", "temperature", "max_iterations", "timeout_seconds", "role"]
)
def test_present_but_empty_known_key_is_invalid(key: str) -> None:
    with pytest.raises(ToolError) as e:
        parse_skill(f"---\nname: a\ndescription: d\n{key}:\n---\nbody\n".encode(), "/s/a/SKILL.md", "/s/a")
    assert e.value.code == "invalid_frontmatter" and e.value.details["line"] == 4, e.value.message
    assert e.value.message.startswith("/s/a/SKILL.md:4: ")


def test_blank_allowed_tools_skill_runs_without_tools(world: Env) -> None:
    write_skill(world.fermix_home / "skills", "blank", "name: blank\ndescription: b\nallowed_tools:")
    mock_config(
        world,
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "touch pwned"}}]}, {"text": "ok"}],
    )
    view = call(world, "skill_view", {"name": "blank"})
    assert view["allowed_tools"] == [] and "policy" not in view["metadata"]
    out = call(world, "skill_run", {"name": "blank", "task": "t"}, cwd=str(world.project))
    assert out["tools"] == []
    assert not (world.project / "pwned").exists()


def _alias_bomb(levels: int) -> str:
    lines = ["name: bomb", "description: d", "a0: &a0 [" + ", ".join(['"lol"'] * 10) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("front", "line"),
    [
        (_alias_bomb(4), 5),  # the first alias is on a1's line
        ("name: a\ndescription: d\nbase: &b {x: 1}\nmore:\n  <<: *b\n  y: 2", 6),
        ("name: a\ndescription: &d text\nsummary: *d", 4),
    ],
)
def test_yaml_aliases_are_refused(front: str, line: int) -> None:
    with pytest.raises(ToolError) as e:
        parse_skill(f"---\n{front}\n---\nbody\n".encode(), "/s/a/SKILL.md", "/s/a")
    assert e.value.code == "invalid_frontmatter" and e.value.details["line"] == line, e.value.message
    assert "alias" in e.value.message


def test_alias_bomb_is_skipped_and_reported(world: Env) -> None:
    write_skill(world.fermix_home / "skills", "bomb", _alias_bomb(5))
    write_skill(world.fermix_home / "skills", "fine", "name: fine\ndescription: f")
    listed = call(world, "skill_list", {})
    assert "fine" in {s["name"] for s in listed["skills"]}
    assert [(e["code"], e["path"].endswith("bomb/SKILL.md")) for e in listed["errors"]] == [
        ("invalid_frontmatter", True)
    ]
    with pytest.raises(ToolError) as e:
        call(world, "skill_view", {"name": "bomb"})
    assert e.value.code == "invalid_frontmatter" and "bomb/SKILL.md:5: " in e.value.message


def test_skill_tool_called_without_context(world: Env) -> None:
    skills = world.fermix_home / "skills"
    write_skill(skills, "inner", "name: inner\ndescription: i\nallowed_tools: []")
    write_skill(skills, "outer", "name: outer\ndescription: o\nallowed_tools: [inner]")
    mock_config(
        world,
        {
            "by_prompt": [
                {"contains": "inner work", "responses": [{"text": "inner done"}]},
                {
                    "contains": "outer work",
                    "responses": [
                        {"tool_calls": [{"name": "inner", "arguments": {"task": "inner work"}}]},
                        {"text": "outer done"},
                    ],
                },
            ]
        },
    )
    r = world.tool("inner", {"task": "inner work"})
    assert r.code == 0, r.stderr
    assert r.json()["status"] == "completed" and r.json()["output"] == "inner done"
    assert call(world, "inner", {"task": "inner work"})["output"] == "inner done"
    # a model calling the skill's tool leaves context out too
    out = call(world, "skill_run", {"name": "outer", "task": "outer work"})
    assert out["status"] == "completed" and out["output"] == "outer done"
    assert ("inner", 1, None) in _calls(world, "default:skill-outer")


@pytest.mark.parametrize("expectations", ['["regex:("]', "5", '"zzz"', '["ok", 3]'])
def test_check_reports_malformed_expectations(world: Env, expectations: str) -> None:
    d = write_skill(world.fermix_home / "skills", "ev", "name: ev\ndescription: e\nallowed_tools: []")
    (d / "evals").mkdir()
    (d / "evals" / "evals.json").write_text(
        f'{{"skill": "ev", "cases": [{{"name": "c", "prompt": "p", "expectations": {expectations}}}]}}'
    )
    mock_config(world, {"responses": [{"text": "ok zzz"}], "repeat_last": True})
    r = world.run("skills", "check", "ev", "--json")
    assert r.code == 1 and "Traceback" not in r.stderr, r.stderr
    report = r.json()
    assert [e["code"] for e in report["errors"]] == ["invalid_evals"] and report["evals"] == []
    assert "evals.json" in report["errors"][0]["message"]


@pytest.mark.parametrize(
    "description",
    [
        "a\u007fb",
        "a\u0086b",
        "a\ufffeb",
        "a\u2028b",
        "a\u2029b",
        "a\u0085b",
        "tab\there",
        "nul\x00",
        "q\"\\'",
        "ok \u00a0 \U0001f600",
    ],
)
def test_created_description_round_trips(world: Env, description: str) -> None:
    made = call(world, "skill_create", {"name": "rt", "description": description})
    assert made["created"] is True
    assert call(world, "skill_list", {})["errors"] == []
    assert call(world, "skill_view", {"name": "rt"})["description"] == description


def test_create_refuses_a_built_in_tools_name(world: Env) -> None:
    for name in ("shell", "skill_run"):
        with pytest.raises(ToolError) as e:
            call(world, "skill_create", {"name": name, "description": "d"})
        assert e.value.code == "name_taken", name
        assert not (world.fermix_home / "skills" / name).exists()


def test_shadowed_skill_is_refused_everywhere(world: Env) -> None:
    skills = world.fermix_home / "skills"
    write_skill(skills, "shell", "name: shell\ndescription: shadow attempt")
    write_skill(skills, "other_dir", "name: file_read\ndescription: shadow attempt")
    mock_config(world, {"responses": [{"text": "did it"}], "repeat_last": True})
    for name in ("shell", "file_read"):
        for tool, args in (("skill_run", {"name": name, "task": "t"}), ("skill_view", {"name": name})):
            with pytest.raises(ToolError) as e:
                call(world, tool, args)
            assert e.value.code == "unknown_skill" and "shadowed by a built-in tool" in e.value.message
        with pytest.raises(ToolError) as e:
            call(world, "read", {"paths": [f"skill://{name}"]}, toolset="coding")
        assert e.value.code == "unknown_skill", e.value.message
        for argv in (("skills", "run", name, "do it"), ("skills", "view", name)):
            r = world.run(*argv)
            assert r.code == 1 and "did it" not in r.stdout, (argv, r.stdout)
            assert "shadowed by a built-in tool" in r.stderr
    errors = call(world, "skill_list", {})["errors"]
    assert sorted(e["code"] for e in errors) == ["name_taken", "name_taken"]


def test_symlinked_skill_directory_is_reported(world: Env, tmp_path: Path) -> None:
    elsewhere = write_skill(tmp_path / "elsewhere", "linked", "name: linked\ndescription: l")
    (world.fermix_home / "skills").mkdir(parents=True)
    os.symlink(elsewhere, world.fermix_home / "skills" / "linked")
    listed = call(world, "skill_list", {})
    assert "linked" not in {s["name"] for s in listed["skills"]}
    assert [(e["code"], e["path"]) for e in listed["errors"]] == [
        ("symlink_refused", str(world.fermix_home / "skills" / "linked" / "SKILL.md"))
    ]
    with pytest.raises(ToolError) as e:
        call(world, "skill_view", {"name": "linked"})
    assert e.value.code == "symlink_refused"


@pytest.mark.parametrize("no_evals", [(), ("--no-evals",)])
def test_check_of_an_unknown_skill_is_unknown_skill(world: Env, no_evals: tuple[str, ...]) -> None:
    r = world.run("skills", "check", "nosuchskill", *no_evals, "--json")
    assert r.code == 1 and r.stdout == "", r.stdout
    assert json.loads(r.stderr)["error"]["code"] == "unknown_skill"


def test_check_of_one_skill_reports_only_its_own_errors(world: Env) -> None:
    # A config root whose path holds the checked skill's name, with another skill that does not load.
    root = world.root / "audit2_agent" / "skills"
    write_skill(root, "other", "name: other\ndescription: [x")
    write_skill(world.fermix_home / "skills", "audit2_agent", "name: audit2_agent\ndescription: d")
    (world.fermix_home / "config.toml").write_text(f'[fermix_core.skills]\nroots = ["{root}"]\n')
    r = world.run("skills", "check", "audit2_agent", "--no-evals", "--json")
    assert r.code == 0, r.stdout + r.stderr
    assert r.json() == {"skills": 1, "errors": [], "evals": []}
    r = world.run("skills", "check", "other", "--no-evals", "--json")
    assert r.code == 1 and [e["code"] for e in r.json()["errors"]] == ["invalid_frontmatter_line"]
    assert r.json()["errors"][0]["path"] == str(root / "other" / "SKILL.md")


@pytest.mark.parametrize(
    ("cases", "problems"),
    [
        (
            '[{"name": "c1", "prompt": 5}, "junk", {"name": "c3", "expectations": ["y"]}]',
            ["cases[0]: prompt", "cases[1]: ", "cases[2]: prompt"],
        ),
        ('[{"name": "ok", "prompt": "p"}, {"name": "c", "prompt": "  "}]', ["cases[1]: prompt"]),
        ('[{"name": 3, "prompt": "p"}]', ["cases[0]: name"]),
        ('[{"name": "c", "prompt": "p", "expectations": "y"}]', ["cases[0]: expectations"]),
        ('[{"name": "c", "prompt": "p"}, null]', ["cases[1]: "]),
    ],
)
@pytest.mark.parametrize("no_evals", [(), ("--no-evals",)])
def test_check_reports_malformed_cases(
    world: Env, cases: str, problems: list[str], no_evals: tuple[str, ...]
) -> None:
    d = write_skill(world.fermix_home / "skills", "ev", "name: ev\ndescription: e\nallowed_tools: []")
    (d / "evals").mkdir()
    (d / "evals" / "evals.json").write_text(f'{{"skill": "ev", "cases": {cases}}}')
    mock_config(world, {"responses": [{"text": "ok y"}], "repeat_last": True})
    r = world.run("skills", "check", "ev", *no_evals, "--json")
    assert r.code == 1, r.stdout + r.stderr
    report = r.json()
    assert [e["code"] for e in report["errors"]] == ["invalid_evals"] and report["evals"] == []
    message = report["errors"][0]["message"]
    assert all(p in message for p in problems), message
    assert message.count("cases[") == len(problems), message
    r = world.run("skills", "check", "ev", *no_evals)
    assert r.code == 1 and "1 skills loaded, 1 errors" in r.stdout, r.stdout


def test_bad_skill_roots_are_reported_never_fatal(world: Env) -> None:
    good = world.root / "good-skills"
    write_skill(good, "fine", "name: fine\ndescription: loads")
    regular = world.root / "a-file"
    regular.write_text("not a directory")
    world.fermix_home.mkdir(parents=True)
    (world.fermix_home / "config.toml").write_text(
        "[fermix_core.skills]\n"
        f'roots = ["/nonexistent-skill-root", "{regular}", "relative/dir", "{good}",'
        f' "{world.fermix_home / "skills"}"]\n'
    )
    expected = [
        ("/nonexistent-skill-root", "does not exist"),
        (str(regular), "is not a directory"),
        (str(world.fermix_home / "relative" / "dir"), "does not exist"),
    ]
    for tool in ("skill_list", "skill_reload"):
        out = call(world, tool, {})
        found = sorted((e["path"], e["code"], e["message"]) for e in out["errors"])
        assert [(p, c) for p, c, _ in found] == sorted((p, "invalid_skill_root") for p, _ in expected)
        for (_, _, message), (path, why) in zip(found, sorted(expected), strict=True):
            assert f"{path} " in message and why in message and "[fermix_core.skills] roots" in message
    assert "fine" in {s["name"] for s in call(world, "skill_list", {})["skills"]}
    assert not (world.fermix_home / "skills").exists()  # the default root, not made yet: no error
    r = world.run("skills", "list")
    assert r.code == 0 and "fine" in r.stdout
    assert r.stderr.count("not loaded: skill root") == 3, r.stderr
    r = world.run("skills", "check", "--no-evals", "--json")
    assert r.code == 1 and [e["code"] for e in r.json()["errors"]] == ["invalid_skill_root"] * 3
    r = world.run("skills", "check", "fine", "--no-evals", "--json")  # not fine's errors
    assert r.code == 0 and r.json()["errors"] == [], r.stdout
    for argv in (("check", "relative"), ("run", "relative", "t")):  # relative/dir is no skill "relative"
        r = world.run("skills", *argv)
        assert r.code == 1 and json.loads(r.stderr)["error"]["code"] == "unknown_skill", r.stderr


def test_a_relative_skill_root_is_taken_from_the_config_files_directory(world: Env) -> None:
    write_skill(world.fermix_home / "my-skills", "rel", "name: rel\ndescription: relative root")
    (world.fermix_home / "config.toml").write_text('[fermix_core.skills]\nroots = ["my-skills"]\n')
    (world.project / "my-skills").mkdir()  # the working directory's namesake is not the root
    for cwd in (world.project, world.root):
        r = world.run("skills", "list", "--json", cwd=cwd)
        assert r.code == 0 and r.json()["errors"] == [], r.stdout
        assert {s["name"]: s["origin"] for s in r.json()["skills"]}.get("rel") == "config"


def test_a_root_reached_through_a_symlink_is_the_same_root(world: Env) -> None:
    """`<home>/skills` listed again in `roots` by another path (a symlink; macOS's /tmp) is one root:
    its skills load once, with no "already loaded" error."""
    write_skill(world.fermix_home / "skills", "alpha", "name: alpha\ndescription: loads once")
    alias = world.root / "skills-alias"
    alias.symlink_to(world.fermix_home / "skills")
    (world.fermix_home / "config.toml").write_text(f'[fermix_core.skills]\nroots = ["{alias}"]\n')
    out = call(world, "skill_list", {})
    assert [s["name"] for s in out["skills"] if s["name"] == "alpha"] == ["alpha"] and out["errors"] == []
    r = world.run("skills", "check", "--no-evals", "--json")
    assert r.code == 0 and r.json()["errors"] == [], r.stdout


def test_a_skill_run_stopped_at_its_iteration_cap_names_the_frontmatter_key(world: Env) -> None:
    """A skill run's cap is its SKILL.md `max_iterations`: the error says so (not `--max-iterations`),
    and the output keeps every reply the run wrote."""
    write_skill(world.fermix_home / "skills", "looper", "name: looper\ndescription: l\nmax_iterations: 3")
    mock_config(
        world,
        [
            {"text": f"step {i}", "tool_calls": [{"name": "tool_help", "arguments": {"name": f"x{i}"}}]}
            for i in range(4)
        ],
    )
    out = call(world, "skill_run", {"name": "looper", "task": "t"})
    assert out["status"] == "failed" and out["iterations"] == 3
    assert out["output"].splitlines() == ["step 0", "step 1", "step 2"]
    message = out["error"]["message"]
    assert out["error"]["code"] == "max_iterations" and "--max-iterations" not in message
    assert "max_iterations in the SKILL.md frontmatter of looper" in message
