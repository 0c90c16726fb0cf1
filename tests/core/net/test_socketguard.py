"""The socket-level guard: what a library's own connections may reach, in the guarded thread only."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from fermix_cli.core.net.socketguard import GuardRefusal, guarded_sockets


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def test_private_addresses_are_refused_and_recorded(listener: int) -> None:
    with guarded_sockets([]) as guard:
        with pytest.raises(GuardRefusal):
            socket.create_connection(("127.0.0.1", listener), timeout=5)
        with pytest.raises(GuardRefusal):
            socket.create_connection(("localhost", listener), timeout=5)  # a local-only name
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            with pytest.raises(GuardRefusal):
                udp.sendto(b"x", ("127.0.0.1", 514))
            assert udp.connect_ex(("10.0.0.1", 80)) != 0
        finally:
            udp.close()
    assert [e.details["reason"] for e in guard.refusals] == [
        "non_global_address",
        "blocked_name",
        "non_global_address",
        "non_global_address",
    ]
    assert all(e.code == "blocked_url" for e in guard.refusals)


def test_an_allowed_name_approves_its_addresses_for_its_port_only(listener: int) -> None:
    other = socket.create_server(("127.0.0.1", 0))
    try:
        with guarded_sockets(["localhost"]) as guard:
            socket.create_connection(("localhost", listener), timeout=5).close()
            # The same address on another port was not asked for by name: refused (a redirect's trick).
            with pytest.raises(GuardRefusal):
                socket.create_connection(("127.0.0.1", other.getsockname()[1]), timeout=5)
        assert len(guard.refusals) == 1
        with guarded_sockets(["127.0.0.1"]):  # an allowed literal: any port
            socket.create_connection(("127.0.0.1", other.getsockname()[1]), timeout=5).close()
    finally:
        other.close()


def test_other_threads_are_untouched_and_patches_go_away(listener: int) -> None:
    originals = (socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto)
    outcome: list[str] = []
    with guarded_sockets([]):

        def elsewhere() -> None:
            socket.create_connection(("127.0.0.1", listener), timeout=5).close()
            outcome.append("connected")

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join(10)
    assert outcome == ["connected"]
    assert (socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto) == (
        originals
    )
    socket.create_connection(("127.0.0.1", listener), timeout=5).close()
