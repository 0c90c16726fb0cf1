"""view_image's one outbound request: an image and a prompt to the configured vision model.

Three wire formats, each written from its vendor's API reference:
- `responses`: OpenAI's Responses API, `POST {base}/responses` with an `input_image` data URL.
- `messages`: Anthropic's Messages API, `POST {base}/v1/messages` with a base64 `image` block.
- `chat_completions`: an OpenAI-compatible `POST {base}/chat/completions` with an `image_url` part.

The model's own settings come from `[fermix_core.providers.NAME]`; nothing here ever uses the active
chat model.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import ToolError
from ...core.records import Record
from .config import VisionApi, VisionModel

if TYPE_CHECKING:
    from ...core.context import ToolContext

OFFICIAL_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
ANTHROPIC_VERSION = "2023-06-01"
ERROR_BODY_CAP = 2000
# Room for a 20 MiB image as base64 goes out; the answer is text and is capped far lower.
CLIENT_LIMITS: dict[str, Any] = {"connect_timeout": 10.0, "max_body": 4 * 1024 * 1024}


class VisionTarget(Record, frozen=True):
    """Where the image goes: provider name, API format, URL, model, headers (with the key) and time limit."""

    provider: str
    api: VisionApi
    url: str
    model: str
    headers: Mapping[str, str]
    read_timeout: float
    max_output_tokens: int


def _setting(block: Any, name: str, default: Any = None) -> Any:
    return default if block is None else getattr(block, name, default)


def resolve_target(ctx: ToolContext, vm: VisionModel, env: Mapping[str, str] | None = None) -> VisionTarget:
    """The vision model's endpoint from its provider block; refusals name the config key to fix."""
    env = os.environ if env is None else env
    providers = ctx.config.fermix_core.providers
    block = providers.get(vm.provider)
    kind = _setting(block, "type") or vm.provider
    if block is None and vm.provider not in OFFICIAL_BASE_URLS:
        raise ToolError(
            "vision_model_unavailable",
            f"capabilities.tools.view_image.vision_model.provider names {vm.provider!r}, but there is no "
            f"[fermix_core.providers.{vm.provider}] block. Add one (type, base_url, api_key) or name openai "
            "or anthropic.",
            {"provider": vm.provider},
        )
    if kind not in OFFICIAL_BASE_URLS:
        raise ToolError(
            "vision_model_unavailable",
            f"provider {vm.provider!r} is of type {kind!r}, which cannot look at images; the vision model must "
            "be an openai (Responses or OpenAI-compatible) or anthropic provider.",
            {"provider": vm.provider, "type": kind},
        )
    configured_url = _setting(block, "base_url")
    base = (configured_url or OFFICIAL_BASE_URLS[kind]).rstrip("/")
    official = configured_url is None or base == OFFICIAL_BASE_URLS[kind]
    api: VisionApi = vm.api or (
        "messages" if kind == "anthropic" else "responses" if official else "chat_completions"
    )
    key = _setting(block, "api_key")
    if not key and _setting(block, "api_key_env"):
        key = env.get(block.api_key_env, "").strip() or None
    if not key and official and kind in KEY_ENV:
        # A custom base URL never receives OPENAI_API_KEY or ANTHROPIC_API_KEY unasked.
        key = env.get(KEY_ENV[kind], "").strip() or None
    if not key and official:
        raise ToolError(
            "auth_failed",
            f"no API key for the vision model's provider {vm.provider}: export {KEY_ENV[kind]}=..., or set "
            f"fermix_core.providers.{vm.provider}.api_key (or api_key_env)",
            {"provider": vm.provider},
        )
    headers = {"content-type": "application/json"}
    headers.update({k.lower(): v for k, v in (_setting(block, "headers") or {}).items()})
    if api == "messages":
        url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if key:
            headers["x-api-key"] = key
    else:
        url = f"{base}/responses" if api == "responses" else f"{base}/chat/completions"
        if key:
            headers["authorization"] = f"Bearer {key}"
    return VisionTarget(
        provider=vm.provider,
        api=api,
        url=url,
        model=vm.model,
        headers=headers,
        read_timeout=float(_setting(block, "read_timeout", 120.0)),
        max_output_tokens=vm.max_output_tokens,
    )


