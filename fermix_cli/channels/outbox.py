"""The terminal's reply port: `fermix agent` and `fermix ask` have no chat to send files to, so a file the
model sends is copied into the outbox folder (`<data dir>/outbox/`) and its path is printed.

Copies never overwrite: a name already taken gets `-2`, `-3`, ... before its extension. Reactions are
not offered in the terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import ToolError
from ..core.newfile import write_new_file
from ..core.paths import FermixPaths


def outbox_dir(paths: FermixPaths) -> Path:
    return paths.data_dir / "outbox"


class OutboxPort:
    """The reply port of a terminal conversation."""

    platform = "terminal"
    reactions: frozenset[str] | None = None

    def __init__(self, paths: FermixPaths, announce: Callable[[str], None]) -> None:
        self.paths = paths
        self.announce = announce

    def send_attachment(
        self, data: bytes, *, kind: str, caption: str | None, filename: str, mime_type: str, source: str
    ) -> dict[str, Any]:
        folder = self.paths.ensure_dir(outbox_dir(self.paths))
        try:
            path = write_new_file(folder, filename, data)
        except OSError as e:
            raise ToolError(
                "delivery_failed", f"could not copy {source} to the outbox {folder}: {e.strerror or e}", {}
            ) from None
        self.announce(f"attachment: {path}" + (f" ({caption})" if caption else ""))
        return {"outbox_path": str(path)}

    def react(self, emoji: str) -> dict[str, Any]:
        raise ToolError(
            "reactions_unsupported", "the terminal has no message reactions; reply with text.", {}
        )
