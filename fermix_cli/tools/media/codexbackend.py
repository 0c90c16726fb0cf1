"""The `openai_codex` image backend: the ChatGPT/Codex backend's Responses API with the Codex CLI's login.

Where each part of the wire format comes from (the public openai/codex repository, read 2026-12):

- The login file is `$CODEX_HOME/auth.json` (default `~/.codex/auth.json`), serde struct `AuthDotJson` in
  codex-rs/login/src/auth/storage.rs: `{"auth_mode"?, "OPENAI_API_KEY", "tokens": {"id_token",
  "access_token", "refresh_token", "account_id"}, "last_refresh"}` (`TokenData` in
  codex-rs/login/src/token_data.rs). The account id may also be read from the id token's claim
  `https://api.openai.com/auth` -> `chatgpt_account_id` (same file). The Codex CLI writes it with mode 0600.
- Refreshing (codex-rs/login/src/auth/manager.rs): `POST https://auth.openai.com/oauth/token`, JSON
  `{"client_id": "app_EMoamEEZ73f0CkXaXp7hrann", "grant_type": "refresh_token", "refresh_token"}`, answer
  `{"id_token"?, "access_token"?, "refresh_token"?}`; the new tokens are written back with `last_refresh`.
  A login is stale when the access token's JWT `exp` has passed or, without one, `last_refresh` is more
  than 8 days old; a 401 first re-reads the file (another process may have refreshed) and then refreshes
  once. `refresh_token_expired`, `refresh_token_reused` and `refresh_token_invalidated` (in `error.code`,
  `error` or `code`) are permanent. Refresh tokens rotate, which is why a refresh must be written back:
  otherwise the Codex CLI's own next refresh would present a used token.
- The request: `POST {codex_url}/responses` with `codex_url` = https://chatgpt.com/backend-api/codex (the
  ChatGPT-auth base URL in codex-rs/core/src/model_provider_info.rs); `Authorization: Bearer <access
  token>` and `ChatGPT-Account-ID` (codex-rs/codex-api/src/auth.rs); `Accept: text/event-stream`
  (codex-rs/codex-api/src/endpoint/streaming.rs); `originator` (codex-rs/login/src/auth/default_client.rs;
  the Codex CLI sends `codex_cli_rs`, fermix its own name) and `session_id`
  (codex-rs/codex-api/src/requests/headers.rs). Body fields as in codex-rs/codex-api/src/requests/responses.rs:
  `model`, `instructions`, `input`, `tools`, `tool_choice`, `parallel_tool_calls`, `store` (false),
  `stream` (true), `include`.
- The hosted tool is `{"type": "image_generation", "output_format": "png"}` (codex-rs/tools/src/tool_spec.rs);
  `model` and `size` on it, and `tool_choice: {"type": "image_generation"}` to force the call, are from
  OpenAI's public Responses API image-generation tool documentation.
- The stream (codex-rs/codex-api/src/sse/responses.rs): `response.output_item.done` carries the item, here
  `{"type": "image_generation_call", "id", "status", "revised_prompt"?, "result": <base64>}`
  (`ResponseItem::ImageGenerationCall` in codex-rs/protocol); `response.failed` carries `response.error`
  `{code, message}` with `rate_limit_exceeded` ("try again in 12s"), `insufficient_quota`,
  `usage_not_included`; `response.completed` ends it.
- An HTTP 429 body is `{"error": {"type": "usage_limit_reached", "plan_type", "resets_at": <unix s>}}` or
  type `usage_not_included` (codex-rs/codex-api/src/api_bridge.rs).
"""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from .imagebackends import (
    CLIENT_LIMITS,
    REFUSAL_MARKERS,
    Generated,
    ImageRequest,
    _data_url,
    _decode,
    http_failure,
)

if TYPE_CHECKING:
    from ...core.context import ToolContext
    from .config import GenerateImageConfig

CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
DEFAULT_AUTH_FILE = "~/.codex/auth.json"
REFRESH_INTERVAL = timedelta(days=8)
ORIGINATOR = "fermix"
AUTH_CLAIM = "https://api.openai.com/auth"
PERMANENT_REFRESH_CODES = frozenset(
    {"refresh_token_expired", "refresh_token_reused", "refresh_token_invalidated"}
)
TRY_AGAIN = re.compile(r"(?i)try again in\s*(\d+(?:\.\d+)?)\s*(s|ms|seconds?)")
INSTRUCTIONS = "Create the image the user asks for with the image_generation tool."


@dataclass(frozen=True)
class CodexLogin:
    path: str
    access_token: str
    refresh_token: str | None
    account_id: str | None
    last_refresh: datetime | None


