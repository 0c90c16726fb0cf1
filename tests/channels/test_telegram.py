"""The Telegram channel against a 127.0.0.1 Bot API stand-in: requests, error mapping, limits, the token."""

from __future__ import annotations

from pathlib import Path

import pytest

from fermix_cli.channels import ChannelError, channel_for
from fermix_cli.channels.telegram import MAX_PARTS, MESSAGE_MAX, split_message, utf16_len
from fermix_cli.core.paths import resolve_paths
from tests.channels.standins import TelegramStandIn, config_with, multipart, telegram_section
from tests.tools.webfakes import Reply, json_reply


def channel(tmp_path: Path, standin: TelegramStandIn, *, allow_local: bool = True, **extra: object):
    home = tmp_path / "home"
    config = config_with(home, telegram_section(standin, **extra), allow_local=allow_local)
    found = channel_for("telegram", resolve_paths(str(home)), config)
    assert found is not None and found.capabilities == {"text", "file"}
    return found


def test_send_message_posts_the_bot_api_request(tmp_path: Path, telegram: TelegramStandIn) -> None:
    sent = channel(tmp_path, telegram).send_text("42", "hello owner", {"message_thread_id": 7, "job_id": "j"})
    (hit,) = telegram.calls("sendMessage")
    assert hit.method == "POST" and hit.headers["content-type"] == "application/json"
    body = hit.json()
    assert (body["chat_id"], body["text"], body["message_thread_id"]) == (42, "hello owner", 7)
    assert "parse_mode" not in body  # plain text: nothing to escape
    assert sent.as_dict() == {"platform": "telegram", "address": "42", "message_ids": [101], "parts": 1}


def test_429_carries_retry_after_and_the_next_attempt_succeeds(
    tmp_path: Path, telegram: TelegramStandIn
) -> None:
    telegram.fail(429, "Too Many Requests: retry after 3", retry_after=3)
    tg = channel(tmp_path, telegram)
    with pytest.raises(ChannelError) as e:
        tg.send_text("42", "tick", {})
    err = e.value
    assert (err.code, err.retry_after, err.permanent) == ("rate_limited", 3.0, False)
    assert "wait 3 s" in str(err)
    assert tg.send_text("42", "tick", {}).detail["message_ids"] == [101]
    assert [h.json()["text"] for h in telegram.calls("sendMessage")] == ["tick", "tick"]


@pytest.mark.parametrize(
    ("status", "description", "code", "permanent", "fix"),
    [
        (401, "Unauthorized", "bad_token", True, "bot_token"),
        (404, "Not Found", "bad_token", True, "bot_token"),
        (403, "Forbidden: bot was blocked by the user", "bot_blocked", True, "unblock it"),
        (403, "Forbidden: bot can't initiate conversation with a user", "bot_blocked", True, "/start"),
        (400, "Bad Request: chat not found", "chat_not_found", True, "chat_id"),
        (400, "Bad Request: message thread not found", "thread_not_found", True, "message_thread_id"),
        (400, "Bad Request: message text is empty", "bad_request", True, "message text is empty"),
        (413, "Request Entity Too Large", "too_large", True, "up to 50 MB"),
        (
            409,
            "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
            "conflict",
            True,
            "deleteWebhook",
        ),
        (
            409,
            "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
            "conflict",
            False,
            "stop the other one",
        ),
        (500, "Internal Server Error", "platform_error", False, "temporary"),
        (502, "Bad Gateway", "platform_error", False, "temporary"),
    ],
)
def test_bot_api_errors_map_to_typed_channel_errors(
    tmp_path: Path,
    telegram: TelegramStandIn,
    status: int,
    description: str,
    code: str,
    permanent: bool,
    fix: str,
) -> None:
    telegram.fail(status, description)
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_text("42", "x", {})
    assert (e.value.code, e.value.permanent, e.value.retry_after) == (code, permanent, None)
    assert fix in str(e.value) and telegram.token not in str(e.value)


def test_a_non_json_gateway_page_is_transient(tmp_path: Path, telegram: TelegramStandIn) -> None:
    telegram.script.append(Reply(502, b"<html>bad gateway</html>", {"Content-Type": "text/html"}))
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_text("42", "x", {})
    assert (e.value.code, e.value.permanent) == ("platform_error", False)


@pytest.mark.parametrize("status", [200, 502])
def test_a_body_nested_too_deeply_is_a_malformed_answer(
    tmp_path: Path, telegram: TelegramStandIn, status: int
) -> None:
    # 200,000 `[` makes Python's parser raise RecursionError, not ValueError: still not an answer.
    telegram.script.append(Reply(status, b"[" * 200_000, {"Content-Type": "application/json"}))
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_text("42", "x", {})
    assert (e.value.code, e.value.permanent) == ("platform_error", False)
    assert f"HTTP {status}" in str(e.value)


def test_a_413_page_on_an_upload_is_permanent_and_says_what_to_do(
    tmp_path: Path, telegram: TelegramStandIn
) -> None:
    report = tmp_path / "big.bin"
    report.write_bytes(b"x" * 1000)
    telegram.script.append(
        Reply(413, b"<html>413 Request Entity Too Large</html>", {"Content-Type": "text/html"})
    )
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_file("42", report, "", {})
    assert (e.value.code, e.value.permanent, e.value.retry_after) == ("too_large", True, None)
    assert "too large for the Bot API" in str(e.value) and "smaller" in str(e.value)
    assert "temporary" not in str(e.value)


