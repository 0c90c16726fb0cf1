"""The Messages API's extended-thinking rules, as the test model server enforces them.

The server signs every thinking block it sends (`signature`, an HMAC of the text under a key only it
holds) and encrypts every redacted one (`data`), and remembers which reply carried which blocks. A later
request is refused with HTTP 400 and the API's own error message, as api.anthropic.com refuses it, when:

- a thinking or redacted_thinking block is not byte for byte one the server sent (a changed text or
  signature, an added key: "Invalid `signature` in `thinking` block");
- an assistant message holds thinking blocks but does not open with one;
- a reply's blocks come back incomplete or reordered (a redacted block filtered out);
- thinking is enabled and the request continues a turn (its last message answers tool calls) whose
  first assistant message does not open with a thinking block ("Expected `thinking` or
  `redacted_thinking`, but found `tool_use` ...");
- thinking is enabled with a `tool_choice` that forces a tool, or a budget under 1024 or not below
  `max_tokens`.

A user message that answers tool calls continues the turn even when it carries text as well: the stricter
reading of the API's "final assistant message ... preceding the lastmost set of tool_use and tool_result
blocks", so what this server takes the real API takes too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from typing import Any

THINKING_TYPES = ("thinking", "redacted_thinking")
DOCS = (
    "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


def thinking_enabled(body: dict[str, Any]) -> bool:
    config = body.get("thinking")
    return isinstance(config, dict) and config.get("type") in ("enabled", "adaptive")


def _key(block: dict[str, Any]) -> str:
    return json.dumps(block, sort_keys=True, ensure_ascii=False)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _answers_calls(message: dict[str, Any]) -> bool:
    return any(b.get("type") == "tool_result" for b in _blocks(message))


class ThinkingLedger:
    def __init__(self) -> None:
        self._secret = os.urandom(16)
        self.sent: dict[str, int] = {}  # block key -> the reply that carried it
        self.replies: list[list[str]] = []  # per reply, its blocks' keys in order

    def issue(self, spec: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """Thinking blocks for one reply: ("thinking", text) signed, ("redacted_thinking", secret) sealed."""
        reply = len(self.replies)
        blocks: list[dict[str, Any]] = []
        for n, (kind, value) in enumerate(spec):
            mac = hmac.new(self._secret, f"{reply}:{n}:{kind}:{value}".encode(), hashlib.sha256).digest()
            sealed = base64.b64encode(mac).decode()
            if kind == "thinking":
                blocks.append({"type": "thinking", "thinking": value, "signature": "Eq" + sealed})
            else:  # the secret never leaves the server: the data is opaque
                blocks.append({"type": "redacted_thinking", "data": "Em" + sealed})
        keys = [_key(b) for b in blocks]
        self.replies.append(keys)
        self.sent.update(dict.fromkeys(keys, reply))
        return blocks

    def check(self, body: dict[str, Any]) -> str | None:
        """The API's refusal of this request, or None when it would take it."""
        enabled = thinking_enabled(body)
        if enabled and body["thinking"].get("type") == "enabled":
            budget = body["thinking"].get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            if budget >= int(body.get("max_tokens") or 0):
                return f"`max_tokens` must be greater than `thinking.budget_tokens`. {DOCS}"
            if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
                return "Thinking may not be enabled when tool_choice forces tool use."
        messages = body.get("messages") or []
        for i, m in enumerate(messages):
            problem = self._check_message(i, m)
            if problem is not None:
                return problem
        return self._check_turn(messages) if enabled else None

    def _check_message(self, i: int, m: dict[str, Any]) -> str | None:
        blocks = _blocks(m)
        kinds = [b.get("type") for b in blocks]
        if not any(k in THINKING_TYPES for k in kinds):
            return None
        if m.get("role") != "assistant":
            return f"messages.{i}: thinking blocks may only appear in assistant messages"
        if kinds[0] not in THINKING_TYPES:
            return (
                f"messages.{i}.content.0: If an assistant message contains any thinking blocks, the first "
                f"block must be thinking or redacted_thinking. Found {kinds[0]}."
            )
        back: dict[int, list[str]] = {}
        for j, b in enumerate(blocks):
            if b.get("type") not in THINKING_TYPES:
                continue
            key = _key(b)
            if key not in self.sent:
                field = "signature" if b.get("type") == "thinking" else "data"
                return f"messages.{i}.content.{j}: Invalid `{field}` in `{b.get('type')}` block"
            back.setdefault(self.sent[key], []).append(key)
        for reply, keys in back.items():
            if keys != self.replies[reply]:
                return (
                    f"messages.{i}.content: the thinking blocks of a reply must be passed back complete and "
                    "unmodified, in the order the model produced them"
                )
        return None

    @staticmethod
    def _check_turn(messages: list[dict[str, Any]]) -> str | None:
        if not messages or messages[-1].get("role") != "user" or not _answers_calls(messages[-1]):
            return None
        start = 0
        for i, m in enumerate(messages):
            if m.get("role") == "user" and not _answers_calls(m):
                start = i + 1
        for i in range(start, len(messages)):
            if messages[i].get("role") != "assistant":
                continue
            blocks = _blocks(messages[i])
            first = blocks[0].get("type") if blocks else "nothing"
            if first in THINKING_TYPES:
                return None
            return (
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
                f"include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. {DOCS}"
            )
        return None
