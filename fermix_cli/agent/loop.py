"""The model loop: call the model, run the tools it asks for in-process, feed the results back, repeat.

Bounded by an iteration cap; tool errors go back to the model as results; the same call repeated
back to back draws one warning and then stops the run; Ctrl-C stops cleanly. Every call gets a
unique id, and every message is written to the transcript as it happens.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from ..core import policy
from ..core.context import ToolContext
from ..core.errors import ExitClass, ToolError
from ..core.jsonin import parse_json
from ..core.logs import logger
from ..core.records import Record, field
from ..core.registry import HELD_RECORDS, MODEL_STEP, CallRecord, Registry
from ..core.toolsets import TOOLS_CHANGED
from .messages import (
    CUT_OFF,
    FILTERED,
    Finish,
    Message,
    ModelRequest,
    ModelResponse,
    OpaqueBlock,
    OpaqueEvent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    UsageEvent,
    escaped_surrogates,
    new_call_id,
    valid_unicode,
)
from .providers.base import Provider
from .toolbox import Toolbox
from .transcripts import ToolOutcome, Transcript

# The ctx.extras key a tool sets when its delivered result is the whole reply (core/replyport.py).
ENDS_TURN = "ends_turn"
log = logger("fermix.agent")

OK = "ok"
STATUSES = ("ok", "error", "max_iterations", "loop_detected", "interrupted")
# A text reply cut off by the output limit is continued this many times (reference: two continuation
# retries) before the run ends `reply_truncated`.
CONTINUATIONS = 2
# How long a run's end waits for state.db when another process holds its write lock (on top of
# SQLite's busy timeout per try), before the answer is given without its record.
FINISH_PATIENCE_SECONDS = 30.0
CONTINUE_PROMPT = (
    "Your reply was cut off by the output length limit. Continue exactly where it stopped, "
    "without repeating anything."
)
CUT_CALLS = (
    "the reply was cut off by the output length limit before its tool calls were complete; make the calls "
    "again with less in one reply (split long content, such as a big file_write, into several calls)"
)


def unfinished_outcome(call: ToolCall, name: str, *, running: bool, reason: str) -> ToolOutcome:
    """The answer stored for a call a stopped run did not finish: `interrupted` if it was running (what
    it did stands), else `cancelled` (it never ran)."""
    if running:
        return ToolOutcome(
            call,
            name,
            False,
            f"interrupted: {name} was stopped while it ran, because {reason}; what it did before that "
            "stands, so check before running it again",
            "interrupted",
        )
    return ToolOutcome(call, name, False, f"cancelled: not run because {reason}", "cancelled")


class LoopObserver(Protocol):
    """What a front end hears of a run (rendering only; it cannot change the run)."""

    def model_start(self, iteration: int) -> None: ...

    def text(self, delta: str) -> None: ...

    def model_end(self, response: ModelResponse) -> None: ...

    def tool_start(self, call: ToolCall, name: str, arguments: Any) -> None: ...

    def tool_end(self, outcome: ToolOutcome) -> None: ...


class SilentObserver:
    """Hears everything, shows nothing (`--json`, jobs, benchmarks)."""

    def model_start(self, iteration: int) -> None:
        pass

    def text(self, delta: str) -> None:
        pass

    def model_end(self, response: ModelResponse) -> None:
        pass

    def tool_start(self, call: ToolCall, name: str, arguments: Any) -> None:
        pass

    def tool_end(self, outcome: ToolOutcome) -> None:
        pass


class RepeatGuard:
    """Spots the same call (name and arguments) made back to back: warn once at `limit`, then stop."""

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        self.last: tuple[str, str] | None = None
        self.streak = 0
        self.warned = False

    def check(self, name: str, arguments: Any) -> str:
        """'ok', 'warn' (answer with a warning instead of running) or 'stop' (end the run)."""
        key = (name, json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str))
        self.streak = self.streak + 1 if key == self.last else 1
        self.last = key
        if self.streak < self.limit:
            return "ok"
        if not self.warned:
            self.warned = True
            return "warn"
        return "stop"


class RunResult(Record):
    run_id: str
    session_id: str
    status: str
    response: str
    iterations: int
    usage: Usage
    outcomes: list[ToolOutcome] = field(default_factory=list)
    error: ToolError | None = None
    # Why the run's end could not be recorded in state.db (the answer itself still stands).
    record_error: ToolError | None = None


def parse_arguments(raw: str) -> Any:
    """The model's arguments text as strict JSON (empty means no arguments); the raw text when it is not
    (the call is then refused by the registry's own parse, with the reason: duplicate keys, NaN, …)."""
    if not raw.strip():
        return {}
    try:
        return parse_json(raw)
    except ToolError:
        return raw


class AgentLoop:
    """One conversation's loop: the provider, the tools, the context, and the history so far."""

    def __init__(
        self,
        *,
        provider: Provider,
        provider_name: str,
        model: str,
        ctx: ToolContext,
        registry: Registry,
        toolbox: Toolbox,
        system: str,
        transcript: Transcript,
        session_id: str,
        history: list[Message],
        max_iterations: int,
        cap_source: str,
        repeat_limit: int = 3,
        observer: LoopObserver | None = None,
        context_window: int | None = None,
        reply_reserve: int | None = None,
        first_tool_choice: str | None = None,
        reasoning_effort: str | None = None,
        parent: tuple[str, str] | None = None,
        retool: Callable[[], tuple[Toolbox, frozenset[str]]] | None = None,
    ) -> None:
        self.provider = provider
        # The run's tools listed again, and what it may dispatch, once a tool says they changed.
        self.retool = retool
        self.parent = parent  # (caller's session, label): a delegated run's conversation is linked
        self.provider_name = provider_name
        self.model = model
        self.ctx = ctx
        self.registry = registry
        self.toolbox = toolbox
        self.system = system
        self.transcript = transcript
        self.session_id = session_id
        self.history = history
        self.max_iterations = max_iterations
        self.cap_source = cap_source
        self.repeat_limit = repeat_limit
        self.observer: LoopObserver = observer or SilentObserver()
        self._schemas = toolbox.schemas(ctx)
        self.context_window = context_window
        self.reply_reserve = reply_reserve
        self.first_tool_choice = first_tool_choice
        self.reasoning_effort = reasoning_effort
        self.run_id = ""

    # ----- one run -------------------------------------------------------------------------------

    def run(self, prompt: str) -> RunResult:
        from .transcripts import new_run_id

        guard = RepeatGuard(self.repeat_limit)
        state = _TurnState()
        run_id = new_run_id()
        result = RunResult(run_id, self.session_id, OK, "", 0, Usage())
        # Storing the run's row is inside the try: a Ctrl-C or SIGTERM that lands as its commit returns,
        # or while the tool schemas are built, must still end the run `interrupted`, not leave it running
        # (nor escape the loop). A failure to store it at all (state.db busy) is raised as it is.
        started = False
        try:
            self.transcript.start_run(
                self.session_id,
                prompt=prompt,
                provider=self.provider_name,
                model=self.model,
                toolset=self.toolbox.toolset,
                origin=self.ctx.origin,
                trust=self.ctx.trust,
                parent=self.parent,
                run_id=run_id,
            )
            started = True
            self.run_id = run_id
            self._schemas = self.toolbox.schemas(self.ctx)  # what a tool shows can follow live state
            self.history.append(Message("user", prompt))
            self._run(result, guard, state)
        except KeyboardInterrupt:
            result.status = "interrupted"
            result.error = ToolError("interrupted", "stopped by Ctrl-C or a stop signal (SIGTERM)", {})
            self._settle(result, state, "the run was interrupted (Ctrl-C or SIGTERM)")
        except ToolError as e:
            if not started:
                raise
            result.status = "error"
            result.error = e
            self._settle(result, state, f"the run failed ({e.code})")
        except Exception as e:  # a bug: the run ends as an internal error, the traceback goes to the log
            if not started:
                raise
            from ..core.errors import environment_error

            result.status = "error"
            result.error = environment_error(e)  # the disk or state.db (full, busy), not a bug
            if result.error is None:
                log.exception("internal error in the model loop")
                result.error = ToolError(
                    "internal_error",
                    f"the model loop failed unexpectedly ({type(e).__name__}); details are in the fermix log",
                    {},
                    exit_class=ExitClass.INTERNAL,
                )
            else:
                log.error("run %s failed: %s", run_id, result.error)
            self._settle(result, state, f"the run failed ({result.error.code})")
        finally:
            if started or result.status == "interrupted":  # stopped as its row went in: ended if it did
                self._end(result, state)
        return result

    def _end(self, result: RunResult, state: _TurnState) -> None:
        """Store what the run left unstored and how it ended; a final reply not stored yet (the run
        ended with it) is stored with the run's end."""
        last = None
        if state.response is not None:
            last = (self.session_id, state.response, state.records)
            state.response, state.records = None, []
        self._store_held(state)
        self._record_end(result, last)

    def _record_end(self, result: RunResult, last: Any) -> None:
        """Record how the run ended, waiting out a busy state.db; a record that still cannot be
        written is noted on the result (`record_error`), never a reason to lose the answer."""
        from ..core.errors import environment_error
        from ..core.state import patiently

        def finish() -> None:
            self.transcript.finish_run(
                result.run_id,
                status=result.status,
                response=result.response,
                iterations=result.iterations,
                usage=result.usage,
                error=result.error.to_dict() if result.error else None,
                last_turn=last,
            )

        try:
            patiently(
                finish, patience=FINISH_PATIENCE_SECONDS, what=f"run {result.run_id}: recording its end"
            )
        except Exception as e:
            err = e if isinstance(e, ToolError) else environment_error(e)
            if err is None:
                raise
            log.error("run %s: its end (%s) could not be recorded: %s", result.run_id, result.status, err)
            result.record_error = err

    def _run(self, result: RunResult, guard: RepeatGuard, state: _TurnState) -> None:
        while True:
            self._refresh_tools()
            result.iterations += 1
            try:
                self.observer.model_start(result.iterations)
            except BaseException:  # stopped before the call (a delegated run's time limit): not made
                result.iterations -= 1
                raise
            response = self._call_model_fitted(state, first=result.iterations == 1)
            result.usage.add(response.usage)
            state.continuations = 0
            response = self._continued(response, result, state)
            self._record_assistant(response, state)
            result.response = response.text
            short = self._ended_short(response, state)
            if short is not None and (not response.tool_calls or short.code == "content_filtered"):
                self._finish_turn(result, state, stop_reason=f"the reply was stopped ({short.code})")
                result.status, result.error = "error", short
                return
            if not response.tool_calls:
                if not response.text.strip():
                    raise ToolError(
                        "provider_error", "the model returned an empty reply", {"model": self.model}
                    )
                return
            if result.iterations >= self.max_iterations:
                n = self.max_iterations
                stop = ToolError(
                    "max_iterations",
                    f"stopped after {n} model calls without a final answer: the iteration cap of this run "
                    f"is {n} ({self.cap_source})",
                    {"max_iterations": n},
                )
                self._finish_turn(result, state, stop_reason=f"the iteration cap ({n}) was reached")
                result.status, result.error = "max_iterations", stop
                return
            if short is not None:  # cut off: the calls' arguments may be incomplete, so none runs
                self._finish_turn(result, state, stop_reason=CUT_CALLS)
                continue
            stop_error = self._run_tools(result, guard, state)
            if stop_error is not None:
                result.status, result.error = "loop_detected", stop_error
                return
            if state.answered and not response.text.strip():
                # Every call delivered an answer to the person by itself (a reaction) and the model
                # said nothing else: the turn is over without another model call.
                return

    def _continued(self, response: ModelResponse, result: RunResult, state: _TurnState) -> ModelResponse:
        """A text reply cut off by the output limit, continued (up to CONTINUATIONS more calls) and
        joined into one reply; the request that asks for more is not kept in the history."""
        for _ in range(CONTINUATIONS):
            if response.finish_reason not in CUT_OFF or response.tool_calls or not response.text.strip():
                break
            log.info(
                "%s: the reply was cut off (%s); asking for the rest", self.model, response.finish_reason
            )
            self.history += [
                Message("assistant", response.text, opaque_blocks=list(response.opaque_blocks)),
                Message("user", CONTINUE_PROMPT),
            ]
            self.observer.model_start(result.iterations)
            try:
                more = self._call_model_fitted(state, first=False)
            except BaseException:
                state.partial = [response.text, *(state.partial or [])]  # a failure keeps all the text
                raise
            finally:
                del self.history[-2:]
            result.usage.add(more.usage)
            usage = Usage(response.usage.input_tokens, response.usage.output_tokens)
            usage.add(more.usage)
            # One reply, one set of thinking blocks: those that led to its calls, else those that opened it.
            blocks = more.opaque_blocks if more.tool_calls else response.opaque_blocks
            response = ModelResponse(
                response.text + more.text, more.tool_calls, usage, more.finish_reason, list(blocks)
            )
            state.continuations += 1
        return response

    def _ended_short(self, response: ModelResponse, state: _TurnState) -> ToolError | None:
        """Why a reply did not end by itself (cut off, filtered), as the run's error; None when it did."""
        reason = response.finish_reason
        details: dict[str, Any] = {"finish_reason": reason, "model": self.model}
        if reason in CUT_OFF:
            details["continuations"] = state.continuations
            tried = f" after {state.continuations} continuation(s)" if state.continuations else ""
            return ToolError(
                "reply_truncated",
                f"the model's reply was cut off by its output limit (finish reason {reason!r}){tried}; "
                "the text so far is kept. Raise the limit: fermix_core.providers."
                f"{self.provider_name}.max_tokens (or the server's own output or context size), or ask "
                "for a shorter answer",
                details,
            )
        if reason in FILTERED:
            return ToolError(
                "content_filtered",
                f"the provider stopped the model's reply (finish reason {reason!r}): its content filter "
                "or safety policy refused it; the text so far is kept. Rephrase the request",
                details,
            )
        return None

    def _call_model_fitted(self, state: _TurnState, *, first: bool) -> ModelResponse:
        """A model call; when a server refuses it for naming its context size, fitted to that and retried."""
        from ..core.cancel import interrupt_requested
        from .budget import context_size_in

        if interrupt_requested():  # a Ctrl-C whose KeyboardInterrupt a finalizer swallowed
            raise KeyboardInterrupt
        try:
            return self._call_model(state, first=first)
        except ToolError as e:
            window = context_size_in(e.message) if e.code == "provider_error" else None
            known = self.context_window
            if window is None or state.partial or (known is not None and window >= known):
                raise
            log.warning("%s: the model's context is %s tokens; fitting requests to it", self.model, window)
            self.context_window = window
            return self._call_model(state, first=first)

    def _call_model(self, state: _TurnState, *, first: bool = False) -> ModelResponse:
        # Providers only read the history; no copy per turn, so long runs stay linear.
        # A forced tool choice applies to a run's first call only, so the model can then answer.
        choice = self.first_tool_choice if first and self._schemas else None
        request = ModelRequest(
            self.model, self.system, self.history, self._schemas, choice, self.reasoning_effort
        )
        if self.context_window is not None:
            request = self._fit(request)
        response = ModelResponse()
        state.partial = []
        wire_ids: set[str] = set()
        for event in self.provider.stream(request):
            # What a model sends is made valid Unicode as it arrives (see valid_unicode).
            if isinstance(event, TextDelta):
                if event.text:
                    text = valid_unicode(event.text)
                    state.partial.append(text)
                    self.observer.text(text)
            elif isinstance(event, ToolCallEvent):
                wire = valid_unicode(event.wire_id) if event.wire_id else new_call_id()
                if wire in wire_ids:
                    wire = new_call_id()
                wire_ids.add(wire)
                response.tool_calls.append(
                    ToolCall(valid_unicode(event.name), escaped_surrogates(event.arguments), wire)
                )
            elif isinstance(event, OpaqueEvent):
                # Kept as it came, never shown nor read: it goes back to this model with the turn.
                block = OpaqueBlock(self.provider_name, self.model, event.data, len(response.tool_calls))
                response.opaque_blocks.append(block)
            elif isinstance(event, UsageEvent):
                response.usage.add(event.usage)
            elif isinstance(event, Finish):
                response.finish_reason = event.reason
        response.text = "".join(state.partial)
        state.partial = None
        self.observer.model_end(response)
        return response

    def _fit(self, request: ModelRequest) -> ModelRequest:
        from .budget import fit_request

        bridges = self.toolbox.bridge_schemas()
        fitted = fit_request(request, self.context_window or 0, self.reply_reserve, bridges)
        # tool_search finds what was left off the list (the note in the system prompt says to use it).
        self.ctx.extras["unlisted_tools"] = frozenset(fitted.tools_dropped)
        if fitted.tools_dropped or fitted.messages_dropped or fitted.results_shortened:
            log.info(
                "fitted to a %s-token context: about %s tokens, %s tools unlisted, %s messages left out, "
                "%s results shortened",
                self.context_window,
                fitted.estimate,
                len(fitted.tools_dropped),
                fitted.messages_dropped,
                fitted.results_shortened,
            )
        return fitted.request

    def _record_assistant(self, response: ModelResponse, state: _TurnState) -> None:
        """Keep the reply; a reply with tool calls is stored together with their results (one write),
        a final reply (no calls) together with the run's end (`run`), or by `_settle` if the run fails."""
        self.history.append(
            Message(
                "assistant",
                response.text,
                list(response.tool_calls),
                opaque_blocks=list(response.opaque_blocks),
            )
        )
        state.pending = list(response.tool_calls)
        state.done = []
        state.response = response

    # ----- tools ---------------------------------------------------------------------------------

    def _run_tools(self, result: RunResult, guard: RepeatGuard, state: _TurnState) -> ToolError | None:
        stop: ToolError | None = None
        calls = list(state.pending)
        answering = 0
        step = (self.run_id, result.iterations)  # what a tool sees of the step its call belongs to
        for call in calls:
            name, arguments = self._target(call)
            verdict = guard.check(name, arguments)
            if verdict == "stop":
                stop = ToolError(
                    "loop_detected",
                    f"stopped: {name} was called again with the same arguments after a warning",
                    {"tool": name},
                )
                break
            self.observer.tool_start(call, name, arguments)
            if verdict == "warn":
                outcome = ToolOutcome(
                    call,
                    name,
                    False,
                    f"repeated_call: {name} was called {self.repeat_limit} times in a row with the same "
                    "arguments; it was not run again and the result would not change. Use the earlier "
                    "result, change the arguments, or give your answer. Repeating it again ends the run.",
                    "repeated_call",
                )
            else:
                # The turn's last call is stored with the turn (its result, the reply that asked for it)
                # in one transaction; earlier ones are stored as they end (a later call can be slow).
                held = call is calls[-1]
                if held:
                    self.ctx.extras[HELD_RECORDS] = state.records
                state.running = call  # a stop now finds it started, not waiting (kept if one comes)
                # Set for each call: a nested run (a subagent) in the same context sets its own steps.
                self.ctx.extras[MODEL_STEP] = step
                try:
                    outcome = self._dispatch(call, name, arguments)
                finally:
                    self.ctx.extras.pop(MODEL_STEP, None)
                    if held:
                        self.ctx.extras.pop(HELD_RECORDS, None)
                state.running = None
                # A tool whose delivered result is itself the reply (react) says so in ctx.extras.
                if self.ctx.extras.pop(ENDS_TURN, False) and outcome.ok:
                    answering += 1
            self._answer(state, outcome)
            result.outcomes.append(outcome)
            self.observer.tool_end(outcome)
        state.answered = bool(calls) and answering == len(calls)
        if stop is not None:
            self._finish_turn(result, state, stop_reason="a repeated call ended the run")
        else:
            self._flush(state)
        return stop

    def _refresh_tools(self) -> None:
        """After a tool changed what the toolsets list (skill_reload), the tools as they are now: offered
        to the model from its next call, and dispatchable, within the narrowing the run started with."""
        if not self.ctx.extras.pop(TOOLS_CHANGED, False) or self.retool is None:
            return
        try:
            toolbox, allowed = self.retool()
        except ToolError as e:  # (a `--tools` name gone): the run keeps the tools it had
            log.warning("the run's tools could not be listed again (%s); keeping them", e.message)
            return
        self.toolbox = toolbox
        self.ctx.allowed_tools = allowed
        self.ctx.toolsets = toolbox.tools
        self._schemas = toolbox.schemas(self.ctx)

    def _target(self, call: ToolCall) -> tuple[str, Any]:
        """The tool really called, as the run's toolset routes it (policy and logs see the target)."""
        return self.toolbox.tools.route(call.name, parse_arguments(call.arguments), self.ctx)

    def _dispatch(self, call: ToolCall, name: str, arguments: Any) -> ToolOutcome:
        self.ctx.extras["call_id"] = call.call_id
        self.ctx.extras.pop(ENDS_TURN, None)
        raw = arguments if isinstance(arguments, dict) else call.arguments
        ok, text, data = self.registry.invoke_for_model(name, raw, self.ctx)
        text = valid_unicode(text)  # a tool's output can hold a name that is not UTF-8
        if ok:
            images = self.registry.resolve(name, self.ctx).result_images(data)
            return ToolOutcome(call, name, True, text, None, images)
        code = data.get("code", "tool_error") if isinstance(data, dict) else "tool_error"
        if code in ("unknown_tool", "policy_denied") and not self._may_see(name):
            # Tools the caller may not see get the same answer as tools that do not exist.
            text = f"unknown_tool: Unknown capability: {name}"
        return ToolOutcome(call, name, False, text, code)

    def _may_see(self, name: str) -> bool:
        try:
            spec = self.toolbox.tools.get(name, self.ctx)
        except ToolError:
            return False
        return spec is not None and policy.can_see(spec, self.ctx)

    def _answer(self, state: _TurnState, outcome: ToolOutcome) -> None:
        self.history.append(
            Message(
                "tool",
                outcome.output,
                tool_call_id=outcome.call.wire_id,
                tool_name=outcome.name,
                is_error=not outcome.ok,
                images=list(outcome.images),
            )
        )
        state.pending.remove(outcome.call)
        state.done.append(outcome)

    def _flush(self, state: _TurnState) -> None:
        """Store the turn: the model's reply and the answers to its calls, in one transaction."""
        if state.response is not None:
            from ..core.state import patiently

            response, done, records = state.response, state.done, state.records
            patiently(  # one transaction, rolled back whole when state.db is busy: safe to try again
                lambda: self.transcript.add_turn(self.session_id, self.run_id, response, done, records),
                patience=FINISH_PATIENCE_SECONDS,
                what=f"run {self.run_id}: recording a turn",
            )
            state.records = []
        state.response = None
        state.done = []

    def _finish_turn(self, result: RunResult, state: _TurnState, *, stop_reason: str) -> None:
        """Answer the calls that will not run, so the transcript stays a valid conversation."""
        for call in list(state.pending):
            name = self._target(call)[0]
            # A call running when the run stopped did not "not run".
            outcome = unfinished_outcome(call, name, running=call is state.running, reason=stop_reason)
            self._answer(state, outcome)
            result.outcomes.append(outcome)
        self._flush(state)

    def _store_held(self, state: _TurnState) -> None:
        """Tool_calls rows held for a turn that was not stored (its write failed): stored by themselves."""
        if not state.records:
            return
        try:
            self.transcript.add_call_records(state.records)
        except Exception:
            log.exception("could not record the last tool call of run %s", self.run_id)
        state.records = []

    def _settle(self, result: RunResult, state: _TurnState, reason: str) -> None:
        """After an abnormal stop: keep streamed text, answer unanswered calls, store the turn."""
        try:
            if state.partial:
                partial = ModelResponse(text="".join(state.partial))
                result.response = partial.text
                self.history.append(Message("assistant", partial.text))
                state.response, state.pending, state.done = partial, [], []
            state.partial = None
            self._finish_turn(result, state, stop_reason=reason)
        except Exception:  # the run already failed; keep its first error
            log.exception("could not store the end of run %s", self.run_id)


class _TurnState(Record):
    """What is in flight: streamed text so far, calls not yet answered, answers not yet stored."""

    partial: list[str] | None = None
    response: ModelResponse | None = None
    pending: list[ToolCall] = field(default_factory=list)
    done: list[ToolOutcome] = field(default_factory=list)
    answered: bool = False  # the last tool calls answered the person by themselves (see ENDS_TURN)
    records: list[CallRecord] = field(default_factory=list)  # tool_calls rows held for the turn's write
    running: ToolCall | None = None  # the call being run right now
    continuations: int = 0  # continuation calls made for the reply in hand (see AgentLoop._continued)
