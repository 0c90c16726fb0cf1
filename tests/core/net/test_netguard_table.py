"""The network guard's address table and URL rules, one row per address or spelling.

The end-to-end rows run the real guarded client; its socket backend is replaced by one that records
the address the guard chose and stops there, so nothing leaves the machine.
"""

from __future__ import annotations

import ast
import ipaddress
import socket
from pathlib import Path

import httpcore
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.guard import (
    HostGuard,
    check_url,
    normalise_allowed_host,
    normalise_host,
    redact_url,
)
from fermix_cli.core.net.guarded import guarded_client
from fermix_cli.core.net.iptable import IPV4_TABLE, IPV6_TABLE, blocked_range, is_blocked_address

# Names the fake DNS knows; anything else goes to the system resolver in numeric-only mode, which
# applies the C library's inet_aton rules (decimal, hex, octal, short forms) without any network.
FAKE_DNS = {
    "public-v4.test": ["93.184.216.34"],
    "public-v6.test": ["2606:2800:220:1:248:1893:25c8:1946"],
    "public-both.test": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "one-private.test": ["93.184.216.34", "10.0.0.5"],
    "private-last-v6.test": ["2606:2800:220:1:248:1893:25c8:1946", "::1"],
    "metadata.test": ["169.254.169.254"],
    "cgnat.test": ["100.64.0.1"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "zoned.test": ["fe80::1%eth0"],
    "garbage.test": ["not-an-address"],
    "empty.test": [],
    "127.0.0.1.nip.test": ["127.0.0.1"],
}


def table_resolver(host: str) -> list[str]:
    if host in FAKE_DNS:
        return FAKE_DNS[host]
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    return [str(info[4][0]) for info in infos]


class Reached(Exception):
    """Raised by the recording socket backend instead of opening a socket."""


class RecordingBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self.addresses: list[str] = []

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, **_: object
    ) -> httpcore.NetworkStream:
        self.addresses.append(host)
        raise Reached(host)


PASS, BLOCKED, NAME, DNS = "pass", "blocked", "blocked_name", "dns_resolution_failed"

