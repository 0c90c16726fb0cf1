"""`fermix serve telegram` against a 127.0.0.1 Bot API stand-in, with the mock model scripted per test."""

from __future__ import annotations

import base64
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import tomli_w

from fermix_cli.agent.assemble import AgentOptions
from fermix_cli.channels.http import http_client
from fermix_cli.channels.telegram import BotApi
from fermix_cli.channels.telegram_chat import TELEGRAM_REACTIONS
from fermix_cli.cli.telegram_serve import TelegramServer
from fermix_cli.core.net.guarded import guarded_client
from tests.channels.botstandin import BOT_ID, BOT_USERNAME, OWNER, BotStandIn
from tests.channels.standins import TOKEN
from tests.conftest import Env, processes_with
from tests.tools.media.images import png
from tests.tools.webfakes import Hit, Reply, json_reply


@pytest.fixture
def bot() -> Iterator[BotStandIn]:
    standin = BotStandIn()
    try:
        yield standin
    finally:
        standin.close()


def configure(world: Env, bot: BotStandIn, script: list[dict[str, Any]], **tools: Any) -> None:
    path = world.root / "script.json"
    path.write_text(json.dumps(script))
    data: dict[str, Any] = {
        "fermix_core": {
            "net": {"allowed_private_hosts": ["127.0.0.1"]},
            "channels": {"telegram": {"bot_token": TOKEN, "api_base": bot.api_base, "owner_user_id": OWNER}},
            "providers": {"mock": {"script": str(path)}},
            "agent": {"provider": "mock"},
        }
    }
    if tools:
        data["fermix_core"]["tools"] = tools
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(tomli_w.dumps(data))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def serve(
    world: Env, bot: BotStandIn, polls: int, clock: Clock | None = None, timeout: float = 10
) -> tuple[int, Clock]:
    clock = clock or Clock()
    ctx = world.context(origin="interactive")
    api = BotApi(TOKEN, bot.api_base, http_client(ctx.config, timeout))
    downloads = guarded_client(allowed_private_hosts=("127.0.0.1",), max_body=20 * 1024 * 1024)
    server = TelegramServer(
        ctx,
        AgentOptions(session=f"telegram-{OWNER}"),
        api,
        OWNER,
        downloads=downloads,
        poll_timeout=0,
        sleep=clock.sleep,
        clock=clock,
    )
    try:
        return server.serve(max_polls=polls), clock
    finally:
        api.client.close()
        downloads.close()
        ctx.close()


def test_owner_conversation_with_a_tool_call(world: Env, bot: BotStandIn) -> None:
    (world.project / "notes.txt").write_text("milk\n")
    configure(
        world,
        bot,
        [
            {"tool_calls": [{"name": "glob_search", "arguments": {"pattern": "*.txt"}}]},
            {"chunks": ["You have ", "notes.txt."]},
            {"text": "Second answer."},
        ],
    )
    bot.send("which text files do I have?")
    handled, _ = serve(world, bot, polls=2)
    assert handled == 1
    assert bot.texts_shown() == ["You have notes.txt."]
    assert all(p["chat_id"] == OWNER for p in bot.payloads("sendMessage"))
    # The next message continues the same session (the script's third answer).
    bot.send("and now?")
    serve(world, bot, polls=2)
    assert bot.texts_shown() == ["You have notes.txt.", "Second answer."]
    # Handled updates are not handled again after a restart.
    serve(world, bot, polls=1)
    assert len(bot.texts_shown()) == 2


def test_image_sent_in_and_edited_with_inbound_last(world: Env, bot: BotStandIn) -> None:
    edited = png(2, 2, (0, 255, 0, 255))
    bot.web.routes["/oa/v1/images/edits"] = json_reply(
        {"data": [{"b64_json": base64.b64encode(edited).decode()}]}
    )
    configure(
        world,
        bot,
        [
            {
                "tool_calls": [
                    {
                        "name": "generate_image",
                        "arguments": {
                            "prompt": "make it green",
                            "operation": "edit",
                            "input_image": "inbound:last",
                        },
                    }
                ]
            },
            {"text": "Here you go."},
        ],
        generate_image={"backend": "openai", "openai_api_key": "k", "openai_url": bot.web.url("/oa/v1")},
    )
    bot.add_file("ph-big", "photos/file_1.jpg", png(4, 4))
    bot.send(
        caption="make it green",
        photo=[
            {"file_id": "ph-small", "file_unique_id": "s", "width": 1, "height": 1},
            {"file_id": "ph-big", "file_unique_id": "b", "width": 4, "height": 4},
        ],
    )
    serve(world, bot, polls=1)
    [get_file] = bot.payloads("getFile")
    assert get_file == {"file_id": "ph-big"}
    [edit] = bot.web.hits_on("/oa/v1/images/edits")
    assert b"make it green" in edit.body and png(4, 4) in edit.body
    [photo] = bot.payloads("sendPhoto")
    assert photo["photo"][1] == edited and photo["chat_id"][1] == str(OWNER).encode()
    assert bot.texts_shown() == ["Here you go."]
    saved = list((world.fermix_home / "media" / "inbound").iterdir())
    assert [p.read_bytes() for p in saved] == [png(4, 4)]


def tool_results(world: Env) -> list[str]:
    """What the tools of the owner's Telegram conversation answered, in order."""
    from fermix_cli.agent.transcripts import Transcript

    ctx = world.context()
    try:
        history = Transcript(ctx.state, ctx.clock).history(f"telegram-{OWNER}")
    finally:
        ctx.close()
    return [m.content for m in history if m.role == "tool"]


