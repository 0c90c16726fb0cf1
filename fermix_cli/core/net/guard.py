"""The network guard's rules: which URLs fermix may fetch and which addresses it may connect to.

Every outbound request goes through `client.guarded_client()` (or `GuardedTransport` in `transport`),
which applies these rules at send time and again at connect time. Reference section 5.1, steps 1 to 4:

1. syntax: non-empty, no whitespace, http/https, a host, no userinfo, at most 2,048 bytes;
2. host names: lower-case, one trailing dot stripped, IDNA UTS-46 with NFKC; `localhost`, `*.localhost`,
   `*.local`, `*.internal` and `*.home.arpa` refused;
3. IP literals judged against the table in `iptable`;
4. other names resolved (A and AAAA) and every answer judged.

`[fermix_core.net] allowed_private_hosts` (exact names or IP literals) is the only bypass: for those hosts
steps 2 to 4 allow any address. This module does not import httpx.
"""

from __future__ import annotations

import re
import socket
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.iptable import blocked_range, parse_address

from ..records import Record

Resolver = Callable[[str], Iterable[str]]
"""Maps a host name to its A and AAAA answers as address strings; no answers or OSError means none."""

# Query (or fragment) parameters that carry credentials; compared lower-cased with '-' read as '_'.
SENSITIVE_PARAMETERS = frozenset(
    {
        "access_token", "refresh_token", "id_token", "token", "auth", "auth_token", "authorization",
        "api_key", "apikey", "key", "secret", "client_secret", "password", "passwd", "pwd", "session",
        "sessionid", "session_id", "sid", "signature", "sig", "x_amz_signature", "x_amz_credential",
        "x_amz_security_token", "x_goog_signature", "x_goog_credential", "private_token", "jwt",
    }
)  # fmt: skip
REDACTED = "***"
MAX_URL_BYTES = 2048
DEFAULT_MAX_BODY = 1_048_576
DEFAULT_PORTS = {"http": 80, "https": 443}
BLOCKED_NAME_SUFFIXES = ("localhost", "local", "internal", "home.arpa")
CONFIG_HINT = "[fermix_core.net] allowed_private_hosts"

_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def blocked_url_error(reason: str, message: str, **details: Any) -> ToolError:
    """A `blocked_url` error whose details carry a machine-readable `reason` (a `url` is redacted)."""
    if isinstance(details.get("url"), str):
        details["url"] = redact_url(details["url"])
    return ToolError("blocked_url", message, {"reason": reason, **details})


def is_sensitive_parameter(name: str) -> bool:
    """Whether a query parameter's name says it carries a credential (`access_token`, `API-Key`, ...)."""
    return name.strip().lower().replace("-", "_") in SENSITIVE_PARAMETERS


