"""The system prompt: fermix's default instructions (or the user's), plus the deferred tool names."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..core.registry import ToolSpec

DEFAULT_INSTRUCTIONS = """\
You are fermix, an assistant working on the user's computer through tools.
- Use a tool when it helps; answer directly when it does not.
- A tool result that starts with a tag such as `not_found:` is an error. Read it and change course;
  calling the same tool with the same arguments again will not change the answer.
- File paths are checked by a sandbox: stay inside the working directory and the granted roots.
- Be concise. Use Markdown when formatting helps."""


def plugins_section(deferred: Sequence[ToolSpec]) -> str:
    names = "\n".join(f"- {s.name}" for s in deferred)
    return (
        "## Plugins\n\n"
        "These tools can be used but their schemas are not loaded. Find one with tool_search, read its "
        "parameters with tool_describe, then run it with tool_call (or by its name).\n" + names
    )


def system_prompt(custom: str | None, *, cwd: str, now: datetime, deferred: Sequence[ToolSpec] = ()) -> str:
    """`custom` replaces the default instructions and environment lines; the plugin list is always added."""
    if custom is not None:
        parts = [custom]
    else:
        parts = [DEFAULT_INSTRUCTIONS, f"Working directory: {cwd}\nToday (UTC): {now:%Y-%m-%d}"]
    if deferred:
        parts.append(plugins_section(deferred))
    return "\n\n".join(p for p in parts if p)
