"""`fermix channels list` and `fermix channels send`, run as the real CLI against the Telegram stand-in."""

from __future__ import annotations

from tests.channels.standins import TelegramStandIn, telegram_section, write_config
from tests.conftest import Env


def test_list_shows_what_is_set_up_and_the_default_target(world: Env, telegram: TelegramStandIn) -> None:
    out = world.run("channels", "list", "--json")
    assert out.code == 0, out.stderr
    listing = out.json()
    ready = {row["platform"]: row["ready"] for row in listing["channels"]}
    assert ready["inbox"] is True and ready["telegram"] is False and ready["webhook"] is False
    assert listing["default_target"]["error"]["code"] == "no_default_target"
    write_config(world.fermix_home, telegram_section(telegram, owner_user_id=42))
    listing = world.run("channels", "list", "--json").json()
    assert listing["default_target"] == {
        "target": {"platform": "telegram", "chat_id": 42},
        "source": "derived",
    }
    text = world.run("channels", "list").stdout
    assert (
        "telegram  ready  owner 42" in text
        and 'default target: {"platform": "telegram", "chat_id": 42} (derived)' in text
    )


def test_send_delivers_and_reports_failures_with_their_hint(world: Env, telegram: TelegramStandIn) -> None:
    write_config(world.fermix_home, telegram_section(telegram))
    target = '{"platform":"telegram","chat_id":42}'
    out = world.run("channels", "send", target, "hello", "--json")
    assert out.code == 0, out.stderr
    assert out.json()["sent"]["message_ids"] == [101]
    assert telegram.calls("sendMessage")[0].json()["text"] == "hello"
    telegram.fail(429, "Too Many Requests: retry after 9", retry_after=9)
    failed = world.run("channels", "send", target, "again")
    assert failed.code == 1 and failed.stdout == ""
    error = failed.error()
    assert error["code"] == "rate_limited" and error["details"] == {
        "platform": "telegram",
        "permanent": False,
        "retry_after": 9.0,
    }
    assert telegram.token not in failed.stderr
    refused = world.run("channels", "send", '{"platform":"slack","channel_id":"C1"}', "x")
    assert refused.code == 1 and refused.error()["code"] == "unsupported_channel"
    report = world.root / "report.txt"
    report.write_text("numbers")
    filed = world.run(
        "channels", "send", '{"platform":"inbox","recipient":"owner"}', "the report", "--file", str(report)
    )
    assert filed.code == 0 and filed.stdout.strip() == "sent to inbox owner"
    assert world.run("inbox", "--json").json()["messages"][0]["text"] == "the report"
