"""Provider HTTP on the guarded client: one POST whose body streams back, retried on 429 and 5xx.

Retries happen only before anything has been streamed, wait for `Retry-After` when the server sends
one (seconds or an HTTP date) and back off exponentially otherwise. Every request goes through the
network guard; `[fermix_core.net] allowed_private_hosts` is how a local server (llama.cpp, Ollama,
a test) becomes reachable.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import NETWORK_FAILURE_CODES, ToolError
from ...core.logs import logger

if TYPE_CHECKING:
    from ...core.context import ToolContext
    from ...core.net.response import GuardedStream
    from . import ProviderChoice

log = logger("fermix.providers")

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
MAX_RETRY_WAIT = 60.0
BACKOFF_BASE = 0.5
STREAM_MAX_BODY = 256 * 1024 * 1024
ERROR_BODY_CAP = 64 * 1024
CONNECT_TIMEOUT = 10.0


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date), or None."""
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff(attempt: int) -> float:
    return BACKOFF_BASE * (2**attempt) + random.uniform(0, BACKOFF_BASE / 2)


def server_message(body: bytes) -> str:
    """The error message a provider put in its body (`{"error": {"message": ...}}`), else the text."""
    text = body[:2000].decode("utf-8", "replace").strip()
    try:
        data = json.loads(body)
    except ValueError:
        return text
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return err["message"]
    if isinstance(err, str):
        return err
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return text


class ProviderHTTP:
    """The guarded client of one provider, with its retry policy."""

    def __init__(
        self,
        choice: ProviderChoice,
        ctx: ToolContext,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.choice = choice
        self.sleep = sleep
        # The context's guarded client (allowed_private_hosts applied); long reads, no overall bound.
        self.client = ctx.http_client(
            max_body=STREAM_MAX_BODY,
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=choice.settings.read_timeout,
            total_timeout=None,
        )

    @contextlib.contextmanager
    def post(self, url: str, headers: Mapping[str, str], body: Any) -> Iterator[GuardedStream]:
        """An open 2xx response to a JSON POST; failures become ToolErrors with stable codes."""
        retries = self.choice.settings.max_retries
        attempt = 0
        while True:
            try:
                response = self.client.stream("POST", url, headers=headers, json=body)
            except ToolError as e:
                if e.code not in NETWORK_FAILURE_CODES or attempt >= retries:
                    raise
                wait = backoff(attempt)
                log.warning("%s: %s; retrying in %.1f s", self.choice.name, e.message, wait)
            else:
                if 200 <= response.status_code < 300:
                    with response:
                        yield response
                    return
                with response:
                    raw = response.read(truncate=True) if response.status_code != 204 else b""
                status = response.status_code
                wait_for = retry_after(response.headers)
                if status not in RETRY_STATUSES or attempt >= retries:
                    raise self._http_error(status, raw, wait_for)
                if wait_for is not None and wait_for > MAX_RETRY_WAIT:
                    raise self._http_error(status, raw, wait_for)
                wait = backoff(attempt) if wait_for is None else wait_for
                log.warning("%s: HTTP %s; retrying in %.1f s", self.choice.name, status, wait)
            attempt += 1
            self.sleep(wait)

    def _http_error(self, status: int, body: bytes, wait_for: float | None) -> ToolError:
        name = self.choice.name
        message = server_message(body[:ERROR_BODY_CAP]) or f"HTTP {status}"
        details: dict[str, Any] = {"provider": name, "status": status}
        if status in (401, 403):
            return ToolError(
                "auth_failed",
                f"{name} refused the request (HTTP {status}: {message}). Check the API key: "
                f"fermix_core.providers.{name}.api_key or api_key_env"
                + (f", or {key_env(self.choice)}" if key_env(self.choice) else ""),
                details,
            )
        if status == 429:
            if wait_for is not None:
                details["retry_after"] = wait_for
            return ToolError(
                "rate_limited",
                f"{name} is rate limiting requests (HTTP 429: {message}); try again later",
                details,
            )
        return ToolError("provider_error", f"{name} answered HTTP {status}: {message}", details)

    def close(self) -> None:
        self.client.close()


def key_env(choice: ProviderChoice) -> str | None:
    from . import KEY_ENV

    return KEY_ENV.get(choice.kind) if choice.is_official else None


def decode_json(data: str, provider: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ToolError(
            "provider_error", f"{provider} sent a stream event that is not JSON: {data[:200]!r}", {}
        ) from None
