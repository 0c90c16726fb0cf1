"""`fermix mcp serve` leaves no shell command behind: client cancel, SIGTERM, end of input.

Black box: the real `python -m fermix_cli mcp serve --allow shell --allow bash` subprocess, driven by
the SDK's `ClientSession`. The command writes its shell's pid (the leader of its own process group),
then sleeps for five minutes; each test asserts that the whole group is gone within a few seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import Env

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process groups from /proc")

GONE_WITHIN_S = 8.0  # generous: two loaded cores; the server stops a group in well under a second


def serve_argv() -> list[str]:
    return ["-m", "fermix_cli", "mcp", "serve", "--allow", "shell", "--allow", "bash"]


def stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, pgid, state) of `pid`, None once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return int(fields[1]), int(fields[2]), fields[0].decode()


def alive(pid: int) -> bool:
    s = stat(pid)
    return s is not None and s[2] != "Z"


def group_alive(pgid: int) -> bool:
    """Any live (not zombie) process in group `pgid`."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            s = stat(int(name))
            if s is not None and s[1] == pgid and s[2] != "Z":
                return True
    return False


async def eventually(check: Callable[[], bool], within: float = GONE_WITHIN_S) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        await anyio.sleep(0.05)
    return check()


async def leader_of(pidfile: Path) -> int:
    """The pid the command wrote (its shell, the leader of the call's process group)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        if text.endswith("ready"):
            return int(text.split()[0])
        await anyio.sleep(0.05)
    raise AssertionError("the shell command never started")


def sleeper(pidfile: Path) -> dict[str, Any]:
    """`shell` arguments: record the shell's pid, then sleep far past the test (timeout 10 min)."""
    return {"command": f"echo $$ ready > {pidfile}; sleep 300", "timeout_ms": 600_000}


class Outcome:
    """What a call running in the background came back with."""

    def __init__(self) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = anyio.Event()


def start_call(tg: Any, session: Any, name: str, args: dict[str, Any], scope: anyio.CancelScope) -> Outcome:
    out = Outcome()

    async def run() -> None:
        try:
            with scope:
                out.result = await session.call_tool(name, args)
        except Exception as e:
            out.error = e
        finally:
            out.finished.set()

    tg.start_soon(run)
    return out


def calls_recorded(world: Env) -> list[tuple[str, int, str | None]]:
    db = sqlite3.connect(world.fermix_home / "state.db")
    try:
        return db.execute("SELECT tool, ok, error_code FROM tool_calls ORDER BY started_at").fetchall()
    finally:
        db.close()


