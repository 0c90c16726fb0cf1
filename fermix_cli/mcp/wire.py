"""fermix's own MCP client wire layer: JSON-RPC 2.0 over stdio, Streamable HTTP or the legacy HTTP+SSE.

Written from the MCP specification (lifecycle, transports, tools, cancellation, ping), synchronous, with
one reader thread per connection. It replaces the `mcp` SDK on the client path because importing the
SDK's client costs about two seconds of CPU (pydantic models for every protocol revision), paid by every
`fermix tool mcp_...` call; this module imports nothing heavier than the standard library (httpx only
for a URL server). Messages stay plain dicts: fermix forwards them, it does not model them.

The SDK stays the oracle: the tests run real SDK servers, and compare with the SDK's own client.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..core.logs import logger

if TYPE_CHECKING:
    import httpx

log = logger("fermix.mcp.client")

# The newest revision reachable with the initialize handshake, then the older ones a server may answer.
PROTOCOL_VERSION = "2025-11-25"
ACCEPTED_VERSIONS = frozenset({"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"})
CLIENT_INFO = {"name": "fermix", "version": "1"}

PARSE_ERROR = -32700
METHOD_NOT_FOUND = -32601
REQUEST_TIMEOUT = -32001

HTTP_TIMEOUT_S = 30.0
HTTP_READ_TIMEOUT_S = 300.0  # a server may hold a response stream open
HTTP_MAX_DECODED = 16 * 1024 * 1024  # a compressed response inflates to at most this many bytes
STDIO_EXIT_GRACE_S = 2.0  # after stdin closes, before SIGTERM; then again before SIGKILL
STDIO_EXIT_WAIT_S = 0.5  # a server whose pipe closed is given this long to exit, to say how it ended

Message = dict[str, Any]
Sink = Callable[[Message], None]


class McpError(Exception):
    """A JSON-RPC error answer from the server."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Transport:
    """Carries JSON-RPC messages: `send` one; received ones go to `on_message`, the end to `on_close`."""

    on_message: Sink
    on_close: Callable[[BaseException], None]

    def start(self, on_message: Sink, on_close: Callable[[BaseException], None]) -> None:
        self.on_message, self.on_close = on_message, on_close

    def send(self, message: Message) -> None:
        raise NotImplementedError

    def negotiated(self, version: str) -> None:
        """The protocol version the session agreed on (HTTP sends it as a header from then on)."""

    def close(self) -> None:
        raise NotImplementedError


def _deliver(sink: Sink, raw: str | bytes) -> None:
    try:
        message = json.loads(raw)
    except UnicodeDecodeError as e:
        assert isinstance(raw, bytes)  # only bytes can fail to decode
        _undecodable(sink, raw, e)
        return
    except RecursionError:  # nested deeper than the parser follows: its id cannot be read
        log.warning("MCP server sent a message nested too deeply to read: %.200r", raw)
        error = McpError(PARSE_ERROR, "its answer is nested too deeply to read as JSON")
        sink({"jsonrpc": "2.0", "id": None, "_failure": error})  # fails the only waiting request
        return
    except ValueError:
        log.warning("MCP server sent a line that is not JSON: %.200r", raw)
        return
    for one in message if isinstance(message, list) else [message]:  # 2025-03-26 allowed batches
        if isinstance(one, dict):
            sink(one)


def _undecodable(sink: Sink, raw: bytes, e: UnicodeDecodeError) -> None:
    """A message that is not UTF-8 fails the request it answers, never repaired and never left to time out.

    Its id is read with the bad bytes set aside; when it has none, the session fails its only
    waiting request (a line it cannot match to one of several is logged and dropped)."""
    where = f"byte 0x{raw[e.start]:02x} at offset {e.start}"
    try:
        message = json.loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        log.warning("MCP server sent a line that is neither UTF-8 (%s) nor JSON: %.200r", where, raw)
        return
    if not isinstance(message, dict) or "method" in message:
        log.warning("MCP server sent a message that is not valid UTF-8 (%s), dropped: %.200r", where, raw)
        return
    error = McpError(
        PARSE_ERROR, f"its answer is not valid UTF-8 ({where}); an MCP server must send UTF-8 JSON"
    )
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    sink({"jsonrpc": "2.0", "id": request_id, "_failure": error})


# ----- stdio ------------------------------------------------------------------------------------------


DEFAULT_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


