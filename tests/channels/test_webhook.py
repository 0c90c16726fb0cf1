"""The webhook channel against a 127.0.0.1 receiver: body formats, Retry-After, permanence, the URL kept secret."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.channels import ChannelError, channel_for
from fermix_cli.channels.http import parse_retry_after
from fermix_cli.channels.webhook import TEXT_MAX
from fermix_cli.core.paths import resolve_paths
from tests.channels.standins import config_with
from tests.tools.webfakes import FakeWeb, Hit, Reply

SECRET_PATH = "/services/T000/B000/s3cr3tHookKey"


def hook(tmp_path: Path, web: FakeWeb, name: str = "mine", *, allow_local: bool = True, **block: Any):
    home = tmp_path / "home"
    block = {"url": web.url(SECRET_PATH), **block}
    config = config_with(
        home, {"fermix_core": {"channels": {"webhooks": {name: block}}}}, allow_local=allow_local
    )
    found = channel_for("webhook", resolve_paths(str(home)), config)
    assert found is not None and found.capabilities == {"text"}
    return found


class Flaky:
    """A receiver that answers the scripted failures first, then 200."""

    def __init__(self, failures: list[Reply]) -> None:
        self.failures = failures

    def __call__(self, hit: Hit) -> Reply:
        return self.failures.pop(0) if self.failures else Reply(200, b"ok")


def test_a_receiver_that_fails_twice_then_succeeds(tmp_path: Path, web: FakeWeb) -> None:
    later = format_datetime(datetime.fromtimestamp(datetime.now(UTC).timestamp() + 120, UTC), usegmt=True)
    web.routes[SECRET_PATH] = Flaky(
        [Reply(503, b"maintenance", {"Retry-After": "7"}), Reply(429, b"slow down", {"Retry-After": later})]
    )
    channel = hook(tmp_path, web)
    errors: list[ChannelError] = []
    for _ in range(3):
        try:
            sent = channel.send_text("mine", "disk is full", {"job_id": "disk"})
        except ChannelError as e:
            errors.append(e)
    first, second = errors
    assert (first.code, first.retry_after, first.permanent) == ("unavailable", 7.0, False)
    assert second.code == "rate_limited" and not second.permanent
    assert second.retry_after is not None and 100 <= second.retry_after <= 121
    assert sent.as_dict() == {
        "platform": "webhook",
        "address": "mine",
        "status": 200,
        "format": "json",
        "truncated": False,
    }
    bodies = [h.json() for h in web.hits_on(SECRET_PATH)]
    assert len(bodies) == 3 and all(b == {"job_id": "disk", "text": "disk is full"} for b in bodies)


@pytest.mark.parametrize(
    ("status", "code", "permanent"),
    [
        (400, "rejected", True),
        (401, "rejected", True),
        (404, "rejected", True),
        (410, "rejected", True),
        (408, "unavailable", False),
        (500, "unavailable", False),
        (429, "rate_limited", False),
        (302, "redirected", True),
    ],
)
def test_status_codes_map_to_permanent_or_transient(
    tmp_path: Path, web: FakeWeb, status: int, code: str, permanent: bool
) -> None:
    web.routes[SECRET_PATH] = Reply(status, b"no", {"Location": "http://127.0.0.1:1/elsewhere"})
    with pytest.raises(ChannelError) as e:
        hook(tmp_path, web).send_text("mine", "x", {})
    assert (e.value.code, e.value.permanent, e.value.retry_after) == (code, permanent, None)
    assert "s3cr3tHookKey" not in str(e.value) and "[fermix_core.channels.webhooks.mine]" in str(e.value)


def test_a_404_page_that_echoes_the_path_does_not_leak_the_token(tmp_path: Path, web: FakeWeb) -> None:
    path = "/hooks/T0001/B0001/XyZsecretTokenABC123"
    echo = f"<pre>Cannot POST {path}</pre> (lower: {path.lower()}) ?key=qUeRyToKeN99 {web.url(path)}"
    web.routes[path] = Reply(404, echo.encode(), {"Content-Type": "text/html"})
    home = tmp_path / "home"
    url = web.url(path) + "?key=qUeRyToKeN99"
    config = config_with(home, {"fermix_core": {"channels": {"webhooks": {"mine": {"url": url}}}}})
    channel = channel_for("webhook", resolve_paths(str(home)), config)
    assert channel is not None
    with pytest.raises(ChannelError) as e:
        channel.send_text("mine", "x", {})
    message = str(e.value)
    assert (e.value.code, e.value.permanent) == ("rejected", True) and "HTTP 404" in message
    assert "Cannot POST" in message  # the server's words are still quoted
    for secret in ("XyZsecretTokenABC123", "xyzsecrettokenabc123", "qUeRyToKeN99", "B0001/", "T0001/"):
        assert secret not in message


@pytest.mark.parametrize("fmt", ["json", "slack", "ntfy"])
def test_long_text_is_cut_with_a_marker_and_the_result_says_so(
    tmp_path: Path, web: FakeWeb, fmt: str
) -> None:
    web.routes[SECRET_PATH] = Reply(200, b"ok")
    channel = hook(tmp_path, web, format=fmt)
    text = "résumé 🚀 " * 4445 + "tail!!"  # 40,011 characters, many of them several bytes in UTF-8
    sent = channel.send_text("mine", text, {})
    exact = "x" * TEXT_MAX
    whole = channel.send_text("mine", exact, {})
    first, second = web.hits_on(SECRET_PATH)
    received = first.body.decode("utf-8") if fmt == "ntfy" else first.json()["text"]
    kept = TEXT_MAX - len(f"\n… [truncated: {TEXT_MAX} of {len(text)} characters]")
    assert received == text[:kept] + f"\n… [truncated: {kept} of {len(text)} characters]"
    assert len(received) <= TEXT_MAX
    assert sent.detail == {"status": 200, "format": fmt, "truncated": True, "text_chars": len(text)}
    assert (second.body.decode("utf-8") if fmt == "ntfy" else second.json()["text"]) == exact
    assert whole.detail["truncated"] is False and "text_chars" not in whole.detail


def test_slack_format(tmp_path: Path, web: FakeWeb) -> None:
    web.routes[SECRET_PATH] = Reply(200, b"ok")
    hook(tmp_path, web, format="slack").send_text(
        "mine", "build green", {"job_id": "j", "thread_ts": "1712.5"}
    )
    (hit,) = web.hits_on(SECRET_PATH)
    assert hit.json() == {"text": "build green", "thread_ts": "1712.5"}


def test_ntfy_format_and_headers(tmp_path: Path, web: FakeWeb) -> None:
    web.routes[SECRET_PATH] = Reply(200, b"{}")
    channel = hook(
        tmp_path, web, format="ntfy", headers={"Authorization": "Bearer tk_secret", "Priority": "high"}
    )
    channel.send_text("mine", "backup done ✓", {"job_name": "Nightly backup"})
    channel.send_text("mine", "x", {"job_name": "Sauvegarde été"})
    first, second = web.hits_on(SECRET_PATH)
    assert first.body == "backup done ✓".encode() and first.headers["content-type"].startswith("text/plain")
    assert first.headers["title"] == "fermix: Nightly backup"
    assert first.headers["authorization"] == "Bearer tk_secret" and first.headers["priority"] == "high"
    assert second.headers["title"].startswith("=?UTF-8?B?")


def test_json_format_carries_a_title_and_the_meta(tmp_path: Path, web: FakeWeb) -> None:
    web.routes[SECRET_PATH] = Reply(204, b"")
    hook(tmp_path, web).send_text("mine", "hi", {"job_name": "Digest", "run_id": "r1"})
    assert web.hits_on(SECRET_PATH)[0].json() == {
        "job_name": "Digest",
        "run_id": "r1",
        "text": "hi",
        "title": "fermix: Digest",
    }


def test_unknown_names_files_and_the_guard(tmp_path: Path, web: FakeWeb) -> None:
    channel = hook(tmp_path, web)
    with pytest.raises(ChannelError) as e:
        channel.send_text("other", "x", {})
    assert (e.value.code, e.value.permanent) == ("not_configured", True)
    with pytest.raises(ChannelError) as e:
        channel.send_file("mine", tmp_path, "x", {})
    assert (e.value.code, e.value.permanent) == ("unsupported", True)
    with pytest.raises(ChannelError) as e:
        hook(tmp_path, web, allow_local=False).send_text("mine", "x", {})
    assert (e.value.code, e.value.permanent) == ("blocked_url", True) and "s3cr3t" not in str(e.value)
    assert web.hits == []


NOW = datetime(2026, 3, 2, 8, 0, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("0", 0.0),
        ("120", 120.0),
        (" 5 ", 5.0),
        ("Mon, 02 Mar 2026 08:00:30 GMT", 30.0),
        ("Mon, 02 Mar 2026 07:59:00 GMT", 0.0),  # already past: retry now
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
    ],
)
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value, NOW) == seconds
