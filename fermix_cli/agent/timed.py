"""A run under an overall time limit (`fermix ask --timeout`): when the limit passes the run stops as
Ctrl-C stops it (the model call in flight abandoned, a running tool ended, the turn stored) and ends
with status `timeout` and an error that says how to raise the limit."""

from __future__ import annotations

from typing import Any

from ..core.cancel import TimeLimit
from ..core.errors import ToolError
from .loop import AgentLoop, RunResult

TIMEOUT_STOP = "the run reached its time limit"


def timeout_error(limit: TimeLimit) -> ToolError:
    ms = round(limit.seconds * 1000)
    return ToolError(
        "timeout",
        f"stopped after the time limit of {ms} ms before the run finished; give it longer with "
        "--timeout MS (-t MS), or leave the option out for no limit",
        {"timeout_ms": ms},
    )


class TimedLoop(AgentLoop):
    """The model loop with a `TimeLimit` armed over each run; its stop ends the run `timeout`."""

    def __init__(self, *args: Any, time_limit: TimeLimit, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.time_limit = time_limit

    def _run(self, result: RunResult, guard: Any, state: Any) -> None:
        finished = False
        try:
            with self.time_limit.running():
                super()._run(result, guard, state)
                finished = True
        except KeyboardInterrupt:
            if not self.time_limit.reached:
                raise  # a real Ctrl-C or SIGTERM: the loop ends the run `interrupted`
            if finished:  # the limit passed as the run ended: its answer is complete and stands
                return
            result.status, result.error = "timeout", timeout_error(self.time_limit)
            self._settle(result, state, TIMEOUT_STOP)
