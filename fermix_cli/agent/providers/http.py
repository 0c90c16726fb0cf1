"""Provider HTTP on the guarded client: one POST whose body streams back, retried on 429 and 5xx.

Retries happen only before anything has been streamed, wait for `Retry-After` when the server sends
one (seconds or an HTTP date) and back off exponentially otherwise. Every request goes through the
network guard; `[fermix_core.net] allowed_private_hosts` is how a local server (llama.cpp, Ollama,
a test) becomes reachable.
"""

from __future__ import annotations

import contextlib
import email.utils
import html
import json
import random
import re
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


def error_text(data: Any) -> str | None:
    """The message of a provider's error document (`{"error": {"message": ...}}`, `{"error": "..."}`,
    `{"message": ...}`), or None when `data` is not one."""
    if not isinstance(data, dict):
        return None
    err = data.get("error")
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])
    if isinstance(err, str) and err:
        return err
    if isinstance(data.get("message"), str):
        return str(data["message"])
    return None


_HTML_START = re.compile(rb"^\s*(?:<!doctype\s+html|<html|<head|<body|<title)", re.I)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_HTML_HEADING = re.compile(r"<h1[^>]*>(.*?)</h1>", re.I | re.S)
_HTML_SKIPPED = re.compile(r"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_HTML_TAG = re.compile(r"<[^>]*>")
HTML_SUMMARY_CAP = 200


def is_html(body: bytes) -> bool:
    return bool(_HTML_START.match(body[:1024]))


def html_summary(body: bytes) -> str:
    """A web page as a short line: its <title>, else its first <h1>, else the start of its text."""
    text = body[:ERROR_BODY_CAP].decode("utf-8", "replace")
    match = _HTML_TITLE.search(text) or _HTML_HEADING.search(text)
    part = match.group(1) if match else _HTML_SKIPPED.sub(" ", text)
    plain = " ".join(html.unescape(_HTML_TAG.sub(" ", part)).split())
    if len(plain) > HTML_SUMMARY_CAP:
        plain = plain[: HTML_SUMMARY_CAP - 1] + "…"
    return f"an HTML page: {plain!r}" if plain else "an HTML page"


def server_message(body: bytes) -> str:
    """The error message a provider put in its body (`{"error": {"message": ...}}`), a web page as its
    title, else the text."""
    if is_html(body):
        return html_summary(body)
    text = body[:2000].decode("utf-8", "replace").strip()
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        return text
    return error_text(data) or text


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
                if e.code not in NETWORK_FAILURE_CODES:
                    raise
                if attempt >= retries:
                    raise self._unreachable(e, url) from None
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
                    raise self._http_error(status, raw, wait_for, url)
                if wait_for is not None and wait_for > MAX_RETRY_WAIT:
                    raise self._http_error(status, raw, wait_for, url)
                wait = backoff(attempt) if wait_for is None else wait_for
                log.warning("%s: HTTP %s; retrying in %.1f s", self.choice.name, status, wait)
            attempt += 1
            self.sleep(wait)

    def _http_error(self, status: int, body: bytes, wait_for: float | None, url: str) -> ToolError:
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
        hint = ""
        if status in (404, 405):
            hint = (
                f". fermix sent POST {self.url_shown(url)}: check {self.base_url_key()} and the model name "
                f"(-m, or fermix_core.providers.{name}.default_model)"
            )
        return ToolError("provider_error", f"{name} answered HTTP {status}: {message}{hint}", details)

    def base_url_key(self) -> str:
        """The config key that sets the URL, its value, and what it should look like."""
        shape = (
            "an OpenAI-compatible API's usually ends in /v1"
            if self.choice.kind == "openai"
            else "fermix adds /v1/messages to it"
        )
        base = self.url_shown(self.choice.base_url)
        return f"fermix_core.providers.{self.choice.name}.base_url (now {base}; {shape})"

    def _unreachable(self, error: ToolError, url: str) -> ToolError:
        """A failure to reach the server, naming the URL and the key that sets it."""
        if error.code not in ("connect_failed", "dns_failure"):
            return error
        name = self.choice.name
        message = (
            f"{name}: {error.message} (POST {self.url_shown(url)}). Is the server running? "
            f"Check {self.base_url_key()}"
        )
        return ToolError(error.code, message, {**error.details, "provider": name})

    def not_an_event_stream(self, response: GuardedStream, url: str) -> ToolError:
        """A 2xx web page where an API reply belongs: the base URL names a web UI, not the API."""
        head = b""
        for chunk in response.iter_bytes(truncate=True):
            head += chunk
            if len(head) >= ERROR_BODY_CAP:
                break
        name = self.choice.name
        return ToolError(
            "provider_error",
            f"{name} answered POST {self.url_shown(url)} with {html_summary(head)} instead of an event "
            f"stream: the URL points at a web page, not at the API. Check {self.base_url_key()}",
            {"provider": name, "url": self.url_shown(url)},
        )

    @staticmethod
    def url_shown(url: str) -> str:
        """The URL without a user, password or query (a key can ride in either)."""
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    def close(self) -> None:
        self.client.close()


def key_env(choice: ProviderChoice) -> str | None:
    from . import KEY_ENV

    return KEY_ENV.get(choice.kind) if choice.is_official else None


def reported_error(provider: str, data: str) -> ToolError:
    """An error the server reported inside its stream (an `error` event or field), with its message."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        doc = None
    message = error_text(doc) or data.strip()[:2000] or "no message"
    return ToolError("provider_error", f"{provider} reported an error mid-stream: {message}", {})


def interrupted(provider: str, end_marker: str) -> ToolError:
    """A reply stream that stopped without its end marker: the reply is incomplete, whatever it holds."""
    return ToolError(
        "network",
        f"the reply from {provider} stopped before it was complete (the stream closed without "
        f"{end_marker}): the server or a proxy between ended it early. Nothing it asked for was run; "
        "the text so far is kept. Try again",
        {"provider": provider},
    )


def decode_json(data: str, provider: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
        raise ToolError(
            "provider_error", f"{provider} sent a stream event that is not JSON: {data[:200]!r}", {}
        ) from None
