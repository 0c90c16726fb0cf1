"""127.0.0.1 stand-ins for the channels' remote ends, speaking their wire formats, and config helpers.

`TelegramStandIn` answers the Bot API (`/bot<token>/sendMessage`, `/bot<token>/sendDocument`) from a
script of replies (ok by default) and records every request; `FlakyReceiver` is a webhook receiver that
answers a scripted list of failures before it accepts.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from fermix_cli.core.config import load_config
from tests.tools.webfakes import FakeWeb, Hit, Reply, json_reply

TOKEN = "123456789:AAE-secret_token_value_0123456789ab"


class TelegramStandIn:
    """The Bot API for one token: replies come from `script` (first in, first out), then ok."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.web = FakeWeb()
        self.script: list[Reply] = []
        self.next_id = 100
        for method in ("sendMessage", "sendDocument"):
            self.web.routes[f"/bot{token}/{method}"] = self._answer

    def _answer(self, hit: Hit) -> Reply:
        if self.script:
            return self.script.pop(0)
        self.next_id += 1
        return json_reply({"ok": True, "result": {"message_id": self.next_id, "chat": {"id": 42}}})

    @property
    def api_base(self) -> str:
        return self.web.url("")

    def calls(self, method: str) -> list[Hit]:
        return self.web.hits_on(f"/bot{self.token}/{method}")

    def fail(self, error_code: int, description: str, **parameters: Any) -> None:
        """Queue one Bot API error answer."""
        body: dict[str, Any] = {"ok": False, "error_code": error_code, "description": description}
        if parameters:
            body["parameters"] = parameters
        self.script.append(json_reply(body, status=error_code))

    def close(self) -> None:
        self.web.close()


def multipart(hit: Hit) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body as {field: (filename, bytes)}."""
    head = f"Content-Type: {hit.headers['content-type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + hit.body)
    out: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[str(name)] = (part.get_filename(), part.get_payload(decode=True))
    return out


@pytest.fixture
def telegram() -> Iterator[TelegramStandIn]:
    standin = TelegramStandIn()
    try:
        yield standin
    finally:
        standin.close()


@pytest.fixture
def web() -> Iterator[FakeWeb]:
    server = FakeWeb()
    try:
        yield server
    finally:
        server.close()


def write_config(home: Path, data: dict[str, Any], *, allow_local: bool = True) -> Path:
    """config.toml in `home` with `data`'s tables, 127.0.0.1 allowed through the network guard."""
    doc = json.loads(json.dumps(data))
    core = doc.setdefault("fermix_core", {})
    core.setdefault("net", {"allowed_private_hosts": ["127.0.0.1"] if allow_local else []})
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


def config_with(home: Path, data: dict[str, Any], *, allow_local: bool = True) -> Any:
    return load_config(write_config(home, data, allow_local=allow_local))


def telegram_section(standin: TelegramStandIn, **extra: Any) -> dict[str, Any]:
    return {
        "fermix_core": {
            "channels": {"telegram": {"bot_token": standin.token, "api_base": standin.api_base, **extra}}
        }
    }
