"""docs/tools/ is generated from the registry: one page per family, every tool on it, and an index."""

from __future__ import annotations

import json
import shlex

import pytest

from fermix_cli.build.tooldocs import by_family, cell, constraints, family_of, render_all, type_name
from fermix_cli.cli.clitree import build_model
from fermix_cli.core.registry import default_registry


@pytest.mark.parametrize(
    ("module", "family"),
    [
        ("fermix_cli.tools.files", "files"),
        ("fermix_cli.tools.web", "web"),
        ("fermix_cli.tools.web.fetch", "web"),
        ("fermix_cli.tools.coding.grep.tool", "coding"),
        ("fermix_cli.jobs.tools", "jobs"),
        ("fermix_cli.memory.tools", "memory"),
        ("fermix_cli.browser.tools", "browser"),
        ("fermix_cli.events", "events"),
    ],
)
def test_family_is_read_from_the_declaring_module(module: str, family: str) -> None:
    assert family_of(module) == family


@pytest.mark.parametrize("module", ["fermix_cli", "fermix_cli.tools", ""])
def test_a_module_outside_any_family_is_refused(module: str) -> None:
    with pytest.raises(ValueError):
        family_of(module)


def _builtin_specs() -> list:
    return [t.spec for t in build_model().tools]


def test_every_tool_is_on_exactly_one_family_page_and_in_the_index() -> None:
    specs = _builtin_specs()
    families = by_family(specs)
    pages = render_all(specs)
    assert set(pages) == {"README.md"} | {f"{fam}.md" for fam in families}
    placed = [s.name for tools in families.values() for s in tools]
    assert sorted(placed) == sorted(s.name for s in specs)
    index = pages["README.md"]
    for fam, tools in families.items():
        page = pages[f"{fam}.md"]
        for spec in tools:
            assert f"\n## {spec.name}\n" in page
            assert (
                f"[`{spec.name}`]({fam}.md#{spec.name}) | [{fam}]({fam}.md) | `{spec.policy_class}`" in index
            )
            section = page.split(f"\n## {spec.name}\n", 1)[1].split("\n## ", 1)[0]
            assert f"- Policy class: `{spec.policy_class}`" in section
            for fm in spec.failure_modes:
                assert f"- `{fm.tag}`: " in section
            for name in spec.input_schema().get("properties", {}):
                assert f"| `{name}` | " in section


def test_family_follows_the_declaring_module_not_the_category() -> None:
    families = by_family(_builtin_specs())
    assert {s.name for s in families["web"]} >= {"web_fetch", "web_search"}
    assert "grep" in {s.name for s in families["coding"]}


def test_examples_are_runnable_shell_lines() -> None:
    specs = _builtin_specs()
    pages = render_all(specs)
    for fam, tools in by_family(specs).items():
        lines = pages[f"{fam}.md"].splitlines()
        for spec in tools:
            calls = [ln for ln in lines if ln.startswith(f"fermix tool {spec.name} --json ")]
            assert len(calls) == len(spec.examples)
            for line, ex in zip(calls, spec.examples, strict=True):
                words = shlex.split(line)
                assert words[:4] == ["fermix", "tool", spec.name, "--json"]
                assert json.loads(words[4]) == dict(ex.args)


def test_parameter_cells_show_types_constraints_and_escape_pipes() -> None:
    prop = {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 8, "minItems": 1}
    assert type_name(prop) == "array of string"
    assert constraints(prop) == "min items 1; max items 8; each item: max length 200"
    assert type_name({"enum": ["a", "b"], "type": "string"}) == "one of `a`, `b`"
    assert cell("a|b\nc") == "a\\|b c"


def test_the_default_registry_has_no_tool_without_a_family() -> None:
    specs = [s for s in default_registry().all() if s.kind == "builtin"]
    assert sum(len(v) for v in by_family(specs).values()) == len(specs)
