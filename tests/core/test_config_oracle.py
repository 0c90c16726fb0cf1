"""Every config section against its pydantic twin: the same schema, the same verdicts.

config.toml is validated by fermix's own `Params`, like tool input; pydantic stays the oracle. For
each section class reachable from the root `Config`, hypothesis draws TOML-like tables from the
section's own schema mixed with hostile values, and fermix and pydantic must accept the same
tables with the same values, or refuse them with the same errors.
"""

from __future__ import annotations

import json
import typing
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fermix_cli.core.config import root_class
from fermix_cli.core.params import Params
from tests.core.pydantic_twin import outcome, twin
from tests.core.schema_inputs import objects


def _sections(cls: type[Params], found: dict[str, type[Params]]) -> dict[str, type[Params]]:
    """`cls` and every section class its fields hold (directly, in a dict or as `X | None`)."""
    found[cls.__name__] = cls
    for hint in typing.get_type_hints(cls).values():
        for tp in (hint, *get_args(hint), *(a for x in get_args(hint) for a in get_args(x))):
            if isinstance(tp, type) and issubclass(tp, Params) and tp.__name__ not in found:
                _sections(tp, found)
    return found


SECTIONS = _sections(root_class(), {})


def test_every_section_is_found() -> None:
    assert {"Config", "SandboxEnv", "EnvVarSource", "McpServerConfig", "ProviderConfig", "JobsConfig"} <= set(
        SECTIONS
    )


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_schema_is_pydantics(name: str) -> None:
    cls = SECTIONS[name]
    expected = twin(cls).model_json_schema()
    ours = cls.model_json_schema()

    def untitled(value: Any) -> Any:  # fermix leaves titles out (clean_schema drops them anyway)
        if isinstance(value, dict):
            return {k: untitled(v) for k, v in value.items() if k != "title" or not isinstance(v, str)}
        if isinstance(value, list):
            return [untitled(v) for v in value]
        return value

    assert ours == untitled(expected)
    assert json.dumps(ours) == json.dumps(untitled(expected))


@pytest.mark.parametrize("name", sorted(SECTIONS))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(data=st.data())
def test_verdicts_are_pydantics(name: str, data: st.DataObject) -> None:
    cls = SECTIONS[name]
    table = data.draw(objects(cls.model_json_schema()), label="table")
    assert outcome(cls, table) == outcome(twin(cls), table)


@pytest.mark.parametrize(
    "table",
    [
        {"source": "command"},
        {"source": "command", "command": "pass", "name": "X"},
        {"source": "env", "args": ["a"]},
        {"source": "command", "command": "pass", "args": ["show", "x"], "timeout_ms": 10},
    ],
)
def test_after_validators_agree(table: dict[str, Any]) -> None:
    cls = SECTIONS["EnvVarSource"]
    assert outcome(cls, table) == outcome(twin(cls), table)


@pytest.mark.parametrize(
    "table",
    [
        {"servers": {"ok": {"command": "x"}, "Bad": {"command": "x"}}},
        {"servers": {"a\n": {"url": "https://x/"}}},
        {"servers": {"x": {"url": "https://x/", "args": ["a"]}}},
        {"servers": {"x": {"command": "c", "headers": {"a": "b"}}}},
        {"servers": {"x": {}}},
    ],
)
def test_mcp_servers_agree(table: dict[str, Any]) -> None:
    cls = SECTIONS["McpConfig"]
    assert outcome(cls, table) == outcome(twin(cls), table)
