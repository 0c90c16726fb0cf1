"""What the HTTP channels share: a guarded client, `Retry-After`, secrets kept out of messages.

Every request goes through fermix's network guard (`core/net`), so a channel endpoint on this machine
or the local network needs its host in `[fermix_core.net] allowed_private_hosts`, as any other request.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

from ..core.errors import ToolError
from .base import ChannelError

if TYPE_CHECKING:
    from ..core.net.httpclient import GuardedClient

# How much of a platform's error text a message quotes.
QUOTE_MAX = 300
# A path segment or query value this long may be a token: it is cut out of quoted server text.
SECRET_PART_MIN = 6


def http_client(config: Any, timeout: float) -> GuardedClient:
    """A guarded client honouring `[fermix_core.net] allowed_private_hosts`; redirects are not followed.

    A delivery endpoint that redirects is misconfigured: a POST must not turn into a GET elsewhere.
    """
    from ..core.net.guarded import guarded_client

    return guarded_client(
        allowed_private_hosts=tuple(config.fermix_core.net.allowed_private_hosts),
        follow_redirects=False,
        connect_timeout=min(10.0, timeout),
        read_timeout=timeout,
        total_timeout=timeout + 10.0,
        max_body=256 * 1024,
    )


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every non-empty secret replaced by `<redacted>`, longest first, ignoring case."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = re.sub(re.escape(secret), "<redacted>", text, flags=re.IGNORECASE)
    return text


def url_secrets(url: str) -> list[str]:
    """The parts of a secret URL a server may echo: the URL, its path and query, its password, and
    each path segment and query value of `SECRET_PART_MIN` characters or more, as written and decoded.

    A 404 page that quotes the request path (`Cannot POST /hooks/T0/B0/token`) then shows no token.
    """
    parts = urlsplit(url)
    found = [url, parts.path, parts.query, parts.password or ""]
    found += [p for p in parts.path.split("/") if len(p) >= SECRET_PART_MIN]
    found += [v for _, v in parse_qsl(parts.query, keep_blank_values=True) if len(v) >= SECRET_PART_MIN]
    found += [unquote(parts.path), unquote_plus(parts.query)]
    found += [unquote(p) for p in parts.path.split("/") if len(p) >= SECRET_PART_MIN]
    return [f for f in found if f and f != "/"]


def network_failure(e: ToolError, what: str, secrets: Iterable[str] = ()) -> ChannelError:
    """A guarded-client failure as a ChannelError: a blocked address is permanent, the rest transient."""
    message = redact(e.message, secrets)
    if e.code == "blocked_url":
        return ChannelError(
            f"{what}: the network guard refused the address ({message}). A host on this machine or the local "
            "network must be listed in [fermix_core.net] allowed_private_hosts.",
            code="blocked_url",
            permanent=True,
        )
    return ChannelError(f"{what}: {e.code}: {message}", code=e.code, permanent=False)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """An HTTP `Retry-After` in seconds from now: delta-seconds or an HTTP-date; None when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is GMT by definition
        return None
    delta = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, round(delta, 3))


def quote(text: str) -> str:
    """A platform's error text, one line and short enough for a message."""
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= QUOTE_MAX else one_line[: QUOTE_MAX - 3] + "..."
