"""Recorded-shape streams of tool calls, written from each API's documented streaming format.

Every dialect streams the same three calls (CALLS), each in its own way, so the conformance tests can
demand one answer from all of them. The shapes:

- `openai`: Chat Completions as documented: the first fragment of a call has `index`, `id`, `type` and
  the whole name with `arguments: ""`; later fragments carry only `index` and argument text; text and
  tool calls in one message; `finish_reason: "tool_calls"`; usage in a last chunk with no choices
  (`stream_options.include_usage`).
- `openai_interleaved`: the same API with the parallel calls' fragments interleaved by index.
- `llama_cpp_python`: llama-cpp-python 0.3.x's server: the name (and id) repeated in every fragment,
  one token of arguments per chunk, a legacy `function_call` beside `tool_calls`, no usage; its JSON is
  ASCII-escaped, so a character outside the BMP is split between two fragments as a surrogate pair.
- `llama_server`: llama.cpp's C++ `llama-server`: name once, arguments in pieces, usage and `timings`
  in the final chunk.
- `ollama`: Ollama's `/v1` endpoint: each call whole in one chunk, no `index`, `finish_reason: "stop"`,
  usage absent.
- `vllm`: vLLM: `"usage": null` in every chunk, the first fragment has a name and no `arguments`,
  usage in a final chunk.
- `lm_studio`: LM Studio: the id repeated identically in every fragment, `finish_reason: "tool_calls"`
  after the last fragment, no usage.
- `anthropic`: Messages API events: message_start, ping, a text block, `tool_use` blocks whose input
  arrives as `input_json_delta` pieces (an empty one first), a `tool_use` with no deltas (empty input),
  message_delta with `stop_reason: "tool_use"`, message_stop.

The replay server writes each event's bytes in two writes split inside a multi-byte character when the
event has one, so every stream also has UTF-8 split across network reads.
"""

from __future__ import annotations

import json
from typing import Any

TEXT = "Je regarde. "
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("file_read", {"path": "notes/naïve 😀.txt", "limit": 2}),
    ("glob_search", {"pattern": "**/*.md"}),
    ("tool_search", {}),
]
USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}


def _args(i: int) -> str:
    args = CALLS[i][1]
    return json.dumps(args, ensure_ascii=False) if args else ""


def _pieces(text: str, n: int = 4) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sse(data: Any) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _sse_ascii(data: Any) -> str:
    return f"data: {json.dumps(data, ensure_ascii=True)}\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def openai() -> list[str]:
    out = [_sse(_chunk({"role": "assistant", "content": ""}))]
    out += [_sse(_chunk({"content": p})) for p in _pieces(TEXT, 3)]
    for i, (name, _) in enumerate(CALLS):
        first = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(_sse(_chunk({"tool_calls": [first]})))
        for piece in _pieces(_args(i)) if _args(i) else []:
            out.append(_sse(_chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})))
    out.append(_sse(_chunk({}, "tool_calls")))
    out.append(_sse({**_chunk({}), "choices": [], "usage": USAGE}))
    return [*out, "data: [DONE]\n\n"]