def test_in_a_forum_topic_images_and_files_stay_in_the_topic(world: Env, bot: BotStandIn) -> None:
    fox = png(2, 2, (200, 100, 0, 255))
    bot.web.routes["/oa/v1/images/generations"] = json_reply(
        {"data": [{"b64_json": base64.b64encode(fox).decode()}]}
    )
    (world.project / "a.txt").write_text("notes")
    configure(
        world,
        bot,
        [
            {
                "tool_calls": [
                    {"name": "generate_image", "arguments": {"prompt": "a fox"}},
                    {"name": "send_attachment", "arguments": {"path": "a.txt"}},
                ]
            },
            {"text": "A fox for you.", "tool_calls": [{"name": "react", "arguments": {"emoji": "👍"}}]},
            {"text": "Enjoy."},
        ],
        generate_image={"backend": "openai", "openai_api_key": "k", "openai_url": bot.web.url("/oa/v1")},
    )
    update = bot.send("draw a fox", message_thread_id=42, is_topic_message=True)
    serve(world, bot, polls=1)
    [photo] = bot.payloads("sendPhoto")
    [document] = bot.payloads("sendDocument")
    for upload in (photo, document):
        assert upload["chat_id"][1] == str(OWNER).encode() and upload["message_thread_id"][1] == b"42"
    assert photo["photo"][1] == fox and document["document"] == ("a.txt", b"notes")
    assert [p["message_thread_id"] for p in bot.payloads("sendMessage")] == [42]
    assert bot.texts_shown() == ["A fox for you.\n\nEnjoy."]
    # A reaction names the message itself: setMessageReaction takes no thread.
    assert bot.payloads("setMessageReaction") == [
        {"chat_id": OWNER, "message_id": 1000 + update, "reaction": [{"type": "emoji", "emoji": "👍"}]}
    ]


def test_an_upload_telegram_finds_too_large_is_a_typed_error(world: Env, bot: BotStandIn) -> None:
    (world.project / "big.bin").write_bytes(b"x" * 3000)
    configure(
        world,
        bot,
        [{"tool_calls": [{"name": "send_attachment", "arguments": {"path": "big.bin"}}]}, {"text": "no"}],
    )
    bot.fail(413, "Request Entity Too Large")
    bot.send("send the big file")
    serve(world, bot, polls=1)
    [result] = tool_results(world)
    assert result.startswith("attachment_too_large:") and "limit is 50 MB" in result, result
    assert "temporary" not in result


def test_a_reaction_is_the_whole_answer(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"tool_calls": [{"name": "react", "arguments": {"emoji": "👍"}}]}])
    update = bot.send("thanks!")
    serve(world, bot, polls=1)
    [reaction] = bot.payloads("setMessageReaction")
    assert reaction == {
        "chat_id": OWNER,
        "message_id": 1000 + update,
        "reaction": [{"type": "emoji", "emoji": "👍"}],
    }
    assert (
        bot.payloads("sendMessage") == []
    )  # the mock's script has one answer: a second model call would fail


def test_react_is_offered_with_telegrams_emoji_set(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "ok"}])
    from fermix_cli.agent.assemble import Agent
    from fermix_cli.channels.telegram_chat import TelegramReplyPort
    from fermix_cli.core.replyport import REPLY_PORT

    ctx = world.context(origin="interactive", extras={REPLY_PORT: TelegramReplyPort(None, OWNER, 1)})  # type: ignore[arg-type]
    agent = Agent(ctx, AgentOptions())
    try:
        schema = next(s for s in agent.open()._schemas if s.name == "react")
    finally:
        agent.close()
        ctx.close()
    assert set(schema.parameters["properties"]["emoji"]["enum"]) == TELEGRAM_REACTIONS
    assert len(TELEGRAM_REACTIONS) == 73 and "\u2764\u200d\U0001f525" in TELEGRAM_REACTIONS


def test_a_strangers_message_is_refused_and_logged(
    world: Env, bot: BotStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    configure(world, bot, [{"text": "never"}])
    bot.send("hi, I am not the owner", chat=999)
    bot.send("group message from the owner", chat=-100123, user=OWNER)
    with caplog.at_level(logging.WARNING, logger="fermix.telegram"):
        handled, _ = serve(world, bot, polls=1)
    assert handled == 0 and bot.payloads("sendMessage") == []
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 2 and "chat 999" in refusals[0] and "chat -100123" in refusals[1]


def test_rate_limits_and_failures_back_off(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "made it"}])
    too_many = {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 7",
        "parameters": {"retry_after": 7},
    }
    bot.update_script = [
        json_reply(too_many, 429),
        json_reply({"ok": False, "error_code": 502, "description": "Bad Gateway"}, 502),
        json_reply({"ok": False, "error_code": 502, "description": "Bad Gateway"}, 502),
        json_reply({"ok": False, "error_code": 502, "description": "Bad Gateway"}, 502),
    ]
    bot.send("still there?")
    handled, clock = serve(world, bot, polls=5)
    assert clock.sleeps == [7, 1, 2, 4] and handled == 1
    assert bot.texts_shown() == ["made it"]


def test_a_bad_token_stops_the_server(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "x"}])
    bot.update_script = [json_reply({"ok": False, "error_code": 401, "description": "Unauthorized"}, 401)]
    from fermix_cli.core.errors import ToolError

    with pytest.raises(ToolError) as e:
        serve(world, bot, polls=3)
    assert e.value.code == "telegram_refused" and TOKEN not in str(e.value)


def test_long_answers_stream_in_edits_and_continue_past_4096(world: Env, bot: BotStandIn) -> None:
    long = ("word " * 1000).strip()  # 4999 characters
    configure(world, bot, [{"chunks": ["Hello", " there", "\n" + long]}])
    bot.send("write a lot")
    serve(world, bot, polls=1)
    shown = bot.texts_shown()
    assert len(shown) == 2 and all(len(t) <= 4096 for t in shown)
    assert "".join(shown) == ("Hello there\n" + long)
    assert bot.payloads("sendMessage")[0]["text"] == "Hello"  # the first delta opened the message
    assert len(bot.payloads("editMessageText")) >= 1


