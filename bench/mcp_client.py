"""CPU cost of one `fermix tool mcp_stub_add` call, against `python -c pass` and the SDK client's import.

    python3 bench/mcp_client.py [RUNS]          (default 7; BEFORE=DIR adds the same call from an older tree)

The server is the tests' SDK stub over Streamable HTTP, started once, so the figure for a call is the
fermix process's own CPU (user + system): start, config, handshake, tools/list, tools/call, exit. Cases:
  python -c pass                          the interpreter's floor
  import mcp client (ClientSession, stdio)  what the SDK-based client paid before any byte was sent
  fermix tool file_read (this tree)       a built-in call: what any fermix call costs
  fermix tool mcp_stub_add (this tree)    fermix's own wire layer
  fermix tool mcp_stub_add (BEFORE)       optional: the same call from another checkout (the SDK client)
Interleaved runs, medians; compare only figures from one run.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STUB = REPO / "tests" / "mcp" / "stub_mcp_server.py"


def cpu_of(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:5])} failed: {r.stderr.strip()[:500]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def start_stub() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, str(STUB), "http", str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the stub server did not start")


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    proc, url = start_stub()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            (home / ".fermix").mkdir(mode=0o700)
            (home / ".fermix" / "config.toml").write_text(
                '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
                f'[mcp.servers.stub]\nurl = "{url}"\n'
            )
            (home / ".fermix" / "workspace").mkdir(mode=0o700)
            (home / ".fermix" / "workspace" / "n.txt").write_text("x\n")  # file_read with no project
            base = {**os.environ, "HOME": str(home), "FERMIX_HOME": str(home / ".fermix")}
            call = ["-m", "fermix_cli", "tool", "mcp_stub_add", "--json", json.dumps({"a": 1, "b": 2})]
            cases: dict[str, tuple[list[str], dict[str, str] | None]] = {
                "python -c pass": ([sys.executable, "-c", "pass"], None),
                "import mcp client (ClientSession, stdio)": (
                    [sys.executable, "-c", "import mcp.client.session, mcp.client.stdio"],
                    None,
                ),
                "fermix tool file_read (this tree)": (
                    [sys.executable, "-m", "fermix_cli", "tool", "file_read", "--json", '{"path":"n.txt"}'],
                    {**base, "PYTHONPATH": str(REPO)},
                ),
                "fermix tool mcp_stub_add (this tree)": (
                    [sys.executable, *call],
                    {**base, "PYTHONPATH": str(REPO)},
                ),
            }
            if before := os.environ.get("BEFORE"):
                cases["fermix tool mcp_stub_add (BEFORE)"] = (
                    [sys.executable, *call],
                    {**base, "PYTHONPATH": before},
                )
            for _ in range(2):  # warm the page cache and bytecode
                for argv, env in cases.values():
                    cpu_of(argv, env, str(home))
            times: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(runs):
                for name, (argv, env) in cases.items():  # interleaved: load changes hit every case alike
                    times[name].append(cpu_of(argv, env, str(home)))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    import importlib.metadata as md

    print(f"mcp {md.version('mcp')} on Python {sys.version.split()[0]}, {os.cpu_count()} cores, {runs} runs")
    floor = statistics.median(times["python -c pass"])
    for name, values in times.items():
        med = statistics.median(values)
        print(f"  {name:45s} {med * 1000:7.0f} ms CPU  ({med / floor:5.1f}x python -c pass)")


if __name__ == "__main__":
    main()
