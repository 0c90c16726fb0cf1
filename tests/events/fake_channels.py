"""Fake channels for the delivery tests, handed to the engine through its `channels` seam."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from fermix_cli.channels import ChannelError, Sent


class FlakyChannel:
    """Fails the first `failures` sends with the platform's retry_after hint, then records each send."""

    platform = "inbox"
    capabilities = frozenset({"text"})

    def __init__(self, failures: int = 0, retry_after: float | None = None, permanent: bool = False) -> None:
        self.failures = failures
        self.retry_after = retry_after
        self.permanent = permanent
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.calls = 0

    def __call__(self, platform: str, paths: Any) -> FlakyChannel:
        return self

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        self.calls += 1
        if self.calls <= self.failures:
            raise ChannelError(
                "429 Too Many Requests",
                code="rate_limited",
                retry_after=self.retry_after,
                permanent=self.permanent,
            )
        self.sent.append((address, text, meta))
        return Sent(self.platform, address)

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        raise ChannelError("no files", permanent=True)


class HangingChannel:
    """Writes a marker file when a send starts, then hangs (the test SIGKILLs the process mid-send)."""

    platform = "inbox"
    capabilities = frozenset({"text"})

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __call__(self, platform: str, paths: Any) -> HangingChannel:
        return self

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        self.marker.write_text(meta["reminder_id"])
        time.sleep(600)
        raise AssertionError("not killed")

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        raise ChannelError("no files", permanent=True)


def hang_in_send(home: str, now: str, marker: str) -> None:
    """The body of the process the SIGKILL test kills: one engine pass whose send never returns."""
    from datetime import datetime

    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.events.delivery import deliver_due

    moment = datetime.fromisoformat(now)
    ctx = ToolContext(paths=resolve_paths(home), clock=lambda: moment)
    deliver_due(ctx, HangingChannel(Path(marker)))


if __name__ == "__main__":
    hang_in_send(*sys.argv[1:4])
