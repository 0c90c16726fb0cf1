"""A new family lands by adding its own package: the catalog, the registry and the docs pick it up."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from fermix_cli.build.discovery import discover, render
from fermix_cli.build.tooldocs import render_all
from fermix_cli.core.config import validate_config
from fermix_cli.core.context import ToolContext
from fermix_cli.core.errors import ToolError
from fermix_cli.core.paths import resolve_paths
from fermix_cli.core.registry import Registry
from fermix_cli.core.state import StateDB
from fermix_cli.jobs.duework import run_due_work

TOY_TOOLS = """
from fermix_cli.core.params import Field, Params
from fermix_cli.core.registry import FailureMode, ToolSpec, specs


class EchoParams(Params):
    text: str = Field(max_length=100, description="What to say back.")


def echo(p: EchoParams, ctx: object) -> dict[str, str]:
    return {"said": p.text}


TOOLS = specs(
    ToolSpec(
        name="toy_echo",
        category="toy",
        policy_class="read_only",
        description="Say the text back.",
        params=EchoParams,
        handler=echo,
        failure_modes=(FailureMode("invalid_input", "text is longer than 100 characters"),),
    ),
)
"""


# A source of tools beyond the family's own TOOLS (as MCP servers, skills or subagents are).
TOY_TOOLSET = """
from fermix_cli.core.params import Params
from fermix_cli.core.registry import ToolSpec
from fermix_cli.core.toolsets import Toolset


class NoteParams(Params):
    text: str


NOTE = ToolSpec(
    "toy_note", "toy", "read_only", "Keep a note in the toy notebook.", NoteParams,
    lambda p, ctx: {"noted": p.text}, kind="plugin",
)


class Notebook(Toolset):
    def tools(self, ctx):
        return [NOTE]

    def get(self, name, ctx):
        return NOTE if name == NOTE.name else None


TOOLSETS = (Notebook,)
"""

TOY_CONFIG = """
from typing import Annotated

from fermix_cli.core.config import Section
from fermix_cli.core.params import Field


class ToyConfig(Section):
    volume: Annotated[int, Field(ge=0, le=11)] = 5


CONFIG_SECTIONS = {"toyfam": ToyConfig}
"""

TOY_MIGRATIONS = """
from fermix_cli.core.migrations import Migration


def echoes(db):
    db.execute("CREATE TABLE toy_echoes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")


MIGRATIONS = (Migration("toy_001_echoes", echoes),)
"""


TOY_DUE_WORK = """
class Chime:
    name = "toy_chime"
    quiet = False

    def tick(self, ctx, *, use_lock):
        return 0, self

    def as_dict(self):
        return {"status": "chimed"}


DUE_WORK = (Chime(),)
"""


@pytest.fixture
def toyfam(tmp_path: Path) -> Iterator[str]:
    pkg = tmp_path / "toyfam"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A toy family, outside fermix_cli."""\n')
    (pkg / "tools.py").write_text(textwrap.dedent(TOY_TOOLS))
    (pkg / "notebook.py").write_text(textwrap.dedent(TOY_TOOLSET))
    (pkg / "config.py").write_text(textwrap.dedent(TOY_CONFIG))
    (pkg / "migrations.py").write_text(textwrap.dedent(TOY_MIGRATIONS))
    (pkg / "duework.py").write_text(textwrap.dedent(TOY_DUE_WORK))
    sys.path.insert(0, str(tmp_path))
    try:
        yield "toyfam"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "toyfam" or m.startswith("toyfam.")]:
            del sys.modules[name]


def test_a_toy_family_needs_no_edit_outside_its_package(toyfam: str, tmp_path: Path) -> None:
    catalog = discover(("fermix_cli", toyfam))
    assert catalog.tool_modules["toy_echo"] == "toyfam.tools"
    assert '"toy_echo": "toyfam.tools"' in render(catalog)

    registry = Registry(catalog.tool_modules, catalog.toolset_aliases)
    ctx = ToolContext(paths=resolve_paths(str(tmp_path / "home")))
    assert registry.invoke("toy_echo", '{"text":"hi"}', ctx) == {"said": "hi"}
    assert "file_read" in registry.names()  # the built-ins are still there

    pages = render_all(registry.all(), catalog.tool_modules)
    assert "toyfam.md" in pages and "toy_echo" in pages["toyfam.md"]
    assert "toy_echo" in pages["README.md"]


