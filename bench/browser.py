"""The browser tool's costs against a running headless Chromium (issue 19's targets).

1. Attach-and-act: a whole `fermix tool browser` process (`act get field=title`) against a browser that is
   already running, beside `python -c pass` and `fermix tool file_read` in the same loop. The overhead is
   the browser call's median minus `python -c pass`'s (target: under 150 ms); the minus-file_read figure
   is what the browser tool adds to any fermix machine call.
2. In-process: attach + act (connect, find the tab, evaluate) without interpreter start-up.
3. A snapshot of a 1 000-element page: in-process handler time and the whole CLI call (target: under
   300 ms).
4. A page load: an in-process `navigate` to a page with 40 uncached images, every request passing the
   warden's checks (and its guarding proxy), to see what the guard adds to loading a page.

Pages are served on 127.0.0.1 by this script (allowed to the guard for this home only).

Usage: python3 bench/browser.py [REPETITIONS]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BIG = "".join(
    f'<li><a href="/item/{i}">Item {i}</a> <button>Buy {i}</button></li>' for i in range(500)
)  # 1 000 interactive elements (and their list items)
IMAGES = "".join(f'<img src="/img/{i}.gif" width="1" height="1">' for i in range(40))
GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")
PAGES = {
    "/act": "<title>Act</title><button>Go</button>",
    "/load": f"<title>Load</title>{IMAGES}",
    "/big": f"<title>Big</title><ul>{BIG}</ul>",
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        image = self.path.startswith("/img/")
        body = GIF if image else PAGES.get(self.path.split("?")[0], "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "image/gif" if image else "text/html")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


CPU: dict[str, list[float]] = {}


def timed(argv: list[str], env: dict[str, str], name: str = "") -> float:
    """Wall ms of one process; its CPU ms (user + system, less sensitive to a busy machine) go to CPU[name]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    elapsed = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    CPU.setdefault(name, []).append(cpu)
    return elapsed


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    home = tempfile.mkdtemp(prefix="fermix-bench-browser-")
    with open(os.path.join(home, "config.toml"), "w") as fh:
        fh.write('[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n')
    os.makedirs(os.path.join(home, "workspace"))
    note = os.path.join(home, "workspace", "note.txt")
    with open(note, "w") as fh:
        fh.write("x\n")
    env = {**os.environ, "FERMIX_HOME": home, "PYTHONPATH": REPO}
    py = sys.executable
    tool = [py, "-m", "fermix_cli", "tool"]
    sys.path.insert(0, REPO)
    os.environ["FERMIX_HOME"] = home
    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.registry import default_registry

    def call(args: dict[str, object]) -> object:
        ctx = ToolContext.for_cli(home=home)
        try:
            return default_registry().invoke("browser", args, ctx)
        finally:
            ctx.close()

    try:
        began = time.perf_counter()
        call({"action": "start"})
        start_ms = (time.perf_counter() - began) * 1000
        call({"action": "open", "url": base + "/act"})
        runs: dict[str, list[float]] = {
            "python -c pass": [],
            "tool file_read": [],
            "tool browser act get": [],
        }
        act = json.dumps({"action": "act", "kind": "get", "field": "title"})
        for _ in range(2):  # warm the page cache
            timed([*tool, "browser", "--json", act], env)
        for _ in range(reps):
            runs["python -c pass"].append(timed([py, "-c", "pass"], env, "python -c pass"))
            runs["tool file_read"].append(
                timed([*tool, "file_read", "--json", json.dumps({"path": note})], env, "tool file_read")
            )
            runs["tool browser act get"].append(
                timed([*tool, "browser", "--json", act], env, "tool browser act get")
            )
        in_process = []
        for _ in range(reps * 3):
            t = time.perf_counter()
            call({"action": "act", "kind": "get", "field": "title"})
            in_process.append((time.perf_counter() - t) * 1000)

        loads = []
        for i in range(reps):
            t = time.perf_counter()
            call({"action": "navigate", "url": f"{base}/load?{i}"})
            loads.append((time.perf_counter() - t) * 1000)

        call({"action": "navigate", "url": base + "/big"})
        snap_in = []
        refs = 0
        for _ in range(reps):
            t = time.perf_counter()
            result = call({"action": "snapshot"})
            snap_in.append((time.perf_counter() - t) * 1000)
            refs = int(result["refs"])  # type: ignore[index]
        snap_cli = [
            timed([*tool, "browser", "--json", '{"action":"snapshot"}'], env, "snapshot cli")
            for _ in range(reps)
        ]
    finally:
        call({"action": "stop"})
        server.shutdown()

    med = {name: statistics.median(values) for name, values in runs.items()}
    print(f"load average: {os.getloadavg()[0]:.2f}; browser start {start_ms:.0f} ms; medians of {reps}")
    cpu = {name: statistics.median(values) for name, values in CPU.items() if name}
    for name, value in med.items():
        print(f"  {name:24} wall {value:7.1f} ms   cpu {cpu[name]:7.1f} ms")
    print(
        f"  attach-and-act CPU over python -c pass: {cpu['tool browser act get'] - cpu['python -c pass']:.1f} ms, "
        f"over tool file_read: {cpu['tool browser act get'] - cpu['tool file_read']:.1f} ms"
    )
    print(
        f"  attach-and-act overhead over python -c pass: {med['tool browser act get'] - med['python -c pass']:.1f} ms"
    )
    print(
        f"  over fermix tool file_read:                  {med['tool browser act get'] - med['tool file_read']:.1f} ms"
    )
    print(f"  in-process attach + act (x{reps * 3}):            {statistics.median(in_process):7.1f} ms")
    print(
        f"  snapshot of the 1 000-element page ({refs} refs): in-process {statistics.median(snap_in):.1f} ms, "
        f"whole CLI call {statistics.median(snap_cli):.1f} ms wall, {statistics.median(CPU['snapshot cli']):.1f} ms cpu"
    )
    print(f"  navigate to a page with 40 uncached images (in-process): {statistics.median(loads):.1f} ms")


if __name__ == "__main__":
    main()
