"""view_image's costs: its cold start as a machine call, and one call to a local vision-model stand-in.

1. Cold start, interleaved runs: `python -c pass` (the reference), `fermix tool read` of a small file,
   and `fermix tool view_image` refused for having no vision model (no network; it must not import
   httpx to say so).
2. In-process, one 1 MiB PNG to an OpenAI-compatible stand-in on 127.0.0.1: view_image end to end
   against the reference of posting the same JSON body through the same guarded client.

Usage: python3 bench/media_tools.py [COLD_RUNS] [CALLS]   (defaults 20 and 30); prints medians in ms.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def png_of_size(target: int) -> bytes:
    """A valid PNG of about `target` bytes (random-looking rows so zlib cannot shrink it)."""
    import struct

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    width = 512
    height = max(1, target // (width * 4))
    rows = b"".join(b"\x00" + os.urandom(width * 4) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 1))
        + chunk(b"IEND", b"")
    )


class Answer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "a picture"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def cold(runs: int, home: Path, project: Path) -> dict[str, float]:
    env = {**os.environ, "FERMIX_HOME": str(home / ".fermix"), "HOME": str(home), "PYTHONPATH": str(REPO)}
    (project / "a.txt").write_text("hello\n")
    (project / "a.png").write_bytes(png_of_size(1000))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "fermix tool read": [sys.executable, "-m", "fermix_cli", "tool", "read", "--json", '{"path":"a.txt"}'],
        "fermix tool view_image (refused)": [
            sys.executable, "-m", "fermix_cli", "tool", "view_image", "--json",
            json.dumps({"path": str(project / "a.png"), "prompt": "what"}),
        ],
    }  # fmt: skip
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, env=env, cwd=project, capture_output=True)
            times[name].append((time.perf_counter() - start) * 1000)
    return {k: statistics.median(v) for k, v in times.items()}


def in_process(calls: int, home: Path, project: Path) -> dict[str, float]:
    import tomli_w

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    (home / ".fermix").mkdir(parents=True, exist_ok=True)
    (home / ".fermix" / "config.toml").write_text(
        tomli_w.dumps(
            {
                "fermix_core": {
                    "net": {"allowed_private_hosts": ["127.0.0.1"]},
                    "providers": {"vis": {"type": "openai", "base_url": base, "api_key": "k"}},
                },
                "capabilities": {
                    "tools": {"view_image": {"vision_model": {"provider": "vis", "model": "m"}}}
                },
            }
        )
    )
    image = project / "big.png"
    data = png_of_size(1024 * 1024)
    image.write_bytes(data)
    from fermix_cli.core.context import ToolContext
    from fermix_cli.core.paths import resolve_paths
    from fermix_cli.core.registry import default_registry

    ctx = ToolContext(paths=resolve_paths(str(home / ".fermix")), os_home=str(home), launch_cwd=str(project))
    registry = default_registry()
    args = {"path": str(image), "prompt": "what is this?"}
    body = json.dumps(
        {
            "model": "m",
            "max_tokens": 1024,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64," + base64.b64encode(data).decode()},
                        },
                    ],
                }
            ],
        }
    ).encode()
    tool_ms: list[float] = []
    post_ms: list[float] = []
    registry.invoke("view_image", args, ctx)  # warm imports
    for _ in range(calls):
        start = time.perf_counter()
        registry.invoke("view_image", args, ctx)
        tool_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        with ctx.http_client(max_body=4 * 1024 * 1024) as client:
            client.post(
                f"{base}/chat/completions", content=body, headers={"content-type": "application/json"}
            )
        post_ms.append((time.perf_counter() - start) * 1000)
    server.shutdown()
    ctx.close()
    return {
        f"view_image, {len(data)} byte PNG": statistics.median(tool_ms),
        "reference: the same body posted directly": statistics.median(post_ms),
    }


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        project = home / "project"
        project.mkdir()
        for name, ms in cold(runs, home, project).items():
            print(f"cold   {name:45s} median {ms:7.1f} ms")
        for name, ms in in_process(calls, home, project).items():
            print(f"inproc {name:45s} median {ms:7.1f} ms")


if __name__ == "__main__":
    main()
