"""Schema profiles: the shape of tool schemas a provider can take, applied when tools go on the wire.

`full` sends fermix's schemas as they are (OpenAI, Anthropic). `grammar` is for servers that compile
the schema into a sampling grammar (llama.cpp and the servers built on it, Ollama, LM Studio, vLLM's
guided decoding): lengths and counts are bounded to GRAMMAR_MAX_REPEAT, and keywords such grammars do
not support are left out. Only what the model is shown changes; a call coming back is validated against
the tool's own `Params`, so a value the original schema refuses is still refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from . import ProviderChoice

SchemaProfile = Literal["full", "grammar"]
PROFILES: tuple[SchemaProfile, ...] = ("full", "grammar")

# llama.cpp expands `maxLength: N` into N nested optional rules; above ~2000 it cannot build the grammar.
GRAMMAR_MAX_REPEAT = 1000
BOUNDED = ("maxLength", "maxItems", "maxProperties")
LOWER = ("minLength", "minItems", "minProperties")
# Keywords json-schema-to-grammar converters do not handle (or handle only in some versions).
UNSUPPORTED = frozenset(
    {
        "pattern",
        "format",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "propertyNames",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "unevaluatedItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    }
)
SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def profile_for(choice: ProviderChoice) -> SchemaProfile:
    """The configured profile, else `grammar` for an OpenAI-compatible server that is not OpenAI's own."""
    if choice.settings.schema_profile is not None:
        return choice.settings.schema_profile
    return "grammar" if choice.kind == "openai" and not choice.is_official else "full"


def apply_profile(schema: dict[str, Any], profile: SchemaProfile) -> dict[str, Any]:
    """The schema as `profile` allows it (a new dict; `schema` is left as it is)."""
    return schema if profile == "full" else _grammar(schema)


def _grammar(node: Any) -> Any:
    if isinstance(node, list):
        return [_grammar(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in UNSUPPORTED:
            continue
        if key in SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _grammar(sub) for name, sub in value.items()}
        elif (key in SUBSCHEMA_LISTS and isinstance(value, list)) or key in ("items", "additionalProperties"):
            out[key] = _grammar(value)
        elif key in (*BOUNDED, *LOWER) and isinstance(value, int) and not isinstance(value, bool):
            out[key] = min(value, GRAMMAR_MAX_REPEAT)
        else:
            out[key] = value
    return out