class StdioTransport(Transport):
    """A server as a child process (its own process group): newline-delimited JSON on stdin/stdout."""

    def __init__(
        self,
        command: str,
        args: list[str],
        env: dict[str, str],
        cwd: str | None,
        stderr: int,
        stderr_log: str | None = None,
    ) -> None:
        # `stderr_log` is the file `stderr` appends to: what the server writes there after this point
        # is its own, and its last line says why it ended (a missing key, a bad flag ...).
        self.stderr_log = stderr_log
        self._stderr_start = _size(stderr_log)
        self.proc = subprocess.Popen(
            [command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
        self._write_lock = threading.Lock()
        self._closed = False

    def start(self, on_message: Sink, on_close: Callable[[BaseException], None]) -> None:
        super().start(on_message, on_close)
        threading.Thread(target=self._read, name="fermix-mcp-stdio", daemon=True).start()

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            for line in stdout:
                if line.strip():
                    _deliver(self.on_message, line)
        except (OSError, ValueError):
            pass
        # EOF usually means the server is exiting: give it a moment so the message can say how it ended.
        self.on_close(ConnectionError(self.ended() or "the server closed its output"))

    def ended(self) -> str | None:
        """How the server ended ("exited (exit status 1): <its last stderr line>"), or None while it runs.

        Waits up to `STDIO_EXIT_WAIT_S` for it: a closed pipe usually means the server is exiting."""
        try:
            code = self.proc.wait(timeout=STDIO_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return None
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        said = _last_line(self.stderr_log, self._stderr_start)
        return f"the server exited ({how})" + (f": {said}" if said else "")

    def send(self, message: Message) -> None:
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        stdin = self.proc.stdin
        assert stdin is not None
        with self._write_lock:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError) as e:
                # Most often the server exited before reading anything: say how, as the reader does.
                why = None if self._closed else self.ended()
                why = why or f"the server's input is closed ({type(e).__name__})"
                raise ConnectionError(why) from None

    def close(self) -> None:
        """Per the spec: close stdin, give the server time to exit, then SIGTERM, then SIGKILL."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(OSError):
                    os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=5.0 if sig == signal.SIGKILL else STDIO_EXIT_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever the server left behind in its group
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdout is not None
            self.proc.stdout.close()


def _size(path: str | None) -> int:
    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0


def _last_line(path: str | None, start: int, limit: int = 300) -> str:
    """The last non-blank line written to `path` after offset `start` (at most `limit` characters)."""
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(start, end - 8192))
            tail = f.read()
    except OSError:
        return ""
    lines = [line.strip() for line in tail.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1]
    return last if len(last) <= limit else last[: limit - 3] + "..."


# ----- HTTP -------------------------------------------------------------------------------------------


def sse_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a byte stream, split at CRLF, LF or CR (a CRLF across two chunks is one line end).

    Bytes, never decoded here: a message that is not UTF-8 must reach `_deliver` as it came, to fail
    its request, not be repaired into U+FFFD as a text decoder would."""
    eol = re.compile(rb"\r\n|\r|\n")
    pending = b""
    skip_lf = False
    for chunk in chunks:
        if not chunk:
            continue
        if skip_lf and chunk.startswith(b"\n"):  # the LF of a CRLF whose CR ended the last chunk
            chunk = chunk[1:]
        skip_lf = chunk.endswith(b"\r")
        *lines, pending = eol.split(pending + chunk)
        yield from lines
    if pending:
        yield pending


def sse_events(lines: Iterable[bytes]) -> Iterator[tuple[str, bytes]]:
    """(event, data) pairs of a text/event-stream, per the WHATWG rules MCP uses; data stays bytes."""
    event = ""
    data: list[bytes] = []
    first = True
    for line in lines:
        if first:
            line, first = line.removeprefix(b"\xef\xbb\xbf"), False  # the stream's optional BOM
        if line == b"":
            if data:
                yield event or "message", b"\n".join(data)
            event, data = "", []
            continue
        if line.startswith(b":"):
            continue
        field, _, value = line.partition(b":")
        value = value.removeprefix(b" ")
        if field == b"event":
            event = value.decode("utf-8", "replace")
        elif field == b"data":
            data.append(value)
    if data:
        yield event or "message", b"\n".join(data)


def http_client(allowed_private_hosts: list[str], headers: dict[str, str]) -> httpx.Client:
    """An httpx client whose every request (redirects included) goes through fermix's network guard.

    fermix follows the redirects itself (`FollowingTransport`): headers such as `x-api-key` stay with
    their origin, and a compressed body inflates to at most `HTTP_MAX_DECODED` bytes.
    """
    import sys

    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # httpx's CLI: never used
    import httpx

    from ..core.net.following import FollowingTransport
    from ..core.net.guard import HostGuard
    from ..core.net.transport import GuardedTransport

    guarded = GuardedTransport(HostGuard(allowed_private_hosts))
    return httpx.Client(
        transport=FollowingTransport(guarded, max_body=HTTP_MAX_DECODED),
        headers=headers,
        timeout=httpx.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S),
        follow_redirects=False,
        trust_env=False,
    )


class StreamableHttpTransport(Transport):
    """Streamable HTTP: every message is a POST; a request's answer is JSON or an SSE stream."""

    def __init__(self, url: str, client: httpx.Client) -> None:
        self.url, self.client = url, client
        self.session_id: str | None = None
        self.version: str | None = None

    def negotiated(self, version: str) -> None:
        self.version = version

    def _headers(self) -> dict[str, str]:
        out = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.session_id:
            out["Mcp-Session-Id"] = self.session_id
        if self.version:
            out["MCP-Protocol-Version"] = self.version
        return out

    def send(self, message: Message) -> None:
        if "method" in message and "id" in message:  # a request: its answer arrives on the POST's response
            threading.Thread(target=self._post, args=(message,), name="fermix-mcp-http", daemon=True).start()
        else:
            self._post(message)

    def _post(self, message: Message) -> None:
        try:
            self._exchange(message)
        except BaseException as e:
            if "id" in message and "method" in message:
                self.on_message(_failure(message["id"], e))
            else:
                log.warning("MCP server: sending %s failed: %s", message.get("method", "a response"), e)

    def _exchange(self, message: Message) -> None:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        with self.client.stream("POST", self.url, content=body, headers=self._headers()) as r:
            if sid := r.headers.get("mcp-session-id"):
                self.session_id = sid
            if r.status_code == 404 and self.session_id:
                raise ConnectionError("the server ended the session (HTTP 404)")
            if r.status_code >= 400:
                r.read()
                raise ConnectionError(f"HTTP {r.status_code}: {r.text.strip()[:200]}")
            kind = r.headers.get("content-type", "").split(";")[0].strip().lower()
            if r.status_code == 202 or "id" not in message or "method" not in message:
                return
            if kind == "application/json":
                _deliver(self.on_message, r.read())
            elif kind == "text/event-stream":
                for event, data in sse_events(sse_lines(r.iter_bytes())):
                    if event == "message" and data.strip():
                        _deliver(self.on_message, data)
            else:
                raise ConnectionError(f"unexpected content type {kind or '(none)'} in the answer")

    def close(self) -> None:
        if self.session_id:  # the spec's explicit session end; a server may refuse it (405)
            with contextlib.suppress(Exception):
                self.client.delete(self.url, headers=self._headers(), timeout=5.0)
        with contextlib.suppress(Exception):
            self.client.close()


class SseTransport(Transport):
    """The legacy HTTP+SSE transport (2024-11-05): a GET event stream, messages POSTed to its endpoint."""

    def __init__(self, url: str, client: httpx.Client) -> None:
        self.url, self.client = url, client
        self.endpoint: queue.Queue[str | BaseException] = queue.Queue()
        self.post_url: str | None = None
        self._response: Any = None
        self._closed = False

    def start(self, on_message: Sink, on_close: Callable[[BaseException], None]) -> None:
        super().start(on_message, on_close)
        threading.Thread(target=self._read, name="fermix-mcp-sse", daemon=True).start()

    def _read(self) -> None:
        error: BaseException = ConnectionError("the server closed its event stream")
        try:
            with self.client.stream("GET", self.url, headers={"Accept": "text/event-stream"}) as r:
                self._response = r
                if r.status_code >= 400:
                    raise ConnectionError(f"HTTP {r.status_code} on the event stream")
                for event, data in sse_events(sse_lines(r.iter_bytes())):
                    if event == "endpoint":
                        try:
                            self.endpoint.put(data.decode("utf-8").strip())
                        except UnicodeDecodeError:
                            raise ConnectionError(
                                "the server's message endpoint is not valid UTF-8"
                            ) from None
                    elif event == "message" and data.strip():
                        _deliver(self.on_message, data)
        except BaseException as e:
            error = e
        self.endpoint.put(error)
        if not self._closed:
            self.on_close(error)

    def _endpoint(self) -> str:
        if self.post_url is None:
            from urllib.parse import urljoin, urlsplit

            got = self.endpoint.get()
            if isinstance(got, BaseException):
                raise got
            url = urljoin(self.url, got)
            if urlsplit(url)[:2] != urlsplit(self.url)[:2]:
                raise ConnectionError(f"the server's message endpoint {url} is on another origin")
            self.post_url = url
        return self.post_url

    def send(self, message: Message) -> None:
        if "method" in message and "id" in message:
            threading.Thread(target=self._post, args=(message,), name="fermix-mcp-sse", daemon=True).start()
        else:
            self._post(message)

    def _post(self, message: Message) -> None:
        try:
            body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
            r = self.client.post(self._endpoint(), content=body, headers={"Content-Type": "application/json"})
            if r.status_code >= 400:
                raise ConnectionError(f"HTTP {r.status_code}: {r.text.strip()[:200]}")
        except BaseException as e:
            if "id" in message and "method" in message:
                self.on_message(_failure(message["id"], e))
            else:
                log.warning("MCP server: sending %s failed: %s", message.get("method", "a response"), e)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(Exception):
            if self._response is not None:
                self._response.close()
        with contextlib.suppress(Exception):
            self.client.close()


def _failure(request_id: Any, e: BaseException) -> Message:
    """A local stand-in answer for a request whose transport failed (the waiter re-raises `e`)."""
    return {"jsonrpc": "2.0", "id": request_id, "_failure": e}


# ----- the session ------------------------------------------------------------------------------------


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: Message | None = None


class Session:
    """One MCP client session: requests with timeouts (cancelled on expiry), ping answered, tools listed."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._closed: BaseException | None = None
        self.server_info: Message = {}
        self.protocol_version: str | None = None
        transport.start(self._on_message, self._on_close)

    # incoming
    def _on_message(self, message: Message) -> None:
        if "method" in message:
            if "id" in message:
                self._answer_server(message)
            return  # notifications (log messages, list changes, progress): nothing fermix acts on
        with self._lock:
            request_id = message.get("id")
            if request_id is None and "_failure" in message and len(self._pending) == 1:
                request_id = next(
                    iter(self._pending)
                )  # an answer without a readable id: the only one waiting
            pending = self._pending.pop(request_id, None)  # type: ignore[arg-type]
        if pending is None and "_failure" in message:
            log.warning("MCP server: %s (matched to no waiting request)", message["_failure"])
        if pending is not None:
            pending.answer = message
            pending.done.set()

    def _answer_server(self, request: Message) -> None:
        if request["method"] == "ping":
            reply: Message = {"jsonrpc": "2.0", "id": request["id"], "result": {}}
        else:  # fermix offers no client capabilities (roots, sampling, elicitation)
            reply = {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: {request['method']}"},
            }
        try:
            self.transport.send(reply)
        except Exception as e:
            log.warning("MCP server: answering %s failed: %s", request["method"], e)

    def _on_close(self, why: BaseException) -> None:
        with self._lock:
            self._closed = why
            pending, self._pending = list(self._pending.values()), {}
        for p in pending:
            p.answer = {"_failure": why}
            p.done.set()

    # outgoing
    def request(self, method: str, params: Message | None, timeout: float) -> Message:
        """The result of `method`; past `timeout` seconds the server is told to cancel and TimeoutError raised."""
        request_id = next(self._ids)
        pending = _Pending()
        with self._lock:
            if self._closed is not None:
                raise ConnectionError(str(self._closed) or "the connection is closed")
            self._pending[request_id] = pending
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self.transport.send(message)
        except BaseException:
            with self._lock:
                self._pending.pop(request_id, None)
            raise
        if not pending.done.wait(max(timeout, 0.0)):
            with self._lock:
                self._pending.pop(request_id, None)
            if method != "initialize":  # the spec: initialize is never cancelled
                with contextlib.suppress(Exception):
                    self.notify(
                        "notifications/cancelled",
                        {"requestId": request_id, "reason": f"no answer within {timeout:g} s"},
                    )
            raise TimeoutError(f"{method}: no answer within {timeout:g} s")
        answer = pending.answer or {}
        if isinstance(answer.get("_failure"), BaseException):  # never from the wire: JSON has no exceptions
            raise answer["_failure"]
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise McpError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data"))
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    def notify(self, method: str, params: Message | None = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.transport.send(message)

    # the protocol
    def initialize(self, timeout: float) -> None:
        result = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
            timeout,
        )
        version = result.get("protocolVersion")
        if version not in ACCEPTED_VERSIONS:
            raise ConnectionError(f"the server speaks protocol version {version!r}, which fermix does not")
        self.protocol_version = str(version)
        self.server_info = result.get("serverInfo") or {}
        self.transport.negotiated(self.protocol_version)
        self.notify("notifications/initialized")

    def list_tools(self, timeout: float) -> list[Message]:
        """Every tool, following `nextCursor` pages, within `timeout` seconds in all."""
        deadline = time.monotonic() + timeout
        tools: list[Message] = []
        cursor: str | None = None
        while True:
            page = self.request(
                "tools/list", {"cursor": cursor} if cursor else None, deadline - time.monotonic()
            )
            tools += [
                t for t in page.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)
            ]
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    def call_tool(self, name: str, arguments: Message, timeout: float) -> Message:
        return self.request("tools/call", {"name": name, "arguments": arguments}, timeout)

    def ping(self, timeout: float) -> None:
        self.request("ping", None, timeout)

    def close(self) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = ConnectionError("the session is closed")
        self.transport.close()
        self._on_close(ConnectionError("the session is closed"))
