"""Toolsets and their wrappers: combining, filtering, renaming and deferral, over plain specs."""

from __future__ import annotations

from typing import Any

import pytest

from fermix_cli.core.deferral import DeferredToolset
from fermix_cli.core.registry import Params, Registry, ToolSpec
from fermix_cli.core.toolsets import (
    CombinedToolset,
    FilteredToolset,
    RegistryToolset,
    RenamedToolset,
    member_of,
    only_named,
    policy_visible,
)


class P(Params):
    pass


def spec(name: str, **kw: Any) -> ToolSpec:
    category, policy_class = kw.pop("category", "test"), kw.pop("policy_class", "read_only")
    return ToolSpec(name, category, policy_class, name, P, lambda p, c: {"ran": name}, **kw)


@pytest.fixture
def parts() -> tuple[RegistryToolset, RegistryToolset]:
    first, second = Registry({}), Registry({})
    first.register(spec("bash", toolsets=frozenset({"coding"})))
    first.register(spec("shell", policy_class="exec"))
    first.register(spec("tool_call"))
    second.register(spec("shell", category="clash"))
    second.register(spec("mcp_x_add", kind="mcp", policy_class="external_api"))
    return RegistryToolset(first), RegistryToolset(second)


def names(specs: list[ToolSpec]) -> list[str]:
    return [s.name for s in specs]


def test_combined_lists_both_and_the_first_wins(world: Any, parts: Any) -> None:
    ctx = world.context()
    both = CombinedToolset(parts)
    assert names(both.tools(ctx)) == ["bash", "mcp_x_add", "shell", "tool_call"]
    assert both.get("shell", ctx).category == "test"
    assert both.get("mcp_x_add", ctx).kind == "mcp" and both.get("nope", ctx) is None


@pytest.mark.parametrize(
    ("wrap", "trust", "listed"),
    [
        (lambda t: member_of(t, "coding"), "operator", ["bash"]),
        (lambda t: only_named(t, ["shell", "nope"]), "operator", ["shell"]),
        (policy_visible, "operator", ["bash", "mcp_x_add", "shell", "tool_call"]),
        (policy_visible, "guest", ["bash", "tool_call"]),
        (lambda t: FilteredToolset(t, lambda s, c: s.kind == "mcp"), "operator", ["mcp_x_add"]),
    ],
)
def test_filters_hide_from_listing_and_lookup(
    world: Any, parts: Any, wrap: Any, trust: str, listed: list[str]
) -> None:
    ctx = world.context(trust=trust)
    both = CombinedToolset(parts)
    wrapped = wrap(both)
    assert names(wrapped.tools(ctx)) == listed
    for s in both.tools(ctx):
        assert (wrapped.get(s.name, ctx) is not None) == (s.name in listed)


def test_an_alias_shadows_and_the_listing_keeps_real_names(world: Any, parts: Any) -> None:
    ctx = world.context()
    renamed = RenamedToolset(CombinedToolset(parts), {"shell": "bash", "cmd": "bash"})
    assert renamed.get("shell", ctx).name == renamed.get("cmd", ctx).name == "bash"
    assert "cmd" not in names(renamed.tools(ctx))


def test_deferral_splits_and_routes_tool_call(world: Any, parts: Any) -> None:
    ctx = world.context()
    on, off = DeferredToolset(CombinedToolset(parts), True), DeferredToolset(CombinedToolset(parts), False)
    advertised, deferred, unlisted = on.split(ctx)
    assert (names(advertised), names(deferred), names(unlisted)) == (
        ["bash", "shell", "tool_call"],
        ["mcp_x_add"],
        [],
    )
    advertised, deferred, unlisted = off.split(ctx)  # nothing deferred: the bridges stay off the wire
    assert (names(advertised), deferred, names(unlisted)) == (
        ["bash", "mcp_x_add", "shell"],
        [],
        ["tool_call"],
    )
    wrapped = {"name": "mcp_x_add", "arguments": {"a": 1}}
    assert on.route("tool_call", wrapped, ctx) == ("mcp_x_add", {"a": 1})
    assert off.route("tool_call", wrapped, ctx) == ("tool_call", wrapped)
    assert on.route("tool_call", {"name": "tool_call"}, ctx)[0] == "tool_call"  # a bridge never targets one
    assert on.route("bash", {}, ctx) == ("bash", {})
