"""A 127.0.0.1 stand-in for the ChatGPT/Codex backend and OpenAI's token endpoint, as the Codex CLI uses them.

Its shapes follow the public openai/codex sources named in fermix_cli/tools/media/codexbackend.py: the
login file (`AuthDotJson`), the refresh request and its rotating refresh tokens, the headers the backend
needs (`Authorization`, `ChatGPT-Account-ID`, `Accept: text/event-stream`), the request body of a
Responses stream, and the server-sent events that carry an `image_generation_call`.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.tools.webfakes import FakeWeb, Hit, Reply, json_reply

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
RESPONSES = "/codex/responses"
TOKEN = "/oauth/token"
AUTH_CLAIM = "https://api.openai.com/auth"


def jwt(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def sse(events: list[dict[str, Any]]) -> Reply:
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    return Reply(200, body, {"Content-Type": "text/event-stream"})


def image_events(b64: str, revised: str = "a blue square") -> list[dict[str, Any]]:
    """What the backend streams for a forced image_generation call (no partial images requested)."""
    pending = {"type": "image_generation_call", "id": "ig_1", "status": "in_progress"}
    done = {**pending, "status": "completed", "revised_prompt": revised, "result": b64}
    return [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {"id": "resp_1", "status": "in_progress"},
        },
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": pending},
        {"type": "response.image_generation_call.in_progress", "output_index": 0, "item_id": "ig_1"},
        {"type": "response.image_generation_call.generating", "output_index": 0, "item_id": "ig_1"},
        {"type": "response.image_generation_call.completed", "output_index": 0, "item_id": "ig_1"},
        {"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": None}},
    ]


class CodexBackend:
    """The backend (`/codex/responses`) and the token endpoint (`/oauth/token`) on one FakeWeb."""

    def __init__(self, web: FakeWeb, now: datetime, b64: str, *, account: str = "acct-1") -> None:
        self.web = web
        self.now = now
        self.account = account
        self.generation = 0
        self.access = self._access(3600)
        self.refresh_token = "rt-0"
        self.used: set[str] = set()
        self.revoked = False
        self.events = image_events(b64)
        self.answer: Reply | None = None  # a canned failure instead of the image
        self.forced_tool_choice_ok = True  # False: answer 400 to anything but tool_choice "auto"
        web.routes[RESPONSES] = self.responses
        web.routes[TOKEN] = self.token

    def _access(self, lifetime: int) -> str:
        self.generation += 1
        claims = {"exp": int(self.now.timestamp()) + lifetime, "n": self.generation}
        return jwt({**claims, AUTH_CLAIM: {"chatgpt_account_id": self.account}})

    def id_token(self) -> str:
        return jwt({"email": "owner@example.com", AUTH_CLAIM: {"chatgpt_account_id": self.account}})

    def expire_access(self) -> None:
        """The access token in the login file is past its `exp` (the server agrees)."""
        self.access = self._access(-60)

    def write_login(self, path: Path, *, account_in_tokens: bool = True) -> None:
        tokens: dict[str, Any] = {
            "id_token": self.id_token(),
            "access_token": self.access,
            "refresh_token": self.refresh_token,
        }
        if account_in_tokens:
            tokens["account_id"] = self.account
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"OPENAI_API_KEY": None, "tokens": tokens, "last_refresh": "2026-02-28T12:00:00.000000Z"}
        path.write_text(json.dumps(data, indent=2))
        path.chmod(0o600)

    def responses(self, hit: Hit) -> Reply:
        if hit.method != "POST":
            return Reply(405, b"")
        expired = int(json.loads(base64.urlsafe_b64decode(self.access.split(".")[1] + "==")).get("exp", 0))
        if hit.headers.get("authorization") != f"Bearer {self.access}" or expired <= self.now.timestamp():
            return json_reply({"error": {"message": "Your authentication token has expired."}}, 401)
        if hit.headers.get("chatgpt-account-id") != self.account:
            return json_reply({"detail": "account mismatch"}, 403)
        if "text/event-stream" not in hit.headers.get("accept", ""):
            return json_reply({"detail": "Accept text/event-stream"}, 400)
        body = hit.json()
        problems = [
            name
            for name, ok in (
                ("model", isinstance(body.get("model"), str)),
                ("instructions", isinstance(body.get("instructions"), str)),
                ("input", isinstance(body.get("input"), list) and bool(body["input"])),
                ("stream", body.get("stream") is True),
                ("store", body.get("store") is False),
                ("tools", any(t.get("type") == "image_generation" for t in body.get("tools") or [])),
            )
            if not ok
        ]
        if problems:
            return json_reply({"detail": f"Unsupported parameter(s): {', '.join(problems)}"}, 400)
        if not self.forced_tool_choice_ok and body.get("tool_choice") != "auto":
            message = "Unsupported value: 'tool_choice' only supports 'auto' here."
            return json_reply({"error": {"message": message, "type": "invalid_request_error"}}, 400)
        return self.answer or sse(self.events)

    def token(self, hit: Hit) -> Reply:
        body = hit.json()
        if body.get("client_id") != CLIENT_ID or body.get("grant_type") != "refresh_token":
            return json_reply({"error": "invalid_request"}, 400)
        given = body.get("refresh_token")
        if given in self.used:
            return json_reply({"error": {"code": "refresh_token_reused", "message": "already used"}}, 401)
        if self.revoked or given != self.refresh_token:
            return json_reply({"error": {"code": "refresh_token_invalidated", "message": "revoked"}}, 401)
        self.used.add(given)
        self.refresh_token = f"rt-{len(self.used)}"
        self.access = self._access(3600)
        return json_reply(
            {"id_token": self.id_token(), "access_token": self.access, "refresh_token": self.refresh_token}
        )
