"""`fermix mcp serve`: the registry's tools over MCP (stdio), called through `registry.invoke`.

Every call gets its own `origin="mcp"` context (model-driven, not attended), narrowed to the served
tools, so the policy layer refuses anything else exactly as it would for any other caller. Its toolset
is the built-ins alone: fermix does not pass other MCP servers' tools on (nor start them, which could be
this very server). Tool calls run in a worker thread; each builds and closes its own context, so no
SQLite handle crosses threads. A cancelled call (client cancel, end of input, SIGTERM) has its cancel
token set, which kills a running shell command's process group.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.errors import ToolError
from ..core.imagefmt import load_base64
from ..core.logs import logger
from .exposure import listing, served_names
from .pending import EOF_DRAIN_S, OpenRequests
from .screen import REFUSED_CALL, refusal, screen

if TYPE_CHECKING:
    import anyio
    from mcp.server.lowlevel import Server

    from ..core.cancel import CancelToken
    from ..core.context import ToolContext
    from ..core.registry import Registry

log = logger("fermix.mcp.server")

REPLY_DRAIN_S = 5.0  # at end of input, how long the last error replies may take to be written
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # per image sent as MCP image content; a larger one is named, not sent
INSTRUCTIONS = (
    "fermix tools: JSON in, JSON out, over fermix's sandbox and policy layer. Errors read `code: message`; "
    "the message says how to recover. Shell and file-writing tools are served only when the operator "
    "allowed them."
)

ContextFactory = Callable[[], "ToolContext"]


def mcp_context(
    base: ToolContext, served: frozenset[str], registry: Registry, cancel: CancelToken | None = None
) -> ToolContext:
    """A model-driven MCP context: origin mcp, not attended, narrowed to the served tools."""
    from ..core.toolsets import RegistryToolset

    return base.derive(
        origin="mcp",
        attended=False,
        allowed_tools=served,
        record_calls=True,
        toolsets=RegistryToolset(registry),
        extras={**base.extras, "registry": registry},
        cancel=cancel,
    )


class InFlight:
    """The calls running in worker threads, each with its cancel token, so a shutdown can stop them all."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._calls: dict[CancelToken, threading.Event] = {}

    @contextlib.contextmanager
    def track(self, token: CancelToken) -> Iterator[None]:
        """Count the call as running until the block (in its worker thread) ends."""
        import threading

        done = threading.Event()
        with self._lock:
            self._calls[token] = done
        try:
            yield
        finally:
            done.set()
            with self._lock:
                self._calls.pop(token, None)

    def stop_all(self, reason: str, timeout: float = 5.0) -> None:
        """Cancel every running call and wait (up to `timeout` s in all) for their threads to finish."""
        import time

        with self._lock:
            calls = list(self._calls.items())
        for token, _done in calls:
            token.cancel(reason)
        deadline = time.monotonic() + timeout
        for _token, done in calls:
            done.wait(max(0.0, deadline - time.monotonic()))


