"""`mock`: replays a JSON script of responses, tool calls included.

The script is a list of responses (or `{"responses": [...], "repeat_last": true}`). Each response may
have `text` (or `chunks`, streamed one by one), `tool_calls` (`[{"name", "arguments", "id"?}]`),
`usage` (`{"input_tokens", "output_tokens"}`), `error` (`{"code", "message"}`, raised instead) and
`delay` (seconds to wait before answering, to stand in for a slow model).

The response replayed is chosen by the number of assistant turns already in the conversation, so a
continued session picks up where the last run stopped and the provider itself keeps no state.

`{"by_prompt": [{"contains": "...", "responses": [...]}, ...]}` holds one script per conversation: the
first entry whose `contains` occurs in the conversation's first user message is replayed (concurrent
subagent workers sharing one provider each follow their own script this way).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...core.errors import ToolError
from ...core.parsedfiles import ParsedFiles
from ..messages import Finish, ModelRequest, StreamEvent, TextDelta, ToolCallEvent, Usage, UsageEvent
from .base import chunk_text, word_count


class MockScript:
    def __init__(
        self,
        responses: list[dict[str, Any]],
        repeat_last: bool,
        source: str,
        routes: list[tuple[str, MockScript]] | None = None,
    ) -> None:
        self.responses = responses
        self.repeat_last = repeat_last
        self.source = source
        self.routes = routes or []

    def for_prompt(self, first_prompt: str) -> MockScript:
        """The script that plays for a conversation opening with `first_prompt` (itself without routes)."""
        if not self.routes:
            return self
        for needle, script in self.routes:
            if needle in first_prompt:
                return script
        raise ToolError(
            "provider_error",
            f"mock: no by_prompt entry of {self.source} matches the conversation's first message",
            {"path": self.source},
        )

    @classmethod
    def load(cls, path: str) -> MockScript:
        """The script in `path`, parsed once per version of the file (`core/parsedfiles.py`): a script
        keeps no state, so the runs and subagent workers that load an unchanged file share one parse."""
        try:
            st = os.stat(path)
        except OSError as e:
            raise ToolError(
                "invalid_script", f"mock: cannot read script {path}: {e.strerror}", {"path": path}
            ) from None
        return _PARSED.get(path, st, lambda: cls._read(path))

    @classmethod
    def _read(cls, path: str) -> MockScript:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ToolError(
                "invalid_script", f"mock: cannot read script {path}: {e.strerror}", {"path": path}
            ) from None
        except ValueError as e:
            raise ToolError(
                "invalid_script", f"mock: {path} is not valid JSON: {e}", {"path": path}
            ) from None
        return cls.parse(data, path)

    @classmethod
    def parse(cls, data: Any, source: str = "<script>") -> MockScript:
        repeat = False
        if isinstance(data, dict) and "by_prompt" in data:
            routes = data["by_prompt"]
            if not isinstance(routes, list) or not routes:
                raise ToolError("invalid_script", f"mock: {source}: by_prompt must be a non-empty list", {})
            parsed: list[tuple[str, MockScript]] = []
            for n, route in enumerate(routes):
                if not isinstance(route, dict) or not isinstance(route.get("contains"), str):
                    raise ToolError(
                        "invalid_script", f'mock: {source}: by_prompt[{n}] needs a "contains" string', {}
                    )
                body = {k: v for k, v in route.items() if k != "contains"}
                parsed.append((route["contains"], cls.parse(body, f"{source} by_prompt[{n}]")))
            return cls([{}], False, source, parsed)
        if isinstance(data, dict):
            repeat = data.get("repeat_last") is True
            data = data.get("responses")
        if not isinstance(data, list) or not data or not all(isinstance(r, dict) for r in data):
            raise ToolError(
                "invalid_script",
                f"mock: {source} must be a non-empty list of response objects "
                '(or {"responses": [...]}), e.g. [{"text": "hello"}]',
                {"path": source},
            )
        for n, response in enumerate(data):
            _check_response(response, n, source)
        return cls(data, repeat, source)


def _check_response(r: dict[str, Any], n: int, source: str) -> None:
    known = {"text", "chunks", "tool_calls", "usage", "error", "finish_reason", "delay"}
    unknown = sorted(set(r) - known)
    problem = f"unknown keys {unknown}" if unknown else None
    if problem is None and not isinstance(r.get("tool_calls", []), list):
        problem = "tool_calls must be a list"
    for call in r.get("tool_calls", []) if problem is None else []:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            problem = 'each tool call needs a "name"'
    if problem is None and "chunks" in r and not all(isinstance(c, str) for c in r["chunks"]):
        problem = "chunks must be strings"
    delay = r.get("delay", 0)
    if problem is None and (isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0):
        problem = "delay must be a number of seconds"
    if problem is not None:
        raise ToolError(
            "invalid_script", f"mock: response {n} of {source}: {problem}", {"path": source, "index": n}
        )


class MockProvider:
    def __init__(self, script: MockScript, name: str = "mock") -> None:
        self.name = name
        self.script = script

    @classmethod
    def from_settings(cls, name: str, script: str | None, model: str, cwd: str) -> MockProvider:
        path = script or os.environ.get("FERMIX_MOCK_SCRIPT", "").strip() or None
        if path is None and model not in ("", "mock"):
            path = model
        if path is None:
            raise ToolError(
                "invalid_script",
                "mock: no script given. Pass one as the model (--provider mock -m script.json), "
                f"set fermix_core.providers.{name}.script, or set FERMIX_MOCK_SCRIPT",
                {},
            )
        return cls(MockScript.load(os.path.join(cwd, os.path.expanduser(path))), name)

    def stream(self, request: ModelRequest) -> Iterator[StreamEvent]:
        index = sum(1 for m in request.messages if m.role == "assistant")
        first = next((m.content for m in request.messages if m.role == "user"), "")
        script = self.script.for_prompt(first)
        responses = script.responses
        if index >= len(responses):
            if not script.repeat_last:
                raise ToolError(
                    "provider_error",
                    f"mock: the script {script.source} has {len(responses)} responses and the "
                    f"conversation asked for response {index + 1}",
                    {"path": script.source, "responses": len(responses)},
                )
            index = len(responses) - 1
        r = responses[index]
        if r.get("delay"):
            from ...core.cancel import sleep_unless_interrupted

            sleep_unless_interrupted(float(r["delay"]))
        if isinstance(r.get("error"), dict):
            err = r["error"]
            raise ToolError(str(err.get("code", "provider_error")), str(err.get("message", "mock error")), {})
        chunks = r["chunks"] if "chunks" in r else chunk_text(str(r.get("text", "")))
        for piece in chunks:
            yield TextDelta(piece)
        calls = r.get("tool_calls", [])
        for n, call in enumerate(calls):
            args = call.get("arguments", {})
            raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            wire_id = call["id"] if isinstance(call.get("id"), str) else f"mock_{index}_{n}"
            yield ToolCallEvent(wire_id, call["name"], raw)
        usage = r.get("usage")
        if isinstance(usage, dict):
            yield UsageEvent(Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))))
        else:
            text = "".join(chunks)
            # Stand-in counts: the newest message in, the reply out (cheap at any history length).
            newest = request.messages[-1].content if request.messages else ""
            yield UsageEvent(Usage(word_count(newest), word_count(text)))
        yield Finish(str(r.get("finish_reason") or ("tool_calls" if calls else "stop")))

    def close(self) -> None:
        pass


_PARSED: ParsedFiles[MockScript] = ParsedFiles()  # scripts are read-only once parsed
