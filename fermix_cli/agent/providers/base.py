"""The one interface every provider implements: a request in, a stream of events out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..messages import ModelRequest, StreamEvent


class Provider(Protocol):
    """Messages and tool schemas in; text deltas, complete tool calls, usage and a finish reason out.

    Failures are `ToolError`s with stable codes: `auth_failed`, `rate_limited`, `provider_error`,
    `network`, `timeout`, `blocked_url`, ... A provider never retries once it has streamed anything.
    """

    name: str

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]: ...

    def close(self) -> None: ...


def word_count(text: str) -> int:
    """The offline providers' stand-in for a token count."""
    return len(text.split())


def chunk_text(text: str, size: int = 16) -> list[str]:
    """Split text into stream-sized pieces, keeping every character."""
    return [text[i : i + size] for i in range(0, len(text), size)] or []