def test_the_token_never_appears_in_errors(tmp_path: Path, telegram: TelegramStandIn) -> None:
    telegram.fail(400, f"Bad Request: something about {telegram.token}")
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_text("42", "x", {})
    assert telegram.token not in str(e.value) and "<redacted>" in str(e.value)
    # A refused connection names the method, never the URL with the token in it.
    telegram.close()
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_text("42", "x", {})
    assert e.value.permanent is False and telegram.token not in str(e.value)


def test_the_network_guard_applies(tmp_path: Path, telegram: TelegramStandIn) -> None:
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram, allow_local=False).send_text("42", "x", {})
    assert (e.value.code, e.value.permanent) == ("blocked_url", True)
    assert "allowed_private_hosts" in str(e.value) and telegram.token not in str(e.value)
    assert telegram.calls("sendMessage") == []


def test_long_text_is_split_at_line_breaks(tmp_path: Path, telegram: TelegramStandIn) -> None:
    text = "\n".join(f"line {i:05d} " + "x" * 80 for i in range(60))  # about 5,600 characters
    sent = channel(tmp_path, telegram).send_text("42", text, {})
    texts = [h.json()["text"] for h in telegram.calls("sendMessage")]
    assert len(texts) == 2 and "".join(texts) == text
    assert all(utf16_len(t) <= MESSAGE_MAX for t in texts) and texts[0].endswith("\n")
    assert sent.detail == {"message_ids": [101, 102], "parts": 2}


def test_text_needing_too_many_messages_goes_as_a_document(tmp_path: Path, telegram: TelegramStandIn) -> None:
    text = "y" * (MESSAGE_MAX * MAX_PARTS + 1)
    sent = channel(tmp_path, telegram).send_text("42", text, {})
    assert telegram.calls("sendMessage") == []
    (hit,) = telegram.calls("sendDocument")
    fields = multipart(hit)
    assert fields["document"] == ("message.txt", text.encode())
    assert sent.detail["as_document"] is True


def test_send_document_is_multipart(tmp_path: Path, telegram: TelegramStandIn) -> None:
    report = tmp_path / "report.csv"
    report.write_bytes(b"a,b\n1,2\n")
    sent = channel(tmp_path, telegram).send_file("-100123", report, "the report", {"message_thread_id": 3})
    (hit,) = telegram.calls("sendDocument")
    assert hit.headers["content-type"].startswith("multipart/form-data; boundary=")
    fields = multipart(hit)
    assert fields["chat_id"] == (None, b"-100123") and fields["caption"] == (None, b"the report")
    assert fields["message_thread_id"] == (None, b"3")
    assert fields["document"] == ("report.csv", b"a,b\n1,2\n")
    assert sent.detail["document"] == "report.csv"


def test_the_token_can_come_from_the_environment(
    tmp_path: Path, telegram: TelegramStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    section = {"bot_token_env": "FERMIX_TEST_TG", "api_base": telegram.api_base}
    config = config_with(home, {"fermix_core": {"channels": {"telegram": section}}})
    tg = channel_for("telegram", resolve_paths(str(home)), config)
    assert tg is not None
    monkeypatch.delenv("FERMIX_TEST_TG", raising=False)
    with pytest.raises(ChannelError) as e:
        tg.send_text("42", "x", {})
    assert (e.value.code, e.value.permanent) == ("not_configured", True) and "FERMIX_TEST_TG" in str(e.value)
    monkeypatch.setenv("FERMIX_TEST_TG", telegram.token)
    tg.send_text("42", "x", {})
    assert len(telegram.calls("sendMessage")) == 1


@pytest.mark.parametrize(
    ("address", "text", "code"),
    [("not a chat", "x", "invalid_address"), ("42", "   ", "empty_message")],
)
def test_refusals_before_any_request(
    tmp_path: Path, telegram: TelegramStandIn, address: str, text: str, code: str
) -> None:
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_text(address, text, {})
    assert (e.value.code, e.value.permanent) == (code, True)
    assert telegram.web.hits == []


def test_a_malformed_token_is_refused_without_a_request(tmp_path: Path, telegram: TelegramStandIn) -> None:
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram, bot_token="nope/../x").send_text("42", "x", {})
    assert (e.value.code, e.value.permanent) == ("bad_token", True) and "nope" not in str(e.value)
    assert telegram.web.hits == []


@pytest.mark.parametrize(
    "text",
    ["", "short", "a\n" * 3000, "é" * 5000, "😀" * 3000, "x" * 4096, "x" * 4097, ("word " * 100 + "\n") * 50],
)
def test_split_message_keeps_every_character_within_the_limit(text: str) -> None:
    parts = split_message(text)
    assert "".join(parts) == text
    assert all(utf16_len(p) <= MESSAGE_MAX for p in parts)
    assert len(parts) == max(1, -(-utf16_len(text) // MESSAGE_MAX)) or "\n" in text


def test_a_failure_after_some_parts_says_what_arrived(tmp_path: Path, telegram: TelegramStandIn) -> None:
    telegram.script.append(json_reply({"ok": True, "result": {"message_id": 1}}))
    telegram.fail(429, "Too Many Requests: retry after 2", retry_after=2)
    with pytest.raises(ChannelError) as e:
        channel(tmp_path, telegram).send_text("42", "z" * (MESSAGE_MAX + 10), {})
    assert (e.value.code, e.value.retry_after, e.value.permanent) == ("rate_limited", 2.0, False)
    assert "1 of 2 parts were delivered" in str(e.value)


def test_max_text_arrives_as_one_message_whatever_the_characters(
    tmp_path: Path, telegram: TelegramStandIn
) -> None:
    tg = channel(tmp_path, telegram)
    tg.send_text("42", "😀" * tg.max_text, {})
    assert len(telegram.calls("sendMessage")) == 1