@contextlib.asynccontextmanager
async def sdk_stdio_session(world: Env) -> AsyncIterator[Any]:
    """The SDK's own stdio client and session against the real command."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=serve_argv(), env=world.env, cwd=str(world.project)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(main)


# ----- (a) the client cancels the call ----------------------------------------------------------


@pytest.mark.parametrize("tool", ["shell", "bash"])
def test_client_cancel_kills_the_calls_process_group(world: Env, tool: str) -> None:
    pidfile = world.project / "sleep.pid"
    args = sleeper(pidfile)
    if tool == "bash":  # bash: seconds, an intent, and no shell expansion unless configured
        world.fermix_home.mkdir(mode=0o700, exist_ok=True)
        (world.fermix_home / "config.toml").write_text("[capabilities.tools.bash]\nshell_expansion = true\n")
        args = {"command": args["command"], "intent": "wait for the test", "timeout": 300}

    async def main() -> tuple[int, int, Outcome, Any]:
        async with sdk_stdio_session(world) as session, anyio.create_task_group() as tg:
            scope = anyio.CancelScope()
            call = start_call(tg, session, tool, args, scope)
            leader = await leader_of(pidfile)
            server = stat(leader)[0]  # type: ignore[index]  # the shell's parent: the fermix server
            assert group_alive(leader)
            scope.cancel()  # the SDK sends notifications/cancelled for the request
            await call.finished.wait()
            assert await eventually(lambda: not group_alive(leader)), "the cancelled command still runs"
            # The server carries on: the next call is answered.
            after = await session.call_tool("shell", {"command": "echo still serving"})
            return leader, server, call, after

    leader, server, call, after = run(main)
    assert call.result is None and call.error is None  # cancelled: the caller stopped waiting
    assert after.is_error is False and after.structured_content["output"] == "still serving\n"
    assert not group_alive(leader)
    assert (tool, 0, "cancelled") in calls_recorded(world)
    assert not alive(server)  # and it ended when the client closed the session


# ----- (b) the server gets SIGTERM --------------------------------------------------------------


def test_sigterm_ends_the_server_and_kills_running_commands(
    world: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp.client.stdio as sdk_stdio

    killed_by_client: list[int] = []
    real_terminate = sdk_stdio._terminate_process_tree

    async def recording_terminate(process: Any) -> None:
        killed_by_client.append(process.pid)
        await real_terminate(process)

    monkeypatch.setattr(sdk_stdio, "_terminate_process_tree", recording_terminate)
    pidfile = world.project / "sleep.pid"

    async def main() -> tuple[int, int, Outcome, float]:
        async with sdk_stdio_session(world) as session, anyio.create_task_group() as tg:
            call = start_call(tg, session, "shell", sleeper(pidfile), anyio.CancelScope())
            leader = await leader_of(pidfile)
            server = stat(leader)[0]  # type: ignore[index]
            started = time.monotonic()
            os.kill(server, signal.SIGTERM)
            assert await eventually(lambda: not group_alive(leader)), "SIGTERM left the command running"
            assert await eventually(lambda: not alive(server)), "the server did not exit on SIGTERM"
            took = time.monotonic() - started
            with anyio.fail_after(30):
                await call.finished.wait()  # the connection closed under the call
            return leader, server, call, took

    leader, server, call, took = run(main)
    assert took < GONE_WITHIN_S
    assert not group_alive(leader) and not alive(server)
    assert call.result is None and call.error is not None  # the connection ended before an answer
    assert killed_by_client == []  # the server exited by itself
    assert ("shell", 0, "cancelled") in calls_recorded(world)


# ----- (c) end of input mid-call -----------------------------------------------------------------


@contextlib.asynccontextmanager
async def pipe_session(world: Env) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ClientSession over the server's pipes, whose stdin the test can close at any moment.

    The SDK's stdio_client closes stdin only inside its own shutdown, after cancelling what is in
    flight, and kills the server 2 s later; here the client just goes away mid-call.
    """
    import mcp.types as types
    from mcp import ClientSession
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [sys.executable, *serve_argv()], env=world.env, cwd=str(world.project), start_new_session=True
    )
    assert process.stdin is not None and process.stdout is not None
    to_session, read = anyio.create_memory_object_stream[Any](16)
    write, from_session = anyio.create_memory_object_stream[Any](16)

    async def pump_out() -> None:
        buffer = b""
        async with to_session:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                while True:
                    buffer += await process.stdout.receive()  # type: ignore[union-attr]
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        await to_session.send(SessionMessage(message))

    async def pump_in() -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for item in from_session:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode())  # type: ignore[union-attr]

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump_out)
            tg.start_soon(pump_in)
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session, process
            tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()


