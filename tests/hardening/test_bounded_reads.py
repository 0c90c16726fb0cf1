"""No read holds more than its output cap plus a bounded margin: a huge sparse file is refused or paged, cheaply."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Env

ADDRESS_SPACE = 1024**3  # far below the files' sizes: reading one whole would fail
# Room for fermix itself (it runs in 200 MiB) but not for a 384 MiB line: a smaller line to read past
# than under ADDRESS_SPACE, since reading a new sparse file's holes costs the kernel about 4 s per GiB.
SMALL_ADDRESS_SPACE = 256 * 1024**2


def _limited(space: int = ADDRESS_SPACE) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (space, space))


def run_limited(
    world: Env, *argv: str, input: bytes | None = None, timeout: float = 120, space: int = ADDRESS_SPACE
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "fermix_cli", *argv],
        input=input,
        capture_output=True,
        cwd=world.project,
        env=world.env,
        timeout=timeout,
        preexec_fn=lambda: _limited(space),
    )


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def test_first_line_of_a_10_gib_sparse_file_is_too_large(world: Env) -> None:
    _sparse(world.project / "huge.bin", 10 * 1024**3)
    r = run_limited(world, "tool", "file_read", "--json", '{"path":"huge.bin"}')
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stderr)["error"]["code"] == "too_large"


def test_a_huge_line_is_read_past_to_the_next(world: Env) -> None:
    path = _sparse(world.project / "wide.txt", SMALL_ADDRESS_SPACE * 3 // 2, b"first\n")
    with open(path, "ab") as f:
        f.write(b"\nlast line\n")
    argv = ("tool", "file_read", "--json")
    r = run_limited(world, *argv, '{"path":"wide.txt","offset":3}', space=SMALL_ADDRESS_SPACE)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["content"] == "last line"
    r = run_limited(world, *argv, '{"path":"wide.txt"}', space=SMALL_ADDRESS_SPACE)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["content"], out["truncated"], out["next_offset"]) == ("first", True, 2)


@pytest.mark.parametrize(
    "argv",
    [("--json", "-"), ("--json", "@/dev/zero"), ("--jsonl",)],
    ids=["json-stdin", "json-file", "jsonl"],
)
def test_endless_input_stops_at_the_limit(world: Env, argv: tuple[str, ...]) -> None:
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "fermix_cli", "tool", "grep", *argv],
            stdin=zero,
            capture_output=True,
            cwd=world.project,
            env=world.env,
            timeout=120,
            preexec_fn=_limited,
        )
    assert proc.returncode == 2, proc.stderr
    text = (proc.stdout or proc.stderr).decode()
    error = json.loads(text)["error"]
    assert error["code"] == "invalid_json" and "limit" in error["message"]