def request_body(target: VisionTarget, image: bytes, mime: str, prompt: str) -> dict[str, Any]:
    """The JSON body for one image and one prompt in the target's API format."""
    data = base64.b64encode(image).decode("ascii")
    if target.api == "messages":
        return {
            "model": target.model,
            "max_tokens": target.max_output_tokens,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}},
                        {"type": "text", "text": prompt},
                    ],
                }
            ],
        }
    data_url = f"data:{mime};base64,{data}"
    if target.api == "responses":
        return {
            "model": target.model,
            "max_output_tokens": target.max_output_tokens,
            "store": False,
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": prompt},
                        {"type": "input_image", "image_url": data_url},
                    ],
                }
            ],
        }
    return {
        "model": target.model,
        "max_tokens": target.max_output_tokens,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": prompt},
                    {"type": "image_url", "image_url": {"url": data_url}},
                ],
            }
        ],
    }


def _items(value: Any) -> list[Any]:
    """A JSON list as a list; anything else (a malformed answer) as no items."""
    return value if isinstance(value, list) else []


def answer_text(api: VisionApi, data: Any) -> str | None:
    """The model's text from a decoded answer, or None when the answer has none (or is malformed)."""
    if not isinstance(data, dict):
        return None
    parts: list[str] = []
    if api == "responses":
        for item in _items(data.get("output")):
            if isinstance(item, dict) and item.get("type") == "message":
                for block in _items(item.get("content")):
                    if isinstance(block, dict) and block.get("type") == "output_text":
                        parts.append(str(block.get("text", "")))
    elif api == "messages":
        for block in _items(data.get("content")):
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
    else:
        choices = _items(data.get("choices"))
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b)
    return "".join(parts) if parts else None


def _server_message(raw: bytes) -> str:
    try:
        data = json.loads(raw[:ERROR_BODY_CAP])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return raw[:200].decode("utf-8", "replace").strip()
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "")[:500]
    if isinstance(error, str):
        return error[:500]
    return ""


def http_error(target: VisionTarget, status: int, raw: bytes, retry_after: str | None) -> ToolError:
    """A typed error for a refusal from the vision model's server."""
    message = _server_message(raw) or f"HTTP {status}"
    details: dict[str, Any] = {"provider": target.provider, "status": status}
    if status in (401, 403):
        return ToolError(
            "auth_failed",
            f"the vision model's provider {target.provider} refused the request (HTTP {status}: {message}); "
            f"check fermix_core.providers.{target.provider}.api_key",
            details,
        )
    if status == 429:
        if retry_after and retry_after.strip().isdigit():
            details["retry_after"] = int(retry_after.strip())
        return ToolError(
            "rate_limited",
            f"the vision model's provider {target.provider} is rate limiting requests (HTTP 429: {message}); "
            "try again later",
            details,
        )
    return ToolError(
        "provider_error",
        f"the vision model's provider {target.provider} answered HTTP {status}: {message}",
        details,
    )


def ask_vision_model(ctx: ToolContext, target: VisionTarget, image: bytes, mime: str, prompt: str) -> str:
    """Send the image and the prompt; the model's answer as text."""
    body = json.dumps(request_body(target, image, mime, prompt)).encode()
    limits = {**CLIENT_LIMITS, "read_timeout": target.read_timeout, "total_timeout": target.read_timeout + 30}
    with ctx.http_client(**limits) as client:
        response = client.post(target.url, content=body, headers=dict(target.headers))
    raw = response.content
    if response.status_code >= 400:
        raise http_error(target, response.status_code, raw, response.headers.get("retry-after"))
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        raise ToolError(
            "provider_error",
            f"the vision model's provider {target.provider} answered with something that is not JSON",
            {"provider": target.provider},
        ) from None
    text = answer_text(target.api, data)
    if text is None:
        raise ToolError(
            "provider_error",
            f"the vision model's answer from {target.provider} carries no text",
            {"provider": target.provider},
        )
    return text