def test_end_of_input_mid_call_ends_the_server_and_its_commands(world: Env) -> None:
    """End of input: the requests already read get EOF_DRAIN_S to finish; one still running then is
    answered with -32000, cancelled, its command killed, and the server exits."""
    from mcp.shared.exceptions import MCPError

    from fermix_cli.mcp.pending import EOF_DRAIN_S, INPUT_ENDED, INPUT_ENDED_MESSAGE

    pidfile = world.project / "sleep.pid"
    within = EOF_DRAIN_S + GONE_WITHIN_S

    async def main() -> tuple[int, int | None, float, Outcome]:
        async with pipe_session(world) as (session, process), anyio.create_task_group() as tg:
            call = start_call(tg, session, "shell", sleeper(pidfile), anyio.CancelScope())
            leader = await leader_of(pidfile)
            started = time.monotonic()
            await process.stdin.aclose()  # the client is gone: end of file on the server's stdin
            assert await eventually(lambda: not group_alive(leader), within), "EOF left the command running"
            with anyio.move_on_after(within):
                await call.finished.wait()
                await process.wait()
            took = time.monotonic() - started
            code = process.returncode
            tg.cancel_scope.cancel()
            return leader, code, took, call

    leader, code, took, call = run(main)
    assert code == 0, "the server did not exit by itself at end of input"
    assert EOF_DRAIN_S <= took < within
    assert not group_alive(leader)
    assert ("shell", 0, "cancelled") in calls_recorded(world)
    assert isinstance(call.error, MCPError), (call.result, call.error)
    assert call.error.error.code == INPUT_ENDED and call.error.error.message == INPUT_ENDED_MESSAGE


# ----- (d) the server is killed outright ---------------------------------------------------------


def group_members(pgid: int) -> list[int]:
    from fermix_cli.core.shell import group_members as members

    return members(pgid)


@pytest.mark.parametrize("tool", ["shell", "bash"])
def test_sigkill_of_the_server_leaves_no_command_running(world: Env, tool: str) -> None:
    """Nothing in a SIGKILLed server can end the call's command: its lifeline (a pipe only the server
    held) ends with the server, and the watchdog in the command's group kills the group, the
    background `sleep` and the foreground one, within a bounded time and without a next fermix start."""
    pidfile = world.project / "sleep.pid"
    command = f"echo $$ ready > {pidfile}; sleep 60 & sleep 60"
    args: dict[str, Any] = {"command": command, "timeout_ms": 600_000}
    if tool == "bash":
        world.fermix_home.mkdir(mode=0o700, exist_ok=True)
        (world.fermix_home / "config.toml").write_text("[capabilities.tools.bash]\nshell_expansion = true\n")
        args = {"command": command, "intent": "wait for the test", "timeout": 300}

    async def main() -> tuple[list[int], float]:
        async with pipe_session(world) as (session, process), anyio.create_task_group() as tg:
            start_call(tg, session, tool, args, anyio.CancelScope())
            leader = await leader_of(pidfile)
            assert await eventually(lambda: len(group_members(leader)) >= 3)  # sh and both sleeps
            members = group_members(leader)
            started = time.monotonic()
            process.kill()  # SIGKILL: no handler, no finally, no cancel token
            await process.wait()
            gone = await eventually(lambda: not any(alive(pid) for pid in members))
            took = time.monotonic() - started
            tg.cancel_scope.cancel()
            for pid in [p for p in members if alive(p)]:  # what a failure left is not left running
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            assert gone, f"still running after the server was killed: {[p for p in members if alive(p)]}"
            return members, took

    members, took = run(main)
    assert took < GONE_WITHIN_S
    assert not any(alive(pid) for pid in members)
    # The call never ended, but its start was recorded before the command ran; `fermix logs --calls`
    # shows it interrupted (its process is gone).
    db = sqlite3.connect(world.fermix_home / "state.db")
    try:
        started = db.execute("SELECT tool, origin, status FROM tool_call_starts").fetchall()
        assert db.execute("SELECT count(*) FROM tool_calls").fetchone() == (0,)
    finally:
        db.close()
    assert started == [(tool, "mcp", "started")]
    listed = world.run("logs", "--calls", "--json")
    assert listed.code == 0, listed.stderr
    ((name, status, error_code),) = [(c["tool"], c["status"], c["error_code"]) for c in listed.json()]
    assert (name, status, error_code) == (tool, "interrupted", "interrupted")