# (url, verdict, address): for PASS the address connected to; for BLOCKED the address reported.
ROWS: list[tuple[str, str, str | None]] = [
    # IPv4 literals, judged directly
    ("http://127.0.0.1/", BLOCKED, "127.0.0.1"),
    ("http://127.255.255.254/", BLOCKED, "127.255.255.254"),
    ("http://10.0.0.1/", BLOCKED, "10.0.0.1"),
    ("http://10.255.255.255/", BLOCKED, "10.255.255.255"),
    ("http://172.16.0.1/", BLOCKED, "172.16.0.1"),
    ("http://172.31.255.255/", BLOCKED, "172.31.255.255"),
    ("http://192.168.1.1/", BLOCKED, "192.168.1.1"),
    ("http://169.254.169.254/latest/meta-data/", BLOCKED, "169.254.169.254"),
    ("http://169.254.0.1/", BLOCKED, "169.254.0.1"),
    ("http://100.64.0.1/", BLOCKED, "100.64.0.1"),
    ("http://100.127.255.254/", BLOCKED, "100.127.255.254"),
    ("http://0.0.0.0/", BLOCKED, "0.0.0.0"),
    ("http://0.1.2.3/", BLOCKED, "0.1.2.3"),
    ("http://192.0.0.8/", BLOCKED, "192.0.0.8"),
    ("http://192.0.2.1/", BLOCKED, "192.0.2.1"),
    ("http://198.51.100.7/", BLOCKED, "198.51.100.7"),
    ("http://203.0.113.9/", BLOCKED, "203.0.113.9"),
    ("http://198.18.0.1/", BLOCKED, "198.18.0.1"),
    ("http://198.19.255.255/", BLOCKED, "198.19.255.255"),
    ("http://192.88.99.1/", BLOCKED, "192.88.99.1"),
    ("http://224.0.0.1/", BLOCKED, "224.0.0.1"),
    ("http://239.255.255.250:1900/", BLOCKED, "239.255.255.250"),
    ("http://240.0.0.1/", BLOCKED, "240.0.0.1"),
    ("http://255.255.255.255/", BLOCKED, "255.255.255.255"),
    ("http://127.0.0.1./", BLOCKED, "127.0.0.1"),
    # IPv4 literals next to the blocked ranges, and public ones
    ("http://8.8.8.8/", PASS, "8.8.8.8"),
    ("https://1.1.1.1/", PASS, "1.1.1.1"),
    ("http://172.15.255.255/", PASS, "172.15.255.255"),
    ("http://172.32.0.1/", PASS, "172.32.0.1"),
    ("http://100.63.255.255/", PASS, "100.63.255.255"),
    ("http://100.128.0.1/", PASS, "100.128.0.1"),
    ("http://198.20.0.1/", PASS, "198.20.0.1"),
    ("http://11.0.0.1:8080/", PASS, "11.0.0.1"),
    # IPv6 literals
    ("http://[::1]/", BLOCKED, "::1"),
    ("http://[::]/", BLOCKED, "::"),
    ("http://[::2]/", BLOCKED, "::2"),
    ("http://[::ffff:127.0.0.1]/", BLOCKED, "::ffff:7f00:1"),
    ("http://[::ffff:10.0.0.1]/", BLOCKED, "::ffff:a00:1"),
    ("http://[::ffff:a9fe:a9fe]/", BLOCKED, "::ffff:a9fe:a9fe"),
    ("http://[::ffff:100.64.0.1]/", BLOCKED, "::ffff:6440:1"),
    ("http://[::127.0.0.1]/", BLOCKED, "::7f00:1"),
    ("http://[::8.8.8.8]/", BLOCKED, "::808:808"),
    ("http://[64:ff9b::7f00:1]/", BLOCKED, "64:ff9b::7f00:1"),
    ("http://[64:ff9b::808:808]/", BLOCKED, "64:ff9b::808:808"),
    ("http://[64:ff9b:1::a00:1]/", BLOCKED, "64:ff9b:1::a00:1"),
    ("http://[2002:7f00:1::]/", BLOCKED, "2002:7f00:1::"),
    ("http://[2002:c0a8:101::1]/", BLOCKED, "2002:c0a8:101::1"),
    ("http://[2001::1]/", BLOCKED, "2001::1"),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", BLOCKED, "2001:0:4136:e378:8000:63bf:3fff:fdd2"),
    ("http://[fc00::1]/", BLOCKED, "fc00::1"),
    ("http://[fd12:3456:789a::1]/", BLOCKED, "fd12:3456:789a::1"),
    ("http://[fe80::1]/", BLOCKED, "fe80::1"),
    ("http://[fe80::1%25eth0]/", BLOCKED, "fe80::1"),
    ("http://[febf:ffff::1]/", BLOCKED, "febf:ffff::1"),
    ("http://[fec0::1]/", BLOCKED, "fec0::1"),
    ("http://[ff02::1]/", BLOCKED, "ff02::1"),
    ("http://[ff05::1:3]/", BLOCKED, "ff05::1:3"),
    ("http://[100::1]/", BLOCKED, "100::1"),
    ("http://[2001:db8::1]/", BLOCKED, "2001:db8::1"),
    ("http://[2001:10::1]/", BLOCKED, "2001:10::1"),
    ("http://[2001:20::1]/", BLOCKED, "2001:20::1"),
    ("http://[3fff::1]/", BLOCKED, "3fff::1"),
    ("http://[1::1]/", BLOCKED, "1::1"),
    ("http://[2606:4700:4700::1111]/", PASS, "2606:4700:4700::1111"),
    ("https://[2001:4860:4860::8888]:8443/", PASS, "2001:4860:4860::8888"),
    ("http://[2a00:1450:4001::200e]/", PASS, "2a00:1450:4001::200e"),
    ("http://[2001:200::1]/", PASS, "2001:200::1"),
    ("http://[::ffff:8.8.8.8]/", PASS, "::ffff:808:808"),
    # Odd IPv4 spellings: not literals for the guard, so the resolver decides and its answer is judged
    ("http://2130706433/", BLOCKED, "127.0.0.1"),
    ("http://0x7f.0.0.1/", BLOCKED, "127.0.0.1"),
    ("http://0177.0.0.1/", BLOCKED, "127.0.0.1"),
    ("http://127.1/", BLOCKED, "127.0.0.1"),
    ("http://012.0.0.1/", BLOCKED, "10.0.0.1"),
    ("http://0x7f000001/", BLOCKED, "127.0.0.1"),
    ("http://017700000001/", BLOCKED, "127.0.0.1"),
    ("http://0xa9.0xfe.0xa9.0xfe/", BLOCKED, "169.254.169.254"),
    ("http://2852039166/", BLOCKED, "169.254.169.254"),
    ("http://10.1/", BLOCKED, "10.0.0.1"),
    ("http://0/", BLOCKED, "0.0.0.0"),
    ("http://134744072/", PASS, "8.8.8.8"),
    ("http://0x8.0x8.0x8.0x8/", PASS, "8.8.8.8"),
    ("http://8.8.2056/", PASS, "8.8.8.8"),
    # Unicode spellings that IDNA (UTS-46, NFKC) maps onto a literal
    ("http://127。0。0。1/", BLOCKED, "127.0.0.1"),
    ("http://①②⑦.0.0.1/", BLOCKED, "127.0.0.1"),
    ("http://１２７．０．０．１/", BLOCKED, "127.0.0.1"),
    ("http://⑩.0.0.1/", BLOCKED, "10.0.0.1"),
    # Names answered by the fake DNS: every answer is judged
    ("http://public-v4.test/", PASS, "93.184.216.34"),
    ("http://public-v6.test/", PASS, "2606:2800:220:1:248:1893:25c8:1946"),
    ("http://PUBLIC-BOTH.test./", PASS, "93.184.216.34"),
    ("http://one-private.test/", BLOCKED, "10.0.0.5"),
    ("http://private-last-v6.test/", BLOCKED, "::1"),
    ("http://metadata.test/", BLOCKED, "169.254.169.254"),
    ("http://cgnat.test/", BLOCKED, "100.64.0.1"),
    ("http://mapped.test/", BLOCKED, "::ffff:7f00:1"),
    ("http://zoned.test/", BLOCKED, "fe80::1"),
    ("http://garbage.test/", BLOCKED, "not-an-address"),
    ("http://127.0.0.1.nip.test/", BLOCKED, "127.0.0.1"),
    ("http://empty.test/", DNS, None),
    ("http://unknown.test/", DNS, None),
    # Local-only names, refused before any lookup
    ("http://localhost/", NAME, None),
    ("http://LOCALHOST:8080/", NAME, None),
    ("http://localhost./", NAME, None),
    ("http://ｌｏｃａｌｈｏｓｔ/", NAME, None),
    ("http://api.localhost/", NAME, None),
    ("http://printer.local/", NAME, None),
    ("http://metadata.google.internal/", NAME, None),
    ("http://router.home.arpa/", NAME, None),
]


