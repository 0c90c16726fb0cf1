"""`fermix serve telegram`: the owner's Telegram chat as a conversation with the same agent loop.

One long poll (`getUpdates`) at a time. A message from the owner's private chat becomes one agent run
in the session `telegram-<chat id>`, with the same tools and policy as `fermix agent`; its text
streams back as a message that is edited as it grows (and continued in new messages past Telegram's
4096-character limit). Photos, documents, voice messages, audio, videos and video notes that come with
it are saved under `media/inbound/` and offered to the tools as `inbound:1`, `inbound:2`, ... for this
turn, each named to the model with its kind and, for sound and video, its duration. The private chats of
`guest_user_ids` are answered as guests (read-only tools that are not owner-only, a session per chat),
and so are the group chats of `guest_chat_ids`, but only messages that address the bot (an @mention of
its username, a reply to one of its messages, a /command@its-username); in a group even the owner is a
guest, since the whole group reads the answer. A guest's turn carries none of the owner's profile
sections, and its notes stay in its own conversation. Messages from any other chat are refused (never
answered) and logged.

`/confirm TOKEN` and `/deny TOKEN` from the owner's private chat settle a directory access request (the
token `request_directory_access` gave), as `fermix sandbox confirm|deny TOKEN` does on the machine;
anywhere else they are refused with a typed answer, never passed to the model. `/ultra` there turns on
subagents' ultra mode for the owner's next turns (50 tasks, 12 at once) until `/ultra off` or the server
stops; it is the owner's alone, refused in other chats.

Each chat is a conversation (its forum topics included): its messages are answered one after another,
in order, while other chats are answered at the same time, at most MAX_TURNS turns at once, each turn in
a context of its own (sandbox, cancel token, a state connection borrowed for its thread). Whatever fails
while one update is handled is logged (with its traceback) and, in a chat this server answers, told in a
short message; the server goes on to the next update.

Failures to reach Telegram back off (1 s doubling to 60 s; a 429's `retry_after` exactly); a bad token,
or a webhook that takes the bot's updates (409), stops the server. SIGTERM, SIGINT or SIGHUP (the
terminal closed; unless ignored, as under `nohup`) stop it: polling
at once, the turns in progress are left to end and their answers sent; a second signal interrupts them
(each ends `interrupted`, a running tool stopped, as Ctrl-C does in `fermix agent`).

A restart neither loses nor repeats a message: the next update offset is kept in `run/telegram.offset`,
and an update that becomes a turn is journaled (`run/telegram.turns.json`, telegram_turns.py) before
the offset moves past it. A journaled update whose turn had not started is answered after a restart; one
whose turn had started when the server was killed is not run again (its tools may have acted already):
its chat is told to resend it if needed. Turns are at most once.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..channels.base import ChannelError
from ..channels.telegram import BotApi
from ..channels.telegram_chat import DOWNLOAD_MAX, TelegramReplyPort, download_file, get_updates
from ..core.cancel import stop_signals
from ..core.errors import ToolError
from ..core.imagefmt import MIME_TYPES, SUFFIX, sniff
from ..core.logs import logger
from ..core.newfile import write_new_file
from ..core.replyport import INBOUND, REPLY_PORT, AttachmentKind, InboundFile
from .telegram_stream import MessageStream
from .telegram_turns import ConversationQueues, TurnJournal

if TYPE_CHECKING:
    from ..agent.assemble import AgentOptions
    from ..core.cancel import CancelToken
    from ..core.context import ToolContext
    from ..core.net.httpclient import GuardedClient
    from ..core.state import StateDB

log = logger("fermix.telegram")
BACKOFF_START = 1.0
BACKOFF_MAX = 60.0
MAX_TURNS = 4  # turns answered at once (each in its own chat)
STOP_GRACE = 10.0  # seconds interrupted turns get to end before the server leaves them
INTERRUPTED = "⚠ your previous message was interrupted by a restart; please resend it if needed."


# The Bot API's message fields for sent media besides photos: (field, kind, default name, default mime).
MEDIA_FIELDS: tuple[tuple[str, AttachmentKind, str, str], ...] = (
    ("document", "document", "document", ""),
    ("voice", "voice", "voice.ogg", "audio/ogg"),
    ("audio", "audio", "audio.mp3", "audio/mpeg"),
    ("video", "video", "video.mp4", "video/mp4"),
    ("video_note", "video", "video_note.mp4", "video/mp4"),
)


@dataclass(frozen=True)
class Wanted:
    file_id: str
    name: str
    mime: str
    kind: AttachmentKind
    label: str  # what Telegram called it: photo, document, voice, audio, video, video note
    meta: dict[str, Any]


NAME_MAX_BYTES = 200  # of UTF-8: the file system's 255 leave room for the message id before it and a -N


def _safe_name(raw: Any) -> str:
    """A sent file's name as a name under media/inbound/: no '/' or NUL, valid UTF-8, at most
    NAME_MAX_BYTES bytes (cut between characters, a short extension kept)."""
    if not raw:
        return ""
    name = str(raw).replace("/", "_").replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if len(name.encode("utf-8")) <= NAME_MAX_BYTES:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem or len(ext.encode("utf-8")) > 16:
        stem, ext = name, ""
    room = NAME_MAX_BYTES - (len(ext.encode("utf-8")) + 1 if ext else 0)
    cut = stem.encode("utf-8")[:room].decode("utf-8", "ignore")  # a character cut in two is dropped
    return cut + (f".{ext}" if ext else "")


def describe(f: InboundFile) -> str:
    """How an inbound file is named to the model: what it is, how long it plays, its name."""
    parts = [f.label or f.kind]
    if f.duration is not None:
        parts.append(f"{f.duration} s")
    parts.append(f.name or f.mime_type)
    if f.kind in ("voice", "audio", "video"):
        parts.append(f.mime_type)
    return ", ".join(parts)


def approval_command(text: str) -> tuple[str, str] | None:
    """(`confirm`|`deny`, token or "") for a `/confirm TOKEN` or `/deny@bot TOKEN` message, else None."""
    head, _, rest = text.strip().partition(" ")
    verb = head.split("@", 1)[0].lower()
    if verb not in ("/confirm", "/deny"):
        return None
    return verb[1:], rest.strip()


def ultra_command(text: str) -> str | None:
    """The argument ("" for none) of an `/ultra` or `/ultra@bot ARG` message, else None."""
    head, _, rest = text.strip().partition(" ")
    if head.split("@", 1)[0].lower() != "/ultra":
        return None
    return rest.strip().lower()


def say(text: str) -> None:
    """A line on stderr for the person who started the server; none when the terminal is gone (a SIGHUP
    stops the server, and its stop must not fail on writing to the closed terminal)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except OSError as e:
        log.info("telegram: not shown (stderr is gone: %s): %s", e, text)


