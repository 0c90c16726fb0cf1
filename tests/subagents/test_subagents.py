"""subagents: concurrent workers, caps, reduced policy, no nesting, timeouts, budgets, routing."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.agent.delegate import Delegation
from fermix_cli.agent.subagents.fanout import clip_utf8, fan_out
from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env, processes_with


def script(world: Env, routes: list[dict[str, Any]]) -> Path:
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    path = world.fermix_home / "workers.json"
    path.write_text(json.dumps({"by_prompt": routes}))
    (world.fermix_home / "config.toml").write_text(
        f'[fermix_core.agent]\nprovider = "mock"\n\n[fermix_core.providers.mock]\nscript = "{path}"\n'
    )
    return path


def run(world: Env, args: dict[str, Any], **kw: Any) -> Any:
    ctx = world.context(cwd=str(world.project), **kw)
    try:
        return default_registry().invoke("subagents", args, ctx)
    finally:
        ctx.close()


def calls(world: Env) -> list[tuple[str, str, int, str | None]]:
    ctx = world.context()
    try:
        rows = ctx.state.query("SELECT session_id, tool, ok, error_code FROM tool_calls ORDER BY started_at")
    finally:
        ctx.close()
    return [(r["session_id"], r["tool"], r["ok"], r["error_code"]) for r in rows]


def test_workers_run_concurrently_in_input_order_with_counts(world: Env) -> None:
    script(
        world,
        [
            {"contains": "task slow1", "responses": [{"delay": 0.4, "text": "slow one"}]},
            {"contains": "task slow2", "responses": [{"delay": 0.4, "text": "slow two"}]},
            {
                "contains": "task fail",
                "responses": [{"error": {"code": "provider_error", "message": "boom"}}],
            },
            {
                "contains": "task tool",
                "responses": [
                    {"tool_calls": [{"name": "glob_search", "arguments": {"pattern": "*.txt"}}]},
                    {"text": "found files"},
                ],
            },
        ],
    )
    (world.project / "a.txt").write_text("x")
    t0 = time.monotonic()
    out = run(
        world,
        {
            "tasks": [
                {"id": "s1", "task": "task slow1"},
                {"id": "f", "task": "task fail"},
                {"id": "s2", "task": "task slow2", "context": "ctx"},
                {"id": "t", "task": "task tool"},
            ],
            "shared_context": "all share this",
            "result_format": "concise",
        },
    )
    elapsed = time.monotonic() - t0
    assert [r["id"] for r in out["results"]] == ["s1", "f", "s2", "t"]
    assert [r["status"] for r in out["results"]] == ["completed", "failed", "completed", "completed"]
    assert out["results"][1]["error"]["code"] == "provider_error"
    assert out["results"][0]["output"] == "slow one" and out["results"][3]["output"] == "found files"
    assert out["results"][0]["agent_name"] == "subagent:s1"
    assert out["summary"] == {"requested": 4, "completed": 3, "failed": 1, "timed_out": 0, "canceled": 0}
    assert elapsed < 0.8 + 2.0  # the two 0.4 s workers overlapped (generous for a loaded machine)
    ctx = world.context()
    try:
        kids = ctx.state.query("SELECT id, label, parent_id FROM conversations WHERE parent_id IS NOT NULL")
        prompt = ctx.state.query(
            "SELECT prompt FROM runs r JOIN conversations c ON c.id = r.conversation_id"
            " WHERE c.label = 'subagent:s2'"
        )[0]["prompt"]
    finally:
        ctx.close()
    assert {k["label"] for k in kids} == {"subagent:s1", "subagent:f", "subagent:s2", "subagent:t"}
    assert {k["parent_id"] for k in kids} == {"default"}
    assert prompt.startswith("Shared context:\nall share this\n\nTask:\ntask slow2\n\nTask context:\nctx")


def test_worker_cannot_write_directly_or_through_tool_call_or_nest(world: Env) -> None:
    script(
        world,
        [
            {
                "contains": "task w",
                "responses": [
                    {"tool_calls": [{"name": "file_write", "arguments": {"path": "w.txt", "content": "x"}}]},
                    {
                        "tool_calls": [
                            {
                                "name": "tool_call",
                                "arguments": {
                                    "name": "file_write",
                                    "arguments": {"path": "w.txt", "content": "x"},
                                },
                            }
                        ]
                    },
                    {
                        "tool_calls": [
                            {"name": "subagents", "arguments": {"tasks": [{"id": "x", "task": "task w"}]}}
                        ]
                    },
                    {"text": "gave up"},
                ],
            }
        ],
    )
    out = run(world, {"tasks": [{"id": "w", "task": "task w"}]})
    assert out["results"][0]["status"] == "completed"
    assert not (world.project / "w.txt").exists()
    worker = [c for c in calls(world) if c[0] != "default"]
    assert [c[1:] for c in worker] == [
        ("file_write", 0, "policy_denied"),
        ("file_write", 0, "policy_denied"),
        ("subagents", 0, "policy_denied"),
    ]


def test_subagents_refused_inside_a_worker(world: Env) -> None:
    with pytest.raises(ToolError) as e:
        run(world, {"tasks": [{"id": "a", "task": "x"}]}, depth=1, origin="subagent")
    assert e.value.code == "policy_denied" and "within a subagent (depth 1)" in e.value.message


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"tasks": []}, "invalid_input"),
        ({"tasks": [{"id": str(i), "task": "t"} for i in range(11)]}, "invalid_input"),
        ({"tasks": [{"id": "a", "task": "t"}, {"id": "a", "task": "u"}]}, "invalid_input"),
        ({"tasks": [{"id": "a", "task": "t"}], "max_concurrency": 9}, "invalid_input"),
        ({"tasks": [{"id": "a", "task": "t"}], "timeout_seconds": 901}, "invalid_input"),
        ({"tasks": [{"id": "a", "task": "t"}], "timeout_seconds": 4}, "invalid_input"),
        ({"tasks": [{"id": "a", "task": "t"}], "provider": "nope"}, "invalid_provider"),
        ({"tasks": [{"id": "a", "task": "t"}], "reasoning_effort": "huge"}, "invalid_input"),
    ],
)
def test_caps_and_validation_fail_before_fan_out(world: Env, args: dict[str, Any], code: str) -> None:
    script(world, [{"contains": "t", "responses": [{"text": "x"}]}])
    with pytest.raises(ToolError) as e:
        run(world, args)
    assert e.value.code == code
    assert calls(world) == []


def test_timeout_reports_partial_output_and_others_finish(world: Env) -> None:
    script(
        world,
        [
            {
                "contains": "task stuck",
                "responses": [{"text": "partial findings"}, {"delay": 8, "text": "late"}],
            },
            {"contains": "task quick", "responses": [{"text": "quick done"}]},
        ],
    )
    # The first reply ends with no tool call, so make it call a tool to reach the slow second reply.
    path = world.fermix_home / "workers.json"
    data = json.loads(path.read_text())
    data["by_prompt"][0]["responses"][0]["tool_calls"] = [
        {"name": "glob_search", "arguments": {"pattern": "*"}}
    ]
    path.write_text(json.dumps(data))
    ctx = world.context(cwd=str(world.project))
    try:
        tasks = [
            (tid, Delegation(origin="subagent", label=f"subagent:{tid}", prompt=f"task {tid}"))
            for tid in ("stuck", "quick")
        ]
        t0 = time.monotonic()
        runs = fan_out(
            ctx, tasks, max_concurrency=1, timeout=2.0
        )  # the first turn fits even on a busy machine
        elapsed = time.monotonic() - t0
    finally:
        ctx.close()
    assert [r.status for r in runs] == ["timed_out", "completed"]
    assert runs[0].output == "partial findings" and runs[0].error["code"] == "timeout"
    assert runs[1].output == "quick done"  # started once the stuck worker was given up on
    assert elapsed < 6.0  # not the 8 s the stuck worker's model would have taken


def test_result_budget_split_and_cut_at_utf8_boundaries(world: Env) -> None:
    big = "é" * 20_000  # 40 000 bytes
    script(
        world,
        [
            {"contains": "task big", "responses": [{"text": big}]},
            {"contains": "task small", "responses": [{"text": "small"}]},
        ],
    )
    out = run(world, {"tasks": [{"id": "big", "task": "task big"}, {"id": "s", "task": "task small"}]})
    big_out = out["results"][0]
    assert big_out["truncated"] is True and len(big_out["output"].encode()) <= 30_000
    assert big_out["output"] == "é" * 15_000
    assert out["results"][1] == {**out["results"][1], "output": "small", "truncated": False}


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 7])
def test_clip_utf8_never_splits_a_character(limit: int) -> None:
    text = "aé€😀"
    cut, truncated = clip_utf8(text, limit)
    assert len(cut.encode()) <= limit and text.startswith(cut)
    assert truncated == (len(text.encode()) > limit)


def test_routing_defaults_and_per_call_override(world: Env) -> None:
    path = script(world, [{"contains": "task", "responses": [{"text": "ok"}]}])
    with (world.fermix_home / "config.toml").open("a") as f:
        f.write('\n[fermix_core.routing]\nsubagent_provider = "echo"\n')
    out = run(world, {"tasks": [{"id": "a", "task": "task a"}]})
    assert json.loads(out["results"][0]["output"])["model"] == "echo"  # the echo provider answered
    out = run(world, {"tasks": [{"id": "a", "task": "task a"}], "provider": "mock", "model": str(path)})
    assert out["results"][0]["output"] == "ok"


def test_worker_policy_is_callers_minus_read_write(world: Env) -> None:
    script(world, [{"contains": "task", "responses": [{"text": "x"}]}])
    from fermix_cli.agent.subagents.tools import WITHHELD_CLASSES
    from fermix_cli.core.policy import effective_classes

    ctx = world.context(policy_ceiling=frozenset({"read_only", "read_write", "external_api"}))
    try:
        assert effective_classes(ctx) - WITHHELD_CLASSES == frozenset({"read_only", "external_api"})
    finally:
        ctx.close()
    with pytest.raises(ToolError) as e:  # external_api: a guest may not fan out at all
        run(world, {"tasks": [{"id": "a", "task": "task"}]}, trust="guest")
    assert e.value.code == "policy_denied"


def test_ask_fans_out_and_logs_show_the_tree(world: Env) -> None:
    script(
        world,
        [
            {
                "contains": "main job",
                "responses": [
                    {
                        "tool_calls": [
                            {"name": "subagents", "arguments": {"tasks": [{"id": "a", "task": "task a"}]}}
                        ]
                    },
                    {"text": "synthesized"},
                ],
            },
            {"contains": "task a", "responses": [{"text": "worker answer"}]},
        ],
    )
    r = world.run("ask", "--json", "main job")
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["response"] == "synthesized"
    parent = out["session_id"]
    r = world.run("logs", "--sessions")
    lines = r.stdout.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith(parent))
    assert lines[top + 1].startswith(f"  └ {parent}:subagent-a-") and "[subagent:a]" in lines[top + 1]
    sessions = world.run("logs", "--sessions", "--json").json()
    assert any(s["parent_id"] == parent and s["label"] == "subagent:a" for s in sessions)


def test_a_worker_whose_model_sends_invalid_unicode_sinks_no_other(world: Env) -> None:
    """A lone surrogate in one worker's reply (a `\\ud800` escape in the model's JSON) used to make
    the whole fan-out an internal error, the other workers' results lost."""
    script(
        world,
        [
            {"contains": "task odd", "responses": [{"text": "x\ud800y"}]},
            {"contains": "task fine", "responses": [{"text": "fine"}]},
        ],
    )
    out = run(world, {"tasks": [{"id": "odd", "task": "task odd"}, {"id": "ok", "task": "task fine"}]})
    assert [(r["status"], r["output"]) for r in out["results"]] == [
        ("completed", "x\ufffdy"),
        ("completed", "fine"),
    ]


