"""Server-sent events: lines in, (event, data) out. Pure; shared by the OpenAI and Anthropic providers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...core.records import Record

# The event an `error:` field becomes: llama.cpp's server reports a failure mid-stream as a field of its
# own (`error: {"code":...,"message":...}`), not as `data:`, then ends the stream with `data: [DONE]`.
ERROR_FIELD = "error"


class SSEEvent(Record, frozen=True):
    event: str
    data: str


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Parse an event stream: `data:` lines join with newlines, a blank line dispatches, `:` is a comment.

    `error:` lines (llama.cpp's server) are dispatched as an event named `error` carrying their value.
    """
    event = ""
    data: list[str] = []
    error: list[str] = []
    for line in lines:
        if not line:
            yield from _dispatch(event, data, error)
            event, data, error = "", [], []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
        elif field == ERROR_FIELD:
            error.append(value)
    yield from _dispatch(event, data, error)


def _dispatch(event: str, data: list[str], error: list[str]) -> Iterator[SSEEvent]:
    if data:
        yield SSEEvent(event or "message", "\n".join(data))
    if error:
        yield SSEEvent(ERROR_FIELD, "\n".join(error))