class _Unauthorized(Exception):
    pass


class _ToolChoiceRefused(Exception):
    """The backend refused the forced tool_choice (the Codex CLI itself always sends "auto")."""


def auth_file(cfg: GenerateImageConfig, os_home: str, env: Mapping[str, str] | None = None) -> str:
    """The login file: the configured path, or `$CODEX_HOME/auth.json` when the default is left and it is set."""
    env = os.environ if env is None else env
    path = cfg.codex_auth_file
    codex_home = env.get("CODEX_HOME", "").strip()
    if path == DEFAULT_AUTH_FILE and codex_home:
        return os.path.join(os.path.expanduser(codex_home), "auth.json")
    if path.startswith("~/"):
        return os.path.join(os_home, path[2:])
    return path


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified (only its expiry and account claim are read); {} if it is not one."""
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        return {}
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        data = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return {}
    return data if isinstance(data, dict) else {}


def _missing(path: str, why: str) -> ToolError:
    return ToolError(
        "codex_login_missing",
        f"openai_codex needs a ChatGPT/Codex login, and {path} {why}. Log in with the Codex CLI "
        "(codex login), or choose another backend; fermix never falls back to one by itself.",
        {"backend": "openai_codex", "auth_file": path},
    )


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise _missing(path, "does not exist") from None
    except (OSError, ValueError):
        raise _missing(path, "cannot be read as a Codex login file") from None
    if not isinstance(data, dict):
        raise _missing(path, "cannot be read as a Codex login file")
    return data


def load_login(path: str) -> CodexLogin:
    data = _read(path)
    tokens = data.get("tokens")
    token = tokens.get("access_token") if isinstance(tokens, dict) else None
    if not isinstance(tokens, dict) or not isinstance(token, str) or not token:
        if data.get("OPENAI_API_KEY") or data.get("auth_mode") == "apikey":
            raise ToolError(
                "codex_login_missing",
                f"{path} holds an API-key login, not a ChatGPT login; image generation through openai_codex "
                'needs `codex login` with a ChatGPT account. With an API key use backend = "openai" instead.',
                {"backend": "openai_codex", "auth_file": path},
            )
        raise _missing(path, "holds no ChatGPT tokens")
    account = tokens.get("account_id")
    if not isinstance(account, str) or not account:
        id_token = tokens.get("id_token")
        claim = jwt_claims(id_token).get(AUTH_CLAIM) if isinstance(id_token, str) else None
        account = claim.get("chatgpt_account_id") if isinstance(claim, dict) else None
    refresh = tokens.get("refresh_token")
    last = None
    raw_last = data.get("last_refresh")
    if isinstance(raw_last, str):
        try:
            last = datetime.fromisoformat(raw_last.replace("Z", "+00:00"))
        except ValueError:
            last = None
    return CodexLogin(
        path,
        token,
        refresh if isinstance(refresh, str) and refresh else None,
        account if isinstance(account, str) and account else None,
        last,
    )


def is_stale(login: CodexLogin, now: datetime) -> bool:
    """As the Codex CLI decides: the access token's `exp` has passed, or without one, 8 days since a refresh."""
    exp = jwt_claims(login.access_token).get("exp")
    if isinstance(exp, int | float) and not isinstance(exp, bool):
        return exp <= now.timestamp()
    return login.last_refresh is not None and login.last_refresh < now - REFRESH_INTERVAL


def _refresh_error_code(raw: bytes) -> str:
    try:
        data = json.loads(raw[:4000])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return ""
    if not isinstance(data, dict):
        return ""
    err = data.get("error")
    if isinstance(err, dict) and isinstance(err.get("code"), str):
        return str(err["code"])
    if isinstance(err, str):
        return err
    return str(data.get("code") or "")


def _expired(path: str, why: str) -> ToolError:
    return ToolError(
        "codex_login_expired",
        f"the ChatGPT/Codex login in {path} could not be renewed ({why}); log in again with `codex login`.",
        {"backend": "openai_codex", "auth_file": path},
    )