def test_sigterm_stops_a_waiting_server(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "x"}])
    bot.poll_delay = 5.0  # a long poll that would keep waiting
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "serve", "telegram", "--poll-timeout", "5"],
        env=world.env,
        cwd=world.project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not bot.calls("getUpdates") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert bot.calls("getUpdates"), proc.stderr.read() if proc.poll() is not None else "no poll"
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=10)
        assert code == 0 and time.monotonic() - started < 4
        assert "serving Telegram chat 4242" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_systemd_unit_help(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "x"}])
    r = world.run("serve", "telegram", "--systemd")
    assert r.code == 0
    assert (
        "fermix-telegram.service" in r.stdout
        and "serve telegram" in r.stdout
        and "Restart=on-failure" in r.stdout
    )


def test_snooze_that_looks_in_this_chat(world: Env, bot: BotStandIn) -> None:
    snooze = {"snooze": {"type": "duration", "amount": 2, "unit": "hours"}}
    configure(
        world, bot, [{"tool_calls": [{"name": "reminder_snooze", "arguments": snooze}]}, {"text": "ok"}]
    )
    bot.send("snooze that")
    serve(world, bot, polls=1)
    from fermix_cli.agent.transcripts import Transcript

    ctx = world.context()
    try:
        history = Transcript(ctx.state, ctx.clock).history(f"telegram-{OWNER}")
    finally:
        ctx.close()
    [result] = [m.content for m in history if m.role == "tool"]
    # Looked up in this chat's conversation (telegram:<owner>, where reminders to the owner land); without
    # one the answer would be no_conversation_target.
    assert result.startswith("no_recent_reminder:"), result


@pytest.mark.parametrize(
    ("kind", "name", "data", "method", "field"),
    [
        ("image", "p.png", png(), "sendPhoto", "photo"),
        ("image", "p.gif", b"GIF89a" + b"\x00" * 20, "sendDocument", "document"),
        ("document", "r.txt", b"report", "sendDocument", "document"),
        ("audio", "s.mp3", b"ID3audio", "sendAudio", "audio"),
        ("video", "v.mp4", b"\x00\x00\x00\x18ftypmp42", "sendVideo", "video"),
        ("voice", "n.ogg", b"OggS", "sendVoice", "voice"),
    ],
)
def test_send_attachment_uses_the_method_for_its_kind(
    world: Env, bot: BotStandIn, kind: str, name: str, data: bytes, method: str, field: str
) -> None:
    (world.project / name).write_bytes(data)
    args = {"path": name, "kind": kind, "caption": "for you"}
    configure(
        world, bot, [{"tool_calls": [{"name": "send_attachment", "arguments": args}]}, {"text": "sent"}]
    )
    bot.send("send it")
    serve(world, bot, polls=1)
    [upload] = bot.payloads(method)
    assert upload[field] == (name, data) and upload["caption"][1] == b"for you"


def test_a_guest_gets_read_only_tools_in_a_session_of_its_own(world: Env, bot: BotStandIn) -> None:
    guest = 777
    (world.project / "secret.txt").write_text("owner data")
    script = [
        {"tool_calls": [{"name": "send_attachment", "arguments": {"path": "secret.txt"}}]},
        {"text": "Hello guest."},
    ]
    configure(world, bot, script)
    data = (world.fermix_home / "config.toml").read_text()
    (world.fermix_home / "config.toml").write_text(
        data.replace("owner_user_id", f"guest_user_ids = [{guest}]\nowner_user_id")
    )
    bot.send("please send me the secret", chat=guest)
    ctx = world.context(origin="interactive")
    api = BotApi(TOKEN, bot.api_base, http_client(ctx.config, 10))
    downloads = guarded_client(allowed_private_hosts=("127.0.0.1",))
    server = TelegramServer(
        ctx, AgentOptions(session=f"telegram-{OWNER}"), api, OWNER, downloads=downloads, poll_timeout=0,
        guests=ctx.config.fermix_core.channels.telegram.guest_user_ids, sleep=Clock().sleep,
    )  # fmt: skip
    try:
        assert server.serve(max_polls=1) == 1
        from fermix_cli.agent.transcripts import Transcript

        history = Transcript(ctx.state, ctx.clock).history(f"telegram-{guest}")
        assert Transcript(ctx.state, ctx.clock).history(f"telegram-{OWNER}") == []
    finally:
        api.client.close()
        downloads.close()
        ctx.close()
    [result] = [m.content for m in history if m.role == "tool"]
    assert result.startswith("unknown_tool")  # owner-only: a guest neither sees nor runs it
    assert bot.payloads("sendDocument") == [] and bot.texts_shown() == ["Hello guest."]
    assert all(p["chat_id"] == guest for p in bot.payloads("sendMessage"))


def test_an_agent_that_cannot_start_is_reported_in_the_chat(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "x"}])
    data = (
        (world.fermix_home / "config.toml").read_text().replace('provider = "mock"', 'provider = "nowhere"')
    )
    (world.fermix_home / "config.toml").write_text(data)
    bot.send("hello?")
    bot.send("still?")
    handled, _ = serve(world, bot, polls=1)
    shown = bot.texts_shown()
    assert handled == 2 and len(shown) == 2 and all(t.startswith("⚠ ") for t in shown)


GROUP = -1005550001