def test_clip_utf8_takes_text_that_is_not_valid_unicode() -> None:
    assert clip_utf8("ab\udc80cd", 3) == ("ab", True)
    assert clip_utf8("ab\udc80", 100) == ("ab\ufffd", False)


def _shell_then_answer(world: Env, task: str, command: str) -> None:
    """A worker whose model, asked `task`, first runs `command` in the shell."""
    call = {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}
    script(world, [{"contains": task, "responses": [call, {"text": "never"}]}])


def test_a_timed_out_worker_s_command_is_stopped_with_it(world: Env) -> None:
    """A worker given up at its timeout while its shell command runs: the command's process group is
    killed then, not left to run on (and write) after the call has answered."""
    marker = "sleep 7.4321"
    _shell_then_answer(world, "task slow", f"{marker}; echo late > late.txt")
    ctx = world.context(cwd=str(world.project))
    try:
        task = Delegation(origin="subagent", label="subagent:slow", prompt="task slow")
        t0 = time.monotonic()
        (ran,) = fan_out(ctx, [("slow", task)], max_concurrency=1, timeout=1.5)
    finally:
        ctx.close()
    assert ran.status == "timed_out" and time.monotonic() - t0 < 5
    # Its run is ended now, not left "running" should the process exit before the worker's thread does.
    ctx = world.context()
    try:
        (row,) = ctx.state.query(
            "SELECT status, error_json FROM runs WHERE conversation_id = ?", (ran.session_id,)
        )
    finally:
        ctx.close()
    assert row["status"] == "error" and json.loads(row["error_json"])["code"] == "timeout"
    deadline = time.monotonic() + 3
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []
    assert not (world.project / "late.txt").exists()