@pytest.fixture(scope="module")
def recorder_client():
    backend = RecordingBackend()
    with guarded_client(resolver=table_resolver, socket_backend=backend) as client:
        yield client, backend


def test_table_is_large_enough() -> None:
    assert len(ROWS) >= 60
    assert {verdict for _url, verdict, _ip in ROWS} == {PASS, BLOCKED, NAME, DNS}


@pytest.mark.parametrize(("url", "verdict", "address"), ROWS, ids=[row[0] for row in ROWS])
def test_guarded_client_judges_every_address(
    recorder_client, url: str, verdict: str, address: str | None
) -> None:
    client, backend = recorder_client
    backend.addresses.clear()
    if verdict == PASS:
        with pytest.raises(Reached):
            client.get(url)
        # The socket goes to the judged address, never to the name.
        assert backend.addresses == [address]
        return
    with pytest.raises(ToolError) as caught:
        client.get(url)
    error = caught.value
    # A name that does not resolve is a failure to reach it (exit 1), not a refusal (exit 3).
    assert error.code == ("dns_failure" if verdict == DNS else "blocked_url")
    assert error.details["reason"] in {"non_global_address", "non_global_answer", NAME, DNS}
    assert backend.addresses == []
    if verdict == BLOCKED:
        assert error.details["ip"] == address
        assert "[fermix_core.net] allowed_private_hosts" in error.message
        if error.details["reason"] == "non_global_answer":
            assert error.message.startswith(f"resolved to {address} ")
    elif verdict == DNS:
        assert error.message.startswith(f"dns_resolution_failed ({url.split('/')[2]})")
    else:
        assert error.details["reason"] == NAME