def redact_url(url: str) -> str:
    """`url` safe to echo: `user:password@` and the values of credential parameters become `***`."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not parseable (a broken [v6] host): redact by pattern
        head, sep, rest = url.partition("?")
        head = re.sub(r"//[^/?#]*@", f"//{REDACTED}@", head)
        return head + sep + "#".join(_redact_parameters(part) for part in rest.split("#"))
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query, fragment = _redact_parameters(parts.query), _redact_parameters(parts.fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _redact_parameters(text: str) -> str:
    pairs = []
    for pair in text.split("&"):
        name, equals, _value = pair.partition("=")
        pairs.append(f"{name}={REDACTED}" if equals and is_sensitive_parameter(unquote(name)) else pair)
    return "&".join(pairs)


def redirect_refusal(error: ToolError, source: str, target: str) -> ToolError:
    """`error` (a refusal of `target`) restated as the refusal of a redirect that `source` sent."""
    source, target = redact_url(source), redact_url(target)
    return ToolError(
        error.code,
        f"the server at {source} redirected to {target}, which is refused: {error.message}",
        {**error.details, "redirected_from": source, "url": target},
    )


def encode_location(location: str) -> str:
    """A redirect's `Location` as browsers and curl follow it: whitespace and non-ASCII outside the
    host percent-encoded (UTF-8), so `/a b` is `/a%20b`."""
    if all(ch.isascii() and ch.isprintable() and not ch.isspace() for ch in location):
        return location
    try:
        parts = urlsplit(location.strip())
    except ValueError:
        return location  # check_url reports it
    encoded = [_percent_encode(part) for part in (parts.path, parts.query, parts.fragment)]
    return urlunsplit((parts.scheme, parts.netloc, *encoded))


def _percent_encode(text: str) -> str:
    return "".join(
        ch if ch.isascii() and ch.isprintable() and not ch.isspace() else quote(ch, safe="") for ch in text
    )


class CheckedURL(Record, frozen=True):
    """A URL that passed the syntax and name checks, rebuilt from its normalised parts."""

    url: str
    scheme: str
    host: str
    port: int


def normalise_host(raw: str) -> str:
    """The canonical ASCII form of a URL host; IPv6 without brackets. Raises `blocked_url` if invalid.

    Lower-cases, strips one trailing dot and maps non-ASCII names through NFKC and IDNA (UTS-46), so
    `127。0。0。1` and `①②⑦.0.0.1` become `127.0.0.1`.
    """
    if raw.startswith("[") or ":" in raw:
        # `[v6]` from a URL, or a bare v6 literal as httpcore hands it to the connect step.
        bracketed = raw.startswith("[") and raw.endswith("]")
        ip = parse_address(raw) if bracketed or "[" not in raw else None
        if ip is None or ip.version != 6:
            raise blocked_url_error("invalid_host", f"invalid host {raw!r}: not an IPv6 address", host=raw)
        return str(ip)
    host = raw
    if not host.isascii():
        host = _idna_to_ascii(unicodedata.normalize("NFKC", host), raw)
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    _check_labels(host, raw)
    ip = parse_address(host)
    return str(ip) if ip is not None else host


def _idna_to_ascii(host: str, raw: str) -> str:
    try:
        import idna

        return str(idna.encode(host, uts46=True, transitional=False).decode("ascii"))
    except ImportError:
        # `idna` comes with httpx; the stdlib codec (IDNA 2003, NFKC nameprep) is the fallback.
        pass
    except (UnicodeError, ValueError) as exc:
        raise blocked_url_error("invalid_host", f"invalid host {raw!r}: {exc}", host=raw) from exc
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise blocked_url_error("invalid_host", f"invalid host {raw!r}: {exc}", host=raw) from exc


def _check_labels(host: str, raw: str) -> None:
    labels = host.split(".")
    if not host or len(host) > 253 or any(not 0 < len(label) <= 63 for label in labels):
        raise blocked_url_error("invalid_host", f"invalid host {raw!r}: empty or over-long label", host=raw)
    if not set(host) - {"."} <= _LABEL_CHARS:
        raise blocked_url_error(
            "invalid_host", f"invalid host {raw!r}: characters not allowed in a host name", host=raw
        )


def is_blocked_name(host: str) -> bool:
    """Whether a normalised host is a local-only name (`localhost`, `*.local`, `*.internal`, ...)."""
    return any(host == suffix or host.endswith("." + suffix) for suffix in BLOCKED_NAME_SUFFIXES)


def check_url(url: str) -> CheckedURL:
    """Check a URL's syntax and host name (no DNS) and return it with its host normalised."""
    if not url:
        raise blocked_url_error("empty_url", "empty_url")
    if any(ch.isspace() for ch in url):
        raise blocked_url_error("url_has_whitespace", "url_has_whitespace", url=url)
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise blocked_url_error("invalid_url", "URL contains control characters", url=url)
    size = len(url.encode("utf-8", "surrogatepass"))
    if size > MAX_URL_BYTES:
        raise blocked_url_error(
            "url_too_long", f"URL is {size} bytes; the limit is {MAX_URL_BYTES}", url=redact_url(url)[:200]
        )
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise blocked_url_error("invalid_url", f"invalid URL: {exc}", url=url) from exc
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        message = f"scheme {scheme!r} is not allowed" if scheme else "the URL has no scheme"
        raise blocked_url_error("unsupported_scheme", f"{message}; use http:// or https://", url=url)
    netloc = parts.netloc
    if "@" in netloc:
        raise blocked_url_error(
            "userinfo",
            "URLs with user:password@ are refused (credentials in a URL end up in logs and histories);"
            " remove them from the URL",
            url=url,
        )
    raw_host, port = _split_host_port(netloc, url)
    if not raw_host:
        raise blocked_url_error("missing_host", "the URL has no host", url=url)
    host = normalise_host(raw_host)
    if port is None:
        port = DEFAULT_PORTS[scheme]
    authority = f"[{host}]" if ":" in host else host
    if port != DEFAULT_PORTS[scheme]:
        authority += f":{port}"
    rebuilt = f"{scheme}://{authority}{parts.path or '/'}"
    if parts.query:
        rebuilt += "?" + parts.query
    return CheckedURL(rebuilt, scheme, host, port)


