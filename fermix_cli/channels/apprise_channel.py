"""Apprise, an optional extra (`pip install 'fermix[apprise]'`): the long tail of notification services.

A target names a `[fermix_core.channels.apprise.NAME]` block whose `url` is any Apprise URL
(`discord://...`, `mailto://...`, `json://host/path`, `apprise://host/key`, ...). Apprise is imported only
when such a target is delivered to; without it the delivery fails with `missing_extra`, naming the extra.

Apprise sends with its own network stack (requests, smtplib, ...), not fermix's guarded client, and its
plugins name their servers in many URL forms and follow redirects. So fermix judges the connections
themselves: Apprise runs in the calling thread inside `core.net.socketguard.guarded_sockets`, which checks
every name it resolves and every address it connects to with the network guard, whatever the URL scheme
and however many redirects led there. A host on this machine or the local network needs
`[fermix_core.net] allowed_private_hosts`; a refused connection fails the delivery with `blocked_url`
(permanent). Apprise's own redirect setting is turned off for the plugins that honour it.
Apprise reports only success or failure: its warnings become the error message, and every other failure
is transient (Apprise gives no rate-limit hint to honour).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .base import Capability, ChannelError, Sent
from .http import redact, url_secrets

# Apprise settings fermix needs: every plugin in the calling thread (where the socket guard watches),
# and no redirects for the plugins that honour the setting (older Apprise versions lack it).
ASSET_SETTINGS: dict[str, Any] = {"async_mode": False, "http_redirects": False}
EXTRA = "pip install 'fermix[apprise]'"


def _section(name: str) -> str:
    return f"[fermix_core.channels.apprise.{name}]"


class AppriseChannel:
    platform = "apprise"
    capabilities: frozenset[Capability] = frozenset({"text", "file"})
    max_text = (
        2000  # Discord's limit, the smallest of the common services; Apprise splits or cuts longer text
    )

    def __init__(self, config: Any) -> None:
        self.config = config

    def url(self, name: str) -> str:
        blocks = self.config.fermix_core.channels.apprise
        if name not in blocks:
            raise ChannelError(
                f"no Apprise URL named {name!r}: add a {_section(name)} block with its url.",
                code="not_configured",
                permanent=True,
            )
        settings = blocks[name]
        if settings.url is not None:
            return str(settings.url)
        value = os.environ.get(settings.url_env, "").strip()
        if not value:
            raise ChannelError(
                f"{_section(name)} url_env names {settings.url_env}, which is not set in this environment.",
                code="not_configured",
                permanent=True,
            )
        return value

    def _notify(self, address: str, text: str, meta: dict[str, Any], attach: Path | None) -> Sent:
        url = self.url(address)
        where = _section(address)
        try:
            import apprise
        except ImportError:
            raise ChannelError(
                f"{where} needs Apprise, an optional extra of fermix: {EXTRA}.",
                code="missing_extra",
                permanent=True,
            ) from None
        from ..core.net.socketguard import guarded_sockets

        asset = apprise.AppriseAsset(
            **{k: v for k, v in ASSET_SETTINGS.items() if hasattr(apprise.AppriseAsset, k)}
        )
        notifier = apprise.Apprise(asset=asset)
        if not notifier.add(url):
            raise ChannelError(
                f"{where}: Apprise does not recognise this URL; see its wiki for the URL forms.",
                code="invalid_address",
                permanent=True,
            )
        title = str(
            meta.get("title") or (f"fermix: {meta['job_name']}" if meta.get("job_name") else "fermix")
        )
        allowed = self.config.fermix_core.net.allowed_private_hosts
        with guarded_sockets(allowed) as guard, apprise.LogCapture(level=logging.WARNING) as captured:
            ok = notifier.notify(body=text, title=title, attach=str(attach) if attach else None)
            said = captured.getvalue() if hasattr(captured, "getvalue") else ""
        if not ok and guard.refusals:
            refused = redact(guard.refusals[0].message, url_secrets(url))
            raise ChannelError(
                f"{where}: the network guard refused a connection Apprise tried ({refused}). A host on this "
                "machine or the local network must be listed in [fermix_core.net] allowed_private_hosts.",
                code="blocked_url",
                permanent=True,
            )
        if not ok:
            lines = [line.split(" - ", 2)[-1] for line in str(said).splitlines() if line.strip()]
            detail = redact("; ".join(lines[-3:]), url_secrets(url)) or "no detail"
            raise ChannelError(
                f"{where}: Apprise could not deliver ({detail[:400]}).", code="delivery_failed"
            )
        return Sent(self.platform, address, {"service": urlsplit(url).scheme})

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        return self._notify(address, text, meta, None)

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        if not path.is_file():
            raise ChannelError(f"{path} is not a readable file.", code="unreadable_file", permanent=True)
        return self._notify(address, caption or path.name, meta, path)
