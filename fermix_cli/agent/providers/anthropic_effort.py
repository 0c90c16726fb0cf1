"""How a reasoning effort (`none` ... `max`) reaches the Messages API, which has two shapes by model.

Claude 4.6 and later, Opus 4.5 and Mythos take `output_config: {effort}` (`low`, `medium`, `high`, and on
some models `xhigh`, `max`); a level a model lacks is sent as the next one below it. Older Claude models
(3.7 to 4.5) know only extended thinking with a token budget, `thinking: {type: enabled, budget_tokens}`,
where `max_tokens` must exceed the budget. It goes with tools too: each reply's thinking blocks come back
with its tool results (anthropic_thinking.py). A request the API would refuse thinking for (a forced
`tool_choice`, a turn under way that started without thinking) goes without the budget, with a warning
once per model and reason; so does one for a model too old for thinking or a name that is not a Claude
version. `none` sends nothing: without either field Claude does not think.
"""

from __future__ import annotations

import re
import threading
from typing import Any

LEVELS = ("low", "medium", "high", "xhigh", "max")
# Extended thinking budgets for the older models; the smallest the API takes is 1024. The largest plus
# the default reply room stays under Opus 4.1's 32 000 output tokens.
THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 10_000, "xhigh": 16_000, "max": 24_000}
MIN_BUDGET = 1024

_CLAUDE = re.compile(
    r"claude-(?:(?P<family>[a-z]+)-)?(?P<major>\d{1,2})(?:[-.](?P<minor>\d{1,2}))?(?!\d)(?:-(?P<after>[a-z]+))?"
)


class ClaudeModel:
    """What a model id says: family (opus, sonnet, haiku ...) and version, or None where it says none."""

    def __init__(self, model: str) -> None:
        name = model.lower()
        m = _CLAUDE.search(name)
        self.family: str | None = None
        self.version: tuple[int, int] | None = None
        if m is not None:
            self.family = m["family"] or m["after"]
            self.version = (int(m["major"]), int(m["minor"] or 0))
        elif "claude-mythos" in name:  # claude-mythos-preview: no number, the effort generation
            self.family = "mythos"

    def effort_levels(self) -> tuple[str, ...]:
        """The `output_config.effort` levels this model takes; () when it takes none."""
        v, family = self.version, self.family
        if v is None:
            return ("low", "medium", "high", "max") if family == "mythos" else ()
        if v >= (5, 0):
            return LEVELS[:3] if family == "haiku" else LEVELS
        if family == "opus" and v >= (4, 7):
            return LEVELS
        if v >= (4, 6):
            return LEVELS[:3] if family == "haiku" else ("low", "medium", "high", "max")
        if family == "opus" and v == (4, 5):
            return LEVELS[:3]
        return ()

    def takes_thinking_budget(self) -> bool:
        return self.version is not None and self.version >= (3, 7)


def _at_most(level: str, available: tuple[str, ...]) -> str:
    """`level`, or the highest available level below it."""
    for candidate in reversed(LEVELS[: LEVELS.index(level) + 1]):
        if candidate in available:
            return candidate
    return available[0]


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_effort_ignored(model: str, reason: str) -> None:
    """Warn once per process for each model and reason, also when subagent workers ask side by side."""
    with _warned_lock:
        if (model, reason) in _warned:
            return
        _warned.add((model, reason))
    from ...core.logs import logger

    logger("fermix.agent.anthropic").warning("reasoning effort ignored for model %s: %s", model, reason)


def forget_effort_warnings() -> None:
    """Warn again for every model and reason (tests)."""
    with _warned_lock:
        _warned.clear()


def effort_fields(
    model: str,
    effort: str | None,
    *,
    max_tokens: int,
    explicit_max_tokens: bool,
    thinking_refused: str | None = None,
) -> dict[str, Any]:
    """The request fields that carry `effort` for `model` (may replace `max_tokens`); {} when none can.

    `thinking_refused` says why this request cannot carry extended thinking (anthropic_thinking.py), if so.
    """
    if effort is None or effort == "none":
        return {}
    if effort not in LEVELS:
        warn_effort_ignored(model, f"unknown effort {effort!r}")
        return {}
    claude = ClaudeModel(model)
    levels = claude.effort_levels()
    if levels:
        return {"output_config": {"effort": _at_most(effort, levels)}}
    if not claude.takes_thinking_budget():
        warn_effort_ignored(model, "not a Claude model that takes an effort or extended thinking")
        return {}
    if thinking_refused is not None:
        warn_effort_ignored(model, thinking_refused)
        return {}
    budget = THINKING_BUDGETS[effort]
    if explicit_max_tokens:  # the configured max_tokens is the ceiling: the budget fits under it
        budget = min(budget, max_tokens - MIN_BUDGET)
        if budget < MIN_BUDGET:
            warn_effort_ignored(model, f"max_tokens {max_tokens} leaves no room for a thinking budget")
            return {}
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    return {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "max_tokens": budget + max_tokens,  # thinking counts against max_tokens: keep the reply's room
    }