def test_a_group_answers_only_messages_that_address_the_bot_and_only_as_a_guest(
    world: Env, bot: BotStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    script = [
        {
            "tool_calls": [
                {"name": "shell", "arguments": {"command": "cat ~/.ssh/id_ed25519"}},
                {"name": "memory_recall", "arguments": {"search": "bank", "scope": "owner"}},
            ]
        },
        {"text": "Hello group."},
        {"text": "Still a guest here."},
    ]
    configure(world, bot, script)
    data = (world.fermix_home / "config.toml").read_text()
    (world.fermix_home / "config.toml").write_text(
        data.replace("owner_user_id", f"guest_chat_ids = [{GROUP}]\nowner_user_id")
    )
    from fermix_cli.core.registry import default_registry

    owner_ctx = world.context()
    try:  # the owner's own long-term memory, which no guest may read
        default_registry().invoke(
            "memory_store",
            {"key": "bank", "value": "The owner banks at Zorro Bank.", "category": "identity"},
            owner_ctx,
        )
    finally:
        owner_ctx.close()
    mention = f"@{BOT_USERNAME}"
    bot.send("lunch anyone?", chat=GROUP, user=555, chat_type="supergroup")
    bot.send(
        f"{mention} which bank does the owner use?",
        chat=GROUP,
        user=555,
        chat_type="supergroup",
        entities=[{"type": "mention", "offset": 0, "length": len(mention)}],
    )
    bot.send(
        "and you?",
        chat=GROUP,
        chat_type="supergroup",  # the owner, replying to the bot: in a group still a guest
        reply_to_message={"message_id": 1, "from": {"id": BOT_ID, "is_bot": True}, "chat": {"id": GROUP}},
    )
    bot.send(f"{mention} hi", chat=-100999, user=555, chat_type="group",
             entities=[{"type": "mention", "offset": 0, "length": len(mention)}])  # fmt: skip
    bot.send("hello bot", chat=31337)
    ctx = world.context(origin="interactive")
    api = BotApi(TOKEN, bot.api_base, http_client(ctx.config, 10))
    downloads = guarded_client(allowed_private_hosts=("127.0.0.1",))
    server = TelegramServer(
        ctx, AgentOptions(session=f"telegram-{OWNER}", context_sections=("OWNER PROFILE",)), api, OWNER,
        downloads=downloads, poll_timeout=0, sleep=Clock().sleep,
        guest_chats=ctx.config.fermix_core.channels.telegram.guest_chat_ids,
    )  # fmt: skip
    try:
        with caplog.at_level(logging.WARNING, logger="fermix.telegram"):
            assert server.serve(max_polls=1) == 2
        from fermix_cli.agent.transcripts import Transcript

        transcript = Transcript(ctx.state, ctx.clock)
        history = transcript.history(f"telegram-{GROUP}")
        trust = ctx.state.query("SELECT trust FROM conversations WHERE id = ?", (f"telegram-{GROUP}",))
        assert transcript.history(f"telegram-{OWNER}") == []
    finally:
        api.client.close()
        downloads.close()
        ctx.close()
    assert [r["trust"] for r in trust] == ["guest"]
    shell, recall = [m.content for m in history if m.role == "tool"]
    assert shell.startswith("unknown_tool")  # exec is not a guest's: neither offered nor run
    assert "Zorro" not in recall  # held to its own conversation: the owner's memory stays unseen
    first = next(m.content for m in history if m.role == "user")
    assert "user 555" in first and mention not in first and "which bank" in first
    assert bot.texts_shown() == ["Hello group.", "Still a guest here."]
    sent = bot.payloads("sendMessage")
    assert {p["chat_id"] for p in sent} == {GROUP}
    # each answer is a reply to the message that addressed the bot (update 2, then update 3)
    assert [p["reply_parameters"]["message_id"] for p in sent] == [1002, 1003]
    assert len(bot.calls("getMe")) == 1
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 2 and "-100999" in refusals[0] and "31337" in refusals[1]


def test_voice_audio_and_video_notes_arrive_as_inbound_files(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "Heard it."}, {"text": "Nice video."}])
    voice, note = b"OggS\x00voice-bytes", b"\x00\x00\x00\x18ftypmp42note"
    bot.add_file("v1", "voice/file_3.oga", voice)
    bot.add_file("vn1", "video_notes/file_4.mp4", note)
    bot.send(voice={"file_id": "v1", "file_unique_id": "uv1", "duration": 7, "mime_type": "audio/ogg",
                    "file_size": len(voice)})  # fmt: skip
    bot.send(
        "what do you think?",
        video_note={"file_id": "vn1", "file_unique_id": "uvn1", "length": 240, "duration": 12,
                    "file_size": len(note)},
    )  # fmt: skip
    bot.send(audio={"file_id": "a1", "file_unique_id": "ua1", "duration": 3600, "file_name": "talk.mp3",
                    "mime_type": "audio/mpeg", "file_size": 25 * 1024 * 1024})  # fmt: skip
    handled, _ = serve(world, bot, polls=1)
    assert handled == 2
    assert [p["file_id"] for p in bot.payloads("getFile")] == ["v1", "vn1"]  # the 25 MB file is not fetched
    ctx = world.context()
    try:
        from fermix_cli.agent.transcripts import Transcript

        asked = [
            m.content
            for m in Transcript(ctx.state, ctx.clock).history(f"telegram-{OWNER}")
            if m.role == "user"
        ]
    finally:
        ctx.close()
    assert asked[0] == "[Sent with this message: inbound:1 (voice, 7 s, voice.ogg, audio/ogg)]"
    assert asked[1] == (
        "what do you think?\n\n[Sent with this message: inbound:1 (video note, 12 s, video_note.mp4, video/mp4)]"
    )
    saved = sorted((world.fermix_home / "media" / "inbound").iterdir())
    assert [(p.name, p.read_bytes()) for p in saved] == [
        ("1001-voice.ogg", voice),
        ("1002-video_note.mp4", note),
    ]
    shown = bot.texts_shown()
    assert shown[:2] == ["Heard it.", "Nice video."]
    assert "talk.mp3 (audio, 25 MB) is over the 20 MB a bot may download" in shown[2]


