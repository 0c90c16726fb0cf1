"""The Telegram conversation's Bot API calls and reply port: updates in, answers, files and reactions out.

Methods used (Bot API reference): `getUpdates` (long poll with `offset` and `timeout`), `getFile` and the
`/file/bot<token>/<file_path>` download, `sendMessage`, `editMessageText`, `sendPhoto`, `sendDocument`,
`sendAudio`, `sendVideo`, `sendVoice` (multipart uploads) and `setMessageReaction` (a `ReactionTypeEmoji` from Telegram's fixed set).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from .base import ChannelError
from .telegram import DOCUMENT_MAX, BotApi, upload, upload_method

if TYPE_CHECKING:
    from ..core.net.httpclient import GuardedClient

DOWNLOAD_MAX = 20 * 1024 * 1024  # the Bot API lets a bot download files up to 20 MB
# The emojis a bot may react with (ReactionTypeEmoji in the Bot API reference).
TELEGRAM_REACTIONS = frozenset(
    {
        "👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩",
        "🙏", "👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳", "\u2764\u200d\U0001f525", "🌚", "🌭", "💯", "🤣",
        "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓", "🍾", "💋", "🖕", "😈", "😴", "😭", "🤓", "👻",
        "\U0001f468\u200d\U0001f4bb", "👀", "🎃", "🙈", "😇", "😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄",
        "☃", "💅", "🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾",
        "\U0001f937\u200d\u2642", "🤷", "\U0001f937\u200d\u2640", "😡",
    }
)  # fmt: skip


def get_updates(api: BotApi, offset: int | None, timeout: int) -> list[dict[str, Any]]:
    payload: dict[str, Any] = {"timeout": timeout, "allowed_updates": ["message"]}
    if offset is not None:
        payload["offset"] = offset
    result = api.call("getUpdates", payload=payload, read_timeout=timeout + 15.0)
    if not isinstance(result, list):  # a broken proxy or API stand-in: a failure, not "no updates"
        raise ChannelError(
            f"Telegram getUpdates answered {type(result).__name__}, not a list of updates; check api_base",
            code="bad_answer",
        )
    return [u for u in result if isinstance(u, dict)]


def edit_message_text(api: BotApi, chat_id: int, message_id: int, text: str) -> None:
    try:
        api.call("editMessageText", payload={"chat_id": chat_id, "message_id": message_id, "text": text})
    except ChannelError as e:
        if "not modified" not in str(e).lower():  # the same text again is not a failure
            raise


def download_file(api: BotApi, client: GuardedClient, file_id: str) -> tuple[bytes, str]:
    """A file the person sent: `getFile`, then its bytes (at most 20 MB) and its `file_path`."""
    info = api.call("getFile", payload={"file_id": file_id})
    path = info.get("file_path") if isinstance(info, dict) else None
    if not isinstance(path, str) or not path:
        raise ChannelError(
            "Telegram getFile gave no file_path (the file is too big to download).", code="no_file"
        )
    try:
        response = client.get(api.file_url(path), max_body=DOWNLOAD_MAX)
    except ToolError as e:
        raise ChannelError(f"Telegram file download failed: {api.redacted(e.message)}", code=e.code) from None
    if response.status_code != 200:
        raise ChannelError(
            f"Telegram file download answered HTTP {response.status_code}", code="platform_error"
        )
    return response.content, path


class TelegramReplyPort:
    """The reply port of one Telegram message: files to its chat (and forum topic), reactions on it.

    Files go to the topic the message was written in (`message_thread_id`), as the text answer does;
    `setMessageReaction` names the message itself and takes no thread.
    """

    platform = "telegram"
    reactions: frozenset[str] | None = TELEGRAM_REACTIONS

    def __init__(self, api: BotApi, chat_id: int, message_id: int, thread_id: int | None = None) -> None:
        self.api = api
        self.chat_id = chat_id
        self.message_id = message_id
        self.thread_id = thread_id

    def send_attachment(
        self, data: bytes, *, kind: str, caption: str | None, filename: str, mime_type: str, source: str
    ) -> dict[str, Any]:
        if len(data) > DOCUMENT_MAX:
            raise ToolError("attachment_too_large", f"Telegram accepts files up to {DOCUMENT_MAX} bytes.", {})
        method, field = upload_method(kind, len(data), mime_type)
        try:
            result = upload(
                self.api, method, field, self.chat_id, filename, data, mime_type, caption, self.thread_id
            )
        except ChannelError as e:
            raise _delivery_error(e, len(data)) from None
        return {"message_id": result.get("message_id"), "method": method}

    def react(self, emoji: str) -> dict[str, Any]:
        payload = {
            "chat_id": self.chat_id,
            "message_id": self.message_id,
            "reaction": [{"type": "emoji", "emoji": emoji}],
        }
        try:
            self.api.call("setMessageReaction", payload=payload)
        except ChannelError as e:
            raise _delivery_error(e) from None
        return {"message_id": self.message_id}


def _delivery_error(e: ChannelError, size: int | None = None) -> ToolError:
    details: dict[str, Any] = {"platform": "telegram", "channel_code": e.code}
    if e.retry_after is not None:
        details["retry_after"] = e.retry_after
    if e.code == "too_large" and size is not None:  # HTTP 413: the upload (with its form) is over the limit
        details.update(bytes=size, max_bytes=DOCUMENT_MAX)
        return ToolError(
            "attachment_too_large",
            f"attachment is {size / 1024 / 1024:.1f} MiB; limit is 50 MB for Telegram bots, and Telegram "
            "refused this upload as too large. Send a smaller or compressed file, or a link instead.",
            details,
        )
    code = "rate_limited" if e.code == "rate_limited" else "delivery_failed"
    return ToolError(code, str(e), details)
