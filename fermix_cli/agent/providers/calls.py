"""Tool calls assembled from streamed Chat Completions fragments (`delta.tool_calls`).

The rules each OpenAI-compatible dialect keeps, so one assembler serves them all:
- fragments belong to the call at their `index`; a server that omits `index` continues the last call
  until a fragment brings a new id or a second name;
- a server that reuses one index for several calls starts a new call with each new id;
- the name arrives once (OpenAI, vLLM) or is repeated identically in every fragment (llama.cpp's
  Python server); a repeat is not appended, a longer name that extends the one so far replaces it;
- arguments concatenate; an object instead of text (Ollama) is serialised; surrogate pairs split across
  fragments are joined back into one character.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..messages import ToolCallEvent


class _Call:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name = ""
        self.arguments: list[str] = []

    def add_name(self, name: str) -> None:
        if not self.name or name.startswith(self.name):
            self.name = name
        elif name != self.name and not self.name.endswith(name):
            self.name += name

    def text(self) -> str:
        raw = "".join(self.arguments)
        try:
            return raw.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeError:
            return raw.encode("utf-8", "replace").decode("utf-8")


class ToolCallAssembler:
    """Feed `delta.tool_calls` fragments in order; `events()` yields the complete calls by index."""

    def __init__(self) -> None:
        self.calls: dict[int, _Call] = {}
        self._last: int | None = None

    def add(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            return
        fn = fragment.get("function")
        fn = fn if isinstance(fn, dict) else {}
        new_id = fragment.get("id") if isinstance(fragment.get("id"), str) and fragment.get("id") else None
        name = fn.get("name") if isinstance(fn.get("name"), str) and fn.get("name") else None
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = self._index_without(new_id, name)
        current = self.calls.get(index)
        if current is not None and new_id and current.id and new_id != current.id:
            # Some servers reuse index 0 for every call; a new id starts a new call.
            index = max(self.calls) + 1
            current = None
        if current is None:
            current = self.calls.setdefault(index, _Call())
        self._last = index
        if new_id and not current.id:
            current.id = new_id
        if name:
            current.add_name(name)
        arguments = fn.get("arguments")
        if isinstance(arguments, str):
            current.arguments.append(arguments)
        elif isinstance(arguments, dict):
            current.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def _index_without(self, new_id: str | None, name: str | None) -> int:
        """The call a fragment without `index` belongs to: the last one, unless it starts another."""
        if self._last is None:
            return 0
        last = self.calls[self._last]
        other_id = new_id is not None and last.id is not None and new_id != last.id
        other_name = new_id is None and name is not None and last.name not in ("", name)
        starts_new = other_id or other_name
        return max(self.calls) + 1 if starts_new else self._last

    def events(self) -> Iterator[ToolCallEvent]:
        for index in sorted(self.calls):
            call = self.calls[index]
            if call.name or call.arguments:
                yield ToolCallEvent(call.id, call.name, call.text())