# (url, reason, message) for the syntax rules of reference step 1.
SYNTAX_ROWS = [
    ("", "empty_url", "empty_url"),
    ("http://example.com/a b", "url_has_whitespace", "url_has_whitespace"),
    (" http://example.com/", "url_has_whitespace", "url_has_whitespace"),
    ("http://example.com/\t", "url_has_whitespace", "url_has_whitespace"),
    ("http://exa\u3000mple.com/", "url_has_whitespace", "url_has_whitespace"),
    ("http://example.com/\x00", "invalid_url", None),
    ("ftp://example.com/", "unsupported_scheme", None),
    ("file:///etc/passwd", "unsupported_scheme", None),
    ("gopher://127.0.0.1:6379/_INFO", "unsupported_scheme", None),
    ("example.com/path", "unsupported_scheme", None),
    ("http:///path", "missing_host", None),
    ("http://:80/", "missing_host", None),
    ("http://user:pass@example.com/", "userinfo", None),
    ("http://example.com@127.0.0.1/", "userinfo", None),
    ("http://example.com\\@127.0.0.1/", "userinfo", None),
    ("http://example.com:99999/", "invalid_url", None),
    ("http://example.com:8o/", "invalid_url", None),
    ("http://[::1/", "invalid_url", None),
    ("http://::1:80/", "invalid_url", "invalid URL: IPv6 hosts must be written in [brackets]"),
    (
        "http://127.0.0.1:18777:80/echo",
        "invalid_url",
        "invalid URL: '127.0.0.1:18777:80' has more than one ':'; write host or host:port",
    ),
    ("http://a..b/", "invalid_host", None),
    ("http://exa%2Emple.com/", "invalid_host", None),
    ("http://" + "a" * 64 + ".com/", "invalid_host", None),
    ("http://example.com/" + "a" * 2030, "url_too_long", None),
]


@pytest.mark.parametrize(("url", "reason", "message"), SYNTAX_ROWS, ids=[row[0][:40] for row in SYNTAX_ROWS])
def test_syntax_rules(url: str, reason: str, message: str | None) -> None:
    with pytest.raises(ToolError) as caught:
        check_url(url)
    assert caught.value.code == "blocked_url"
    assert caught.value.details["reason"] == reason
    if message is not None:
        assert caught.value.message == message


