"""`fermix mcp serve`'s open requests: read from the input, not yet answered, so end of input can wait.

At end of input the SDK's stdio loop cancels what is still running and drops what is still queued,
unanswered (`printf 'ping 2\nping 4\n' | fermix mcp serve` answered only the first). So the input is
held open until every request read has been answered, `EOF_DRAIN_S` at most; a request still open then
gets a -32000 error answer (logged), and an answer the SDK writes for it later is dropped, so no id is
ever answered twice. A request the client cancelled (`notifications/cancelled`) is never answered
(the specification), so it is not waited for.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..core.logs import logger

if TYPE_CHECKING:
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCError

log = logger("fermix.mcp.server")

EOF_DRAIN_S = 5.0  # at end of input, how long the requests already read may take to be answered
INPUT_ENDED = -32000  # JSON-RPC's implementation-defined server error range
INPUT_ENDED_MESSAGE = "the server's input ended before this request finished"

RequestId = int | str
Key = tuple[bool, RequestId]  # (is a string, id): the id 1 and the id "1" are two requests


def _key(request_id: RequestId) -> Key:
    return isinstance(request_id, str), request_id


class Answered(Exception):
    """An answer for a request already answered (with the error at the drain limit)."""


class OpenRequests:
    """The requests passed to the SDK and not yet answered (by id, counting repeats)."""

    def __init__(self) -> None:
        self._open: dict[Key, int] = {}
        self._ids: dict[Key, RequestId] = {}
        self._given_up: set[Key] = set()
        self._sending: dict[Key, int] = {}  # answers being written (the SDK's write stream has no buffer)
        self._changed: anyio.Event | None = None

    def __len__(self) -> int:
        return sum(self._open.values())

    def read(self, line: str) -> None:
        """Note a line passed to the SDK: a request opens, a cancellation settles its request."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # the SDK answers it with a parse error
            return
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return
        if "id" in message:
            if isinstance(rid := message["id"], int | str) and not isinstance(rid, bool):
                key = _key(rid)
                self._open[key] = self._open.get(key, 0) + 1
                self._ids[key] = rid
        elif message["method"] == "notifications/cancelled":
            params = message.get("params")
            rid = params.get("requestId") if isinstance(params, dict) else None
            if isinstance(rid, int | str) and not isinstance(rid, bool):
                self._settle(_key(rid))

    def sending(self, message: Any) -> Key | None:
        """Note an answer on its way out: its request's key, None when it is no answer.

        Raises `Answered` for one to drop: its request got the error answer at the drain limit."""
        from mcp.types import JSONRPCError, JSONRPCResponse

        if not isinstance(message, JSONRPCResponse | JSONRPCError) or message.id is None:
            return None
        key = _key(message.id)
        if key in self._given_up:
            raise Answered(message.id)
        self._sending[key] = self._sending.get(key, 0) + 1
        return key

    def sent(self, key: Key, delivered: bool) -> None:
        """The answer `sending` noted has gone out (`delivered`) or its write failed."""
        count = self._sending.pop(key, 1) - 1
        if count:
            self._sending[key] = count
        if delivered:
            self._settle(key)
        elif self._changed is not None:
            self._changed.set()

    def _settle(self, key: Key) -> None:
        count = self._open.get(key, 0)
        if count <= 1:
            self._open.pop(key, None)
        else:
            self._open[key] = count - 1
        if self._changed is not None:
            self._changed.set()

    async def drain(self, within: float) -> list[JSONRPCError]:
        """Wait (up to `within` s) until every open request is answered; the error answers of the rest."""
        import anyio
        from mcp.types import ErrorData, JSONRPCError

        with anyio.move_on_after(within):
            while self._open:
                self._changed = anyio.Event()
                await self._changed.wait()
        # An answer still being written counts as given: a second one for its id would break JSON-RPC.
        late = [self._ids[key] for key in self._open if key not in self._sending]
        self._given_up.update(_key(rid) for rid in late)
        self._open.clear()
        for rid in late:
            log.warning(
                "MCP request %r unanswered %g s after the input ended: answered with an error", rid, within
            )
        return [
            JSONRPCError(
                jsonrpc="2.0", id=rid, error=ErrorData(code=INPUT_ENDED, message=INPUT_ENDED_MESSAGE)
            )
            for rid in late
        ]

    def writer(self, inner: Any) -> AnswerWriter:
        """`inner` (the SDK's write stream) noting each answer as it goes out."""
        return AnswerWriter(inner, self)


class AnswerWriter:
    """A write stream for the SDK's server loop that tells `OpenRequests` about each answer it sends."""

    def __init__(self, inner: Any, requests: OpenRequests) -> None:
        self._inner, self._requests = inner, requests

    async def send(self, item: SessionMessage) -> None:
        try:
            key = self._requests.sending(item.message)
        except Answered as e:
            log.info("MCP request %r answered after the input ended; already answered, dropped", e.args[0])
            return
        delivered = False
        try:
            await self._inner.send(item)
            delivered = True
        finally:
            if key is not None:
                self._requests.sent(key, delivered)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def clone(self) -> AnswerWriter:
        return AnswerWriter(self._inner.clone(), self._requests)

    async def __aenter__(self) -> AnswerWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
