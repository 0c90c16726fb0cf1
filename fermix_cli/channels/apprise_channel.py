"""Apprise, an optional extra (`pip install 'fermix[apprise]'`): the long tail of notification services.

A target names a `[fermix_core.channels.apprise.NAME]` block whose `url` is any Apprise URL
(`discord://...`, `mailto://...`, `json://host/path`, `apprise://host/key`, ...). Apprise is imported only
when such a target is delivered to; without it the delivery fails with `missing_extra`, naming the extra.

Apprise sends with its own HTTP stack (requests), not fermix's guarded client. For the URL forms that name
an arbitrary host (`json`, `xml`, `form`, `ntfy`, `apprise` and their TLS twins) fermix judges that host
with the network guard first, so a host on this machine or the local network still needs
`[fermix_core.net] allowed_private_hosts`; the connection itself is not pinned to the checked address.
Apprise reports only success or failure: its warnings become the error message, and every failure is
transient (Apprise gives no rate-limit hint to honour).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import ToolError
from .base import Capability, ChannelError, Sent
from .http import redact

# URL schemes whose host part is the server Apprise connects to.
HOST_SCHEMES = frozenset(
    {"json", "jsons", "xml", "xmls", "form", "forms", "ntfy", "ntfys", "apprise", "apprises"}
)
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

    def _guard(self, url: str, where: str) -> None:
        parts = urlsplit(url)
        if parts.scheme.lower() not in HOST_SCHEMES or not parts.hostname:
            return
        from ..core.net.guard import HostGuard

        try:
            HostGuard(self.config.fermix_core.net.allowed_private_hosts).addresses(parts.hostname)
        except ToolError as e:
            raise ChannelError(
                f"{where}: the network guard refused host {parts.hostname} ({redact(e.message, [url])}). A host on "
                "this machine or the local network must be listed in [fermix_core.net] allowed_private_hosts.",
                code="blocked_url",
                permanent=True,
            ) from None

    def _notify(self, address: str, text: str, meta: dict[str, Any], attach: Path | None) -> Sent:
        url = self.url(address)
        where = _section(address)
        self._guard(url, where)
        try:
            import apprise
        except ImportError:
            raise ChannelError(
                f"{where} needs Apprise, an optional extra of fermix: {EXTRA}.",
                code="missing_extra",
                permanent=True,
            ) from None
        notifier = apprise.Apprise()
        if not notifier.add(url):
            raise ChannelError(
                f"{where}: Apprise does not recognise this URL; see its wiki for the URL forms.",
                code="invalid_address",
                permanent=True,
            )
        title = str(
            meta.get("title") or (f"fermix: {meta['job_name']}" if meta.get("job_name") else "fermix")
        )
        with apprise.LogCapture(level=logging.WARNING) as captured:
            ok = notifier.notify(body=text, title=title, attach=str(attach) if attach else None)
            said = captured.getvalue() if hasattr(captured, "getvalue") else ""
        if not ok:
            lines = [line.split(" - ", 2)[-1] for line in str(said).splitlines() if line.strip()]
            detail = redact("; ".join(lines[-3:]), [url]) or "no detail"
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
