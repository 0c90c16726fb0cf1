"""Reading a finished run's output: the vendor's JSON event stream, harvested into result, usage, session.

Codex (`codex exec --json`) writes one JSON event per line: `thread.started` (the `thread_id` a later
`resume` names), `item.completed` whose `item` is an `agent_message` with its `text`, `turn.completed`
with `usage` (`input_tokens`, `cached_input_tokens`, `output_tokens`), `turn.failed` / `error` with a
message. Claude Code (`claude -p --output-format stream-json --verbose`) writes `system`/`assistant`/
`user` events and ends with one `result` event: `subtype`, `is_error`, `result`, `session_id`, `usage`,
`total_cost_usd`, `num_turns`. Lines that are not JSON objects are skipped, never fatal.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..core.records import Record, field

RESULT_TAIL_BYTES = 4096
DIAGNOSTICS_TAIL_BYTES = 2048
READ_TAIL_BYTES = 4 * 1024 * 1024  # the last part of a huge stream is where the outcome is


class Harvest(Record):
    text: str = ""
    error: str | None = None
    session: str | None = None
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def tail_bytes(text: str, limit: int) -> str:
    """The last `limit` bytes of `text` (UTF-8), cut on a character boundary."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return data[-limit:].decode("utf-8", "ignore")


def read_tail(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - limit))
            return f.read()
    except OSError:
        return b""


def _events(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for line in raw.splitlines():
        line = line.strip()
        if not line.startswith(b"{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def _codex(events: list[dict[str, Any]]) -> Harvest:
    h = Harvest()
    messages: list[str] = []
    for ev in events:
        kind = ev.get("type")
        if kind == "thread.started" and isinstance(ev.get("thread_id"), str):
            h.session = ev["thread_id"]
        elif kind == "item.completed" and isinstance(ev.get("item"), dict):
            item = ev["item"]
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                messages.append(item["text"])
        elif kind == "turn.completed" and isinstance(ev.get("usage"), dict):
            usage = {k: v for k, v in ev["usage"].items() if isinstance(v, int)}
            if h.usage is None:
                h.usage = usage
            else:
                for k, v in usage.items():
                    h.usage[k] = h.usage.get(k, 0) + v
        elif kind in ("turn.failed", "error"):
            err = ev.get("error") if kind == "turn.failed" else ev
            msg = err.get("message") if isinstance(err, dict) else None
            h.error = msg if isinstance(msg, str) else json.dumps(ev)[:500]
    h.text = messages[-1] if messages else ""
    return h


def _claude(events: list[dict[str, Any]]) -> Harvest:
    h = Harvest()
    for ev in events:
        if isinstance(ev.get("session_id"), str):
            h.session = ev["session_id"]
        if ev.get("type") != "result":
            continue
        result = ev.get("result")
        if ev.get("is_error") or ev.get("subtype") not in (None, "success"):
            h.error = result if isinstance(result, str) and result else str(ev.get("subtype") or "error")
        elif isinstance(result, str):
            h.text = result
        if isinstance(ev.get("usage"), dict):
            h.usage = {k: v for k, v in ev["usage"].items() if isinstance(v, int)}
        for key in ("total_cost_usd", "num_turns", "duration_ms"):
            if isinstance(ev.get(key), int | float) and not isinstance(ev.get(key), bool):
                h.extra[key] = ev[key]
    if h.usage is not None:
        h.usage.update(h.extra)
    return h


def harvest(vendor: str, run_dir: str) -> Harvest:
    """What the run's stdout says: its deliverable or error text, its vendor session, its usage."""
    events = _events(read_tail(os.path.join(run_dir, "stdout.log"), READ_TAIL_BYTES))
    h = _codex(events) if vendor == "codex" else _claude(events)
    if vendor == "codex" and not h.text:
        try:
            with open(os.path.join(run_dir, "last_message.txt"), encoding="utf-8", errors="replace") as f:
                h.text = f.read()
        except OSError:
            pass
    return h


def diagnostics(run_dir: str) -> str:
    raw = read_tail(os.path.join(run_dir, "stderr.log"), DIAGNOSTICS_TAIL_BYTES * 2)
    return tail_bytes(raw.decode("utf-8", "replace"), DIAGNOSTICS_TAIL_BYTES)
