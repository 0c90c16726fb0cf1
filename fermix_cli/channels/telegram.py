"""Telegram: the Bot API (`sendMessage`, and uploads) over httpx, through fermix's network guard.

`BotApi` is the one Telegram client in fermix (a later conversation channel shares it); `TelegramChannel`
is the delivery channel on top. Configured in `[fermix_core.channels.telegram]`: `bot_token` (or
`bot_token_env`, the variable that holds it), `owner_user_id`, and `api_base` (tests point it at a local
stand-in). The token travels only in the URL path (`/bot<token>/METHOD`); it is never logged, and it is
cut out of every error message.

Text is sent as plain text (no parse_mode, so nothing needs escaping). Telegram refuses a message over
4096 characters (counted in UTF-16 code units): longer text is split at line breaks into up to
`MAX_PARTS` messages, and text that would need more is sent as a `message.txt` document instead, with
its first lines as the caption. A file goes as a document, or, when the caller names its kind
(`meta["kind"]`, `meta["mime_type"]`), by that kind's method (`sendPhoto`, `sendVoice`, ...). Bot API
answers map to `ChannelError`s: 429 is `rate_limited` with the API's `retry_after`; 400/401/403/404 are
permanent, with what to fix; 413 (an upload over the 50 MB limit) is the permanent `too_large`; 409 is
`conflict` (permanent while a webhook is set, transient when another poller took the updates); 5xx and
network failures are transient.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from .base import Capability, ChannelError, Sent
from .http import http_client, network_failure, quote, redact

if TYPE_CHECKING:
    from ..core.net.httpclient import GuardedClient
    from .config import TelegramConfig

MESSAGE_MAX = 4096  # UTF-16 code units, the Bot API's limit for sendMessage text
CAPTION_MAX = 1024  # the same, for a document's caption
MAX_PARTS = 8  # more than this many messages: send the text as a document
DOCUMENT_MAX = 50 * 1024 * 1024  # the Bot API's upload limit
TOKEN = re.compile(r"[0-9]{1,20}:[A-Za-z0-9_-]{20,200}")
CHAT_ID = re.compile(r"-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31}")
SECTION = "[fermix_core.channels.telegram]"
PHOTO_MAX = 10 * 1024 * 1024  # sendPhoto's limit; a larger image goes as a document
PHOTO_TYPES = ("image/jpeg", "image/png", "image/webp")
# How each attachment kind is uploaded: the Bot API method and its file field.
UPLOADS = {
    "image": ("sendPhoto", "photo"),
    "document": ("sendDocument", "document"),
    "audio": ("sendAudio", "audio"),
    "video": ("sendVideo", "video"),
    "voice": ("sendVoice", "voice"),
}


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def split_message(text: str, limit: int = MESSAGE_MAX) -> list[str]:
    """`text` in parts of at most `limit` UTF-16 units, cut after a line break where one is near the end."""
    parts: list[str] = []
    rest = text
    while utf16_len(rest) > limit:
        # The longest prefix within the limit (a character outside the BMP counts two units).
        units, cut = 0, 0
        for i, ch in enumerate(rest):
            units += 2 if ord(ch) > 0xFFFF else 1
            if units > limit:
                cut = i
                break
        newline = rest.rfind("\n", 0, cut)
        if newline >= cut // 2:
            cut = newline + 1
        parts.append(rest[:cut])
        rest = rest[cut:]
    if rest or not parts:
        parts.append(rest)
    return parts


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` UTF-16 units (with an ellipsis when cut)."""
    if utf16_len(text) <= limit:
        return text
    return split_message(text, limit - 1)[0] + "…"


def chat_id_value(address: str | int) -> str | int:
    """A chat id as the Bot API takes it: an integer, or a public `@username`."""
    text = str(address).strip()
    if not CHAT_ID.fullmatch(text):
        raise ChannelError(
            f"Telegram chat id {text!r} is neither a number nor an @username.",
            code="invalid_address",
            permanent=True,
        )
    return text if text.startswith("@") else int(text)


