"""A 127.0.0.1 server that replays recorded-shape event streams (see wire_dialects.py), one per request.

Each event is written in two writes, cut inside its first multi-byte UTF-8 character when it has one,
so a client must decode across network reads. Requests are kept in `seen` for the tests to inspect.
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any


def split_mid_character(data: bytes) -> list[bytes]:
    """Two pieces cut inside the first multi-byte character, or the data whole when it has none."""
    for i, byte in enumerate(data):
        if byte >= 0xC0:  # the lead byte of a multi-byte sequence: cut after it
            return [data[: i + 1], data[i + 1 :]]
    return [data]


class ReplayServer:
    def __init__(self) -> None:
        self.streams: list[list[str]] = []
        self.seen: list[dict[str, Any]] = []
        # Whole replies before any stream: (status, body) as JSON, or (status, body, content type).
        self.status: list[tuple[int, str] | tuple[int, str, str]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                owner.seen.append(json.loads(self.rfile.read(length) or b"{}"))
                if owner.status:
                    code, body, *kind = owner.status.pop(0)
                    data = body.encode()
                    self.send_response(code)
                    self.send_header("content-type", kind[0] if kind else "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                events = owner.streams.pop(0) if owner.streams else []
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in events:
                    for piece in split_mid_character(event.encode()):
                        self.wfile.write(piece)
                        self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def queue(self, *streams: list[str]) -> None:
        self.streams.extend(streams)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
