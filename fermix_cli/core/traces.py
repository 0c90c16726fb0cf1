"""Best-effort JSONL traces under traces/YYYY-MM-DD/<type>.jsonl; a trace write never fails a call."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from .paths import FermixPaths


def append_trace(paths: FermixPaths, kind: str, record: dict[str, Any]) -> None:
    """Append one record to today's trace file of `kind`."""
    try:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        paths.ensure_dir(paths.data_dir)
        folder = paths.ensure_dir(paths.traces / day)
        line = json.dumps({"ts": time.time(), **record}, separators=(",", ":"), default=str) + "\n"
        fd = os.open(folder / f"{kind}.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError as e:  # traces are best-effort by design
        from .logs import logger

        logger("fermix.traces").debug("trace write failed: %s", e)


def record_sandbox_denial(paths: FermixPaths, *, tool: str, code: str, path: str) -> None:
    append_trace(
        paths,
        "sandbox_event",
        {"source": "sandbox", "decision": "deny", "tool": tool, "code": code, "path": path},
    )
