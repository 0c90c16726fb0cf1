"""Strict JSON input: one object, no duplicate keys, no NaN or Infinity, bounded size and depth."""

from __future__ import annotations

import json
import math
from typing import Any, BinaryIO

from .errors import ToolError

MAX_INPUT_BYTES = 16 * 1024 * 1024


def too_large(size: int | None = None) -> ToolError:
    """The input-limit refusal; `size` None when reading stopped at the limit."""
    measured = f"{size} bytes" if size is not None else f"more than {MAX_INPUT_BYTES} bytes (reading stopped)"
    return ToolError(
        "invalid_json",
        f"the JSON input is {measured}; the limit is {MAX_INPUT_BYTES}",
        {"limit": MAX_INPUT_BYTES},
    )


def read_bounded(stream: BinaryIO) -> bytes:
    """All of `stream` up to the input limit; reading stops one byte past it (so /dev/zero ends)."""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_INPUT_BYTES:
        chunk = stream.read(MAX_INPUT_BYTES + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > MAX_INPUT_BYTES:
        raise too_large()
    return b"".join(chunks)


# How far past the input limit a refused line is read in search of its end (so the next line can be
# read); a line longer still (endless input, such as /dev/zero) ends the reading.
MAX_SKIPPED_LINE = 1024**3


def read_bounded_line(stream: BinaryIO) -> bytes:
    """One line of `stream` (b"" at the end).

    A line past the input limit is refused (`invalid_json`): the rest of it is read and dropped, in
    bounded pieces, so the next call starts at the next line (details `"line_skipped": true`). One
    with no end within MAX_SKIPPED_LINE bytes is refused with `"line_skipped": false`: nothing after
    it can be found.
    """
    # The limit is on the line's text: its end (LF or CRLF) may come on top.
    line = stream.readline(MAX_INPUT_BYTES + 2)
    if len(line.removesuffix(b"\n").removesuffix(b"\r")) > MAX_INPUT_BYTES:
        skipped = line.endswith(b"\n") or _skip_rest_of_line(stream)
        what = f"this line is more than {MAX_INPUT_BYTES} bytes; the limit is {MAX_INPUT_BYTES}."
        if skipped:
            message = f"{what} It was skipped; the next line is read as usual"
        else:
            message = (
                f"{what} It has no end within {MAX_SKIPPED_LINE} more bytes, so reading stopped there: "
                "no later line was read"
            )
        raise ToolError("invalid_json", message, {"limit": MAX_INPUT_BYTES, "line_skipped": skipped})
    return line


def _skip_rest_of_line(stream: BinaryIO, piece: int = 1 << 20) -> bool:
    """Read up to the next newline (or the end); False when none came within MAX_SKIPPED_LINE bytes."""
    read = 0
    while read < MAX_SKIPPED_LINE:
        chunk = stream.readline(piece)
        if not chunk or chunk.endswith(b"\n"):
            return True
        read += len(chunk)
    return False


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


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent; one too large for a float (`1e400`) would become
    infinity, which JSON cannot carry back out, so it is refused like `Infinity`."""
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ToolError(
            "invalid_json",
            f"the number {shown} is too large to represent; send a finite number (at most about 1.8e308)",
            {"value": shown},
        )
    return value


def parse_json(text: str | bytes) -> Any:
    """Any strict JSON value (the CLI also uses this for flag values)."""
    if len(text) > MAX_INPUT_BYTES:
        raise too_large(len(text))
    try:
        return json.loads(
            text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants, parse_float=_finite
        )
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


def json_text(value: Any, *, indent: int | None = None, separators: tuple[str, str] | None = None) -> str:
    """`value` as JSON text for output: UTF-8 as it is, unless some string holds a lone surrogate (a
    model's `\\ud800` escape, kept as it sent it), which UTF-8 cannot carry: then every non-ASCII
    character is escaped (`\\uXXXX`), which is still the same JSON.

    Always valid JSON: a float that is NaN or infinite (which JSON has no spelling for) is written as
    the string "NaN", "Infinity" or "-Infinity".
    """
    try:
        text = json.dumps(value, ensure_ascii=False, indent=indent, separators=separators, allow_nan=False)
    except ValueError as e:
        if "Out of range float" not in str(e):
            raise
        value = finite_only(value)
        text = json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(value, ensure_ascii=True, indent=indent, separators=separators)
    return text


def finite_only(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by its name as a string (lists, tuples and
    dicts walked; anything else kept as it is)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_only(v) for v in value]
    return value
