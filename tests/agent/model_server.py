"""A 127.0.0.1 server speaking the OpenAI Chat Completions and Anthropic Messages wire formats.

Replies are queued per test (`text`, `tools`, `status`). Tool-call ids are issued by the server, and
every request is checked: each tool result must carry the id of a call the server made, and every call
must be answered before the conversation goes on. A violation is answered with HTTP 400, as a real
API would, and kept in `violations`.

On the Messages API a reply can carry extended thinking (`thought`, `redacted`), sent only when the
request enables thinking, as the API does; the server signs it and holds later requests to the API's
rules for sending it back (thinking_ledger.py).
"""

from __future__ import annotations

import http.server
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.agent.thinking_ledger import ThinkingLedger, thinking_enabled


@dataclass
class Reply:
    kind: str  # "text", "tools", "status", "json_text", "stream_error"
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    delay: float = 0.0
    # Messages API extended thinking, opening the reply: ("thinking", text) or ("redacted_thinking", secret).
    thinking: list[tuple[str, str]] = field(default_factory=list)
    streamed: bool = True


def thought(value: str) -> tuple[str, str]:
    """A thinking block's text (the server signs it)."""
    return ("thinking", value)


def redacted(secret: str) -> tuple[str, str]:
    """A redacted_thinking block (the server encrypts `secret` into its data)."""
    return ("redacted_thinking", secret)


def text(value: str, *, thinking: tuple[tuple[str, str], ...] = (), streamed: bool = True) -> Reply:
    return Reply("text", text=value, thinking=list(thinking), streamed=streamed)


def tools(
    *calls: tuple[str, dict[str, Any]],
    text: str = "",
    thinking: tuple[tuple[str, str], ...] = (),
    streamed: bool = True,
) -> Reply:
    return Reply("tools", text=text, calls=list(calls), thinking=list(thinking), streamed=streamed)


def status(code: int, body: str = "", **headers: str) -> Reply:
    return Reply(
        "status", status=code, body=body, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )


def json_text(value: str) -> Reply:
    """A non-streamed JSON completion, even though streaming was asked for."""
    return Reply("text", text=value, streamed=False)


def stream_error(message: str) -> Reply:
    return Reply("stream_error", text=message)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _openai_content_problem(m: dict[str, Any]) -> str | None:
    """Chat Completions content rules: a tool message takes text (or text parts) only; images ride in
    user messages as `image_url` parts whose url is an http(s) or base64 data URL."""
    content = m.get("content")
    if isinstance(content, str) or content is None:
        return None
    if not isinstance(content, list):
        return f"{m.get('role')} content must be a string or an array of parts"
    for part in content:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        if kind == "image_url" and m.get("role") == "user":
            url = (part.get("image_url") or {}).get("url", "")
            if url.startswith(("https://", "http://")) or any(
                url.startswith(f"data:{t};base64,") for t in IMAGE_TYPES
            ):
                continue
            return f"image_url.url is neither a URL nor a base64 data URL: {url[:40]!r}"
        return f"a {m.get('role')} message cannot carry a {kind!r} part"
    return None


def _anthropic_result_problem(block: dict[str, Any]) -> str | None:
    """Messages API tool_result content: a string, or text and base64 image blocks."""
    content = block.get("content")
    if isinstance(content, str) or content is None:
        return None
    for part in content:
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            continue
        source = part.get("source") or {}
        if (
            part.get("type") == "image"
            and source.get("type") == "base64"
            and source.get("media_type") in IMAGE_TYPES
            and isinstance(source.get("data"), str)
        ):
            continue
        return f"tool_result content cannot hold {part.get('type')!r} with source {source.get('type')!r}"
    return None


def _json_object(text: Any) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (TypeError, ValueError):
        return False


class ModelServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        self.violations: list[str] = []
        self.issued: set[str] = set()
        self.unanswered: set[str] = set()
        self.thinking = ThinkingLedger()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                owner._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ----- protocol checks -----------------------------------------------------------------------

    def _check_openai(self, body: dict[str, Any]) -> str | None:
        answered: set[str] = set()
        for m in body.get("messages", []):
            problem = _openai_content_problem(m)
            if problem is not None:
                return problem
            for c in m.get("tool_calls") or []:
                if c.get("id") not in self.issued:
                    return f"assistant tool call id {c.get('id')!r} was never issued"
                if not _json_object(c.get("function", {}).get("arguments")):
                    # Ollama's /v1 (and llama.cpp's templates) read every call's arguments as an object.
                    return "tool_calls[].function.arguments must be a JSON object"
            if m.get("role") == "tool":
                if m.get("tool_call_id") not in self.issued:
                    return f"tool result for unknown call id {m.get('tool_call_id')!r}"
                answered.add(m["tool_call_id"])
        missing = self.unanswered - answered
        return f"tool calls without results: {sorted(missing)}" if missing else None

    def _check_anthropic(self, body: dict[str, Any]) -> str | None:
        answered: set[str] = set()
        roles = [m.get("role") for m in body.get("messages", [])]
        if any(a == b for a, b in itertools.pairwise(roles)):
            return f"roles must alternate, got {roles}"
        for m in body.get("messages", []):
            for block in m.get("content") if isinstance(m.get("content"), list) else []:
                if block.get("type") == "text" and not str(block.get("text", "")).strip():
                    return "text content blocks must contain non-whitespace text"
                if block.get("type") == "tool_use" and block.get("id") not in self.issued:
                    return f"tool_use id {block.get('id')!r} was never issued"
                if block.get("type") == "tool_result":
                    problem = _anthropic_result_problem(block)
                    if problem is not None:
                        return problem
                    if block.get("tool_use_id") not in self.issued:
                        return f"tool_result for unknown tool_use_id {block.get('tool_use_id')!r}"
                    answered.add(block["tool_use_id"])
        missing = self.unanswered - answered
        if missing:
            return f"tool_use blocks without tool_result: {sorted(missing)}"
        return self.thinking.check(body)

    # ----- serving -------------------------------------------------------------------------------

    def _handle(self, h: http.server.BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length)
        body = json.loads(raw or b"{}")
        anthropic = h.path.rstrip("/").endswith("/v1/messages")
        with self._lock:
            self.seen.append(
                Seen(h.path, {k.lower(): v for k, v in h.headers.items()}, body, time.monotonic())
            )
            if not (anthropic or h.path.rstrip("/").endswith("/chat/completions")):
                return self._plain(h, 404, "no such endpoint")
            problem = self._check_anthropic(body) if anthropic else self._check_openai(body)
            if problem is not None:
                self.violations.append(problem)
                error = {"type": "invalid_request_error", "message": problem}
                doc = (
                    {"type": "error", "error": error, "request_id": "req_test"}
                    if anthropic
                    else {"error": error}
                )
                return self._plain(h, 400, json.dumps(doc))
            if not self.replies:
                return self._plain(
                    h, 500, json.dumps({"error": {"message": "test server has no reply queued"}})
                )
            reply = self.replies.pop(0)
            if reply.kind == "status":
                return self._plain(h, reply.status, reply.body, reply.headers)
            ids = [f"srv_{next(self._ids)}" for _ in reply.calls]
            self.issued.update(ids)
            self.unanswered = set(ids)
            # The API thinks only when asked to.
            thinking = self.thinking.issue(reply.thinking) if anthropic and thinking_enabled(body) else []
        if reply.delay:
            time.sleep(reply.delay)
        model = body.get("model", "m")
        if not reply.streamed:
            doc = (
                self._anthropic_message(reply, ids, thinking)
                if anthropic
                else self._openai_completion(reply, ids)
            )
            return self._plain(h, 200, json.dumps(doc), {"content-type": "application/json"})
        events = (
            self._anthropic_events(reply, ids, model, thinking)
            if anthropic
            else self._openai_events(reply, ids, model, body)
        )
        h.send_response(200)
        h.send_header("content-type", "text/event-stream")
        h.send_header("cache-control", "no-cache")
        h.end_headers()
        for chunk in events:
            h.wfile.write(chunk.encode())
            h.wfile.flush()

    def _plain(self, h: Any, code: int, body: str, headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        h.send_response(code)
        for k, v in {"content-type": "application/json", **(headers or {})}.items():
            h.send_header(k, v)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _pieces(value: str, n: int = 3) -> list[str]:
        size = max(1, len(value) // n + 1)
        return [value[i : i + size] for i in range(0, len(value), size)]

    def _openai_events(self, reply: Reply, ids: list[str], model: str, body: dict[str, Any]) -> Iterator[str]:
        def chunk(choices: list[dict[str, Any]], **extra: Any) -> str:
            doc = {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": model,
                "choices": choices,
                **extra,
            }
            return f"data: {json.dumps(doc)}\n\n"

        yield ": keep-alive comment\n\n"
        yield chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        if reply.kind == "stream_error":
            yield f"data: {json.dumps({'error': {'message': reply.text}})}\n\n"
            return
        for piece in self._pieces(reply.text) if reply.text else []:
            yield chunk([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
        for n, ((name, args), call_id) in enumerate(zip(reply.calls, ids, strict=True)):
            first = {
                "index": n,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            yield chunk([{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}])
            for piece in self._pieces(json.dumps(args)):
                frag = {"index": n, "function": {"arguments": piece}}
                yield chunk([{"index": 0, "delta": {"tool_calls": [frag]}, "finish_reason": None}])
        finish = "tool_calls" if reply.calls else "stop"
        yield chunk([{"index": 0, "delta": {}, "finish_reason": finish}])
        if (body.get("stream_options") or {}).get("include_usage"):
            yield chunk([], usage={"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22})
        yield "data: [DONE]\n\n"

    @staticmethod
    def _anthropic_message(reply: Reply, ids: list[str], thinking: list[dict[str, Any]]) -> dict[str, Any]:
        """A non-streamed Message: thinking blocks, then text, then tool_use blocks."""
        content: list[dict[str, Any]] = list(thinking)
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for (name, args), call_id in zip(reply.calls, ids, strict=True):
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if reply.calls else "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2},
        }

    @staticmethod
    def _openai_completion(reply: Reply, ids: list[str]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                for (name, args), i in zip(reply.calls, ids, strict=True)
            ]
        return {
            "choices": [{"message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }

    def _anthropic_events(
        self, reply: Reply, ids: list[str], model: str, thinking: list[dict[str, Any]]
    ) -> Iterator[str]:
        def event(kind: str, **data: Any) -> str:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": None,
            "usage": {"input_tokens": 17, "output_tokens": 1},
        }
        yield event("message_start", message=message)
        yield event("ping")
        if reply.kind == "stream_error":
            yield event("error", error={"type": "overloaded_error", "message": reply.text})
            return
        index = 0
        for block in thinking:  # as the API streams them: text deltas, then the signature
            if block["type"] == "redacted_thinking":
                yield event("content_block_start", index=index, content_block=block)
            else:
                yield event(
                    "content_block_start", index=index, content_block={"type": "thinking", "thinking": ""}
                )
                for piece in self._pieces(block["thinking"]):
                    yield event(
                        "content_block_delta",
                        index=index,
                        delta={"type": "thinking_delta", "thinking": piece},
                    )
                yield event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "signature_delta", "signature": block["signature"]},
                )
            yield event("content_block_stop", index=index)
            index += 1
        if reply.text:
            yield event("content_block_start", index=index, content_block={"type": "text", "text": ""})
            for piece in self._pieces(reply.text):
                yield event("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
            yield event("content_block_stop", index=index)
            index += 1
        for (name, args), call_id in zip(reply.calls, ids, strict=True):
            block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            yield event("content_block_start", index=index, content_block=block)
            for piece in self._pieces(json.dumps(args)):
                yield event(
                    "content_block_delta",
                    index=index,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
            yield event("content_block_stop", index=index)
            index += 1
        stop = "tool_use" if reply.calls else "end_turn"
        yield event(
            "message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": 5}
        )
        yield event("message_stop")


def fresh_warnings_server() -> Iterator[ModelServer]:
    """A ModelServer for one test, with fermix's once-per-process effort warnings forgotten before and
    after it, so each test sees its own."""
    from fermix_cli.agent.providers.anthropic_effort import forget_effort_warnings

    forget_effort_warnings()
    s = ModelServer()
    try:
        yield s
    finally:
        s.close()
        forget_effort_warnings()