def test_confirm_and_deny_in_the_owners_chat_and_the_retry_is_allowed(world: Env, bot: BotStandIn) -> None:
    """`request_directory_access` tells the chat "Approve with /confirm TOKEN": the owner's /confirm
    grants it, the running server's next turn may read there, and nobody else's /confirm counts."""
    import sqlite3

    guest = 777
    target = world.home / "other"
    target.mkdir()
    (target / "notes.md").write_text("hello from other")
    read = {"name": "file_read", "arguments": {"path": str(target / "notes.md")}}
    ask = {"name": "request_directory_access", "arguments": {"path": str(target), "reason": "read notes"}}
    configure(
        world,
        bot,
        [{"tool_calls": [read, ask]}, {"text": "Asked."}, {"tool_calls": [read]}, {"text": "Read it."}],
    )
    data = (world.fermix_home / "config.toml").read_text()
    (world.fermix_home / "config.toml").write_text(
        data.replace("owner_user_id", f"guest_user_ids = [{guest}]\nowner_user_id")
    )
    ctx = world.context(origin="interactive")
    api = BotApi(TOKEN, bot.api_base, http_client(ctx.config, 10))
    downloads = guarded_client(allowed_private_hosts=("127.0.0.1",))
    server = TelegramServer(
        ctx, AgentOptions(session=f"telegram-{OWNER}"), api, OWNER, downloads=downloads, poll_timeout=0,
        guests=[guest], sleep=Clock().sleep,
    )  # fmt: skip
    try:
        bot.send("read the notes in ~/other")
        assert server.serve(max_polls=1) == 1
        db = sqlite3.connect(world.fermix_home / "state.db")
        [(token,)] = db.execute("SELECT token FROM directory_access_requests").fetchall()
        db.close()
        bot.send(f"/confirm {token}", chat=guest)  # a guest: refused, the token stays pending
        bot.send("/deny")  # no token: a usage answer
        bot.send(f"/confirm@{BOT_USERNAME} {token}")
        bot.send("try again")
        assert server.serve(max_polls=1) == 5  # counted over the server's life
    finally:
        api.client.close()
        downloads.close()
        ctx.close()
    results = tool_results(world)
    assert results[0].startswith("outside_root") and f"/confirm {token}" in results[1]
    assert f"/deny {token}" in results[1]
    assert results[2].startswith("hello from other")
    shown = bot.texts_shown()
    assert shown[0] == "Asked."
    # The guest's chat and the owner's are answered side by side: only each chat's own order is fixed.
    chats = [p["chat_id"] for p in bot.payloads("sendMessage")]
    assert sorted(chats[1:5]) == sorted([guest, OWNER, OWNER, OWNER])
    by_chat = {c: [t for t, tc in zip(shown, chats, strict=True) if tc == c] for c in (guest, OWNER)}
    [to_guest] = by_chat[guest]
    assert to_guest.startswith("⚠ not_attended: only the owner approves directory access")
    assert by_chat[OWNER][1:] == [
        "⚠ usage: write /deny TOKEN, with the token of the request",
        f"granted: {target}",
        "Read it.",
    ]
    assert tomllib_roots(world) == [str(target)]


def tomllib_roots(world: Env) -> list[str]:
    import tomllib

    doc = tomllib.loads((world.fermix_home / "config.toml").read_text())
    return list(doc.get("sandbox", {}).get("allowed_roots", []))


# ----- one message never stops the server -----------------------------------------------------------


def test_a_long_non_ascii_file_name_is_cut_by_bytes_and_the_turn_runs(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "Got the file."}])
    name = "отчёт-" * 60 + ".pdf"  # 360 characters, 665 bytes of UTF-8: over the 255 bytes a name may have
    bot.add_file("d1", "documents/file_9.pdf", b"%PDF-1.4 report")
    bot.send("read this", document={"file_id": "d1", "file_unique_id": "ud1", "file_name": name,
                                    "mime_type": "application/pdf", "file_size": 15})  # fmt: skip
    handled, _ = serve(world, bot, polls=1)
    assert handled == 1 and bot.texts_shown() == ["Got the file."]
    [saved] = (world.fermix_home / "media" / "inbound").iterdir()
    assert saved.read_bytes() == b"%PDF-1.4 report"
    assert (
        len(saved.name.encode()) <= 255
        and saved.name.startswith("1001-отчёт")
        and saved.name.endswith(".pdf")
    )
    saved.name.encode().decode("utf-8")  # cut between characters


def test_a_message_whose_answer_fails_is_logged_and_not_fetched_again(
    world: Env, bot: BotStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    configure(world, bot, [{"text": "never"}])
    big = {"file_id": "a1", "file_unique_id": "ua1", "file_name": "talk.mp3", "file_size": 25 * 1024 * 1024}
    bot.send(audio=big)  # only a file too big to fetch: the note about it is the whole answer
    bot.fail(403, "Forbidden: bot was blocked by the user")
    with caplog.at_level(logging.ERROR, logger="fermix.telegram"):
        handled, _ = serve(world, bot, polls=1)
    assert handled == 0 and len(bot.calls("sendMessage")) == 1
    assert any(
        "could not be answered" in r.getMessage() and "blocked" in r.getMessage() for r in caplog.records
    )
    serve(world, bot, polls=1)  # the offset moved past it: a restart does not take it again
    assert len(bot.calls("sendMessage")) == 1


def test_a_failure_while_handling_is_told_to_the_chat_and_serving_goes_on(
    world: Env, bot: BotStandIn, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, bot, [{"text": "Second one answered."}])

    def broken(self: TelegramServer, message: dict[str, Any]) -> Any:  # a bug in one message's path
        if message.get("caption") == "boom":
            raise RuntimeError("secret internals")
        return [], []

    monkeypatch.setattr(TelegramServer, "_inbound", broken)
    bot.send(caption="boom", document={"file_id": "x", "file_unique_id": "ux", "file_size": 3})
    bot.send("hello?")
    with caplog.at_level(logging.ERROR, logger="fermix.telegram"):
        handled, _ = serve(world, bot, polls=1)
    shown = bot.texts_shown()
    assert handled == 1 and len(shown) == 2 and shown[1] == "Second one answered."
    assert shown[0].startswith("⚠ internal_error:") and "fermix log" in shown[0]
    assert "secret internals" not in shown[0] and "Traceback" not in shown[0]
    assert bot.payloads("sendMessage")[0]["reply_parameters"]["message_id"] == 1001
    [record] = [r for r in caplog.records if "could not be handled" in r.getMessage()]
    assert record.exc_info is not None  # the traceback goes to the fermix log


def test_a_file_that_cannot_be_saved_is_named_in_the_prompt(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "ok"}])
    (world.fermix_home / "media").mkdir(parents=True)
    (world.fermix_home / "media" / "inbound").write_text("not a folder")
    bot.add_file("d1", "documents/file_1.txt", b"notes")
    bot.send(
        "keep this", document={"file_id": "d1", "file_unique_id": "ud1", "file_name": "n.txt", "file_size": 5}
    )
    handled, _ = serve(world, bot, polls=1)
    assert handled == 1 and bot.texts_shown() == ["ok"]
    [asked] = [m for m in user_prompts(world)]
    assert asked == "keep this\n\n[Sent with this message: n.txt could not be saved on this machine]"