def test_a_cancelled_caller_cancels_its_workers_tokens() -> None:
    from fermix_cli.core.cancel import CancelToken

    parent = CancelToken()
    first, second = parent.child(), parent.child()
    second.cancel("the worker timed out")
    assert not parent.cancelled and not first.cancelled
    parent.cancel("the MCP client cancelled the call")
    assert first.cancelled and first.reason == "the MCP client cancelled the call"
    assert second.reason == "the worker timed out"
    late = parent.child()
    assert late.cancelled and late.reason == "the MCP client cancelled the call"


def test_workers_are_not_offered_request_directory_access(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 000: the tool is offered only on attended, top-level owner turns, never to subagents."""
    from fermix_cli.agent.providers.mock import MockProvider

    offered: list[set[str]] = []
    stream = MockProvider.stream

    def spy(self: MockProvider, request: Any) -> Any:
        offered.append({t.name for t in request.tools})
        return stream(self, request)

    monkeypatch.setattr(MockProvider, "stream", spy)
    script(world, [{"contains": "task", "responses": [{"text": "x"}]}])
    out = run(world, {"tasks": [{"id": "a", "task": "task"}]}, origin="interactive")
    assert out["results"][0]["status"] == "completed"
    (worker,) = offered
    assert "glob_search" in worker and "request_directory_access" not in worker


def _swallow(handler: Any) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        handler(signal.SIGINT, None)


@pytest.mark.parametrize("swallowed", [False, True], ids=["delivered", "swallowed"])
def test_ctrl_c_in_the_caller_stops_its_workers(world: Env, swallowed: bool) -> None:
    """Ctrl-C while a fan-out waits: the workers are cancelled with it (a worker whose model answers
    later with a shell call does not run it) and their runs end `interrupted`, not `ok` or `running`."""
    import os
    import threading

    script(
        world,
        [
            {
                "contains": "task late",
                "responses": [
                    {
                        "delay": 1.0,
                        "tool_calls": [{"name": "shell", "arguments": {"command": "echo ran > ran.txt"}}],
                    },
                    {"text": "done"},
                ],
            }
        ],
    )
    from fermix_cli.core.cancel import install_interrupt_flag

    ctx = world.context(cwd=str(world.project))
    undo = install_interrupt_flag()  # as the commands that run models install it
    if swallowed:  # the KeyboardInterrupt lost, as in a finalizer the garbage collector ran at that moment
        timer = threading.Timer(0.3, _swallow, (signal.getsignal(signal.SIGINT),))
    else:
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        task = Delegation(origin="subagent", label="subagent:late", prompt="task late")
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            fan_out(ctx, [("late", task)], max_concurrency=1, timeout=30)
        assert time.monotonic() - started < 0.9  # before the model's reply at 1 s
        (row,) = ctx.state.query("SELECT status FROM runs WHERE conversation_id LIKE '%subagent-late%'")
        assert row["status"] == "interrupted"
        time.sleep(1.5)  # past the model's reply: the worker stops at its next step
    finally:
        timer.cancel()
        undo()
        ctx.close()
    assert not (world.project / "ran.txt").exists()
    ctx = world.context()
    try:
        (row,) = ctx.state.query("SELECT status FROM runs WHERE conversation_id LIKE '%subagent-late%'")
    finally:
        ctx.close()
    assert row["status"] == "interrupted"


def test_a_delegated_run_s_time_limit_stops_its_tool_in_flight(world: Env) -> None:
    """A skill run's `timeout_seconds` (any delegated run with a time limit) stops a shell command that
    is still running at the limit, not only at the loop's next step; the run is `timed_out`."""
    from fermix_cli.agent.delegate import run_delegated

    marker = "sleep 9.8765"
    _shell_then_answer(world, "task limited", f"{marker}; echo late > late.txt")
    ctx = world.context(cwd=str(world.project))
    try:
        task = Delegation(origin="skill", label="skill:limited", prompt="task limited", timeout_seconds=1.0)
        t0 = time.monotonic()
        ran = run_delegated(ctx, task)
    finally:
        ctx.close()
    assert ran.status == "timed_out" and ran.error is not None and ran.error["code"] == "timeout"
    assert time.monotonic() - t0 < 6
    assert processes_with(marker) == [] and not (world.project / "late.txt").exists()


def test_a_routed_model_slug_names_its_provider_as_a_per_call_one_does(world: Env) -> None:
    """`[fermix_core.routing] subagent_model` with no provider: the provider is inferred from the slug
    (seed 000), as for a `model` given per call, not the main agent's (which would get a Claude slug)."""
    from fermix_cli.agent.subagents.tools import SubagentsParams, worker_model

    script(world, [{"contains": "task", "responses": [{"text": "x"}]}])
    with (world.fermix_home / "config.toml").open("a") as f:
        f.write('\n[fermix_core.routing]\nsubagent_model = "claude-sonnet-4-5"\n')
    routed = SubagentsParams.model_validate({"tasks": [{"id": "a", "task": "t"}]})
    per_call = SubagentsParams.model_validate(
        {"tasks": [{"id": "a", "task": "t"}], "model": "claude-sonnet-4-5"}
    )
    ctx = world.context()
    try:
        outcomes = []
        for p in (routed, per_call):
            try:
                outcomes.append(worker_model(p, ctx)[:2])
            except ToolError as e:  # no key here: the error names the provider it would use
                outcomes.append((e.details.get("provider"), e.code))
    finally:
        ctx.close()
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "anthropic", outcomes


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"tasks": []}, "tasks must be a non-empty array."),
        ({"tasks": [{"id": f"t{i}", "task": "x"} for i in range(11)]}, "Too many tasks: 11 (max 10)."),
        ({"max_concurrency": 9}, "max_concurrency 9 is out of range (1..8)."),
        ({"timeout_seconds": 4}, "timeout_seconds 4 is out of range (5..900)."),
        ({"timeout_seconds": 5.5}, "timeout_seconds must be an integer."),
    ],
)
def test_limits_are_refused_in_the_reference_s_words(world: Env, args: dict[str, Any], message: str) -> None:
    full = {"tasks": [{"id": "a", "task": "x"}], **args}
    with pytest.raises(ToolError) as e:
        run(world, full)
    assert (e.value.code, e.value.message) == ("invalid_input", message)


