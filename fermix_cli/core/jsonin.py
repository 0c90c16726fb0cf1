"""Strict JSON input: one object, no duplicate keys, no NaN or Infinity, bounded size and depth."""

from __future__ import annotations

import json
from typing import Any

from .errors import ToolError

MAX_INPUT_BYTES = 16 * 1024 * 1024


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ToolError("invalid_json", f"duplicate key {key!r} in the JSON input", {"key": key})
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ToolError(
        "invalid_json", f"{name} is not valid JSON; send a finite number or a string", {"value": name}
    )


def parse_json(text: str | bytes) -> Any:
    """Any strict JSON value (the CLI also uses this for flag values)."""
    if len(text) > MAX_INPUT_BYTES:
        raise ToolError(
            "invalid_json",
            f"the JSON input is {len(text)} bytes; the limit is {MAX_INPUT_BYTES}",
            {"limit": MAX_INPUT_BYTES},
        )
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except json.JSONDecodeError as e:
        raise ToolError(
            "invalid_json",
            f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}",
            {"position": e.pos},
        ) from None
    except UnicodeDecodeError:
        raise ToolError("invalid_json", "the JSON input is not valid UTF-8", {}) from None
    except RecursionError:
        raise ToolError("invalid_json", "the JSON input is nested too deeply", {}) from None
    except ValueError as e:  # e.g. an integer with more digits than Python will convert
        raise ToolError("invalid_json", f"the JSON input has an unusable value: {e}", {}) from None


def parse_object(text: str | bytes) -> dict[str, Any]:
    """The input of one tool call: a JSON object."""
    value = parse_json(text)
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else type(value).__name__
        raise ToolError("invalid_json", f"tool input must be a JSON object, got {kind}", {})
    return value