def openai_interleaved() -> list[str]:
    out = [_sse(_chunk({"role": "assistant", "content": TEXT}))]
    for i, (name, _) in enumerate(CALLS):
        first = {
            "index": i,
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(_sse(_chunk({"tool_calls": [first]})))
    pieces = [_pieces(_args(i), 5) if _args(i) else [] for i in range(len(CALLS))]
    for step in range(max(len(p) for p in pieces)):
        frags = [
            {"index": i, "function": {"arguments": p[step]}} for i, p in enumerate(pieces) if step < len(p)
        ]
        out.append(_sse(_chunk({"tool_calls": frags})))
    out.append(_sse(_chunk({}, "tool_calls", usage=USAGE)))
    return [*out, "data: [DONE]\n\n"]


def _utf16_units(text: str) -> str:
    """The text with each character outside the BMP as its two surrogates (what a token can carry)."""
    out = []
    for ch in text:
        code = ord(ch) - 0x10000
        out += [ch] if code < 0 else [chr(0xD800 + (code >> 10)), chr(0xDC00 + (code & 0x3FF))]
    return "".join(out)


def _surrogate_split(text: str) -> list[str]:
    """Token-sized pieces of the arguments, one cut between the halves of a surrogate pair."""
    units = _utf16_units(text)
    cut = next((i for i, ch in enumerate(units) if 0xDC00 <= ord(ch) <= 0xDFFF), 0)
    pieces: list[str] = []
    start = 0
    for end in ([cut] if cut else []) + [len(units)]:
        pieces += _pieces(units[start:end], 3)
        start = end
    return [p for p in pieces if p]


def llama_cpp_python() -> list[str]:
    out: list[str] = []
    for i, (name, _) in enumerate(CALLS):
        call_id = f"call__{i}_{name}_cmpl-9"
        for token in _surrogate_split(_args(i)) or [""]:
            frag = {
                "index": i,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": token},
            }
            delta = {
                "role": "assistant",
                "content": None,
                "function_call": {"name": name, "arguments": token},
                "tool_calls": [frag],
            }
            out.append(
                _sse_ascii({**_chunk(delta), "choices": [{**_chunk(delta)["choices"][0], "logprobs": None}]})
            )
    out.append(_sse_ascii(_chunk({}, "tool_calls")))
    return [*out, "data: [DONE]\n\n"]


def llama_server() -> list[str]:
    out = [_sse(_chunk({"role": "assistant", "content": None}))]
    out.append(_sse(_chunk({"content": TEXT})))
    for i, (name, _) in enumerate(CALLS):
        first = {
            "index": i,
            "id": f"llama_{i}",
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(_sse(_chunk({"tool_calls": [first]})))
        for piece in _pieces(_args(i), 6) if _args(i) else []:
            out.append(_sse(_chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})))
    timings = {"prompt_n": 120, "predicted_n": 30, "predicted_per_second": 12.5}
    out.append(_sse(_chunk({}, "tool_calls", usage=USAGE, timings=timings)))
    return [*out, "data: [DONE]\n\n"]


def ollama() -> list[str]:
    out = [_sse(_chunk({"role": "assistant", "content": TEXT}))]
    for i, (name, _) in enumerate(CALLS):
        call = {
            "id": f"call_{i}x",
            "type": "function",
            "function": {"name": name, "arguments": _args(i) or "{}"},
        }
        out.append(_sse(_chunk({"role": "assistant", "content": "", "tool_calls": [call]})))
    out.append(_sse(_chunk({"role": "assistant", "content": ""}, "stop")))
    return [*out, "data: [DONE]\n\n"]


def vllm() -> list[str]:
    out = [_sse(_chunk({"role": "assistant", "content": ""}, usage=None))]
    out.append(_sse(_chunk({"content": TEXT}, usage=None)))
    for i, (name, _) in enumerate(CALLS):
        first = {"index": i, "id": f"chatcmpl-tool-{i}", "type": "function", "function": {"name": name}}
        out.append(_sse(_chunk({"tool_calls": [first]}, usage=None)))
        for piece in _pieces(_args(i), 3) if _args(i) else []:
            frag = {"index": i, "function": {"arguments": piece}}
            out.append(_sse(_chunk({"tool_calls": [frag]}, usage=None)))
    out.append(_sse(_chunk({"content": ""}, "tool_calls", usage=None)))
    out.append(_sse({**_chunk({}), "choices": [], "usage": USAGE}))
    return [*out, "data: [DONE]\n\n"]


def lm_studio() -> list[str]:
    out = [_sse(_chunk({"role": "assistant", "content": TEXT}, system_fingerprint="m"))]
    for i, (name, _) in enumerate(CALLS):
        call_id = f"{9_000_000 + i}"
        first = {"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        out.append(_sse(_chunk({"tool_calls": [first]})))
        for piece in _pieces(_args(i), 2) if _args(i) else []:
            frag = {"index": i, "id": call_id, "type": "function", "function": {"arguments": piece}}
            out.append(_sse(_chunk({"tool_calls": [frag]})))
    out.append(_sse(_chunk({}, "tool_calls")))
    return [*out, "data: [DONE]\n\n"]


def _event(kind: str, **data: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n"


def anthropic() -> list[str]:
    usage = {"input_tokens": 120, "output_tokens": 1}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "m",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    out = [_event("message_start", message=message), _event("ping")]
    out.append(_event("content_block_start", index=0, content_block={"type": "text", "text": ""}))
    out += [
        _event("content_block_delta", index=0, delta={"type": "text_delta", "text": p})
        for p in _pieces(TEXT, 2)
    ]
    out.append(_event("content_block_stop", index=0))
    for i, (name, _) in enumerate(CALLS, start=1):
        block = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}}
        out.append(_event("content_block_start", index=i, content_block=block))
        if _args(i - 1):
            pieces = ["", *_pieces(_args(i - 1), 4)]
            out += [
                _event("content_block_delta", index=i, delta={"type": "input_json_delta", "partial_json": p})
                for p in pieces
            ]
        out.append(_event("content_block_stop", index=i))
    out.append(
        _event(
            "message_delta",
            delta={"stop_reason": "tool_use", "stop_sequence": None},
            usage={"output_tokens": 30},
        )
    )
    return [*out, _event("message_stop")]