class StopServing(BaseException):
    """Raised by the signal handler while the server is only waiting for updates."""


class TelegramServer:
    """The owner's chat, served until stopped."""

    def __init__(
        self,
        ctx: ToolContext,
        options: AgentOptions,
        api: BotApi,
        owner: int,
        *,
        downloads: GuardedClient,
        poll_timeout: int = 25,
        guests: Iterable[int] = (),
        guest_chats: Iterable[int] = (),
        max_turns: int = MAX_TURNS,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ctx = ctx
        self.options = options
        self.api = api
        self.owner = owner
        self.downloads = downloads
        self.poll_timeout = max(1, poll_timeout)  # 0 would poll in a tight loop
        self.sleep = sleep
        self.clock = clock
        self.stopping = False
        self.interrupting = False  # a second stop signal: the turns in flight end now
        self.waiting = False
        self.handled = 0
        self.guests = frozenset(guests)
        self.guest_chats = frozenset(guest_chats)
        self.me: dict[str, Any] | None = None  # getMe: the bot's own id and username, for group chats
        self.offset_file = ctx.paths.run_dir / "telegram.offset"
        self.journal = TurnJournal(ctx.paths.run_dir / "telegram.turns.json", ctx.paths.ensure_dir)
        self.max_turns = max_turns
        self.turns = ConversationQueues(self._take_journaled, max_turns)
        self._lock = threading.Lock()  # the shared context, the counter, the turns' cancel tokens
        self._tokens: set[CancelToken] = set()
        self._current = threading.local()  # the update a worker thread is handling
        self.ultra_chats: set[int] = set()  # chats in subagents' /ultra mode (the owner's only)
        self.lender: StateDB | None = None

    # ----- lifecycle ----------------------------------------------------------------------------

    def stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        # A signal handler: flags only (the main thread may hold any lock when it runs).
        if self.stopping:
            self.interrupting = True
        self.stopping = True
        if self.waiting:
            raise StopServing

    def serve(self, *, max_polls: int | None = None) -> int:
        """Poll and answer until stopped (or `max_polls` polls, for tests); the messages answered."""
        stops = stop_signals(signal.SIGTERM, signal.SIGINT)
        previous = {sig: signal.signal(sig, self.stop) for sig in stops}
        self.lender = self.ctx.state  # opened in this thread: each turn borrows a connection from it
        self.turns = ConversationQueues(
            self._take_journaled, self.max_turns
        )  # a stopped serve closed its own
        try:
            try:
                self._loop(max_polls)
            except StopServing:
                pass
            except BaseException:
                self.stopping = True
                raise
            finally:
                self._finish_turns()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        log.info("telegram: stopped after %d message(s)", self.handled)
        return self.handled

    def _finish_turns(self) -> None:
        """Wait for the turns: every one taken (after `max_polls`), or once stopped only those running.

        A second stop signal interrupts the running turns; they end `interrupted` at their next step.
        """
        self.waiting = False
        told = False
        interrupted_at: float | None = None
        while not self.turns.settled(0.1):
            if not self.stopping:
                continue
            self.turns.close()  # the turns not started stay in the journal for the next start
            if not told:
                told = True
                running = self.turns.running
                log.info("telegram: stopping after the %d turn(s) in progress", running)
                say(
                    f"fermix: stopping after the {running} turn(s) in progress (send the signal again to "
                    "interrupt them)"
                )
            if self.interrupting and interrupted_at is None:
                interrupted_at = time.monotonic()
                log.warning("telegram: a second stop signal: interrupting the turns in progress")
                with self._lock:
                    tokens = list(self._tokens)
                for token in tokens:
                    token.cancel("the server was stopped")
            if interrupted_at is not None and time.monotonic() - interrupted_at > STOP_GRACE:
                log.error(
                    "telegram: %d turn(s) did not end within %g s of the interruption; leaving them (their chats "
                    "are told at the next start)",
                    self.turns.running,
                    STOP_GRACE,
                )
                return
        self.turns.close()

    def _loop(self, max_polls: int | None) -> None:
        failures = 0
        polls = 0
        offset = self._load_offset()
        self._recover()
        while not self.stopping and (max_polls is None or polls < max_polls):
            polls += 1
            try:
                self.waiting = True
                try:
                    if self.guest_chats and self.me is None:
                        self.me = self._get_me()
                    updates = get_updates(self.api, offset, self.poll_timeout)
                finally:
                    self.waiting = False
            except ChannelError as e:
                if e.permanent:
                    log.error("telegram: polling refused, stopping: %s", e)
                    code = "telegram_conflict" if e.code == "conflict" else "telegram_refused"
                    raise ToolError(code, f"stopping: {e}", {"code": e.code}) from None
                if e.retry_after is not None:  # Telegram says exactly how long; that is not a failure streak
                    wait = e.retry_after
                else:
                    failures += 1
                    wait = min(BACKOFF_MAX, BACKOFF_START * 2 ** (failures - 1))
                log.warning("telegram: polling failed (%s: %s); retrying in %g s", e.code, e, wait)
                if e.code == "conflict":  # someone else takes the updates: say who every time
                    say(f"fermix: {e} (retrying in {wait:g} s)")
                self._pause(wait)
                continue
            failures = 0
            numbered = sorted(
                (
                    u
                    for u in updates
                    if isinstance(u.get("update_id"), int) and not isinstance(u["update_id"], bool)
                ),
                key=lambda u: u["update_id"],
            )
            if not numbered:
                continue
            # What becomes a turn is journaled before the offset moves past it: a restart replays it or,
            # if its turn had started, tells its chat. The rest (refused, not addressed) is handled here.
            turns = [u for u in numbered if u["update_id"] not in self.journal and self._wants_turn(u)]
            if turns:
                self.journal.add(turns)
            offset = numbered[-1]["update_id"] + 1
            self._save_offset(offset)
            chosen = {u["update_id"] for u in turns}
            for update in numbered:
                if update["update_id"] in chosen:
                    self.turns.submit(self._conversation(update), update)
                elif update["update_id"] not in self.journal:
                    self.take(update)

    def _recover(self) -> None:
        """Updates taken before a restart: a turn never started is answered now, one started is not rerun."""
        from ..agent.transcripts import Transcript

        try:  # runs a killed server left `running` end `interrupted`
            Transcript(self.ctx.state, self.ctx.clock).close_orphaned_runs()
        except ToolError as e:
            log.warning("telegram: could not close the runs a stopped server left: %s", e)
        for update, started in self.journal.pending():
            if not started:
                self.turns.submit(self._conversation(update), update)
                continue
            log.warning("telegram: update %s was being answered when the server stopped", update["update_id"])
            self._tell(update, INTERRUPTED)
            self.journal.end(update["update_id"])

    def _wants_turn(self, update: dict[str, Any]) -> bool:
        """Whether an update is a message this server answers with a turn (else it is refused or ignored)."""
        message = update.get("message")
        if not isinstance(message, dict) or not self._answers(message):
            return False
        return (message.get("chat") or {}).get("type") not in ("group", "supergroup") or self._addressed(
            message
        )

    @staticmethod
    def _conversation(update: dict[str, Any]) -> Hashable:
        """The conversation an update belongs to: its chat (every forum topic in it: thread scope root)."""
        chat = ((update.get("message") or {}).get("chat") or {}).get("id")
        return chat if isinstance(chat, int) else ("update", update.get("update_id"))

    def _take_journaled(self, update: dict[str, Any]) -> None:
        """A worker's turn: `take`, with the update known to `_run` (which marks it started), then out of the journal."""
        self._current.update_id = update["update_id"]
        try:
            self.take(update)
        finally:
            self._current.update_id = None
            self.journal.end(update["update_id"])

    def _pause(self, seconds: float) -> None:
        self.waiting = True
        try:
            self.sleep(seconds)
        finally:
            self.waiting = False

    def _load_offset(self) -> int | None:
        try:
            return int(self.offset_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _save_offset(self, offset: int) -> None:
        from ..core.fsops import atomic_write

        self.ctx.paths.ensure_dir(self.offset_file.parent)
        atomic_write(str(self.offset_file), f"{offset}\n".encode())

    # ----- one message --------------------------------------------------------------------------

    def _get_me(self) -> dict[str, Any]:
        me = self.api.call("getMe", payload={})
        if not isinstance(me, dict) or not isinstance(me.get("id"), int):
            raise ChannelError("Telegram getMe answered without the bot's id", code="bad_answer")
        return me

    def take(self, update: dict[str, Any]) -> None:
        """Handle one update; whatever fails is logged (and told to a chat this server answers), so one
        message can never stop the server or be fetched again after a restart."""
        try:
            self.handle(update)
        except ChannelError as e:  # Telegram refused the answer (blocked, gone): nothing more to tell
            log.error("telegram: update %s could not be answered: %s", update.get("update_id"), e)
        except ToolError as e:
            log.error("telegram: update %s failed: %s", update.get("update_id"), e)
            self._tell(update, f"⚠ {e.code}: {e.message}")
        except Exception as e:
            log.exception("telegram: update %s could not be handled", update.get("update_id"))
            self._tell(
                update,
                f"⚠ internal_error: this message could not be handled ({type(e).__name__}); the details "
                "are in the fermix log. Try again, or send it differently.",
            )

    def _tell(self, update: dict[str, Any], text: str) -> None:
        """A best-effort note to the chat of `update`, if this server answers that chat."""
        message = update.get("message")
        if not isinstance(message, dict) or not self._answers(message):
            return
        chat_id: int = message["chat"]["id"]  # an int: _answers checked it
        thread = message.get("message_thread_id") if message.get("is_topic_message") else None
        try:
            self.api.send_message(
                chat_id, text, thread_id=thread if isinstance(thread, int) else None,
                reply_to=message.get("message_id") if isinstance(message.get("message_id"), int) else None,
            )  # fmt: skip
        except ChannelError as e:
            log.error("telegram: could not tell chat %s: %s", chat_id, e)

    def _answers(self, message: dict[str, Any]) -> bool:
        """Whether a message comes from a chat this server answers (the owner's, a guest's, a guest group)."""
        chat = message.get("chat") or {}
        chat_id, user_id = chat.get("id"), (message.get("from") or {}).get("id")
        if not isinstance(chat_id, int) or isinstance(chat_id, bool):
            return False
        if chat.get("type") in ("group", "supergroup"):
            return chat_id in self.guest_chats
        return chat_id == user_id and (chat_id == self.owner or chat_id in self.guests)

    def handle(self, update: dict[str, Any]) -> None:
        message = update.get("message")
        if not isinstance(message, dict):
            return
        chat = message.get("chat") or {}
        sender = message.get("from") or {}
        chat_id, user_id = chat.get("id"), sender.get("id")
        text = str(message.get("text") or message.get("caption") or "")
        approval = approval_command(text)
        ultra = ultra_command(text)
        if chat.get("type") in ("group", "supergroup"):
            if chat_id not in self.guest_chats:
                log.warning(
                    "telegram: refused a message in group %s (user %s): the group is not in guest_chat_ids",
                    chat_id,
                    user_id,
                )
                return
            if not self._addressed(message):  # ordinary talk in the group, not meant for the bot
                log.debug(
                    "telegram: group %s message %s does not address the bot",
                    chat_id,
                    message.get("message_id"),
                )
                return
            guest = True
            text = self._unaddressed(text)
            name = str(sender.get("username") or sender.get("first_name") or "someone")
            text = f"[group chat; {name} (user {user_id}) writes:]\n{text}"
        else:
            guest = chat_id == user_id and chat_id in self.guests and chat_id != self.owner
            if not guest and (chat_id != self.owner or user_id != self.owner):
                log.warning(
                    "telegram: refused a message from chat %s (user %s): only the owner's chat %s is served",
                    chat_id,
                    user_id,
                    self.owner,
                )
                return
        if not isinstance(chat_id, int):
            return
        message_id = message.get("message_id")
        if not isinstance(message_id, int):
            return
        if approval is not None:  # settled here, never a prompt for the model
            self.handled += 1
            thread = message.get("message_thread_id") if message.get("is_topic_message") else None
            self._settle(chat_id, approval, owner=not guest, reply_to=message_id, thread=thread)
            return
        if ultra is not None:  # a mode of the owner's chat, never a prompt for the model
            with self._lock:
                self.handled += 1
            thread = message.get("message_thread_id") if message.get("is_topic_message") else None
            self._set_ultra(chat_id, ultra, owner=not guest, reply_to=message_id, thread=thread)
            return
        files, notes = self._inbound(message)
        if not text.strip() and not files:
            if notes:
                self.api.send_message(chat_id, "\n".join(notes))
            return
        prompt = text
        if files or notes:
            listed = [f"inbound:{i} ({describe(f)})" for i, f in enumerate(files, 1)]
            prompt += "\n\n[Sent with this message: " + "; ".join(listed + notes) + "]"
        with self._lock:
            self.handled += 1
        in_group = chat.get("type") in ("group", "supergroup")
        thread = message.get("message_thread_id") if message.get("is_topic_message") else None
        thread_id = thread if isinstance(thread, int) and not isinstance(thread, bool) else None
        self._run(
            prompt.strip(),
            TelegramReplyPort(self.api, chat_id, message_id, thread_id),
            files,
            guest=guest,
            reply_to=message_id if in_group else None,
        )

    def _settle(
        self, chat_id: int, approval: tuple[str, str], *, owner: bool, reply_to: int, thread: Any
    ) -> None:
        """Answer `/confirm TOKEN` or `/deny TOKEN`: only the owner, in their private chat, settles one."""
        from ..tools.access.requests import confirm_request, deny_request

        verb, token = approval
        try:
            if not owner:
                raise ToolError(
                    "not_attended",
                    f"only the owner approves directory access, in their private chat with this bot; /{verb} "
                    "is refused here",
                    {"verb": verb},
                )
            if not token or " " in token:
                raise ToolError(
                    "usage", f"write /{verb} TOKEN, with the token of the request", {"verb": verb}
                )
            # Settled in the chat's worker thread: a context of its own, on a state connection borrowed
            # for this thread; the grant is checked against config.toml as it is now.
            lender = self.lender if self.lender is not None else self.ctx.state
            db = lender.lend()
            try:
                with self._lock:
                    self.ctx.refresh_config()
                    ctx = self.ctx.derive(state=db)
                try:
                    if verb == "confirm":
                        req, added = confirm_request(ctx, token)
                        answer = f"granted: {req.path}" + ("" if added else " (already in allowed_roots)")
                    else:
                        req = deny_request(ctx, token)
                        answer = f"denied: {req.path} (token {req.token})"
                finally:
                    ctx.close()  # the lent connection stays open: it is handed back below
            finally:
                lender.take_back(db)
        except ToolError as e:
            answer = f"⚠ {e.code}: {e.message}"
        log.info("telegram: /%s in chat %s: %s", verb, chat_id, answer)
        thread_id = thread if isinstance(thread, int) and not isinstance(thread, bool) else None
        try:
            self.api.send_message(chat_id, answer, thread_id=thread_id, reply_to=reply_to)
        except ChannelError as e:
            log.error("telegram: the answer to /%s was not delivered: %s", verb, e)

    def _set_ultra(self, chat_id: int, arg: str, *, owner: bool, reply_to: int, thread: Any) -> None:
        """Answer `/ultra [on|off]`: subagents' ultra caps for the owner's next turns, until /ultra off."""
        from ..agent.subagents.tools import REGULAR, ULTRA, mode_summary

        if not owner:
            answer = (
                "⚠ not_attended: ultra mode is the owner's, in their private chat with this bot; /ultra is "
                "refused here"
            )
        elif arg not in ("", "on", "off"):
            answer = "⚠ usage: write /ultra to turn ultra mode on, /ultra off to leave it"
        else:
            on = arg != "off"
            with self._lock:
                if on:
                    self.ultra_chats.add(chat_id)
                else:
                    self.ultra_chats.discard(chat_id)
            if on:
                answer = f"ultra mode on until /ultra off: {mode_summary(ULTRA)}"
            else:
                answer = f"ultra mode off: {mode_summary(REGULAR)}"
        log.info("telegram: /ultra %s in chat %s: %s", arg, chat_id, answer)
        thread_id = thread if isinstance(thread, int) and not isinstance(thread, bool) else None
        try:
            self.api.send_message(chat_id, answer, thread_id=thread_id, reply_to=reply_to)
        except ChannelError as e:
            log.error("telegram: the answer to /ultra was not delivered: %s", e)

    def _addressed(self, message: dict[str, Any]) -> bool:
        """Whether a group message is meant for the bot: a mention, a reply to it, or a /command@it."""
        me = self.me or {}
        bot_id, username = me.get("id"), str(me.get("username") or "").lower()
        replied = message.get("reply_to_message")
        if isinstance(replied, dict) and (replied.get("from") or {}).get("id") == bot_id:
            return True
        text = str(message.get("text") or message.get("caption") or "")
        entities = message.get("entities") or message.get("caption_entities") or []
        encoded = text.encode("utf-16-le")  # entity offsets count UTF-16 code units
        for entity in entities if isinstance(entities, list) else []:
            if not isinstance(entity, dict):
                continue
            kind = entity.get("type")
            if kind == "text_mention" and (entity.get("user") or {}).get("id") == bot_id:
                return True
            try:
                start, length = int(entity.get("offset", 0)), int(entity.get("length", 0))
            except (TypeError, ValueError):
                continue
            word = encoded[2 * start : 2 * (start + length)].decode("utf-16-le", "replace").lower()
            if username and kind == "mention" and word == f"@{username}":
                return True
            if username and kind == "bot_command" and word.endswith(f"@{username}"):
                return True
        return False

    def _unaddressed(self, text: str) -> str:
        """The text without the bot's @username."""
        username = str((self.me or {}).get("username") or "")
        if not username:
            return text
        import re

        return re.sub(rf"@{re.escape(username)}\b", "", text, flags=re.IGNORECASE).strip()

    def _inbound(self, message: dict[str, Any]) -> tuple[list[InboundFile], list[str]]:
        """The files of a message saved under media/inbound/, and notes on what could not be fetched.

        Photos, documents, voice messages, audio, videos and round video notes (the Bot API's `photo`,
        `document`, `voice`, `audio`, `video`, `video_note`), each fetched through `getFile`. Telegram lets
        a bot download files of at most 20 MB; a bigger one is named in a note instead.
        """
        wanted: list[Wanted] = []
        photos = message.get("photo")
        if isinstance(photos, list) and photos and isinstance(photos[-1], dict):
            largest = photos[-1]
            wanted.append(
                Wanted(str(largest.get("file_id", "")), "photo.jpg", "image/jpeg", "image", "photo", largest)
            )
        for field, kind, default_name, default_mime in MEDIA_FIELDS:
            item = message.get(field)
            if not isinstance(item, dict):
                continue
            name = _safe_name(item.get("file_name")) or default_name
            mime = str(item.get("mime_type") or default_mime)
            label = field.replace("_", " ")
            wanted.append(Wanted(str(item.get("file_id", "")), name, mime, kind, label, item))
        files: list[InboundFile] = []
        notes: list[str] = []
        for w in wanted:
            size = w.meta.get("file_size")
            if isinstance(size, int) and size > DOWNLOAD_MAX:
                notes.append(
                    f"{w.name} ({w.label}, {size / 1024 / 1024:.0f} MB) is over the 20 MB a bot may download; "
                    "ask for a smaller file or a link"
                )
                continue
            try:
                data, _ = download_file(self.api, self.downloads, w.file_id)
            except ChannelError as e:
                log.warning("telegram: could not download %s: %s", w.name, e)
                notes.append(f"{w.name} could not be downloaded ({e.code})")
                continue
            folder = self.ctx.paths.media / "inbound"
            fmt = sniff(data[:12])
            kind, mime, name = w.kind, w.mime, w.name
            if kind in ("image", "document") and fmt is not None:  # saved under the extension its bytes carry
                kind, mime = "image", MIME_TYPES[fmt]
                name = name.rsplit(".", 1)[0] + SUFFIX[fmt] if "." in name else name + SUFFIX[fmt]
            elif kind == "image":
                kind = "document"
            try:
                self.ctx.paths.ensure_dir(folder)
                path = write_new_file(folder, f"{message.get('message_id')}-{name}", data)
            except (OSError, ToolError) as e:
                log.error("telegram: could not save %s under %s: %s", name, folder, e)
                notes.append(f"{w.name} could not be saved on this machine")
                continue
            duration = w.meta.get("duration")
            files.append(
                InboundFile(
                    str(path),
                    kind,
                    mime or "application/octet-stream",
                    name,
                    duration=duration
                    if isinstance(duration, int) and not isinstance(duration, bool)
                    else None,
                    label=w.label,
                )
            )
        return files, notes

    def _run(
        self,
        prompt: str,
        port: TelegramReplyPort,
        files: list[InboundFile],
        *,
        guest: bool,
        reply_to: int | None = None,
    ) -> None:
        from ..agent.assemble import Agent
        from ..core.cancel import CancelToken

        chat = port.chat_id
        update_id = getattr(self._current, "update_id", None)
        if update_id is not None:  # from here on a restart does not run it again (at most once)
            self.journal.start(update_id)
        token = CancelToken()  # a second stop signal ends the turn: its tools stopped, the run `interrupted`
        # Text, files and images all go to the conversation the message came from: its chat and topic.
        stream = MessageStream(
            self.api,
            chat,
            self.clock,
            reply_to=reply_to,
            thread_id=port.thread_id,
            sleep=self.sleep,
            cancel=token,
        )
        # The conversation a reminder delivered to this chat was recorded in ("snooze that" finds it).
        extras = {**self.ctx.extras, REPLY_PORT: port, INBOUND: files, "conversation_id": f"telegram:{chat}"}
        # A job scheduled from here with delivery `origin` reports back to this chat and topic (ref 8.2).
        origin: dict[str, Any] = {"platform": "telegram", "chat_id": chat}
        if port.thread_id is not None:
            origin["message_thread_id"] = port.thread_id
        extras["origin_target"] = origin
        with self._lock:
            if not guest and chat in self.ultra_chats:  # subagents' caps follow the chat's mode
                from ..agent.subagents.tools import ULTRA_MODE

                extras[ULTRA_MODE] = True
        # Turns run side by side: each derives its own context (own sandbox, cancel token, and a state
        # connection borrowed for this thread) from the server's, one at a time. The server lives for
        # days: each message sees config.toml (grants, mode) as it is now; a config that no longer loads
        # runs no turn (never the old, perhaps wider, sandbox).
        lender = self.lender if self.lender is not None else self.ctx.state
        db = lender.lend()
        unusable: ToolError | None = None
        with self._lock:
            self._tokens.add(token)
            if self.interrupting:
                token.cancel("the server was stopped")
            try:
                self.ctx.refresh_config()
            except ToolError as e:
                unusable = e
            changes: dict[str, Any] = {"extras": extras, "state": db, "cancel": token}
            run_ctx = self.ctx.derive(**changes, trust="guest") if guest else self.ctx.derive(**changes)
        # A guest's session is its chat's own, and carries none of the owner's profile sections.
        options = (
            self.options.replace(session=f"telegram-{chat}", context_sections=()) if guest else self.options
        )
        extra = ""
        try:
            try:
                if unusable is not None:
                    raise unusable
                agent = Agent(run_ctx, options, observer=stream)
            except ToolError as e:  # no usable provider, a bad config: say so in the chat and keep serving
                log.error("telegram: could not start the agent: %s", e)
                extra = f"⚠ {e.code}: {e.message}"
            else:
                try:
                    result = agent.run(prompt)
                finally:
                    agent.close()
                if result.status != "ok" and result.error is not None:
                    extra = f"⚠ {result.error.code}: {result.error.message}"
            stream.finish(extra)  # what does not arrive is logged, and the chat told where it can be
        finally:
            with self._lock:
                self._tokens.discard(token)
            run_ctx.close()  # the lent connection stays open: it is handed back below
            lender.take_back(db)