def _split_host_port(netloc: str, url: str) -> tuple[str, int | None]:
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise blocked_url_error("invalid_url", "invalid URL: unclosed '[' in host", url=url)
        host, rest = netloc[: end + 1], netloc[end + 1 :]
        if rest and not rest.startswith(":"):
            raise blocked_url_error("invalid_url", "invalid URL: text after ']' in host", url=url)
        port_text = rest[1:]
    elif ":" in netloc:
        host, port_text = netloc.rsplit(":", 1)
        if ":" in host:
            ip = parse_address(netloc) or parse_address(host)
            if ip is not None and ip.version == 6:
                raise blocked_url_error(
                    "invalid_url", "invalid URL: IPv6 hosts must be written in [brackets]", url=url
                )
            raise blocked_url_error(
                "invalid_url",
                f"invalid URL: {netloc!r} has more than one ':'; write host or host:port",
                url=url,
            )
    else:
        host, port_text = netloc, ""
    if not port_text:
        return host, None
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise blocked_url_error("invalid_url", f"invalid port {port_text!r}", url=url)
    return host, int(port_text)


def normalise_allowed_host(entry: str) -> str:
    """The normalised form of one `allowed_private_hosts` entry; ValueError when it is not usable.

    Entries are exact host names or IP literals (`[::1]` or `::1`); wildcards and ports are refused.
    """
    text = entry.strip()
    if not text or "*" in text or "/" in text or "@" in text:
        raise ValueError(f"{entry!r} is not a host name or IP literal (no wildcards, ports or URLs)")
    if re.fullmatch(r"(\[[^\]]*\]|[^:\[\]]+):\d*", text):
        raise ValueError(
            f"{entry!r}: ports are not allowed; list the host alone (it is allowed on every port)"
        )
    try:
        return normalise_host(text)
    except ToolError as exc:
        raise ValueError(f"{entry!r}: {exc.message}") from None


def system_resolver(host: str) -> list[str]:
    """A and AAAA answers from `socket.getaddrinfo`, in its order, without duplicates."""
    infos = socket.getaddrinfo(host, None, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM)
    answers: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in answers:
            answers.append(address)
    return answers


def _dns_failure(host: str, why: str) -> ToolError:
    return ToolError(
        "dns_failure",
        f"dns_resolution_failed ({host}): {why}. Check the host name and the network, then retry.",
        {"reason": "dns_resolution_failed", "host": host},
    )


class HostGuard:
    """Decides which addresses fermix may connect to for a host: the connect-time half of the guard."""

    def __init__(self, allowed_private_hosts: Iterable[str] = (), resolver: Resolver | None = None) -> None:
        self.allowed_private_hosts = frozenset(normalise_allowed_host(h) for h in allowed_private_hosts)
        self._resolver: Resolver = resolver or system_resolver

    def addresses(self, raw_host: str) -> list[str]:
        """The addresses to connect to for `raw_host`, each already judged; raises `blocked_url`.

        The resolver is asked once per call, so a caller that connects only to what this returns cannot
        be redirected by a later, different DNS answer (rebinding).
        """
        host = normalise_host(raw_host)
        allowed = host in self.allowed_private_hosts
        if not allowed and is_blocked_name(host):
            raise blocked_url_error(
                "blocked_name",
                f"{host!r} is a local-only host name; to allow it add it to {CONFIG_HINT}",
                host=host,
            )
        literal = parse_address(host)
        if literal is not None:
            row = None if allowed else blocked_range(literal)
            if row is not None:
                raise blocked_url_error(
                    "non_global_address",
                    f"address {literal} is not global ({row.name}); to allow it add it to {CONFIG_HINT}",
                    host=host,
                    ip=str(literal),
                    range=str(row.network),
                )
            return [str(literal)]
        return self._resolve_checked(host, allowed)

    def _resolve_checked(self, host: str, allowed: bool) -> list[str]:
        try:
            answers = list(self._resolver(host))
        except (OSError, UnicodeError, ValueError) as exc:
            # No answer is a failure to reach the host (offline, NXDOMAIN), not a policy refusal.
            raise _dns_failure(host, str(exc)) from None
        if not answers:
            raise _dns_failure(host, "no addresses")
        checked: list[str] = []
        for answer in answers:
            ip = parse_address(answer)
            row = blocked_range(answer) if ip is None or not allowed else None
            if row is not None:
                shown = answer if ip is None else str(ip)
                raise blocked_url_error(
                    "non_global_answer",
                    f"resolved to {shown} ({row.name}); if {host!r} is a host you trust, "
                    f"add it to {CONFIG_HINT}",
                    host=host,
                    ip=shown,
                    range=str(row.network),
                )
            if ip is not None and str(ip) not in checked:
                checked.append(str(ip))
        return checked
