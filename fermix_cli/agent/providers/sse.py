"""Server-sent events: lines in, (event, data) out. Pure; shared by the OpenAI and Anthropic providers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...core.records import Record


class SSEEvent(Record, frozen=True):
    event: str
    data: str


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Parse an event stream: `data:` lines join with newlines, a blank line dispatches, `:` is a comment."""
    event = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield SSEEvent(event or "message", "\n".join(data))
            event, data = "", []
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
    if data:
        yield SSEEvent(event or "message", "\n".join(data))
