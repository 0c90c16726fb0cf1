"""Delivery-target rules and the owner's default target (reference 8.2, 9.2 "Delivery target"), as tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fermix_cli.channels.targets import check_target, resolve_default_target
from fermix_cli.core.errors import ToolError
from tests.channels.standins import config_with

TELEGRAM = {"bot_token": "123456789:AAE-secret_token_value_0123456789ab"}
CHANNELS = {
    "telegram": TELEGRAM,
    "webhooks": {"ops": {"url": "https://hooks.example.com/x", "format": "slack"}},
    "apprise": {"family": {"url": "discord://1/abc"}},
}


def config(tmp_path: Path, channels: dict[str, Any] | None = None, jobs: dict[str, Any] | None = None) -> Any:
    core: dict[str, Any] = {"channels": CHANNELS if channels is None else channels}
    if jobs is not None:
        core["jobs"] = jobs
    return config_with(tmp_path / "home", {"fermix_core": core})


@pytest.mark.parametrize(
    ("target", "clean"),
    [
        ({"platform": "inbox", "recipient": "owner"}, {"platform": "inbox", "recipient": "owner"}),
        ({"platform": "local", "recipient": "owner"}, {"platform": "inbox", "recipient": "owner"}),
        ({"platform": "telegram", "chat_id": 42}, {"platform": "telegram", "chat_id": 42}),
        ({"platform": "telegram", "chat_id": " -100123 "}, {"platform": "telegram", "chat_id": "-100123"}),
        ({"platform": "telegram", "chat_id": "@news_ch"}, {"platform": "telegram", "chat_id": "@news_ch"}),
        (
            {"platform": "telegram", "chat_id": 42, "message_thread_id": 9},
            {"platform": "telegram", "chat_id": 42, "message_thread_id": 9},
        ),
        ({"platform": "webhook", "recipient": "ops"}, {"platform": "webhook", "recipient": "ops"}),
        (
            {"platform": "webhook", "target": "ops", "thread_ts": "1712.5"},
            {"platform": "webhook", "target": "ops", "thread_ts": "1712.5"},
        ),
        ({"platform": "desktop", "recipient": "me"}, {"platform": "desktop", "recipient": "me"}),
        ({"platform": "apprise", "recipient": "family"}, {"platform": "apprise", "recipient": "family"}),
    ],
)
def test_valid_targets(tmp_path: Path, target: dict[str, Any], clean: dict[str, Any]) -> None:
    assert check_target(target, config=config(tmp_path)) == clean


@pytest.mark.parametrize(
    ("target", "code", "fragment"),
    [
        ({"platform": "cli", "recipient": "me"}, "invalid_delivery", "platform cli is not a delivery target"),
        (
            {"platform": "inbox", "recipient": "o", "reply_to": 5},
            "invalid_delivery",
            "reply_to cannot be part",
        ),
        ({"platform": "inbox", "recipient": "o", "req_options": "x"}, "invalid_delivery", "req_options"),
        ({"platform": "inbox", "recipient": "o", "color": "red"}, "invalid_delivery", "unknown keys: color"),
        ({"platform": "inbox"}, "invalid_delivery", "exactly one of"),
        ({"platform": "inbox", "recipient": "a", "chat_id": "b"}, "invalid_delivery", "exactly one of"),
        ({"platform": "inbox", "recipient": True}, "invalid_delivery", "non-empty string or integer"),
        ({"platform": "inbox", "recipient": "../x"}, "invalid_delivery", "inbox name '../x'"),
        ({"platform": "telegram", "chat_id": "me"}, "invalid_delivery", "numeric chat id"),
        (
            {"platform": "telegram", "chat_id": 1, "message_thread_id": 2, "thread_ts": "1.2"},
            "invalid_delivery",
            "never both",
        ),
        (
            {"platform": "telegram", "chat_id": 1, "message_thread_id": 0},
            "invalid_delivery",
            "positive integer",
        ),
        (
            {"platform": "telegram", "chat_id": 1, "message_thread_id": "7"},
            "invalid_delivery",
            "positive integer",
        ),
        ({"platform": "telegram", "chat_id": 1, "thread_ts": "1.2"}, "invalid_delivery", "message_thread_id"),
        ({"platform": "webhook", "recipient": "nope"}, "channel_not_configured", "no webhook named 'nope'"),
        ({"platform": "apprise", "recipient": "nope"}, "channel_not_configured", "no Apprise URL named"),
        ({"platform": "slack", "channel_id": "C1"}, "unsupported_channel", 'format = "slack"'),
        ({"platform": "discord", "channel_id": "1"}, "unsupported_channel", "discord://"),
        ({"platform": "signal", "recipient": "+1"}, "unsupported_channel", "signal://"),
        ({"platform": "whatsapp", "recipient": "+1"}, "unsupported_channel", "whatsapp://"),
        ({"platform": "sms", "recipient": "1"}, "unsupported_channel", "The channels are inbox, telegram"),
    ],
)
def test_refused_targets(tmp_path: Path, target: dict[str, Any], code: str, fragment: str) -> None:
    with pytest.raises(ToolError) as e:
        check_target(target, config=config(tmp_path))
    assert e.value.code == code and fragment in e.value.message, e.value.message


def test_a_telegram_target_needs_a_bot(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as e:
        check_target({"platform": "telegram", "chat_id": 1}, config=config(tmp_path, {}))
    assert e.value.code == "channel_not_configured" and "bot_token" in e.value.message
    # Without config only the shape is checked.
    assert check_target({"platform": "telegram", "chat_id": 1}) == {"platform": "telegram", "chat_id": 1}


OWNER = {"telegram": {**TELEGRAM, "owner_user_id": 5551234}}


@pytest.mark.parametrize(
    ("channels", "jobs", "expected"),
    [
        # configured comes first, even when a channel has an owner id
        (
            OWNER,
            {"default_delivery_target": {"platform": "inbox", "recipient": "owner"}},
            ({"platform": "inbox", "recipient": "owner"}, "configured"),
        ),
        (
            OWNER,
            {
                "default_delivery_mode": "channel",
                "default_delivery_target": {"platform": "local", "recipient": "o"},
            },
            ({"platform": "inbox", "recipient": "o"}, "configured"),
        ),
        (
            OWNER,
            {"default_delivery_target": {"platform": "telegram", "chat_id": "-100", "message_thread_id": 4}},
            ({"platform": "telegram", "chat_id": "-100", "message_thread_id": 4}, "configured"),
        ),
        # otherwise derived from the first channel with an owner id
        (OWNER, None, ({"platform": "telegram", "chat_id": 5551234}, "derived")),
        (
            {"telegram": {"bot_token_env": "TG_TOKEN", "owner_user_id": 7}},
            {"default_delivery_mode": "channel"},
            ({"platform": "telegram", "chat_id": 7}, "derived"),
        ),
    ],
)
def test_default_target_resolution(
    tmp_path: Path,
    channels: dict[str, Any],
    jobs: dict[str, Any] | None,
    expected: tuple[dict[str, Any], str],
) -> None:
    resolved = resolve_default_target(config(tmp_path, channels, jobs))
    assert (resolved.target, resolved.source) == expected
    assert resolved.as_dict() == {"target": expected[0], "source": expected[1]}


@pytest.mark.parametrize(
    ("channels", "jobs", "code", "fragment"),
    [
        # an invalid configured target fails; it never falls through to the derivable owner chat
        (
            OWNER,
            {"default_delivery_target": {"platform": "cli", "recipient": "x"}},
            "invalid_delivery",
            "cli",
        ),
        (
            OWNER,
            {"default_delivery_target": {"platform": "slack", "channel_id": "C1"}},
            "unsupported_channel",
            "",
        ),
        (
            OWNER,
            {"default_delivery_target": {"platform": "inbox", "recipient": "o", "reply_to": "1"}},
            "invalid_delivery",
            "reply_to",
        ),
        (
            OWNER,
            {"default_delivery_target": {"platform": "telegram", "chat_id": 1, "message_thread_id": -3}},
            "invalid_delivery",
            "positive integer",
        ),
        (
            {},
            {"default_delivery_target": {"platform": "telegram", "chat_id": 1}},
            "channel_not_configured",
            "default_delivery_target",
        ),
        (
            OWNER,
            {"default_delivery_target": {"platform": "webhook", "recipient": "x"}},
            "channel_not_configured",
            "",
        ),
        # a mode that delivers nothing is refused ahead of both steps
        (OWNER, {"default_delivery_mode": "none"}, "invalid_delivery", "default_delivery_mode is none"),
        (OWNER, {"default_delivery_mode": "origin"}, "invalid_delivery", "origin"),
        (
            OWNER,
            {
                "default_delivery_mode": "local",
                "default_delivery_target": {"platform": "inbox", "recipient": "o"},
            },
            "invalid_delivery",
            "local",
        ),
        # neither configured nor derivable
        ({}, None, "no_default_target", "default_delivery_target"),
        (
            {"telegram": {"owner_user_id": 5}},
            None,
            "no_default_target",
            "owner_user_id",
        ),  # an owner but no bot
        ({"telegram": TELEGRAM}, None, "no_default_target", "owner_user_id"),  # a bot but no owner
    ],
)
def test_default_target_refusals(
    tmp_path: Path, channels: dict[str, Any], jobs: dict[str, Any] | None, code: str, fragment: str
) -> None:
    with pytest.raises(ToolError) as e:
        resolve_default_target(config(tmp_path, channels, jobs))
    assert e.value.code == code and fragment in e.value.message, e.value.message


def test_no_default_target_names_both_remedies(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as e:
        resolve_default_target(config(tmp_path, {}))
    message = e.value.message
    assert "[fermix_core.jobs] default_delivery_target" in message
    assert "[fermix_core.channels.telegram]" in message and "owner_user_id" in message