def build_server(
    registry: Registry,
    make_context: ContextFactory,
    allow: Iterable[str] = (),
    inflight: InFlight | None = None,
) -> Server:
    """An MCP server over `registry`. `make_context` returns a fresh base context per call.

    A call runs in a worker thread with a cancel token on its context. When the call is cancelled (the
    client sent `notifications/cancelled`, or the connection ended or the server is stopping, which
    cancels every running handler) the token is set, so the shell runner kills the call's process group.
    """
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    from ..core.cancel import CancelToken

    served = served_names(registry, allow)
    probe = mcp_context(make_context(), served, registry)
    try:
        specs = [s for s in registry.visible(probe) if s.name in served]
    finally:
        probe.close()
    tools = [types.Tool.model_validate(listing(s)) for s in specs]
    calls = inflight if inflight is not None else InFlight()

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def call_sync(name: str, arguments: dict[str, Any], token: CancelToken) -> types.CallToolResult:
        images: tuple[str, ...] = ()
        with calls.track(token):
            ctx = mcp_context(make_context(), served, registry, token)
            try:
                ok, text, payload = registry.invoke_for_model(name, arguments, ctx)
                if ok:
                    images = registry.resolve(name, ctx).result_images(payload)
            except Exception as e:  # a bug in a tool: the client gets an error result, the log the trace
                log.exception("MCP call of %s failed", name)
                err = ToolError("internal_error", f"{name} failed: {type(e).__name__}", {"tool": name})
                ok, text, payload = False, err.model_text(), err.to_dict()
            finally:
                ctx.close()
        return tool_result(ok, text, payload, images)

    def tool_result(ok: bool, text: str, payload: Any, images: tuple[str, ...] = ()) -> types.CallToolResult:
        structured = payload if ok else {"error": payload}
        content: list[Any] = [types.TextContent(type="text", text=text)]
        for path in images:  # a screenshot travels as image content, as it does to a model
            loaded = load_base64(path, MAX_IMAGE_BYTES)
            if isinstance(loaded, str):
                content.append(types.TextContent(type="text", text=f"[image file: {path} — {loaded}]"))
            else:
                content.append(types.ImageContent(type="image", mime_type=loaded[0], data=loaded[1]))
        return types.CallToolResult(
            content=content,
            structured_content=structured if isinstance(structured, dict) else None,
            is_error=not ok,
        )

    # fermix validates arguments strictly itself (its messages say how to recover); the SDK does not.
    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == REFUSED_CALL:  # a request the input check refused (screen.py): nothing runs
            err = refusal(params.arguments)
            return tool_result(False, err.model_text(), err.to_dict())
        token = CancelToken()
        try:
            # Abandoned on cancel: the handler returns at once and the token stops the thread's work.
            return await anyio.to_thread.run_sync(
                call_sync, params.name, dict(params.arguments or {}), token, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            token.cancel("the MCP client cancelled the call, or the server is stopping")
            raise

    return Server(
        "fermix",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class StdinLines:
    """The protocol's input lines, read from a private copy of fd 0 without a blocking worker thread.

    The SDK reads stdin in a worker thread that nothing can interrupt, so a signal could never end a
    server whose client keeps the pipe open. This reader waits on the descriptor in the event loop, so
    cancelling the server cancels the read. fd 0 itself is pointed at /dev/null meanwhile: a handler or
    child reading stdin gets end of file, never the client's messages.

    Each line is checked first (`screen.py`): one the SDK would drop unanswered (not UTF-8, not strict
    JSON, not a message it accepts) never reaches it; its JSON-RPC error waits in `replies`, which
    `forward_replies` writes out. At end of input the requests already read are answered before the
    SDK sees the end (`pending.py`).
    """

    def __init__(self) -> None:
        import anyio

        self._fd = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.set_blocking(self._fd, False)
        self._replies, self.replies = anyio.create_memory_object_stream[Any](16)
        self._sent: anyio.Event | None = None  # made in the event loop, on first use
        self.requests = OpenRequests()  # the server loop writes through `requests.writer(...)`

    @property
    def sent(self) -> anyio.Event:
        """Set once `forward_replies` has written every queued reply (or cannot write any more)."""
        import anyio

        if self._sent is None:
            self._sent = anyio.Event()
        return self._sent

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        import anyio

        pending = b""
        try:
            while True:
                await anyio.wait_readable(self._fd)
                try:
                    chunk = os.read(self._fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if (passed := await self._screened(line)) is not None:
                        self.requests.read(passed)
                        yield passed
            if (passed := await self._screened(pending)) is not None:
                self.requests.read(passed)
                yield passed
            # End of input ends the SDK's session, which cancels what runs, drops what is queued and
            # closes its output: first let the requests read be answered (EOF_DRAIN_S at most, then an
            # error answer each), and the forwarder write the replies still queued.
            for late in await self.requests.drain(EOF_DRAIN_S):
                await self._replies.send(late)
            self._replies.close()
            with anyio.move_on_after(REPLY_DRAIN_S):
                await self.sent.wait()
        finally:
            self._replies.close()

    async def _screened(self, line: bytes) -> str | None:
        import anyio

        verdict = screen(line)
        if verdict is None or isinstance(verdict, str):
            return verdict
        try:
            await self._replies.send(verdict)
        except anyio.ClosedResourceError:  # the server is already stopping: nobody writes it out
            log.warning("MCP server stopping: an error reply was not sent")
        return None

    async def forward_replies(self, write: Any) -> None:
        """Write the refused lines' errors to the client until the input ends."""
        import anyio
        from mcp.shared.message import SessionMessage

        try:
            async with self.replies:
                async for reply in self.replies:
                    await write.send(SessionMessage(reply))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.warning("MCP server stopping: an error reply was not sent")
        finally:
            self.sent.set()

    def finish(self) -> None:
        """No more replies: `forward_replies` ends once it has sent the queued ones."""
        self._replies.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.dup2(self._fd, 0)
            os.set_blocking(0, True)
        with contextlib.suppress(OSError):
            os.close(self._fd)


def serve_stdio(registry: Registry, make_context: ContextFactory, allow: Iterable[str] = ()) -> None:
    """Serve over this process's stdin and stdout until the client closes the pipe or a signal arrives.

    SIGTERM, SIGINT and SIGHUP end the server like end of file on stdin: running calls are cancelled,
    their process groups killed, and this returns once their threads have finished (5 s at most).
    """
    import signal

    import anyio
    from mcp.server.stdio import stdio_server

    calls = InFlight()
    server = build_server(registry, make_context, allow, calls)
    stdin = StdinLines()

    async def run() -> None:
        async with anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
                    async for signum in signals:
                        log.info("MCP server: %s, stopping", signal.Signals(signum).name)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(stop_on_signal)
            async with (
                stdio_server(stdin=stdin) as (read, write),  # type: ignore[arg-type]
                anyio.create_task_group() as replies,
            ):
                replies.start_soon(stdin.forward_replies, write)
                answers = stdin.requests.writer(write)  # tells the end-of-input drain what is answered
                await server.run(read, answers, server.create_initialization_options())
                stdin.finish()
            tg.cancel_scope.cancel()  # end of input: stop listening for signals

    try:
        anyio.run(run)
    finally:
        calls.stop_all("the MCP server is stopping")
        stdin.close()


def served_tools(registry: Registry, make_context: ContextFactory, allow: Iterable[str] = ()) -> list[str]:
    """The names `fermix mcp serve` would list with this `allow` (for `--list`)."""
    served = served_names(registry, allow)
    probe = mcp_context(make_context(), served, registry)
    try:
        return [s.name for s in registry.visible(probe) if s.name in served]
    finally:
        probe.close()
