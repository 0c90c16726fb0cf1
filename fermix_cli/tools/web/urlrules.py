"""The coding `web` tool's input rules: public URLs without credentials, and Exa domain filters."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit

from ...core.errors import ToolError
from ...core.net.guard import (
    CheckedURL,
    blocked_url_error,
    check_url,
    is_blocked_name,
    is_sensitive_parameter,
    normalise_allowed_host,
)
from ...core.net.iptable import blocked_range, parse_address

MAX_DOMAINS = 20
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def public_url(url: str, allowed_private_hosts: Iterable[str] = ()) -> CheckedURL:
    """Check a URL for `web`: public http(s), no user:pass@, no credential parameters (no DNS here).

    Hosts in `allowed_private_hosts` skip the name and address rules, as they do in the network guard,
    which still judges the resolved addresses when the URL is fetched.
    """
    try:
        checked = check_url(url)  # empty, whitespace, scheme, userinfo, 2048 bytes
    except ToolError as e:
        if e.details.get("reason") != "userinfo":
            raise
        # web's own advice on top of the guard's: the seed routes authenticated work to a shell command.
        raise blocked_url_error(
            "userinfo",
            "the URL carries credentials (user:password@); web opens only public, unauthenticated pages — "
            "remove them, or use a shell command (curl) for authenticated requests",
            url=url,
        ) from None
    allowed = {normalise_allowed_host(h) for h in allowed_private_hosts}
    if checked.host in allowed:
        pass
    elif is_blocked_name(checked.host):
        raise blocked_url_error(
            "blocked_name", f"{checked.host!r} is a local-only host name", host=checked.host
        )
    elif (literal := parse_address(checked.host)) is not None and blocked_range(literal) is not None:
        raise blocked_url_error("non_global_address", f"address {literal} is not public", host=checked.host)
    parts = urlsplit(url)
    for part in (parts.query, parts.fragment):
        for name, _value in parse_qsl(part, keep_blank_values=True):
            if is_sensitive_parameter(name):
                raise blocked_url_error(
                    "sensitive_parameter",
                    f"the URL carries a credential parameter ({name}); web opens only public, "
                    "unauthenticated pages — remove it, or use a shell command for authenticated requests",
                    parameter=name,
                )
    return checked


def domain_filter(entries: list[str]) -> tuple[list[str], list[str]]:
    """Split a domainFilter into Exa's include and exclude lists; `invalid_input` names the bad entry."""
    if len(entries) > MAX_DOMAINS:
        raise _bad_domain(None, f"at most {MAX_DOMAINS} domains are allowed, got {len(entries)}")
    include: list[str] = []
    exclude: list[str] = []
    for index, raw in enumerate(entries):
        entry = raw.strip()
        target = include
        if entry.startswith("-"):
            entry, target = entry[1:], exclude
        target.append(_bare_domain(entry, index))
    return include, exclude


def _bare_domain(entry: str, index: int) -> str:
    if not entry.isascii():
        raise _bad_domain(index, "use the ASCII (punycode) form of the domain")
    if "://" in entry:
        raise _bad_domain(index, "a scheme is not allowed; give a bare domain like example.com")
    if any(ch.isspace() for ch in entry):
        raise _bad_domain(index, "whitespace is not allowed inside a domain")
    if "/" in entry:
        raise _bad_domain(index, "a path is not allowed; give a bare domain like example.com")
    if ":" in entry:
        raise _bad_domain(index, "a port is not allowed; give a bare domain like example.com")
    domain = entry.lower()
    if not domain or len(domain) > 253:
        raise _bad_domain(index, "a domain must have 1 to 253 characters")
    for label in domain.split("."):
        if not label:
            raise _bad_domain(index, "empty labels (leading, trailing or doubled dots) are not allowed")
        if len(label) > 63:
            raise _bad_domain(index, "a label may have at most 63 characters")
        if label.startswith("-") or label.endswith("-"):
            raise _bad_domain(index, "a label may not start or end with a hyphen")
        if not _LABEL.match(label):
            raise _bad_domain(index, "a label may contain only letters, digits and hyphens")
    return domain


def _bad_domain(index: int | None, rule: str) -> ToolError:
    field = "domainFilter" if index is None else f"domainFilter[{index}]"
    return ToolError(
        "invalid_input",
        f'{field}: {rule}. Prefix an entry with - to exclude it, e.g. ["rust-lang.org", "-old.rust-lang.org"]',
        {"field": field},
    )
