"""Which URLs the browser may load: the guard's rules as the warden and navigation apply them (no browser)."""

from __future__ import annotations

import pytest

from fermix_cli.browser.netrules import check_navigation, judge
from fermix_cli.core.errors import ExitClass, ToolError
from fermix_cli.core.net.guard import HostGuard

ANSWERS = {
    "public.example": ["93.184.216.34"],
    "rebind.example": ["93.184.216.34", "10.0.0.5"],
    "metadata.example": ["169.254.169.254"],
    "v6local.example": ["::1"],
}


def resolver(host: str) -> list[str]:
    return ANSWERS.get(host, [])


GUARD = HostGuard(["127.0.0.1"], resolver)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://public.example/page", True),
        ("http://127.0.0.1:8080/allowed-for-tests", True),
        ("data:text/plain,hello", True),
        ("blob:https://public.example/1234", True),
        ("about:blank", True),
        ("http://127.0.0.2/", False),
        ("http://localhost/", False),
        ("http://printer.local/", False),
        ("http://10.1.2.3/", False),
        ("http://169.254.169.254/latest/meta-data/", False),
        ("http://[::1]/", False),
        ("http://[::ffff:10.0.0.1]/", False),
        ("http://100.64.0.1/", False),
        ("http://rebind.example/", False),
        ("http://metadata.example/", False),
        ("http://v6local.example/", False),
        ("file:///etc/passwd", False),
        ("chrome://settings/", False),
        ("javascript:alert(1)", False),
        ("ftp://public.example/", False),
        ("http://user:pw@public.example/", False),
    ],
)
def test_judge(url: str, allowed: bool) -> None:
    assert (judge(url, GUARD) is None) is allowed


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "chrome://version", "javascript:void(0)", "http://10.0.0.1/"]
)
def test_navigation_refusals_are_policy_refusals(url: str) -> None:
    with pytest.raises(ToolError) as caught:
        check_navigation(url, GUARD)
    assert caught.value.code == "navigation_blocked"
    assert caught.value.exit_class == ExitClass.REFUSED


def test_navigation_allows_about_blank_and_allowed_hosts() -> None:
    check_navigation("about:blank", GUARD)
    check_navigation("http://127.0.0.1:9/x", GUARD)
    check_navigation("https://public.example/", GUARD)