def test_the_coding_toolset_fans_out_and_its_workers_use_coding_tools(world: Env) -> None:
    """Seed 002 lists `subagents` in the coding toolset: `ask --toolset coding` offers it, and its workers
    run in the coding toolset too (here `read`), without the tools that write (`write`)."""
    (world.project / "notes.txt").write_text("the answer is 42\n")
    script(
        world,
        [
            {
                "contains": "main job",
                "responses": [
                    {
                        "tool_calls": [
                            {"name": "subagents", "arguments": {"tasks": [{"id": "r", "task": "task read"}]}}
                        ]
                    },
                    {"text": "synthesized"},
                ],
            },
            {
                "contains": "task read",
                "responses": [
                    {"tool_calls": [{"name": "read", "arguments": {"paths": ["notes.txt"]}}]},
                    {"tool_calls": [{"name": "write", "arguments": {"path": "w.txt", "content": "x"}}]},
                    {"text": "read it"},
                ],
            },
        ],
    )
    r = world.run("ask", "--json", "--toolset", "coding", "main job")
    assert r.code == 0, r.stderr
    (call,) = r.json()["tool_calls"]
    assert call["name"] == "subagents" and call["ok"], call
    (result,) = json.loads(call["output"])["results"]
    assert (result["status"], result["output"]) == ("completed", "read it")
    worker = world.run("logs", "--json", "--session", result["session_id"]).json()[0]
    read, write = worker["tool_calls"]
    assert read["name"] == "read" and read["ok"] and "the answer is 42" in read["output"]
    assert (write["name"], write["ok"], write["error_code"]) == ("write", False, "policy_denied")
    assert not (world.project / "w.txt").exists()