def refresh_login(ctx: ToolContext, cfg: GenerateImageConfig, login: CodexLogin) -> CodexLogin:
    """Renew the access token with the refresh token and write the result back to the login file."""
    current = load_login(login.path)
    if current.access_token != login.access_token:  # another process (the Codex CLI) already renewed it
        return current
    if current.refresh_token is None:
        raise _expired(login.path, "it has no refresh token")
    body = {"client_id": CLIENT_ID, "grant_type": "refresh_token", "refresh_token": current.refresh_token}
    limits = {**CLIENT_LIMITS, "read_timeout": 60.0, "total_timeout": 90.0}
    with ctx.http_client(**limits) as client:
        response = client.post(cfg.codex_refresh_url, json=body, headers={"content-type": "application/json"})
    if response.status_code >= 400:
        code = _refresh_error_code(response.content)
        if response.status_code == 401 or code in PERMANENT_REFRESH_CODES:
            raise _expired(login.path, code or f"HTTP {response.status_code}")
        raise ToolError(
            "provider_error",
            f"the ChatGPT login could not be renewed just now (HTTP {response.status_code}); try again later.",
            {"backend": "openai_codex", "status": response.status_code},
        )
    try:
        fresh = json.loads(response.content)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        fresh = None
    if not isinstance(fresh, dict) or not isinstance(fresh.get("access_token"), str):
        raise ToolError(
            "provider_error",
            "the login renewal answered without an access token",
            {"backend": "openai_codex"},
        )
    data = _read(login.path)
    tokens = data.setdefault("tokens", {})
    for key in ("id_token", "access_token", "refresh_token"):
        if isinstance(fresh.get(key), str) and fresh[key]:
            tokens[key] = fresh[key]
    data["last_refresh"] = ctx.now().isoformat().replace("+00:00", "Z")
    from ...core.fsops import atomic_write

    atomic_write(login.path, json.dumps(data, indent=2).encode())
    return load_login(login.path)


def _sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line.strip() and data:
            payload = "\n".join(data)
            data = []
            event = _event(payload)
            if event is not None:
                yield event
    if data:
        event = _event("\n".join(data))
        if event is not None:
            yield event


def _event(payload: str) -> dict[str, Any] | None:
    if payload == "[DONE]":
        return None
    try:
        event = json.loads(payload)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return None
    return event if isinstance(event, dict) else None


def _response_field(event: dict[str, Any], name: str) -> Any:
    """`event.response[name]`, or None when the event carries no response object (a malformed event)."""
    response = event.get("response")
    return response.get(name) if isinstance(response, dict) else None


def _image_item(item: Any) -> Generated | None:
    if isinstance(item, dict) and item.get("type") == "image_generation_call" and item.get("result"):
        revised = item.get("revised_prompt")
        return Generated(
            _decode("openai_codex", item["result"]), revised if isinstance(revised, str) else None
        )
    return None


def _retry_after(message: str) -> float | None:
    m = TRY_AGAIN.search(message)
    if not m:
        return None
    value = float(m.group(1))
    return value / 1000 if m.group(2).lower() == "ms" else value


def _not_entitled(why: str, details: dict[str, Any]) -> ToolError:
    return ToolError(
        "codex_not_entitled",
        f"the ChatGPT/Codex login may not generate images ({why}); check that the plan includes it, "
        "or choose another backend.",
        {"backend": "openai_codex", **details},
    )


def _failed(err: Mapping[str, Any]) -> ToolError:
    code = str(err.get("code") or err.get("type") or "")
    message = str(err.get("message") or "the response failed")
    if any(m in (code + " " + message).lower() for m in REFUSAL_MARKERS):
        return ToolError(
            "prompt_refused",
            f"the openai_codex image backend refused this prompt ({message}). Rephrase the request; nothing was created.",
            {"backend": "openai_codex", "reason": code or message},
        )
    if code == "rate_limit_exceeded":
        details: dict[str, Any] = {"backend": "openai_codex"}
        wait = _retry_after(message)
        if wait is not None:
            details["retry_after"] = wait
        return ToolError("rate_limited", f"openai_codex: {message}; try again later.", details)
    if code in ("insufficient_quota", "usage_not_included"):
        return _not_entitled(code, {"code": code})
    return ToolError("provider_error", f"openai_codex: {message}", {"backend": "openai_codex", "code": code})


def _http_error(ctx: ToolContext, status: int, raw: bytes, headers: Mapping[str, str]) -> ToolError:
    try:
        data = json.loads(raw[:4000])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    kind = str(err.get("type") or "") if isinstance(err, dict) else ""
    if status == 429 and isinstance(err, dict) and kind == "usage_limit_reached":
        details: dict[str, Any] = {"backend": "openai_codex", "plan_type": err.get("plan_type")}
        resets = err.get("resets_at")
        if isinstance(resets, int) and not isinstance(resets, bool):
            details["resets_at"] = resets
            details["retry_after"] = max(0, int(resets - ctx.now().timestamp()))
        return ToolError(
            "rate_limited",
            "the ChatGPT plan's usage limit is reached"
            + (f"; it resets in {details['retry_after']} s" if "retry_after" in details else "")
            + ". Try again then.",
            details,
        )
    if kind == "usage_not_included":
        return _not_entitled("usage_not_included", {"status": status})
    failure = http_failure("openai_codex", status, raw, headers)
    if status == 403 and failure.code != "prompt_refused":
        return _not_entitled(f"HTTP 403: {failure.message}", {"status": status})
    return failure