def user_prompts(world: Env) -> list[str]:
    from fermix_cli.agent.transcripts import Transcript

    ctx = world.context()
    try:
        return [
            m.content
            for m in Transcript(ctx.state, ctx.clock).history(f"telegram-{OWNER}")
            if m.role == "user"
        ]
    finally:
        ctx.close()


# ----- the streamed answer's last update ------------------------------------------------------------

BAD_GATEWAY = {"ok": False, "error_code": 502, "description": "Bad Gateway"}


def failing(bot: BotStandIn, method: str, times: int, reply: Reply | None = None) -> list[int]:
    """Make `method` fail `times` times (502, or `reply`) before the stand-in answers; the calls counted."""
    count = [0]

    def route(hit: Hit) -> Reply:
        count[0] += 1
        if count[0] <= times:
            return reply or json_reply(BAD_GATEWAY, 502)
        return bot._method(hit)

    bot.web.routes[f"/bot{TOKEN}/{method}"] = route
    return count


def test_a_final_edit_that_fails_for_a_while_is_retried(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"chunks": ["The answer ", "is 42."]}])
    calls = failing(bot, "editMessageText", 2)
    bot.send("question")
    _, clock = serve(world, bot, polls=1)
    assert bot.texts_shown() == ["The answer is 42."] and calls[0] == 3
    assert clock.sleeps == [2.0, 4.0]


def test_a_final_edit_that_keeps_failing_says_the_answer_is_incomplete(
    world: Env, bot: BotStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    configure(world, bot, [{"chunks": ["The answer ", "is 42."]}])
    calls = failing(bot, "editMessageText", 100)
    bot.send("question")
    with caplog.at_level(logging.ERROR, logger="fermix.telegram"):
        _, clock = serve(world, bot, polls=1)
    assert calls[0] == 4 and sum(clock.sleeps) <= 60
    assert bot.texts_shown() == ["The answer", "⚠ the rest of this answer could not be delivered"]
    assert any("not fully delivered" in r.getMessage() for r in caplog.records)


def test_the_second_part_of_a_long_answer_is_retried(world: Env, bot: BotStandIn) -> None:
    long = ("word " * 1000).strip()
    configure(world, bot, [{"chunks": ["Hello", "\n" + long]}])
    bot.send("write a lot")
    count = [0]

    def second_fails(hit: Hit) -> Reply:  # the first send (the opening delta) arrives, the next two do not
        count[0] += 1
        return json_reply(BAD_GATEWAY, 502) if count[0] in (2, 3) else bot._method(hit)

    bot.web.routes[f"/bot{TOKEN}/sendMessage"] = second_fails
    serve(world, bot, polls=1)
    assert count[0] == 4
    assert "".join(bot.texts_shown()) == "Hello\n" + long


def test_a_send_that_timed_out_is_not_followed_by_a_new_message_per_delta(
    world: Env, bot: BotStandIn
) -> None:
    configure(world, bot, [{"chunks": ["Hello", " there", " my", " friend"]}])
    count = [0]

    def delivered_but_slow(hit: Hit) -> Reply:  # the first send arrives; its answer comes too late
        count[0] += 1
        reply = bot._method(hit)
        if count[0] == 1:
            reply.delay = 1.5
        return reply

    bot.web.routes[f"/bot{TOKEN}/sendMessage"] = delivered_but_slow
    bot.send("greet me")
    serve(world, bot, polls=1, timeout=0.5)
    # One partial copy (the send that timed out) and the whole answer, sent once at the end: no new
    # message for each delta while the chat may already hold one.
    assert [p["text"] for p in bot.payloads("sendMessage")] == ["Hello", "Hello there my friend"]
    assert bot.texts_shown() == ["Hello", "Hello there my friend"]


# ----- polling: conflicts, malformed answers, the poll timeout, the service unit ------------------------

WEBHOOK_CONFLICT = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"


def test_a_webhook_conflict_stops_the_server_with_what_to_do(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "x"}])
    bot.update_script = [
        json_reply({"ok": False, "error_code": 409, "description": WEBHOOK_CONFLICT}, 409)
    ] * 3
    r = world.run("serve", "telegram", "--poll-timeout", "1", timeout=30)
    assert r.code == 1, r.stderr
    assert "webhook is active" in r.stderr and "deleteWebhook" in r.stderr and TOKEN not in r.stderr
    assert len(bot.calls("getUpdates")) == 1  # not retried


def test_another_poller_is_named_each_time_while_retrying(
    world: Env, bot: BotStandIn, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(world, bot, [{"text": "made it"}])
    other = (
        "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
    )
    bot.update_script = [json_reply({"ok": False, "error_code": 409, "description": other}, 409)] * 2
    bot.send("hello")
    with caplog.at_level(logging.WARNING, logger="fermix.telegram"):
        handled, clock = serve(world, bot, polls=3)
    assert handled == 1 and clock.sleeps == [1, 2]
    assert sum("terminated by other getUpdates" in r.getMessage() for r in caplog.records) == 2
    assert capsys.readouterr().err.count("only one bot instance") == 2


def test_a_malformed_get_updates_answer_backs_off(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "made it"}])
    bot.update_script = [json_reply({"ok": True, "result": {"update_id": 1}})] * 3
    bot.send("hello")
    handled, clock = serve(world, bot, polls=4)
    assert handled == 1 and clock.sleeps == [1, 2, 4]


