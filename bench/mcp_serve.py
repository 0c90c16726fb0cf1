"""What the MCP SDK costs, and how fast `fermix mcp serve` stops a cancelled shell command.

    python3 bench/mcp_serve.py [RUNS] [CANCELS]        (defaults: 7 and 5; CANCELS=0 skips part 2)

1. CPU time (user + system, of a fresh interpreter) to import the SDK's client side (`mcp.ClientSession`
   and the stdio transport) and server side (lowlevel `Server` and `stdio_server`), beside
   `python -c pass` measured in the same run. Run it with the interpreters of two environments (one
   with mcp 1.x, one with 2.x) to compare SDK majors; the import lines do not need fermix.
2. With fermix importable (run from the checkout): the time from a client's cancel of a `shell` call
   running `sleep 300` to the moment its process group is gone, over a real stdio session.

Medians; the machine's load moves every figure, so compare only figures from one run.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "python -c pass": "pass",
    "import mcp client (ClientSession, stdio)": "import mcp.client.session, mcp.client.stdio",
    "import mcp server (lowlevel Server, stdio)": "import mcp.server.lowlevel, mcp.server.stdio",
}


def cpu_of(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_costs(runs: int) -> None:
    import importlib.metadata as md

    print(f"mcp {md.version('mcp')} on Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    for _ in range(2):  # warm the page cache and bytecode
        for code in CASES.values():
            cpu_of(code)
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):
        for name, code in CASES.items():  # interleaved, so load changes hit every case alike
            times[name].append(cpu_of(code))
    base = statistics.median(times["python -c pass"])
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:45s} {med * 1000:7.0f} ms CPU  ({med / base:4.1f}x python -c pass)")


def cancel_latency(cancels: int) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {**os.environ, "HOME": str(home), "FERMIX_HOME": str(home / ".fermix"), "PYTHONPATH": str(repo)}
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "fermix_cli", "mcp", "serve", "--allow", "shell"],
            env=env,
            cwd=str(home),
        )

        def group_alive(pgid: int) -> bool:
            for name in os.listdir("/proc"):
                try:
                    raw = Path(f"/proc/{name}/stat").read_bytes()
                except OSError:
                    continue
                fields = raw[raw.rfind(b")") + 2 :].split()
                if name.isdigit() and int(fields[2]) == pgid and fields[0] != b"Z":
                    return True
            return False

        async def main() -> list[float]:
            out: list[float] = []
            async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                for i in range(cancels):
                    pidfile = home / f"sleep{i}.pid"
                    scope = anyio.CancelScope()
                    args = {"command": f"echo $$ > {pidfile}; sleep 300", "timeout_ms": 600_000}

                    async def call(scope: anyio.CancelScope = scope, args: dict = args) -> None:
                        with scope:
                            await session.call_tool("shell", args)

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(call)
                        while not (pidfile.exists() and pidfile.read_text().strip()):
                            await anyio.sleep(0.01)
                        leader = int(pidfile.read_text())
                        started = time.monotonic()
                        scope.cancel()
                        while group_alive(leader):
                            await anyio.sleep(0.005)
                        out.append(time.monotonic() - started)
            return out

        latencies = anyio.run(main)
    print(
        f"  cancel -> process group gone, median of {cancels}: {statistics.median(latencies) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    cancels = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    import_costs(runs)
    if cancels > 0 and os.path.isdir("/proc"):  # needs fermix importable (the checkout) and mcp 2.x
        cancel_latency(cancels)
