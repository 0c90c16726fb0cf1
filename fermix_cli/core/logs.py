"""The fermix log file. `logging` is imported only when a logger is asked for, and the file is
opened only when something is actually logged: a tool call that logs nothing pays for neither.

Every fermix module gets its logger from `logger(name)`, never from `logging.getLogger`, so the
file handler is in place whichever comes first, the module or `setup_logging`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

from .paths import make_private_dirs

if TYPE_CHECKING:
    import logging
    from pathlib import Path

_log_file: Path | None = None


def setup_logging(log_file: Path) -> None:
    """Send fermix's warnings and errors (with tracebacks) to the log file, never to the user."""
    global _log_file
    _log_file = log_file
    if "logging" in sys.modules:
        _install()


def logger(name: str) -> logging.Logger:
    """The logger `name` (under "fermix"), with the log file attached once it is configured."""
    import logging

    _install()
    return logging.getLogger(name)


def _install() -> None:
    if _log_file is None:
        return
    import logging

    root = logging.getLogger("fermix")
    if any(getattr(h, "fermix_log_file", False) for h in root.handlers):
        return
    root.addHandler(_file_handler(_log_file))
    root.setLevel(logging.INFO if os.environ.get("FERMIX_DEBUG") else logging.WARNING)
    root.propagate = False


def _file_handler(path: Path) -> logging.Handler:
    import logging

    class LazyFileHandler(logging.Handler):
        """Appends to `path`, creating it (0600, directory 0700) on the first record."""

        fermix_log_file = True

        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self._fd: int | None = None
            self.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s pid=%(process)d: %(message)s")
            )

        def emit(self, record: logging.LogRecord) -> None:
            # Unbuffered writes on our own descriptor: a failed write (a full disk) raises here, where
            # it is dropped, never inside a stream handler that would print it to stderr.
            try:
                if self._fd is None:
                    make_private_dirs(path.parent)
                    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                    self._fd = os.open(path, flags, 0o600)
                os.write(self._fd, (self.format(record) + "\n").encode("utf-8", "backslashreplace"))
            except Exception:
                self.handleError(record)

        def handleError(self, record: logging.LogRecord) -> None:
            # The log is the record of last resort: when it cannot be written (read-only or full
            # disk) there is nowhere left to say so, and stderr belongs to the command's own answer.
            # The record is dropped; the next one opens the file afresh.
            fd, self._fd = self._fd, None
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    return LazyFileHandler()