def test_a_poll_timeout_of_zero_is_refused(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "x"}])
    r = world.run("serve", "telegram", "--poll-timeout", "0")
    assert r.code == 2 and "poll-timeout" in r.stderr and not bot.calls("getUpdates")


def test_the_systemd_unit_quotes_values_and_says_where_the_token_goes(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "x"}])
    data = (
        (world.fermix_home / "config.toml")
        .read_text()
        .replace(f'bot_token = "{TOKEN}"', 'bot_token_env = "TG_TOKEN"')
    )
    spaced = world.root / "my fermix 100%"
    spaced.mkdir()
    (spaced / "config.toml").write_text(data)
    env = {**world.env, "FERMIX_HOME": str(spaced)}
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "serve", "telegram", "--systemd"],
        env=env, cwd=world.project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    unit = proc.stdout.splitlines()
    quoted = str(spaced).replace("%", "%%")
    assert f'Environment="FERMIX_HOME={quoted}"' in unit
    assert f"EnvironmentFile=-{quoted}/telegram.env" in unit
    assert any("TG_TOKEN=<token>" in line and line.startswith("#") for line in unit)
    [start] = [line for line in unit if line.startswith("ExecStart=")]
    assert start.startswith('ExecStart="') and start.endswith(" serve telegram")


# ----- conversations side by side; restarts and stops in the middle of a turn ------------------------


def by_prompt(world: Env, bot: BotStandIn, routes: dict[str, list[dict[str, Any]]]) -> None:
    configure(world, bot, [])
    script = {"by_prompt": [{"contains": k, "responses": v} for k, v in routes.items()]}
    (world.root / "script.json").write_text(json.dumps(script))
    data = (world.fermix_home / "config.toml").read_text()
    (world.fermix_home / "config.toml").write_text(
        data.replace("owner_user_id", "guest_user_ids = [777]\nowner_user_id")
    )


def serve_guests(world: Env, bot: BotStandIn, polls: int) -> int:
    ctx = world.context(origin="interactive")
    api = BotApi(TOKEN, bot.api_base, http_client(ctx.config, 10))
    downloads = guarded_client(allowed_private_hosts=("127.0.0.1",))
    server = TelegramServer(
        ctx, AgentOptions(session=f"telegram-{OWNER}"), api, OWNER, downloads=downloads, poll_timeout=1,
        guests=[777], sleep=Clock().sleep,
    )  # fmt: skip
    try:
        return server.serve(max_polls=polls)
    finally:
        api.client.close()
        downloads.close()
        ctx.close()


def test_a_guests_slow_turn_does_not_hold_up_the_owner(world: Env, bot: BotStandIn) -> None:
    by_prompt(
        world, bot, {"slow": [{"delay": 2, "text": "Slow answer."}], "quick": [{"text": "Quick answer."}]}
    )
    bot.send("a slow question", chat=777)
    bot.send("a quick question")
    started = time.monotonic()
    assert serve_guests(world, bot, polls=1) == 2
    assert time.monotonic() - started < 6
    assert bot.texts_shown() == ["Quick answer.", "Slow answer."]  # the owner's answer did not wait


def test_one_chats_messages_are_answered_in_order(world: Env, bot: BotStandIn) -> None:
    by_prompt(
        world,
        bot,
        {"first": [{"delay": 1, "text": "Answer one."}, {"text": "Answer two."}], "other": [{"text": "x"}]},
    )
    bot.send("first question")
    bot.send("second question")
    assert serve_guests(world, bot, polls=1) == 2
    assert bot.texts_shown() == ["Answer one.", "Answer two."]
    assert [m for m in user_prompts(world)] == ["first question", "second question"]


LONG_TOOL = [
    {
        "tool_calls": [
            {"name": "shell", "arguments": {"command": "touch started && sleep 30 && touch finished"}}
        ]
    },
    {"text": "Done."},
]


def start_server(world: Env) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "serve", "telegram", "--poll-timeout", "1"],
        env=world.env, cwd=world.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for(path: Any, proc: subprocess.Popen[str], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert path.exists(), proc.stderr.read() if proc.poll() is not None and proc.stderr else "not started"


def test_a_turn_cut_by_a_kill_is_not_run_again_and_its_chat_is_told(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, LONG_TOOL)
    update = bot.send("run the long thing")
    proc = start_server(world)
    try:
        wait_for(world.project / "started", proc)
        proc.kill()  # SIGKILL in the middle of the turn: no chance to clean up
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (world.project / "started").unlink()
    handled, _ = serve(world, bot, polls=1)
    assert handled == 0 and not (world.project / "started").exists()  # the tool did not run again
    [notice] = bot.payloads("sendMessage")
    assert (
        notice["text"] == "⚠ your previous message was interrupted by a restart; please resend it if needed."
    )
    assert notice["reply_parameters"]["message_id"] == 1000 + update
    ctx = world.context()
    try:
        runs = ctx.state.query("SELECT status FROM runs")
    finally:
        ctx.close()
    assert [r["status"] for r in runs] == ["interrupted"]
    serve(world, bot, polls=1)  # told once
    assert len(bot.payloads("sendMessage")) == 1


def test_a_message_taken_but_not_started_is_answered_after_a_restart(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, [{"text": "Answered after all."}])
    bot.send("are you there?")
    [update] = bot.updates
    run_dir = world.fermix_home / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "telegram.offset").write_text("2\n")  # the offset had moved past it ...
    (run_dir / "telegram.turns.json").write_text(
        json.dumps([{"update": update, "started": False}])
    )  # ... journaled
    handled, _ = serve(world, bot, polls=1)
    assert handled == 1 and bot.texts_shown() == ["Answered after all."]
    assert json.loads((run_dir / "telegram.turns.json").read_text()) == []