def test_a_cancelled_caller_does_not_wait_for_a_worker_stuck_in_its_model_call(world: Env) -> None:
    """docs/skills.md: a cancelled caller (an MCP client's cancel) cancels its workers as a timeout does,
    and a model call in flight is not waited for. The worker not started yet never starts."""
    import threading

    from fermix_cli.core.cancel import CancelToken

    script(
        world,
        [
            {"contains": "task stuck", "responses": [{"delay": 8, "text": "late"}]},
            {"contains": "task next", "responses": [{"text": "next done"}]},
        ],
    )
    token = CancelToken()
    cancelled_at: list[float] = []

    def cancel_once_the_worker_waits_for_its_model() -> None:
        probe = world.context()
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not probe.state.query(
                "SELECT 1 FROM messages m JOIN conversations c ON c.id = m.conversation_id"
                " WHERE c.label = 'subagent:stuck'"
            ):
                time.sleep(0.05)
        finally:
            probe.close()
        time.sleep(0.3)
        cancelled_at.append(time.monotonic())
        token.cancel("the MCP client cancelled the call")

    timer = threading.Thread(target=cancel_once_the_worker_waits_for_its_model, daemon=True)
    timer.start()
    try:
        out = run(
            world,
            {
                "tasks": [{"id": "stuck", "task": "task stuck"}, {"id": "next", "task": "task next"}],
                "max_concurrency": 1,
                "timeout_seconds": 60,
            },
            cancel=token,
        )
    finally:
        timer.join()
    assert time.monotonic() - cancelled_at[0] < 3  # not the 8 s the stuck worker's model takes
    stuck, waiting = out["results"]
    assert [stuck["status"], waiting["status"]] == ["canceled", "canceled"]
    assert (
        stuck["error"]["code"] == "canceled"
        and "the MCP client cancelled the call" in stuck["error"]["message"]
    )
    assert waiting["iterations"] == 0 and waiting["output"] == ""
    # The waiting worker never started: no conversation was created for it, and none is named.
    assert waiting["session_id"] is None
    assert world.run("logs", "--json", "--session", stuck["session_id"]).json()[0]["status"] == "error"
    assert out["summary"] == {"requested": 2, "completed": 0, "failed": 0, "timed_out": 0, "canceled": 2}
    ctx = world.context()
    try:
        rows = ctx.state.query(
            "SELECT r.status, r.error_json, c.label FROM runs r JOIN conversations c ON c.id = r.conversation_id"
        )
        labels = [r["label"] for r in ctx.state.query("SELECT label FROM conversations")]
    finally:
        ctx.close()
    # The stuck worker's run is ended now (not left `running`); the other never ran.
    assert [(r["label"], r["status"], json.loads(r["error_json"])["code"]) for r in rows] == [
        ("subagent:stuck", "error", "canceled")
    ]
    assert "subagent:next" not in labels


