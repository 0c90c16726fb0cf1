"""The interface every delivery channel implements: send text, send a file, say what it can do."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

from ..core.records import Record, field

Capability = Literal["text", "file"]


class ChannelError(Exception):
    """A channel could not deliver; the message says why (the caller records it, never drops it).

    `code` is a stable tag for the failure. `retry_after` (seconds) carries the platform's own rate-limit
    hint (Telegram's `parameters.retry_after`, an HTTP `Retry-After`) so a retrying caller waits at least
    that long. `permanent` says another attempt cannot succeed (a bad token, a chat that does not exist,
    a target this channel cannot reach): callers stop retrying and make the failure visible.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "delivery_failed",
        retry_after: float | None = None,
        permanent: bool = False,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after
        self.permanent = permanent


class Sent(Record, frozen=True):
    """Where a delivery landed: the platform, the address and any channel-specific details."""

    platform: str
    address: str
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"platform": self.platform, "address": self.address, **self.detail}


class Channel(Protocol):
    platform: str
    capabilities: frozenset[Capability]
    # The longest text (in characters) that arrives as one message, uncut: a caller that must send one
    # message (a reminder) keeps its text under the smallest of these.
    max_text: int

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        """Deliver `text` (with `meta`, e.g. what it is about) to `address`; raises ChannelError."""
        ...

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        """Deliver the file at `path` with a caption; raises ChannelError (also when not capable).

        `meta["kind"]` (image, document, audio, video, voice) and `meta["mime_type"]`, when given, say how
        the file is shown where the channel can tell them apart (Telegram: a photo, a voice note ...).
        """
        ...