class BotApi:
    """A Telegram Bot API client: one method call per request, answers mapped to `ChannelError`s."""

    def __init__(self, token: str, api_base: str, client: GuardedClient) -> None:
        if not TOKEN.fullmatch(token):
            raise ChannelError(
                f"the Telegram bot token is not in BotFather's form (digits, ':', then the secret). Check "
                f"{SECTION} bot_token or the variable bot_token_env names.",
                code="bad_token",
                permanent=True,
            )
        self._token = token
        self.api_base = api_base.rstrip("/")
        self.client = client

    def call(
        self,
        method: str,
        *,
        payload: dict[str, Any] | None = None,
        multipart: bytes | None = None,
        content_type: str | None = None,
        read_timeout: float | None = None,
    ) -> Any:
        """POST one Bot API method; the `result` on success, else a `ChannelError`.

        `read_timeout` overrides the client's for this call (a long poll waits longer than a send).
        """
        url = f"{self.api_base}/bot{self._token}/{method}"
        limits: dict[str, Any] = {}
        if read_timeout is not None:
            limits = {"read_timeout": read_timeout, "total_timeout": read_timeout + 10.0}
        try:
            if multipart is not None:
                response = self.client.post(
                    url, content=multipart, headers={"content-type": content_type or ""}, **limits
                )
            else:
                response = self.client.post(url, json=payload or {}, **limits)
        except ToolError as e:
            raise network_failure(e, f"Telegram {method}", [self._token]) from None
        try:
            answer = json.loads(response.content)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser follows
            answer = None
        if isinstance(answer, dict) and answer.get("ok") is True and 200 <= response.status_code < 300:
            return answer.get("result")
        raise self._failure(method, response.status_code, answer)

    def file_url(self, file_path: str) -> str:
        """Where `getFile`'s `file_path` is downloaded from (the token is in it: never log it)."""
        return f"{self.api_base}/file/bot{self._token}/{file_path.lstrip('/')}"

    def redacted(self, text: str) -> str:
        return redact(text, [self._token])

    def _failure(self, method: str, status: int, answer: Any) -> ChannelError:
        data = answer if isinstance(answer, dict) else {}
        code = data.get("error_code") if isinstance(data.get("error_code"), int) else status
        described = redact(quote(str(data.get("description") or f"HTTP {status}")), [self._token])
        raw_params = data.get("parameters")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        said = f"Telegram {method} failed ({described})"
        if code == 429:
            retry = params.get("retry_after")
            wait = float(retry) if isinstance(retry, int | float) and not isinstance(retry, bool) else None
            hint = f"; Telegram asks to wait {wait:g} s" if wait is not None else ""
            return ChannelError(f"{said}: rate limited{hint}.", code="rate_limited", retry_after=wait)
        if code == 401 or code == 404:
            return ChannelError(
                f"{said}: Telegram does not accept the bot token. Put the token BotFather gave you in "
                f"{SECTION} bot_token (or the variable bot_token_env names), and check api_base.",
                code="bad_token",
                permanent=True,
            )
        if code == 403:
            lowered = described.lower()
            if "blocked" in lowered:
                fix = "The recipient blocked the bot: unblock it in Telegram and send it /start."
            elif "initiate" in lowered:
                fix = "The bot may only write to someone who wrote to it first: open the bot and send /start."
            else:
                fix = "The bot is not allowed in this chat: add it back, or check the chat id."
            return ChannelError(f"{said}: {fix}", code="bot_blocked", permanent=True)
        if code == 400:
            lowered = described.lower()
            if "migrate_to_chat_id" in params:
                return ChannelError(
                    f"{said}: the group became a supergroup; use chat_id {params['migrate_to_chat_id']}.",
                    code="chat_migrated",
                    permanent=True,
                )
            if "chat not found" in lowered:
                return ChannelError(
                    f"{said}: no chat with this id reaches the bot. Check the target's chat_id (or "
                    f"{SECTION} owner_user_id), and send the bot /start from that account first.",
                    code="chat_not_found",
                    permanent=True,
                )
            if "thread not found" in lowered:
                return ChannelError(
                    f"{said}: the target's message_thread_id names no topic in this chat.",
                    code="thread_not_found",
                    permanent=True,
                )
            return ChannelError(f"{said}.", code="bad_request", permanent=True)
        if code == 409:  # someone else takes this bot's updates: a webhook, or a second poller
            if "webhook" in described.lower():
                return ChannelError(
                    f"{said}: a webhook is set for this bot, so Telegram sends its updates there. Delete it "
                    "(open https://api.telegram.org/bot<token>/deleteWebhook with your token) and start again.",
                    code="conflict",
                    permanent=True,
                )
            return ChannelError(
                f"{said}: another program is polling this bot's updates; only one may: stop the other one.",
                code="conflict",
            )
        if code == 413:  # the upload is over what the Bot API server takes; the same file fails again
            return ChannelError(
                f"{said}: the file is too large for the Bot API, which takes uploads up to 50 MB. Send a "
                "smaller or compressed file, or share it as a link instead.",
                code="too_large",
                permanent=True,
            )
        return ChannelError(f"{said}; this is usually temporary.", code="platform_error")

    def send_message(
        self, chat_id: str | int, text: str, thread_id: int | None = None, reply_to: int | None = None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "chat_id": chat_id,
            "text": text,
            "link_preview_options": {"is_disabled": True},
        }
        if thread_id is not None:
            payload["message_thread_id"] = thread_id
        if reply_to is not None:  # Bot API ReplyParameters; still sent if that message was deleted meanwhile
            payload["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
        result = self.call("sendMessage", payload=payload)
        return result if isinstance(result, dict) else {}

    def send_document(
        self, chat_id: str | int, name: str, data: bytes, caption: str = "", thread_id: int | None = None
    ) -> dict[str, Any]:
        import httpx

        fields: dict[str, Any] = {"chat_id": str(chat_id)}
        if caption:
            fields["caption"] = caption
        if thread_id is not None:
            fields["message_thread_id"] = str(thread_id)
        # httpx writes the multipart body; the guarded client sends it.
        request = httpx.Request(
            "POST",
            "http://multipart.invalid/",
            data=fields,
            files={"document": (name, data, "application/octet-stream")},
        )
        body = request.read()
        result = self.call("sendDocument", multipart=body, content_type=request.headers["content-type"])
        return result if isinstance(result, dict) else {}


def upload_method(kind: str, size: int, mime: str) -> tuple[str, str]:
    """The Bot API method and file field for an attachment of `kind` (an image Telegram would not show
    as a photo, too big or not JPEG/PNG/WebP, goes as a document)."""
    if kind == "image" and (size > PHOTO_MAX or mime not in PHOTO_TYPES):
        return "sendDocument", "document"
    return UPLOADS.get(kind, ("sendDocument", "document"))


def upload(
    api: BotApi,
    method: str,
    field: str,
    chat_id: str | int,
    name: str,
    data: bytes,
    mime: str,
    caption: str | None,
    thread_id: int | None = None,
) -> dict[str, Any]:
    """`sendPhoto` / `sendDocument` / ... as multipart/form-data (in a forum topic's thread when given one)."""
    import httpx

    fields: dict[str, Any] = {"chat_id": str(chat_id)}
    if thread_id is not None:
        fields["message_thread_id"] = str(thread_id)
    if caption:
        fields["caption"] = clip(caption, CAPTION_MAX)
    request = httpx.Request(
        "POST", "http://multipart.invalid/", data=fields, files={field: (name, data, mime)}
    )
    body = request.read()
    result = api.call(method, multipart=body, content_type=request.headers["content-type"])
    return result if isinstance(result, dict) else {}


def bot_token(settings: TelegramConfig, env: dict[str, str] | os._Environ[str] | None = None) -> str:
    """The configured token (config, or the variable `bot_token_env` names); a permanent error if none."""
    if settings.bot_token is not None:
        return settings.bot_token.strip()
    if settings.bot_token_env is not None:
        value = (os.environ if env is None else env).get(settings.bot_token_env, "").strip()
        if value:
            return value
        raise ChannelError(
            f"{SECTION} bot_token_env names {settings.bot_token_env}, which is not set in this environment "
            "(cron runs have a small one: set it in the crontab or put bot_token in config.toml).",
            code="not_configured",
            permanent=True,
        )
    raise ChannelError(
        f"Telegram is not set up: put the bot token from BotFather in {SECTION} bot_token (or name the "
        "variable that holds it in bot_token_env).",
        code="not_configured",
        permanent=True,
    )


class TelegramChannel:
    """Deliveries to a Telegram chat through the owner's bot."""

    platform = "telegram"
    capabilities: frozenset[Capability] = frozenset({"text", "file"})
    max_text = MESSAGE_MAX // 2  # UTF-16 units: a character outside the BMP counts two

    def __init__(self, config: Any) -> None:
        self.config = config
        self.settings: TelegramConfig = config.fermix_core.channels.telegram

    def _api(self) -> BotApi:
        token = bot_token(self.settings)
        return BotApi(token, self.settings.api_base, http_client(self.config, self.settings.timeout_seconds))

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        chat = chat_id_value(address)
        thread = _thread(meta)
        if not text.strip():
            raise ChannelError("Telegram refuses an empty message.", code="empty_message", permanent=True)
        parts = split_message(text)
        if len(parts) > MAX_PARTS:
            caption = clip(text, CAPTION_MAX // 4)
            return self._document(
                chat, "message.txt", text.encode("utf-8"), caption, thread, {"as_document": True}
            )
        api = self._api()
        ids: list[int] = []
        try:
            for part in parts:
                try:
                    result = api.send_message(chat, part, thread)
                except ChannelError as e:
                    if not ids:
                        raise
                    # Say what already arrived: a retry sends those parts again.
                    raise ChannelError(
                        f"{e} ({len(ids)} of {len(parts)} parts were delivered before this)",
                        code=e.code,
                        retry_after=e.retry_after,
                        permanent=e.permanent,
                    ) from None
                if isinstance(result.get("message_id"), int):
                    ids.append(result["message_id"])
        finally:
            api.client.close()
        return Sent(self.platform, str(chat), {"message_ids": ids, "parts": len(parts)})

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        chat = chat_id_value(address)
        try:
            size = path.stat().st_size
            if size > DOCUMENT_MAX:
                raise ChannelError(
                    f"{path.name} is {size} bytes; the Bot API accepts files up to {DOCUMENT_MAX} bytes.",
                    code="too_large",
                    permanent=True,
                )
            data = path.read_bytes()
        except OSError as e:
            raise ChannelError(
                f"cannot read {path}: {e.strerror}", code="unreadable_file", permanent=True
            ) from None
        kind = meta.get("kind")
        if not isinstance(kind, str):
            return self._document(chat, path.name, data, clip(caption, CAPTION_MAX), _thread(meta), {})
        # An attachment with a kind (send_attachment in a job run) goes as that kind, like a chat's.
        mime = str(meta.get("mime_type") or "application/octet-stream")
        method, field = upload_method(kind, len(data), mime)
        thread = _thread(meta)
        api = self._api()
        try:
            result = upload(api, method, field, chat, path.name, data, mime, caption, thread)
        finally:
            api.client.close()
        return Sent(
            self.platform,
            str(chat),
            {"message_id": result.get("message_id"), "method": method, "file": path.name},
        )

    def _document(
        self, chat: str | int, name: str, data: bytes, caption: str, thread: int | None, extra: dict[str, Any]
    ) -> Sent:
        api = self._api()
        try:
            result = api.send_document(chat, name, data, caption, thread)
        finally:
            api.client.close()
        return Sent(
            self.platform, str(chat), {"message_id": result.get("message_id"), "document": name, **extra}
        )


def _thread(meta: dict[str, Any]) -> int | None:
    value = meta.get("message_thread_id")
    if value is None:
        return None
    if isinstance(value, bool) or not str(value).isdigit() or int(value) < 1:
        raise ChannelError(
            f"message_thread_id {value!r} is not a positive integer.", code="invalid_address", permanent=True
        )
    return int(value)
