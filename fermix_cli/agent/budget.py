"""Fitting a request to the model's context window, instead of sending one the server must refuse.

Token counts are estimated (no tokenizer is loaded): ESTIMATE_CHARS_PER_TOKEN characters a token,
which over-counts for English and JSON so the estimate errs on the side of fitting. In order:
1. everything fits: the request goes as it is;
2. the tools do not: the list keeps the deferral bridges (tool_search, tool_describe, tool_call) and
   then the tools most relevant to the latest prompt that fit; the rest stay callable through the
   bridges, and the system prompt says so;
3. the history does not: older turns are dropped whole (a turn is a user message and what follows it),
   oldest first, and the system prompt notes how many messages were left out;
4. long tool results in the remaining turns are shortened, keeping their beginning and end;
5. still too large: `context_exceeded`, naming the window and the estimate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ..core.errors import ToolError
from ..core.records import Record, field
from .messages import Message, ModelRequest, ToolSchema

ESTIMATE_CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD = 8  # role markers and separators a chat template adds to every message
TOOL_OVERHEAD = 24  # the wrapper a tool is sent in ({"type": "function", "function": {...}}) and its markers
DEFAULT_REPLY_RESERVE = 512
BRIDGES = ("tool_search", "tool_describe", "tool_call")
MIN_RESULT_CHARS = 200
WORD = re.compile(r"[a-z0-9]+")
# How servers name their context size when refusing a request that is too long: llama-cpp-python
# ("exceed context window of 2048"), OpenAI and vLLM ("maximum context length is 4096 tokens"),
# llama-server ("n_ctx: 2048", "context size (2048)").
CONTEXT_SIZE = re.compile(
    r"(?:context window of|maximum context length is|n_ctx\W{0,3}|context size\W{0,3})\s*(\d{3,8})", re.I
)


class Fitted(Record):
    """The request that fits, and what was left out to make it fit."""

    request: ModelRequest
    estimate: int
    tools_dropped: list[str] = field(default_factory=list)
    messages_dropped: int = 0
    results_shortened: int = 0


def estimate_text(text: str) -> int:
    return len(text) // ESTIMATE_CHARS_PER_TOKEN + 1


def estimate_tool(tool: ToolSchema) -> int:
    return estimate_text(tool.name + tool.description + json.dumps(tool.parameters)) + TOOL_OVERHEAD


def estimate_message(m: Message) -> int:
    calls = sum(estimate_text(c.name + c.arguments) + MESSAGE_OVERHEAD for c in m.tool_calls)
    return estimate_text(m.content) + MESSAGE_OVERHEAD + calls


def estimate(request: ModelRequest) -> int:
    return (
        estimate_text(request.system)
        + MESSAGE_OVERHEAD
        + sum(estimate_message(m) for m in request.messages)
        + sum(estimate_tool(t) for t in request.tools)
    )


def relevance(tool: ToolSchema, words: set[str]) -> int:
    """How many of the prompt's words the tool's name and description share."""
    own = set(WORD.findall(f"{tool.name.replace('_', ' ')} {tool.description}".lower()))
    return len(own & words)


def pick_tools(
    tools: Sequence[ToolSchema], prompt: str, budget: int, forced: str | None = None
) -> list[ToolSchema]:
    """The bridges (and a forced tool), then the most relevant tools that fit in `budget`, in order."""
    words = {w for w in WORD.findall(prompt.lower()) if len(w) > 2}
    bridges = [t for t in tools if t.name in BRIDGES or t.name == forced]
    used = sum(estimate_tool(t) for t in bridges)
    keep = {t.name for t in bridges}
    ranked = sorted(
        (t for t in tools if t.name not in keep), key=lambda t: (-relevance(t, words), estimate_tool(t))
    )
    for tool in ranked:
        cost = estimate_tool(tool)
        if used + cost <= budget:
            keep.add(tool.name)
            used += cost
    return [t for t in tools if t.name in keep]


def turn_starts(messages: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "user"]


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2 - 40, MIN_RESULT_CHARS // 2)
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out to fit the context ...]\n{text[-half:]}"


def _tools_note(names: list[str]) -> str:
    return (
        f"{len(names)} tools are not listed to fit the model's context ({', '.join(names)}); "
        "find them with tool_search and run them with tool_call."
    )


def context_size_in(message: str) -> int | None:
    """The context size a server's refusal names, or None."""
    match = CONTEXT_SIZE.search(message)
    return int(match.group(1)) if match else None


def fit_request(
    request: ModelRequest,
    window: int,
    reply_reserve: int | None = None,
    bridges: Sequence[ToolSchema] = (),
) -> Fitted:
    """`request` made to fit in `window` tokens with `reply_reserve` left for the answer.

    `bridges` are the deferral bridges when they are not on the list already; a trimmed list adds them.
    """
    budget = window - (reply_reserve or DEFAULT_REPLY_RESERVE)
    fitted = Fitted(request, estimate(request))
    if fitted.estimate <= budget:
        return fitted
    prompt = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    tools = request.tools
    fixed = estimate(ModelRequest(request.model, request.system, request.messages, []))
    if tools and fixed + sum(estimate_tool(t) for t in tools) > budget:
        # Room for the note that names the unlisted tools is kept before the tools are chosen.
        note_cost = estimate_text(_tools_note([t.name for t in tools]))
        listed = {t.name for t in tools}
        tools = [*tools, *(b for b in bridges if b.name not in listed)]
        tools = pick_tools(tools, prompt, budget - fixed - note_cost, request.tool_choice)
        kept = {t.name for t in tools}
        fitted.tools_dropped = [t.name for t in request.tools if t.name not in kept]
    notes: list[str] = []
    if fitted.tools_dropped:
        notes.append(_tools_note(fitted.tools_dropped))
    messages = list(request.messages)
    system = request.system

    def build() -> ModelRequest:
        note = "" if not notes else "\n\n[context] " + " ".join(notes)
        return ModelRequest(
            request.model, system + note, messages, list(tools), request.tool_choice, request.reasoning_effort
        )

    candidate = build()
    starts = turn_starts(messages)
    while estimate(candidate) > budget and len(starts) > 1:
        cut = starts[1]
        fitted.messages_dropped += cut
        messages = messages[cut:]
        starts = turn_starts(messages)
        notes[:] = [n for n in notes if not n.startswith("earlier")]
        notes.append(f"earlier: {fitted.messages_dropped} older messages were left out to fit the context.")
        candidate = build()
    over = estimate(candidate) - budget
    if over > 0:
        messages = list(messages)
        for i in sorted(range(len(messages)), key=lambda i: -len(messages[i].content)):
            m = messages[i]
            if over <= 0 or m.role != "tool" or len(m.content) <= MIN_RESULT_CHARS:
                continue
            limit = max(MIN_RESULT_CHARS, len(m.content) - (over + 40) * ESTIMATE_CHARS_PER_TOKEN)
            short = shorten(m.content, limit)
            over -= estimate_text(m.content) - estimate_text(short)
            messages[i] = Message(
                m.role, short, m.tool_calls, m.tool_call_id, m.tool_name, m.is_error, m.images
            )
            fitted.results_shortened += 1
        candidate = build()
    fitted.request, fitted.estimate = candidate, estimate(candidate)
    if fitted.estimate > budget:
        raise ToolError(
            "context_exceeded",
            f"the request needs about {fitted.estimate} tokens but the model's context is {window} "
            f"({window - budget} kept for the reply) even with older turns left out; shorten the prompt, "
            "pass fewer tools (--tools), or raise context_window if the server allows more",
            {"context_window": window, "estimate": fitted.estimate},
        )
    return fitted
