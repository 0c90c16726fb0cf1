"""Every registered tool's Params against its pydantic twin: the same schema, the same verdicts.

For each tool, hypothesis draws JSON-like inputs from the tool's own schema mixed with hostile
values (wrong types, bools for ints, floats for ints, huge numbers, strings one past the limit,
lone surrogates, nulls, unknown keys, nested garbage); fermix's validator and pydantic must accept
the same inputs with the same values (types included), or refuse them with the same errors and
the same `invalid_input` envelope.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fermix_cli.core.registry import clean_schema, default_registry, publish_nulls
from tests.core.pydantic_twin import outcome, twin
from tests.core.schema_inputs import objects

SPECS = {s.name: s for s in default_registry().all()}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_schema_is_pydantics(name: str) -> None:
    spec = SPECS[name]
    if spec.kind != "builtin":
        pytest.skip("not a built-in tool")
    nullable = getattr(spec.params, "null_means_absent", frozenset())
    expected = publish_nulls(clean_schema(twin(spec.params).model_json_schema()), nullable)
    assert spec.input_schema() == expected
    assert json.dumps(spec.input_schema()) == json.dumps(expected)  # key order too: --schema prints it


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(data=st.data())
def test_verdicts_are_pydantics(name: str, data: st.DataObject) -> None:
    spec = SPECS[name]
    args = data.draw(objects(spec.input_schema()), label="args")
    assert outcome(spec.params, args) == outcome(twin(spec.params), args)