def _request(
    ctx: ToolContext, cfg: GenerateImageConfig, login: CodexLogin, body: dict[str, Any]
) -> Generated:
    headers = {
        "authorization": f"Bearer {login.access_token}",
        "accept": "text/event-stream",
        "originator": ORIGINATOR,
        "session_id": str(uuid.uuid4()),
    }
    if login.account_id:
        headers["chatgpt-account-id"] = login.account_id
    url = f"{cfg.codex_url.rstrip('/')}/responses"
    limits = {**CLIENT_LIMITS, "read_timeout": cfg.timeout_seconds, "total_timeout": cfg.timeout_seconds + 60}
    with (
        ctx.http_client(**limits) as client,
        client.stream("POST", url, json=body, headers=headers) as response,
    ):
        if response.status_code == 401:
            raise _Unauthorized
        if response.status_code >= 400:
            raw = response.read(truncate=True)
            if response.status_code == 400 and b"tool_choice" in raw and body["tool_choice"] != "auto":
                raise _ToolChoiceRefused
            raise _http_error(ctx, response.status_code, raw, response.headers)
        for event in _sse_events(response.iter_lines()):
            kind = event.get("type")
            if kind == "response.output_item.done":
                found = _image_item(event.get("item"))
                if found is not None:
                    return found
            elif kind == "response.completed":  # the final response may list the output again
                output = _response_field(event, "output")
                for item in output if isinstance(output, list) else []:
                    found = _image_item(item)
                    if found is not None:
                        return found
            elif kind == "response.failed":
                err = _response_field(event, "error")
                raise _failed(err if isinstance(err, dict) else {})
            elif kind == "error":
                inner = event.get("error")
                raise _failed(inner if isinstance(inner, dict) else event)
    raise ToolError(
        "provider_error",
        "the openai_codex image backend finished without an image",
        {"backend": "openai_codex"},
    )


def request_body(cfg: GenerateImageConfig, req: ImageRequest) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "input_text", "text": req.prompt}]
    if req.image is not None:
        content.append({"type": "input_image", "image_url": _data_url(req.image)})
    tool: dict[str, Any] = {"type": "image_generation", "model": req.model, "output_format": "png"}
    if req.size != "auto":
        tool["size"] = req.size
    return {
        "model": cfg.router_model,
        "instructions": INSTRUCTIONS,
        "input": [{"type": "message", "role": "user", "content": content}],
        "tools": [tool],
        "tool_choice": {"type": "image_generation"},
        "parallel_tool_calls": False,
        "store": False,
        "stream": True,
        "include": [],
    }


def run_openai_codex(ctx: ToolContext, cfg: GenerateImageConfig, req: ImageRequest) -> Generated:
    path = auth_file(cfg, ctx.os_home)
    login = load_login(path)
    renewed = is_stale(login, ctx.now())
    if renewed:
        login = refresh_login(ctx, cfg, login)
    body = request_body(cfg, req)
    try:
        return _send(ctx, cfg, login, body)
    except _Unauthorized:
        if renewed:
            raise _rejected(path) from None
    login = refresh_login(ctx, cfg, login)  # re-reads first: the Codex CLI may have renewed it meanwhile
    try:
        return _send(ctx, cfg, login, body)
    except _Unauthorized:
        raise _rejected(path) from None


def _send(ctx: ToolContext, cfg: GenerateImageConfig, login: CodexLogin, body: dict[str, Any]) -> Generated:
    """One request; if the backend refuses the forced tool_choice, once more with "auto" as the CLI sends it.

    The instructions still ask for the image, and an answer without one is `provider_error`, so this
    never turns into a silent answer of another kind.
    """
    try:
        return _request(ctx, cfg, login, body)
    except _ToolChoiceRefused:
        return _request(ctx, cfg, login, {**body, "tool_choice": "auto"})


def _rejected(path: str) -> ToolError:
    return ToolError(
        "codex_login_expired",
        f"the ChatGPT backend refused the login in {path} even after renewing it (HTTP 401); "
        "log in again with `codex login`.",
        {"backend": "openai_codex", "auth_file": path},
    )
