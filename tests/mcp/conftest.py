"""Shared MCP test servers: the SDK stub over HTTP, started once per test process (it takes ~2 s)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

STUB = Path(__file__).with_name("stub_mcp_server.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stub(mode: str) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(STUB), mode, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail(f"the stub {mode} server did not start")
    yield f"http://127.0.0.1:{port}/{'mcp' if mode == 'http' else 'sse'}"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def http_server() -> Iterator[str]:
    """The SDK stub over Streamable HTTP (stateful: one session per client)."""
    yield from start_stub("http")


@pytest.fixture(scope="session")
def sse_server() -> Iterator[str]:
    """The SDK stub over the legacy HTTP+SSE transport."""
    yield from start_stub("sse")