def test_a_second_stop_signal_interrupts_the_turn_in_progress(world: Env, bot: BotStandIn) -> None:
    configure(world, bot, LONG_TOOL)
    bot.send("run the long thing")
    proc = start_server(world)
    try:
        wait_for(world.project / "started", proc)
        os.kill(proc.pid, signal.SIGTERM)
        time.sleep(1.0)
        assert proc.poll() is None  # the first signal lets the turn end
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=15)
        assert code == 0 and time.monotonic() - started < 8
        assert "stopping after the 1 turn(s) in progress" in (proc.stderr.read() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [shown] = bot.texts_shown()
    assert shown.startswith("⚠ interrupted:")
    assert not (world.project / "finished").exists()  # the command was stopped, not left to run on
    [result] = tool_results(world)
    assert "interrupted" in result or "cancelled" in result, result
    assert (world.fermix_home / "run" / "telegram.offset").read_text() == "2\n"
    assert json.loads((world.fermix_home / "run" / "telegram.turns.json").read_text()) == []
    serve(world, bot, polls=1)  # nothing replayed, nobody told twice
    assert len(bot.payloads("sendMessage")) == 1


def test_a_closed_terminal_stops_the_server_as_sigterm_does(world: Env, bot: BotStandIn) -> None:
    """The terminal the server was started in closes (SIGHUP, and stderr gone): the turn in progress is
    left to end and its answer sent, as after a first SIGTERM, and the server stops cleanly; it is not
    killed with its command left running and its update journaled as cut off."""
    marker = "sleep 3.4567"
    configure(
        world,
        bot,
        [
            {"tool_calls": [{"name": "shell", "arguments": {"command": f"touch started && {marker}"}}]},
            {"text": "Done."},
        ],
    )
    bot.send("run the long thing")
    proc = start_server(world)
    try:
        wait_for(world.project / "started", proc)
        assert proc.stderr is not None
        proc.stderr.close()  # the terminal is gone: what the server says now cannot be written
        os.kill(proc.pid, signal.SIGHUP)
        code = proc.wait(timeout=30)
        left = processes_with(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0 and left == []
    assert bot.texts_shown() == ["Done."]
    assert (world.fermix_home / "run" / "telegram.offset").read_text() == "2\n"
    assert json.loads((world.fermix_home / "run" / "telegram.turns.json").read_text()) == []


def test_a_job_scheduled_from_a_chat_with_origin_delivery_reports_to_that_chat(
    world: Env, bot: BotStandIn
) -> None:
    # Reference 8.2: delivery `origin` replies to the chat (and topic) the job was created from.
    job = {"name": "standup", "schedule": "every 1 day", "task": "summarise", "delivery_mode": "origin"}
    configure(
        world,
        bot,
        [{"tool_calls": [{"name": "schedule_job", "arguments": job}]}, {"text": "Scheduled."}],
    )
    bot.send("remind me daily", message_thread_id=42, is_topic_message=True)
    serve(world, bot, polls=1)
    assert bot.texts_shown() == ["Scheduled."]
    [listed] = world.tool("list_jobs").json()["jobs"]
    assert listed["delivery"] == {
        "mode": "origin",
        "target": {"platform": "telegram", "chat_id": OWNER, "message_thread_id": 42},
    }


def test_ultra_in_the_owners_chat_sets_subagents_caps_until_ultra_off(world: Env, bot: BotStandIn) -> None:
    """`/ultra` in the owner's chat lets the next turns fan out 11 tasks; `/ultra off` brings back the
    10-task cap; a guest's `/ultra` is refused and never reaches the model."""
    guest = 777
    fan = {
        "tool_calls": [
            {
                "name": "subagents",
                "arguments": {"tasks": [{"id": f"t{i}", "task": f"task {i}"} for i in range(11)]},
            }
        ]
    }
    configure(world, bot, [])
    (world.root / "script.json").write_text(
        json.dumps(
            {
                "by_prompt": [
                    {
                        "contains": "fan out",
                        "responses": [fan, {"text": "Fanned."}, fan, {"text": "Refused."}],
                    },
                    {"contains": "task", "responses": [{"text": "done"}]},
                ]
            }
        )
    )
    data = (world.fermix_home / "config.toml").read_text()
    (world.fermix_home / "config.toml").write_text(
        data.replace("owner_user_id", f"guest_user_ids = [{guest}]\nowner_user_id")
    )
    ctx = world.context(origin="interactive")
    api = BotApi(TOKEN, bot.api_base, http_client(ctx.config, 10))
    downloads = guarded_client(allowed_private_hosts=("127.0.0.1",))
    server = TelegramServer(
        ctx, AgentOptions(session=f"telegram-{OWNER}"), api, OWNER, downloads=downloads, poll_timeout=0,
        guests=[guest], sleep=Clock().sleep,
    )  # fmt: skip
    try:
        bot.send("/ultra", chat=guest)
        bot.send("/ultra")
        bot.send("fan out")
        bot.send(f"/ultra@{BOT_USERNAME} off")
        bot.send("fan out again")
        bot.send("/ultra sometimes")
        assert server.serve(max_polls=1) == 6
    finally:
        api.client.close()
        downloads.close()
        ctx.close()
    fanned, refused = tool_results(world)
    assert json.loads(fanned)["summary"]["completed"] == 11
    assert refused == "invalid_input: Too many tasks: 11 (max 10)."
    shown = bot.texts_shown()
    chats = [p["chat_id"] for p in bot.payloads("sendMessage")]
    by_chat = {c: [t for t, tc in zip(shown, chats, strict=True) if tc == c] for c in (guest, OWNER)}
    [to_guest] = by_chat[guest]
    assert to_guest.startswith("⚠ not_attended: ultra mode is the owner's")
    owner = by_chat[OWNER]
    assert owner[0].startswith("ultra mode on until /ultra off: subagents: up to 50 tasks, 12 at once")
    assert owner[1] == "Fanned."
    assert owner[2].startswith("ultra mode off: subagents: up to 10 tasks, 4 at once")
    assert owner[3:] == ["Refused.", "⚠ usage: write /ultra to turn ultra mode on, /ultra off to leave it"]
