"""Best-effort JSONL traces under traces/YYYY-MM-DD/<type>.jsonl; a trace write never fails a call."""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

from .paths import FermixPaths

MASK = "[REDACTED]"
# Fields of a trace record that copy text a person or a model wrote, and their length caps: a command,
# an error summary. Secrets in them are masked before they reach the disk.
TEXT_CAPS = {"command": 300, "error": 500}
# A secret's name followed by `:` or `=` (`token=...`, `--api-key=...`, `"password": "..."`,
# `Authorization: Bearer ...`): the value goes, with an auth scheme before it; the name stays.
_NAMED_SECRET = re.compile(
    r"""((?:api[_-]?key|token|password|passwd|secret|authorization)["']?\s*[:=]\s*)"""
    r"""(?:(?:bearer|basic|digest|token)\s+)?(?:"[^"]*"?|'[^']*'?|[^\s"'&;|,)}\]]+)""",
    re.IGNORECASE,
)
# A bearer token wherever it stands (`-H "Bearer ..."` with the header name elsewhere).
_BEARER = re.compile(r"\b(bearer\s+)[A-Za-z0-9._~+/=-]+", re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """`text` with the values of named secrets and bearer tokens replaced by `[REDACTED]`."""
    return _BEARER.sub(lambda m: m.group(1) + MASK, _NAMED_SECRET.sub(lambda m: m.group(1) + MASK, text))


def append_trace(paths: FermixPaths, kind: str, record: dict[str, Any]) -> None:
    """Append one record to today's trace file of `kind`; its `command` and `error` texts are masked
    (`mask_secrets`) and cut to 300 and 500 characters."""
    try:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        paths.ensure_dir(paths.data_dir)
        folder = paths.ensure_dir(paths.traces / day)
        record = {
            key: mask_secrets(value)[: TEXT_CAPS[key]]
            if key in TEXT_CAPS and isinstance(value, str)
            else value
            for key, value in record.items()
        }
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
