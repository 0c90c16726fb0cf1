"""A 127.0.0.1 Telegram Bot API for conversations: getUpdates from a queue, files to download, and every
outgoing call (sendMessage, editMessageText, sendPhoto, sendDocument, setMessageReaction) recorded."""

from __future__ import annotations

from typing import Any

from tests.channels.standins import TOKEN, TelegramStandIn, multipart
from tests.tools.webfakes import Hit, Reply, json_reply

OWNER = 4242
BOT_ID = 9001
BOT_USERNAME = "FermixTestBot"
METHODS = (
    "sendMessage",
    "editMessageText",
    "sendPhoto",
    "sendDocument",
    "sendAudio",
    "sendVideo",
    "sendVoice",
    "setMessageReaction",
    "getFile",
    "getMe",
)


class BotStandIn(TelegramStandIn):
    def __init__(self, token: str = TOKEN) -> None:
        super().__init__(token)
        self.updates: list[dict[str, Any]] = []
        self.update_script: list[Reply] = []  # answers to getUpdates before the queue is served
        self.files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, bytes)
        self.poll_delay = 0.0
        self.next_update = 1
        self.shown: dict[int, str] = {}
        self.order: list[int] = []
        for method in METHODS:
            self.web.routes[f"/bot{token}/{method}"] = self._method
        self.web.routes[f"/bot{token}/getUpdates"] = self._get_updates

    def _method(self, hit: Hit) -> Reply:
        method = hit.path.rsplit("/", 1)[1]
        if self.script:
            return self.script.pop(0)
        if method == "getFile":
            file_id = hit.json()["file_id"]
            if file_id not in self.files:
                return json_reply(
                    {"ok": False, "error_code": 400, "description": "Bad Request: invalid file_id"}, 400
                )
            path, data = self.files[file_id]
            self.web.routes[f"/file/bot{self.token}/{path}"] = Reply(
                200, data, {"Content-Type": "application/octet-stream"}
            )
            return json_reply(
                {
                    "ok": True,
                    "result": {
                        "file_id": file_id,
                        "file_unique_id": "u" + file_id,
                        "file_size": len(data),
                        "file_path": path,
                    },
                }
            )
        if method == "getMe":
            me = {"id": BOT_ID, "is_bot": True, "first_name": "Fermix", "username": BOT_USERNAME}
            return json_reply({"ok": True, "result": {**me, "can_join_groups": True}})
        if method == "setMessageReaction":
            return json_reply({"ok": True, "result": True})
        if method == "editMessageText":
            body = hit.json()
            self.shown[body["message_id"]] = body["text"]
            return json_reply(
                {"ok": True, "result": {"message_id": body["message_id"], "text": body["text"]}}
            )
        self.next_id += 1
        chat = (
            hit.json()["chat_id"]
            if "json" in hit.headers.get("content-type", "")
            else int(multipart(hit)["chat_id"][1])
        )
        result: dict[str, Any] = {
            "message_id": self.next_id,
            "chat": {"id": chat, "type": "private"},
            "date": 0,
        }
        if method == "sendMessage":
            result["text"] = hit.json()["text"]
            self.shown[self.next_id] = result["text"]
            self.order.append(self.next_id)
        return json_reply({"ok": True, "result": result})

    def _get_updates(self, hit: Hit) -> Reply:
        if self.update_script:
            return self.update_script.pop(0)
        offset = hit.json().get("offset") or 0
        ready = [u for u in self.updates if u["update_id"] >= offset]
        reply = json_reply({"ok": True, "result": ready})
        if not ready and self.poll_delay:
            reply.delay = self.poll_delay
        return reply

    def send(
        self,
        text: str | None = None,
        *,
        chat: int = OWNER,
        user: int | None = None,
        chat_type: str = "private",
        **extra: Any,
    ) -> int:
        """Queue a message from `user` (the owner by default) in `chat`; its update_id."""
        update_id = self.next_update
        self.next_update += 1
        message: dict[str, Any] = {
            "message_id": 1000 + update_id,
            "from": {"id": chat if user is None else user, "is_bot": False, "first_name": "Ann"},
            "chat": {
                "id": chat,
                "type": chat_type,
                **({} if chat_type == "private" else {"title": "Friends"}),
            },
            "date": 1_700_000_000,
            **extra,
        }
        if text is not None:
            message["text"] = text
        self.updates.append({"update_id": update_id, "message": message})
        return update_id

    def add_file(self, file_id: str, path: str, data: bytes) -> None:
        self.files[file_id] = (path, data)

    def payloads(self, method: str) -> list[Any]:
        hits = self.calls(method)
        return [h.json() if "json" in h.headers.get("content-type", "") else multipart(h) for h in hits]

    def texts_shown(self) -> list[str]:
        """The text of every message sent, edits applied, in the order they were sent."""
        return [self.shown[m] for m in self.order]
