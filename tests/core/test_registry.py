"""The registry: the name index matches the families, every tool is classified, invoke is strict."""

from __future__ import annotations

import importlib

import pytest

from fermix_cli.core.catalog import default_catalog
from fermix_cli.core.context import POLICY_CLASSES
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import Params, Registry, ToolSpec, default_registry

TOOL_MODULES = default_catalog().tool_modules


def test_index_matches_what_each_family_declares() -> None:
    declared: dict[str, str] = {}
    for module in sorted(set(TOOL_MODULES.values())):
        for spec in importlib.import_module(module).TOOLS:
            assert spec.name not in declared, f"{spec.name} declared twice"
            declared[spec.name] = module
    assert declared == TOOL_MODULES


def test_every_tool_is_classified_and_documented() -> None:
    for spec in default_registry().all():
        assert spec.policy_class in POLICY_CLASSES
        assert spec.category and spec.description
        assert spec.failure_modes, f"{spec.name} lists no failure modes"
        schema = spec.input_schema()
        assert schema["type"] == "object" and schema.get("additionalProperties") is False
        for name, prop in schema.get("properties", {}).items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
        for example in spec.examples:
            spec.params.model_validate(dict(example.args))


def test_family_modules_do_not_import_each_other() -> None:
    import ast
    from pathlib import Path

    families = {m.rsplit(".", 1)[-1] for m in TOOL_MODULES.values()}
    for module in set(TOOL_MODULES.values()):
        path = Path(importlib.import_module(module).__file__)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                other = parts[-1] if node.level == 1 else None
                if other in families and other != path.stem:
                    pytest.fail(f"{module} imports family {other}")


def test_duplicate_registration_is_refused_and_first_stays() -> None:
    reg = Registry({})

    class P(Params):
        pass

    first = ToolSpec("dup", "x", "read_only", "first", P, lambda p, c: {"which": 1})
    reg.register(first)
    with pytest.raises(ToolError) as e:
        reg.register(ToolSpec("dup", "x", "read_only", "second", P, lambda p, c: {"which": 2}))
    assert e.value.code == "duplicate_name"
    assert reg.get("dup") is first


def test_unknown_policy_class_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        ToolSpec("bad", "x", "root", "d", Params, lambda p, c: None)  # type: ignore[arg-type]


def test_guest_cannot_run_above_read_only_even_by_name(world, invoke) -> None:
    with pytest.raises(ToolError) as e:
        invoke("file_write", {"path": "x.txt", "content": "y"}, trust="guest")
    assert e.value.code == "policy_denied"
    assert not (world.project / "x.txt").exists()
    with pytest.raises(ToolError) as e:
        invoke("file_read", {"path": "x.txt"}, trust="guest")  # owner-only
    assert e.value.code == "policy_denied"


def test_narrowing_only_narrows(world, invoke) -> None:
    (world.project / "a.txt").write_text("x")
    with pytest.raises(ToolError):
        invoke("file_read", {"path": "a.txt"}, allowed_tools=frozenset({"glob_search"}))
    with pytest.raises(ToolError):
        invoke("file_write", {"path": "a.txt", "content": "z"}, policy_ceiling=frozenset({"read_only"}))
    ctx = world.context(allowed_tools=frozenset({"file_read"}))
    child = ctx.derive(allowed_tools=frozenset({"file_read", "file_write"}), trust="operator")
    assert child.allowed_tools == frozenset({"file_read"})
    guest_child = world.context(trust="guest").derive(trust="operator")
    assert guest_child.trust == "guest"


def test_policy_is_checked_before_arguments(world, invoke) -> None:
    with pytest.raises(ToolError) as e:
        invoke("file_write", {"bogus": 1}, trust="guest")
    assert e.value.code == "policy_denied"


def test_tool_help_hides_what_the_caller_cannot_see(invoke) -> None:
    doc = invoke("tool_help", {"name": "file_write"})
    assert doc["markdown"].startswith("# file_write\n")
    assert "## Parameters" in doc["markdown"] and "`content` (string, required)" in doc["markdown"]
    with pytest.raises(ToolError) as hidden:
        invoke("tool_help", {"name": "file_write"}, trust="guest")
    with pytest.raises(ToolError) as missing:
        invoke("tool_help", {"name": "no_such_tool"}, trust="guest")
    assert hidden.value.message == "Unknown capability: file_write"
    assert missing.value.message == "Unknown capability: no_such_tool"
    assert hidden.value.code == missing.value.code
