"""The fermix log file: opened only when something is actually logged."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from .paths import make_private_dirs


class LazyFileHandler(logging.Handler):
    """Appends to `path`, creating it (0600, directory 0700) on the first record."""

    def __init__(self, path: Path, level: int = logging.WARNING) -> None:
        super().__init__(level)
        self.path = path
        self._stream: logging.StreamHandler | None = None  # type: ignore[type-arg]
        self.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s pid=%(process)d: %(message)s")
        )

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._stream is None:
                make_private_dirs(self.path.parent)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
                self._stream = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
                self._stream.setFormatter(self.formatter)
            self._stream.emit(record)
        except Exception:
            self.handleError(record)


def setup_logging(log_file: Path) -> None:
    """Send fermix's warnings and errors (with tracebacks) to the log file, never to the user."""
    root = logging.getLogger("fermix")
    if any(isinstance(h, LazyFileHandler) for h in root.handlers):
        return
    root.addHandler(LazyFileHandler(log_file))
    root.setLevel(logging.INFO if os.environ.get("FERMIX_DEBUG") else logging.WARNING)
    root.propagate = False