def command(marker: str) -> str:
    """A command that outlives a worker's time limit, and needs SIGKILL to stop (it ignores SIGTERM)."""
    return f"trap '' TERM; {marker}; echo late"


def _worker_then_shell(world: Env, marker: str, timeout: int | None = None) -> None:
    """A main job fanning out one worker, whose model calls glob_search, then a shell command that
    outlives the worker's time limit."""
    fan = {"tasks": [{"id": "w", "task": "task w"}]}
    if timeout is not None:
        fan["timeout_seconds"] = timeout
    script(
        world,
        [
            {
                "contains": "main job",
                "responses": [
                    {"tool_calls": [{"name": "subagents", "arguments": fan}]},
                    {"text": "synthesized"},
                ],
            },
            {
                "contains": "task w",
                "responses": [
                    {
                        "text": "looking",
                        "tool_calls": [{"name": "glob_search", "arguments": {"pattern": "*"}}],
                        "usage": {"input_tokens": 10, "output_tokens": 3},
                    },
                    {
                        "tool_calls": [{"name": "shell", "arguments": {"command": command(marker)}}],
                        "usage": {"input_tokens": 20, "output_tokens": 4},
                    },
                    {"text": "never"},
                ],
            },
        ],
    )


def test_a_timed_out_worker_s_transcript_keeps_its_calls_usage_and_the_interrupted_call(world: Env) -> None:
    """`fermix logs` of a worker given up at its timeout shows what the subagents result says: its model
    calls, their tokens and the shell call that was running, recorded as interrupted; the run keeps its
    `timeout` ending. (The `fermix ask` process exits right after its answer, before the worker's thread
    could write anything itself.)"""
    marker = "sleep 30.4321"
    _worker_then_shell(world, marker, timeout=5)
    r = world.run("ask", "--json", "main job")
    assert r.code == 0, r.stderr
    # The command was stopped before `fermix ask` answered and exited (SIGKILL after SIGTERM's grace).
    assert processes_with(marker) == []
    (result,) = json.loads(r.json()["tool_calls"][0]["output"])["results"]
    assert (result["status"], result["iterations"], result["output"]) == ("timed_out", 2, "looking")
    (run_record,) = world.run("logs", "--json", "--session", result["session_id"]).json()
    assert run_record["status"] == "error" and run_record["error"]["code"] == "timeout"
    assert run_record["iterations"] == 2
    assert run_record["usage"] == {"input_tokens": 30, "output_tokens": 7}
    glob, shell = run_record["tool_calls"]
    assert (glob["name"], glob["ok"]) == ("glob_search", True)
    assert (shell["name"], shell["ok"], shell["error_code"]) == ("shell", False, "interrupted")
    assert shell["arguments"] == {"command": command(marker)}
    assert "did not finish within 5 s" in shell["output"]
    text = world.run("logs", "--session", result["session_id"]).stdout
    assert "2 model call(s)" in text


