"""A new family lands by adding its own package: the catalog, the registry and the docs pick it up."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from fermix_cli.build.catalog import discover, render
from fermix_cli.build.tooldocs import render_all
from fermix_cli.core.context import ToolContext
from fermix_cli.core.paths import resolve_paths
from fermix_cli.core.registry import Registry

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


@pytest.fixture
def toyfam(tmp_path: Path) -> Iterator[str]:
    pkg = tmp_path / "toyfam"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A toy family, outside fermix_cli."""\n')
    (pkg / "tools.py").write_text(textwrap.dedent(TOY_TOOLS))
    (pkg / "notebook.py").write_text(textwrap.dedent(TOY_TOOLSET))
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
    assert catalog.toolset_modules == ("fermix_cli.mcp.toolset", "toyfam.notebook")
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


def test_fermix_catalog_lists_no_toy(toyfam: str) -> None:
    assert "toy_echo" not in discover().tool_modules
