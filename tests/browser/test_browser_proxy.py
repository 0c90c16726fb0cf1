"""The warden's guarding proxy against real headless Chromium: WebSockets, the DNS window, its own ports.

Pages and a WebSocket echo server listen on every address, so 127.0.0.2 (not allowed) would really
answer if the guard let a connection through, and the servers record what reached them.

The warden's lookups go through `FERMIX_BROWSER_TEST_RESOLVER` (see `fermix_cli/browser/warden.py`):
`echo.test` answers 127.0.0.1 and is an allowed host; `rebind.test` answers a public address to the first
lookup and 127.0.0.2 to every later one. Neither name resolves on this machine, so Chromium can reach
them only through the proxy's own lookup.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.browser_world import BrowserWorld, Site, html, make_world, needs_chromium

pytestmark = needs_chromium

PUBLIC = "93.184.216.34"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserWorld]:
    root = tmp_path_factory.mktemp("proxy")
    config = '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1", "echo.test"]\n'
    made = make_world(root, config)
    answers = {"echo.test": [["127.0.0.1"]], "rebind.test": [[PUBLIC], ["127.0.0.2"]]}
    (root / "resolver.json").write_text(json.dumps(answers))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FERMIX_BROWSER_TEST_RESOLVER", str(root / "resolver.json"))
        made.call({"action": "start"})
    yield made
    made.call({"action": "stop"})


class EchoServer:
    """A WebSocket echo server on every address; `paths` lists the connections that reached it."""

    def __init__(self) -> None:
        from websockets.sync.server import ServerConnection, serve

        self.paths: list[str] = []

        def echo(ws: ServerConnection) -> None:
            self.paths.append(ws.request.path if ws.request else "")
            for message in ws:
                ws.send(f"echo {message!s}")

        self.server = serve(echo, "0.0.0.0", 0)
        self.port = int(self.server.socket.getsockname()[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.server.shutdown()


class UDPServer:
    """A UDP socket on every address; `senders` lists where each datagram came from."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("0.0.0.0", 0))
        self.port = int(self.sock.getsockname()[1])
        self.senders: list[tuple[str, int]] = []
        threading.Thread(target=self._receive, daemon=True).start()

    def _receive(self) -> None:
        while True:
            try:
                _, sender = self.sock.recvfrom(4096)
            except OSError:
                return
            self.senders.append(sender)


@pytest.fixture(scope="module")
def stun() -> Iterator[UDPServer]:
    server = UDPServer()
    yield server
    server.sock.close()


def ws_page(url: str) -> tuple[int, dict[str, str], bytes]:
    return html(
        f"""<p id="out">waiting</p><script>
const out = document.getElementById('out'); const ws = new WebSocket({json.dumps(url)});
ws.onopen = () => ws.send('ping'); ws.onmessage = e => {{ out.textContent = 'got ' + e.data; }};
ws.onerror = () => {{ out.textContent = 'ws refused'; }};</script>""",
        "WebSocket",
    )


@pytest.fixture(scope="module")
def site(page_server: Callable[..., Site], echo: EchoServer, stun: UDPServer, world: BrowserWorld) -> Site:
    made: Site = page_server({"/secret": html("secret", "Secret")})
    record = json.loads((world.fermix_home / "run" / "browser" / "fermix.json").read_text())
    pages = {
        "/ws-private": ws_page(f"ws://127.0.0.2:{echo.port}/private"),
        "/ws-allowed": ws_page(f"ws://127.0.0.1:{echo.port}/allowed"),
        "/ws-named": ws_page(f"ws://echo.test:{echo.port}/named"),
        "/ws-devtools": ws_page(record["ws_url"]),
        "/ws-proxy": ws_page(f"ws://127.0.0.1:{record['proxy_port']}/"),
        "/webrtc": html(
            f"""<p id="out">waiting</p><script>
const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.2:{stun.port}'}}]}});
pc.createDataChannel('x');
const wt = new WebTransport('https://127.0.0.2:{stun.port}/');
const failed = wt.ready.then(() => 'opened', () => 'failed');
const gathered = new Promise(done => {{ pc.onicecandidate = e => {{ if (!e.candidate) done(); }}; }});
pc.createOffer().then(offer => pc.setLocalDescription(offer));
Promise.all([gathered, failed]).then(([, how]) => {{
  document.getElementById('out').textContent = 'gathered, webtransport ' + how; }});</script>""",
            "WebRTC",
        ),
        "/rebind": html(
            f"""<p id="out">waiting</p><script>
fetch('http://rebind.test:{made.port}/secret').then(r => {{ document.getElementById('out').textContent =
  'status ' + r.status; }}).catch(() => {{ document.getElementById('out').textContent = 'fetch refused'; }});
</script>""",
            "Rebind",
        ),
    }  # fmt: skip
    made.pages.update(pages)
    return made