def test_a_worker_s_late_writes_leave_its_abandoned_run_as_recorded(world: Env) -> None:
    """The worker's thread, still alive after its caller gave up on it, ends its run later: it neither
    stores the interrupted turn a second time nor changes the run's ending."""
    marker = "sleep 30.8765"
    _worker_then_shell(world, marker)
    ctx = world.context(cwd=str(world.project))
    try:
        task = Delegation(origin="subagent", label="subagent:w", prompt="task w")
        (ran,) = fan_out(ctx, [("w", task)], max_concurrency=1, timeout=2.0)
        assert ran.status == "timed_out" and ran.iterations == 2
        deadline = time.monotonic() + 10
        shell_rows: list[Any] = []
        while not shell_rows and time.monotonic() < deadline:  # the killed call's own record comes late
            time.sleep(0.1)
            shell_rows = ctx.state.query(
                "SELECT error_code FROM tool_calls WHERE session_id = ? AND tool = 'shell'", (ran.session_id,)
            )
        time.sleep(0.3)  # and the run's late end just after it
    finally:
        ctx.close()
    assert len(shell_rows) == 1
    (run_record,) = world.run("logs", "--json", "--session", ran.session_id).json()
    assert run_record["status"] == "error" and run_record["error"]["code"] == "timeout"
    assert [(c["name"], c["error_code"] if not c["ok"] else None) for c in run_record["tool_calls"]] == [
        ("glob_search", None),
        ("shell", "interrupted"),
    ]
    assert run_record["iterations"] == 2 and run_record["usage"] == {"input_tokens": 30, "output_tokens": 7}


def test_a_worker_stopped_at_its_iteration_cap_returns_what_it_produced(world: Env) -> None:
    """A worker that reaches the workers' fixed cap (100 model calls) returns every finding it wrote, not
    only its last reply's, and the error names that fixed cap, not a `--max-iterations` flag."""
    from fermix_cli.agent.subagents.tools import WORKER_ITERATIONS

    turns = [
        {"text": f"finding {i}", "tool_calls": [{"name": "tool_help", "arguments": {"name": f"nope_{i}"}}]}
        for i in range(WORKER_ITERATIONS)
    ]
    script(world, [{"contains": "task long", "responses": [*turns, {"text": "never"}]}])
    out = run(world, {"tasks": [{"id": "long", "task": "task long"}]})
    (result,) = out["results"]
    assert result["status"] == "failed" and result["iterations"] == WORKER_ITERATIONS
    assert result["output"].splitlines() == [f"finding {i}" for i in range(WORKER_ITERATIONS)]
    error = result["error"]
    assert error["code"] == "max_iterations"
    assert "--max-iterations" not in error["message"]
    assert "subagent worker" in error["message"] and "no option or setting changes it" in error["message"]
