"""The terminal's reply port: `fermix agent` and `fermix ask` have no chat to send files to, so a file the
model sends is copied into the outbox folder (`<data dir>/outbox/`) and its path is printed.

Copies never overwrite: a name already taken gets `-2`, `-3`, ... before its extension. Reactions are
not offered in the terminal.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.errors import ToolError
from ..core.paths import FermixPaths

MAX_TRIES = 10_000


def outbox_dir(paths: FermixPaths) -> Path:
    return paths.data_dir / "outbox"


def write_new_file(folder: Path, name: str, data: bytes) -> Path:
    """Write `data` to a file called `name` in `folder` (or `name-N`), never replacing one; its path."""
    stem, ext = posixpath.splitext(name)
    if not stem:  # ".bashrc": the whole name is the stem
        stem, ext = name, ""
    for n in range(1, MAX_TRIES + 1):
        candidate = folder / (name if n == 1 else f"{stem}-{n}{ext}")
        try:
            fd = os.open(
                candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            candidate.unlink(missing_ok=True)
            raise
        return candidate
    raise ToolError(
        "outbox_full", f"{folder} already holds {MAX_TRIES} files named like {name}.", {"name": name}
    )


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
