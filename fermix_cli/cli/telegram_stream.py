"""One Telegram turn's answer as it streams: a message edited as it grows, continued past 4096 characters.

Edits of a growing message are throttled (EDIT_INTERVAL) and one that fails is caught up by the next.
The final update of each part is retried when the failure is transient (a 429 after its `retry_after`, a
5xx, a timeout, a reset connection) with a bounded backoff: FINAL_TRIES attempts, at most FINAL_WAIT
seconds of waiting in all. If it still fails, a short new message says the answer is incomplete.

A `sendMessage` that timed out (or whose connection broke) may have been delivered all the same, and the
Bot API cannot be asked. After such a failure the stream starts no new message while the answer grows: it
sends the whole text once, at the end. The chat then holds at most one partial copy next to the complete
answer, where a new message per text delta could leave one frozen copy each. A final send is retried
after such a failure once, not more: the complete answer twice is better than no answer, a third copy is not.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..channels.base import ChannelError
from ..channels.telegram import MESSAGE_MAX, BotApi, split_message
from ..channels.telegram_chat import edit_message_text
from ..core.logs import logger

if TYPE_CHECKING:
    from ..agent.messages import ModelResponse, ToolCall
    from ..agent.transcripts import ToolOutcome
    from ..core.cancel import CancelToken

log = logger("fermix.telegram")
EDIT_INTERVAL = 1.5  # seconds between edits of a growing message (Telegram limits edits per chat)
FINAL_TRIES = 4  # attempts at a part's final update
FINAL_BACKOFF = 2.0  # seconds before the second attempt, doubling after
FINAL_WAIT = 60.0  # the most a final update waits in all (a 429's retry_after included)
UNSURE = frozenset({"timeout", "network"})  # failures after which the request may have reached Telegram
INCOMPLETE = "⚠ the rest of this answer could not be delivered"
UNDELIVERED = "⚠ this answer could not be delivered"
_FAILED = object()


class MessageStream:
    """A LoopObserver that shows the run's text in Telegram: one message edited as it grows, then more.

    With a `cancel` token, every loop event checks it and, once it is set, ends the run as Ctrl-C does
    (the loop stores it `interrupted`); a tool that watches the run's token is stopped by the token itself.
    """

    def __init__(
        self,
        api: BotApi,
        chat_id: int,
        clock: Callable[[], float],
        *,
        reply_to: int | None = None,
        thread_id: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        cancel: CancelToken | None = None,
    ) -> None:
        self.api = api
        self.chat_id = chat_id
        self.reply_to = reply_to  # in a group: the first message answers the one that addressed the bot
        self.thread_id = thread_id  # a forum topic's thread
        self.clock = clock
        self.sleep = sleep
        self.cancel = cancel
        self.text_so_far = ""
        self.sent: list[tuple[int, str]] = []  # (message_id, text shown)
        self.last_edit = float("-inf")
        self.unsure = False  # a send failed in a way that may have delivered it: no new message until the end

    # LoopObserver
    def model_start(self, iteration: int) -> None:
        self._check()
        if self.text_so_far and not self.text_so_far.endswith("\n\n"):
            self.text_so_far += "\n\n"

    def text(self, delta: str) -> None:
        self.text_so_far += delta
        self._show(final=False)
        self._check()

    def model_end(self, response: ModelResponse) -> None:
        pass

    def tool_start(self, call: ToolCall, name: str, arguments: Any) -> None:
        self._check()

    def tool_end(self, outcome: ToolOutcome) -> None:
        self._check()

    def _check(self) -> None:
        if self.cancel is not None and self.cancel.cancelled:
            raise KeyboardInterrupt  # the loop ends the run `interrupted`, as on Ctrl-C

    def finish(self, extra: str = "") -> bool:
        """Show everything (no throttling), with `extra` (an error line) appended; False if it did not all arrive.

        What could not be delivered is logged, and the chat is told in a short message where possible.
        """
        if extra:
            self.text_so_far = (self.text_so_far.rstrip() + "\n\n" + extra).lstrip()
        try:
            self._show(final=True)
        except ChannelError as e:
            log.error("telegram: the answer in chat %s was not fully delivered: %s", self.chat_id, e)
            note = INCOMPLETE if self.sent else UNDELIVERED
            try:
                self.api.send_message(self.chat_id, note, thread_id=self.thread_id, reply_to=self.reply_to)
            except ChannelError as again:
                log.error(
                    "telegram: could not tell chat %s the answer is incomplete: %s", self.chat_id, again
                )
            return False
        return True

    def _show(self, *, final: bool) -> None:
        text = self.text_so_far.strip()
        if not text:
            return
        parts = split_message(text, MESSAGE_MAX)
        for i, part in enumerate(parts):
            if i < len(self.sent):
                message_id, shown = self.sent[i]
                if shown == part:
                    continue
                if not final and self.clock() - self.last_edit < EDIT_INTERVAL:
                    return
                edit = partial(edit_message_text, self.api, self.chat_id, message_id, part)
                if self._call(edit, final, sends=False) is _FAILED:
                    return
                self.sent[i] = (message_id, part)
                self.last_edit = self.clock()
            else:
                if not final and self.unsure:
                    return
                send = partial(
                    self.api.send_message,
                    self.chat_id,
                    part,
                    thread_id=self.thread_id,
                    reply_to=self.reply_to if not self.sent else None,
                )
                result = self._call(send, final, sends=True)
                if isinstance(result, dict) and isinstance(result.get("message_id"), int):
                    self.sent.append((result["message_id"], part))
                    self.last_edit = self.clock()
                else:
                    return

    def _call(self, request: Callable[[], Any], final: bool, *, sends: bool) -> Any:
        if final:
            return self._final(request, sends=sends)
        try:
            return request()
        except ChannelError as e:  # a growing message catches up on the next delta
            log.warning("telegram: an update of the answer was not shown: %s", e)
            if sends and e.code in UNSURE:
                self.unsure = True
            return _FAILED

    def _final(self, request: Callable[[], Any], *, sends: bool) -> Any:
        """`request` tried until it succeeds, a permanent failure, FINAL_TRIES attempts or FINAL_WAIT s."""
        waited, backoff, unsure = 0.0, FINAL_BACKOFF, 0
        for attempt in range(1, FINAL_TRIES + 1):
            try:
                return request()
            except ChannelError as e:
                if e.permanent or attempt == FINAL_TRIES:
                    raise
                if sends and e.code in UNSURE:
                    unsure += 1
                    if unsure > 1:  # it may have arrived twice already
                        raise
                wait = e.retry_after if e.retry_after is not None else backoff
                if waited + wait > FINAL_WAIT:
                    raise
                log.warning("telegram: the answer's last update failed (%s); again in %g s", e.code, wait)
                self.sleep(wait)
                waited += wait
                backoff *= 2
        raise AssertionError("unreachable")  # the last attempt returns or raises