def test_a_family_declares_a_toolset_the_same_way(toyfam: str, tmp_path: Path) -> None:
    catalog = discover(("fermix_cli", toyfam))
    assert catalog.toolset_modules == (
        "fermix_cli.agent.skills.toolset",
        "fermix_cli.mcp.toolset",
        "toyfam.notebook",
    )
    assert '"toyfam.notebook",' in render(catalog)
    del sys.modules["toyfam.notebook"]  # discover imported it; a tool call must not need to

    registry = Registry(catalog.tool_modules, catalog.toolset_aliases, catalog.toolset_modules)
    ctx = ToolContext(paths=resolve_paths(str(tmp_path / "home")))
    assert registry.invoke("toy_echo", '{"text":"hi"}', ctx) == {"said": "hi"}
    assert "toyfam.notebook" not in sys.modules  # a built-in name never loads the other toolsets
    assert registry.invoke("toy_note", '{"text":"milk"}', ctx) == {"noted": "milk"}
    ctx.extras["registry"] = registry
    found = registry.invoke("tool_search", {"query": "notebook"}, ctx)
    assert [m["name"] for m in found["matches"]] == ["toy_note"]  # deferred, found through the bridge
    assert registry.invoke("tool_call", {"name": "toy_note", "arguments": {"text": "eggs"}}, ctx) == {
        "noted": "eggs"
    }
    assert "toy_note" not in registry.names()  # not a built-in: no docs page, no `fermix tool list` row


def test_a_toy_family_brings_its_config_section_and_migration(toyfam: str, tmp_path: Path) -> None:
    catalog = discover(("fermix_cli", toyfam))
    assert "toyfam.config" in catalog.config_modules and "toyfam.migrations" in catalog.migration_modules
    assert catalog.migration_names[-1] == "toy_001_echoes"

    config = validate_config({"toyfam": {"volume": 11}, "sandbox": {"mode": "strict"}}, catalog=catalog)
    assert config.toyfam.volume == 11 and config.sandbox.mode == "strict"
    assert validate_config({}, catalog=catalog).toyfam.volume == 5
    for table, key in (({"volume": 12}, "toyfam.volume"), ({"loudness": 1}, "toyfam.loudness")):
        with pytest.raises(ToolError) as e:
            validate_config({"toyfam": table}, catalog=catalog)
        assert e.value.code == "invalid_config" and e.value.details["key"] == key
    with pytest.raises(ToolError) as e:  # fermix's own catalog knows no such table
        validate_config({"toyfam": {"volume": 1}})
    assert e.value.details["key"] == "toyfam"

    db = StateDB(tmp_path / "state.db", catalog=catalog)
    assert db.schema_version == len(catalog.migration_names)
    db.query("INSERT INTO toy_echoes (text) VALUES ('hi')")
    assert db.query("SELECT text FROM toy_echoes")[0][0] == "hi"
    assert db.query("SELECT count(*) FROM scheduled_jobs")[0][0] == 0  # fermix's own tables too
    db.close()


def test_jobs_run_drives_a_toy_due_work_source(toyfam: str, tmp_path: Path) -> None:
    catalog = discover(("fermix_cli", toyfam))
    assert catalog.due_work_modules == (
        "fermix_cli.browser.duework",
        "fermix_cli.events.duework",
        "fermix_cli.harness.duework",
        "fermix_cli.jobs.duework",
        "fermix_cli.jobs.memoryreview",
        "toyfam.duework",
    )
    ctx = ToolContext(paths=resolve_paths(str(tmp_path / "home")))
    try:
        code, output = run_due_work(ctx, use_lock=False, catalog=catalog)
    finally:
        ctx.close()
    assert code == 0 and not output.quiet
    out = output.as_dict()
    assert out["status"] == "idle"
    assert out["due_work"] == {
        "browser": {"status": "idle"},
        "reminders": {"status": "idle"},
        "coding_runs": {"status": "idle"},
        "memory_review": {"status": "idle"},
        "toy_chime": {"status": "chimed"},
    }


def test_fermix_catalog_lists_no_toy(toyfam: str) -> None:
    catalog = discover()
    assert "toy_echo" not in catalog.tool_modules
    assert "toy_001_echoes" not in catalog.migration_names