def outcome(world: BrowserWorld, site: Site, path: str, text: str) -> list[dict[str, Any]]:
    """Load `path`, wait for `text` in the page, and return the console messages since."""
    world.call({"action": "navigate", "url": site.url(path)})
    world.call({"action": "act", "kind": "wait", "wait_until": "text", "text": text, "timeout_ms": 10_000})
    return list(world.call({"action": "console"})["messages"])


def refusals(messages: list[dict[str, Any]], needle: str) -> list[str]:
    return [m["text"] for m in messages if m["level"] == "blocked" and needle in m["text"]]


def test_a_websocket_to_a_private_address_is_refused(
    world: BrowserWorld, site: Site, echo: EchoServer
) -> None:
    messages = outcome(world, site, "/ws-private", "ws refused")
    assert "/private" not in echo.paths  # the connection never reached the server
    assert refusals(messages, f"CONNECT 127.0.0.2:{echo.port}")


def test_a_websocket_to_an_allowed_host_works_end_to_end(
    world: BrowserWorld, site: Site, echo: EchoServer
) -> None:
    outcome(world, site, "/ws-allowed", "got echo ping")
    assert "/allowed" in echo.paths


def test_the_proxy_connects_to_the_address_it_judged(
    world: BrowserWorld, site: Site, echo: EchoServer
) -> None:
    # echo.test resolves nowhere but in the warden: the connection can only have gone to its judged answer.
    outcome(world, site, "/ws-named", "got echo ping")
    assert "/named" in echo.paths


def test_a_host_changing_its_answer_after_the_check_is_refused(world: BrowserWorld, site: Site) -> None:
    # The warden's request check sees the public answer; the connection's own lookup sees 127.0.0.2.
    messages = outcome(world, site, "/rebind", "fetch refused")
    assert "/secret" not in site.seen
    refused = refusals(messages, "rebind.test")
    assert refused and "127.0.0.2" in refused[0] and "GET http://rebind.test" in refused[0]


@pytest.mark.parametrize("path", ["/ws-devtools", "/ws-proxy"])
def test_a_page_cannot_reach_the_browsers_own_ports(world: BrowserWorld, site: Site, path: str) -> None:
    record = json.loads((world.fermix_home / "run" / "browser" / "fermix.json").read_text())
    port = record["port"] if path == "/ws-devtools" else record["proxy_port"]
    messages = outcome(world, site, path, "ws refused")
    refused = refusals(messages, f"CONNECT 127.0.0.1:{port}")
    assert refused and "own DevTools or proxy port" in refused[0]
    # The browser is still there and answering.
    assert world.call({"action": "status"})["responding"] is True


def test_webrtc_and_webtransport_send_no_udp_past_the_proxy(
    world: BrowserWorld, site: Site, stun: UDPServer
) -> None:
    # A STUN server and a WebTransport (QUIC) server on a private address: without the proxy and
    # `--webrtc-ip-handling-policy`, Chromium sends both UDP directly, which nothing guards.
    outcome(world, site, "/webrtc", "gathered, webtransport failed")
    time.sleep(0.5)
    assert stun.senders == []


def test_navigating_to_the_browsers_own_ports_is_refused_up_front(world: BrowserWorld) -> None:
    record = json.loads((world.fermix_home / "run" / "browser" / "fermix.json").read_text())
    for port in (record["port"], record["proxy_port"]):
        refused = world.error({"action": "navigate", "url": f"http://127.0.0.1:{port}/json/version"})
        assert refused.code == "navigation_blocked" and "own DevTools or proxy port" in refused.message


def test_the_launch_record_names_the_proxy(world: BrowserWorld) -> None:
    record = json.loads((world.fermix_home / "run" / "browser" / "fermix.json").read_text())
    cmdline = Path(f"/proc/{record['pid']}/cmdline").read_bytes().split(b"\0")
    assert f"--proxy-server=http://127.0.0.1:{record['proxy_port']}".encode() in cmdline
    assert b"--proxy-bypass-list=<-loopback>" in cmdline


def test_doctor_probes_the_proxy(world: BrowserWorld) -> None:
    checks = {c["name"]: c for c in world.call({"action": "doctor"})["checks"]}
    assert checks["guard_proxy"]["ok"] is True, checks["guard_proxy"]
    assert world.call({"action": "status"})["proxy_port"] > 0


def test_a_browser_started_without_the_proxy_is_closed_not_driven(world: BrowserWorld) -> None:
    # Last in the module: it closes the module's browser. A launch record from a fermix before the proxy.
    path = world.fermix_home / "run" / "browser" / "fermix.json"
    record = json.loads(path.read_text())
    del record["proxy_port"]
    path.write_text(json.dumps(record))
    lost = world.error({"action": "tabs"})
    assert lost.code == "host_lost" and "without the guarding proxy" in lost.message
    assert not path.exists()
    stat = Path(f"/proc/{record['pid']}/stat")
    assert not stat.exists() or stat.read_text().rpartition(")")[2].split()[0] in ("Z", "X")  # killed
