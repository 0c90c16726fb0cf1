"""Webhooks: one HTTP POST per delivery to an endpoint named in `[fermix_core.channels.webhooks.NAME]`.

Body formats (`format`):
- `json` (default): `{"text": ..., "title": ..., ...}` plus what the delivery is about (job id, run id ...),
  for a user's own endpoint;
- `slack`: a Slack incoming webhook's `{"text": ...}` (with `thread_ts` when the target names a thread);
- `ntfy`: the text as the plain request body to an ntfy topic URL (`https://ntfy.sh/TOPIC`), the title
  in ntfy's `Title` header.

Text over `TEXT_MAX` characters is cut, with a marker at its end saying how much was sent
(`… [truncated: N of M characters]`); the result says `truncated` (and `text_chars`, the full length).

Any 2xx is delivered. 429 and 503 are transient and carry the `Retry-After` hint (seconds or an HTTP
date); 408 and 5xx are transient; a redirect and every other 4xx are permanent (fix the URL, the token
in `headers`, or the body format). The URL is treated as a secret: messages name only its host, and
server text quoted in a message has the URL's path, query and every longer path segment or query value
cut out (a 404 page often echoes the path, where a Slack or Discord hook keeps its token).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..core.errors import ToolError
from .base import Capability, ChannelError, Sent
from .http import http_client, network_failure, parse_retry_after, quote, redact, url_secrets

if TYPE_CHECKING:
    from .config import WebhookConfig

TEXT_MAX = 32_000  # Slack cuts at 40,000 characters; ntfy bodies over 4 KB become attachments


def _section(name: str) -> str:
    return f"[fermix_core.channels.webhooks.{name}]"


def body_for(fmt: str, text: str, meta: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """The request body and its headers for one message in `fmt`."""
    title = str(meta.get("title") or (f"fermix: {meta['job_name']}" if meta.get("job_name") else ""))
    if fmt == "slack":
        payload: dict[str, Any] = {"text": text}
        if meta.get("thread_ts"):
            payload["thread_ts"] = str(meta["thread_ts"])
        return json.dumps(payload, ensure_ascii=False).encode("utf-8"), {"content-type": "application/json"}
    if fmt == "ntfy":
        headers = {"content-type": "text/plain; charset=utf-8"}
        if title:
            headers["title"] = header_text(title)
        return text.encode("utf-8"), headers
    payload = {**{k: v for k, v in meta.items() if k != "text"}, "text": text}
    if title:
        payload["title"] = title
    return json.dumps(payload, ensure_ascii=False).encode("utf-8"), {"content-type": "application/json"}


def cut_text(text: str, limit: int = TEXT_MAX) -> tuple[str, bool]:
    """`text` whole when it has at most `limit` characters; else its start and a marker saying so, `limit`
    characters in all. Cut between characters, so the body is valid UTF-8."""
    if len(text) <= limit:
        return text, False
    keep = max(0, limit - len(_cut_marker(limit, len(text))))
    return text[:keep] + _cut_marker(keep, len(text)), True


def _cut_marker(kept: int, total: int) -> str:
    return f"\n… [truncated: {kept} of {total} characters]"


def header_text(value: str) -> str:
    """A header value: ASCII as is, anything else as an RFC 2047 encoded word (which ntfy decodes)."""
    one_line = " ".join(value.split())[:200]
    if one_line.isascii():
        return one_line
    return "=?UTF-8?B?" + base64.b64encode(one_line.encode("utf-8")).decode("ascii") + "?="


def failure(status: int, headers: Any, body: str, where: str) -> ChannelError:
    """A non-2xx answer as a ChannelError (transient or permanent, with the server's retry hint)."""
    said = f"the webhook {where} answered HTTP {status}" + (f" ({quote(body)})" if body.strip() else "")
    retry = parse_retry_after(headers.get("retry-after")) if status in (429, 503) else None
    if status == 429:
        return ChannelError(f"{said}: rate limited.", code="rate_limited", retry_after=retry)
    if status == 408 or status >= 500:
        return ChannelError(f"{said}; this is usually temporary.", code="unavailable", retry_after=retry)
    if 300 <= status < 400:
        return ChannelError(
            f"{said}: a delivery URL must not redirect; put the final URL in {where}.",
            code="redirected",
            permanent=True,
        )
    return ChannelError(
        f"{said}: the endpoint refuses this request; check the url, its token (headers) and the format.",
        code="rejected",
        permanent=True,
    )


class WebhookChannel:
    """Deliveries as a POST to a named webhook."""

    platform = "webhook"
    capabilities: frozenset[Capability] = frozenset({"text"})
    max_text = TEXT_MAX

    def __init__(self, config: Any) -> None:
        self.config = config

    def settings(self, name: str) -> WebhookConfig:
        hooks = self.config.fermix_core.channels.webhooks
        if name not in hooks:
            raise ChannelError(
                f"no webhook named {name!r}: add a {_section(name)} block with its url.",
                code="not_configured",
                permanent=True,
            )
        settings: WebhookConfig = hooks[name]
        return settings

    def url(self, name: str, settings: WebhookConfig) -> str:
        if settings.url is not None:
            return settings.url
        assert settings.url_env is not None
        value = os.environ.get(settings.url_env, "").strip()
        if not value:
            raise ChannelError(
                f"{_section(name)} url_env names {settings.url_env}, which is not set in this environment.",
                code="not_configured",
                permanent=True,
            )
        return value

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        settings = self.settings(address)
        url = self.url(address, settings)
        host = urlsplit(url).hostname or "?"
        where = f"{_section(address)} (host {host})"
        sent_text, truncated = cut_text(text)
        body, headers = body_for(settings.format, sent_text, meta)
        secrets = [*url_secrets(url), *settings.headers.values()]
        client = http_client(self.config, settings.timeout_seconds)
        try:
            response = client.post(url, content=body, headers={**settings.headers, **headers}, truncate=True)
        except ToolError as e:
            raise network_failure(e, f"webhook {where}", secrets) from None
        finally:
            client.close()
        if not 200 <= response.status_code < 300:
            error = failure(response.status_code, response.headers, redact(response.text, secrets), where)
            raise error
        detail: dict[str, Any] = {
            "status": response.status_code,
            "format": settings.format,
            "truncated": truncated,
        }
        if truncated:
            detail["text_chars"] = len(text)
        return Sent(self.platform, address, detail)

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        raise ChannelError(
            "a webhook delivers text only; send the file's path or contents as text, or use the inbox or "
            "Telegram for files.",
            code="unsupported",
            permanent=True,
        )