@pytest.mark.parametrize(
    "url",
    [
        "https://alice:S3cretPW@example.com/",
        "https://alice:S3cretPW@example.com/a b",
        "https://alice:S3cretPW@example.com/\x01",
        "https://alice:S3cretPW@example.com:99999/",
        "ftp://alice:S3cretPW@example.com/",
        "https://example.com/a b?api_key=S3cretPW&x=1",
        "gopher://example.com/?access-token=S3cretPW",
        "https://alice:S3cretPW@example.com/" + "a" * 2040,
    ],
)
def test_refusals_never_echo_credentials(url: str) -> None:
    with pytest.raises(ToolError) as caught:
        check_url(url)
    assert "S3cretPW" not in caught.value.message and "S3cretPW" not in str(caught.value.details)
    assert "***" in caught.value.details["url"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://alice:pw@example.com/x?q=1", "https://***@example.com/x?q=1"),
        (
            "https://example.com/x?api_key=k&q=1#id_token=t",
            "https://example.com/x?api_key=***&q=1#id_token=***",
        ),
        (
            "https://example.com/x?API-Key=k&Token=t&keyword=fine",
            "https://example.com/x?API-Key=***&Token=***&keyword=fine",
        ),
        ("https://example.com/x?q=1", "https://example.com/x?q=1"),
        ("http://u:p@[::1/x?token=t&a=1#sig=s", "http://***@[::1/x?token=***&a=1#sig=***"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_url_of_exactly_2048_bytes_passes() -> None:
    url = "http://example.com/" + "a" * (2048 - len("http://example.com/"))
    assert check_url(url).url == url
    with pytest.raises(ToolError):
        check_url(url + "a")


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("HTTP://Example.COM./a?b=1#frag", "http://example.com/a?b=1"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("http://bücher.de/", "http://xn--bcher-kva.de/"),
        ("http://[2001:DB8:0::1]:8080/", "http://[2001:db8::1]:8080/"),
        ("http://my_host.example.com/", "http://my_host.example.com/"),
    ],
)
def test_urls_are_rebuilt_from_normalised_parts(url: str, normalised: str) -> None:
    assert check_url(url).url == normalised


@pytest.mark.parametrize(
    ("raw", "host"),
    [
        ("127。0。0。1", "127.0.0.1"),
        ("①②⑦.0.0.1", "127.0.0.1"),
        ("ＥＸＡＭＰＬＥ．ｃｏｍ", "example.com"),
        ("[::1]", "::1"),
    ],
)
def test_normalise_host(raw: str, host: str) -> None:
    assert normalise_host(raw) == host


def test_allowed_private_hosts_bypass_only_the_listed_hosts() -> None:
    guard = HostGuard(["127.0.0.1", "Intranet.Test.", "[::1]", "localhost"], resolver=table_resolver)
    assert guard.allowed_private_hosts == {"127.0.0.1", "intranet.test", "::1", "localhost"}
    assert guard.addresses("127.0.0.1") == ["127.0.0.1"]
    assert guard.addresses("::1") == ["::1"]
    for other in ("127.0.0.2", "2130706433", "127.0.0.1.nip.test", "api.localhost", "10.0.0.1"):
        with pytest.raises(ToolError):
            guard.addresses(other)


def test_allowed_name_skips_answer_judgement_but_still_pins() -> None:
    guard = HostGuard(["one-private.test"], resolver=table_resolver)
    assert guard.addresses("one-private.test") == ["93.184.216.34", "10.0.0.5"]
    with pytest.raises(ToolError):
        HostGuard([], resolver=table_resolver).addresses("one-private.test")


@pytest.mark.parametrize("entry", ["", "*.corp", "http://a/", "a:80", "user@a", "a..b"])
def test_unusable_allowed_host_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        normalise_allowed_host(entry)


@pytest.mark.parametrize("entry", ["127.0.0.1:18777", "[::1]:8080", "intranet.test:80"])
def test_an_allowed_host_with_a_port_says_ports_are_not_allowed(entry: str) -> None:
    with pytest.raises(ValueError, match="ports are not allowed"):
        normalise_allowed_host(entry)


def test_rebinding_within_one_request_is_refused() -> None:
    """The first answer is public and every later one private: the connection must not be made."""
    answers = iter([["93.184.216.34"]])

    def rebinding(host: str) -> list[str]:
        return next(answers, ["127.0.0.1"])

    backend = RecordingBackend()
    with (
        guarded_client(resolver=rebinding, socket_backend=backend) as client,
        pytest.raises(ToolError) as caught,
    ):
        client.get("http://rebind.test/")
    assert caught.value.message.startswith("resolved to 127.0.0.1")
    assert backend.addresses == []


# Addresses the standard library misjudges (reference 5.2); the table must not.
STDLIB_BLIND_SPOTS = ["100.64.0.1", "224.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "fec0::1"]


@pytest.mark.parametrize("address", STDLIB_BLIND_SPOTS)
def test_table_blocks_what_ipaddress_misjudges(address: str) -> None:
    assert is_blocked_address(address)


def test_guard_never_consults_ipaddress_flags() -> None:
    net = Path(__file__).resolve().parents[3] / "fermix_cli" / "core" / "net"
    for path in sorted(net.glob("*.py")):
        name = path.name
        tree = ast.parse(path.read_text())
        flags = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        assert not flags & {"is_global", "is_private", "is_reserved", "is_loopback", "is_link_local"}, name


def test_every_row_blocks_its_first_and_last_address() -> None:
    for row in (*IPV4_TABLE, *IPV6_TABLE):
        assert blocked_range(row.network.network_address) == row
        assert is_blocked_address(row.network.broadcast_address), row


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_mapped_is_judged_by_its_ipv4(value: int) -> None:
    v4 = ipaddress.IPv4Address(value)
    mapped = ipaddress.IPv6Address(f"::ffff:{v4}")
    assert is_blocked_address(mapped) == is_blocked_address(v4)


@given(st.sampled_from([*IPV4_TABLE, *IPV6_TABLE]), st.integers(min_value=0))
def test_any_address_inside_a_row_is_blocked(row, offset: int) -> None:
    address = row.network.network_address + offset % row.network.num_addresses
    assert is_blocked_address(address)


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_ipv6_outside_global_unicast_is_blocked(value: int) -> None:
    address = ipaddress.IPv6Address(value)
    if address.ipv4_mapped is None and address not in ipaddress.IPv6Network("2000::/3"):
        assert is_blocked_address(address)


def test_non_addresses_fail_closed() -> None:
    assert is_blocked_address("not-an-address")
    assert is_blocked_address("0177.0.0.1")


def test_a_url_with_credentials_is_told_to_drop_them_not_to_use_headers_no_caller_has() -> None:
    """The guard's advice is for every caller: the browser and `web` take no headers."""
    from fermix_cli.core.net.guard import check_url

    with pytest.raises(ToolError) as e:
        check_url("https://user:secret@example.com/")
    assert e.value.details["reason"] == "userinfo"
    assert "remove them" in e.value.message and "header" not in e.value.message