OPENAI_DIALECTS = {
    "openai": openai,
    "openai_interleaved": openai_interleaved,
    "llama_cpp_python": llama_cpp_python,
    "llama_server": llama_server,
    "ollama": ollama,
    "vllm": vllm,
    "lm_studio": lm_studio,
}
DIALECTS = {**OPENAI_DIALECTS, "anthropic": anthropic}
# What each dialect streams besides the calls: text, and usage when the server reports it.
STREAMS_TEXT = {"llama_cpp_python": False}
REPORTS_USAGE = {"llama_cpp_python": False, "ollama": False, "lm_studio": False}


def text_reply(kind: str, text: str, finish: str | None = None) -> list[str]:
    """A plain text answer in the Chat Completions (`openai`) or Messages (`anthropic`) format, ending
    with `finish` as its finish (stop) reason: `stop` / `end_turn` unless told."""
    if kind == "anthropic":
        message = {
            "id": "msg_2",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "m",
            "usage": {"input_tokens": 5, "output_tokens": 1},
        }
        return [
            _event("message_start", message=message),
            _event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            _event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
            _event("content_block_stop", index=0),
            _event("message_delta", delta={"stop_reason": finish or "end_turn"}, usage={"output_tokens": 3}),
            _event("message_stop"),
        ]
    return [
        _sse(_chunk({"role": "assistant", "content": text})),
        _sse(_chunk({}, finish or "stop")),
        "data: [DONE]\n\n",
    ]


def openai_call_reply(text: str, name: str, arguments: str, finish: str | None = "tool_calls") -> list[str]:
    """Text and one call whose arguments text is sent as given (cut or broken JSON too), in the Chat
    Completions format; `finish=None` sends no finish_reason."""
    first = {"index": 0, "id": "call_cut", "type": "function", "function": {"name": name, "arguments": ""}}
    out = [_sse(_chunk({"role": "assistant", "content": text})), _sse(_chunk({"tool_calls": [first]}))]
    out += [
        _sse(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        for piece in _pieces(arguments, 3)
    ]
    return [*out, _sse(_chunk({}, finish)), "data: [DONE]\n\n"] if finish else out


def anthropic_call_reply(text: str, name: str, partial_json: str, stop: str | None = "tool_use") -> list[str]:
    """Text and one tool_use whose input JSON is sent as given, in the Messages format; `stop=None`
    ends the stream before message_delta and message_stop."""
    message = {"id": "msg_3", "type": "message", "role": "assistant", "content": [], "model": "m"}
    out = [
        _event("message_start", message={**message, "usage": {"input_tokens": 5, "output_tokens": 1}}),
        _event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        _event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
        _event("content_block_stop", index=0),
        _event(
            "content_block_start",
            index=1,
            content_block={"type": "tool_use", "id": "toolu_cut", "name": name, "input": {}},
        ),
        *[
            _event("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": p})
            for p in _pieces(partial_json, 3)
        ],
        _event("content_block_stop", index=1),
    ]
    if stop is None:
        return out
    return [
        *out,
        _event("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": 9}),
        _event("message_stop"),
    ]


def llama_call(name: str, args: dict[str, Any]) -> list[str]:
    """One call in llama-cpp-python's shape (name repeated per fragment, no usage)."""
    out = []
    for token in _pieces(json.dumps(args, ensure_ascii=False), 3):
        frag = {
            "index": 0,
            "id": f"call__0_{name}",
            "type": "function",
            "function": {"name": name, "arguments": token},
        }
        out.append(_sse(_chunk({"role": "assistant", "content": None, "tool_calls": [frag]})))
    return [*out, _sse(_chunk({}, "tool_calls")), "data: [DONE]\n\n"]
