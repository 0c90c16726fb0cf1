"""Every registered tool, fed schema-derived garbage: exit 0-3 only, no traceback, nothing on stdout on failure.

Exit 4 means a bug in fermix, so no input may reach it. Examples per tool: FERMIX_FUZZ_EXAMPLES
(default 20; set it to thousands for a long run). Calls go in-process through the CLI entry for
speed; a handful of hostile inputs also go through the real executable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fermix_cli.core.registry import default_registry
from tests.conftest import Env
from tests.core.schema_inputs import objects

EXAMPLES = int(os.environ.get("FERMIX_FUZZ_EXAMPLES", "20"))
# The network tools would wait on DNS and connects that this machine may not have; their failure
# codes are covered by tests against local servers.
OFFLINE = [s for s in default_registry().all() if s.policy_class not in ("network", "external_api")]


def call_in_process(world: Env, capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    from fermix_cli.__main__ import main

    capsys.readouterr()
    code = main(["--home", str(world.fermix_home), "--cwd", str(world.project), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_contract(code: int, out: str, err: str) -> None:
    assert code in (0, 1, 2, 3), err
    assert "Traceback" not in out + err, err
    if code != 0:
        assert out == "", out
        assert json.loads(err)["error"]["code"], err


@pytest.fixture
def seeded(world: Env, monkeypatch: pytest.MonkeyPatch) -> Env:
    monkeypatch.setenv("HOME", str(world.home))
    monkeypatch.setenv("FERMIX_HOME", str(world.fermix_home))
    monkeypatch.chdir(world.project)
    (world.project / "a.txt").write_text("alpha\nbeta\n")
    (world.project / "pkg").mkdir()
    (world.project / "pkg" / "m.py").write_text("def f(x):\n    return x\n")
    return world


@pytest.mark.parametrize("name", sorted(s.name for s in OFFLINE))
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_garbage_never_reaches_exit_4(
    name: str, seeded: Env, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    spec = default_registry().find(name)
    assert spec is not None
    args = data.draw(objects(spec.input_schema()), label="args")
    payload = json.dumps(args)
    assert_contract(*call_in_process(seeded, capsys, ["tool", name, "--json", payload]))


HOSTILE_RAW: list[tuple[str, bytes]] = [
    ("grep", b'{"patterns":["\\udc80"]}'),
    ("ast_grep", b'{"pattern":"\\ud800","lang":"python"}'),
    ("hash_edit", b'{"input":"\\udfff"}'),
    ("file_read", b'{"path":"a\\u0000b"}'),
    ("memory_forget", b'{"id":9223372036854775808}'),
    ("memory_store", b'{"key":"k","value":"v","id":99999999999999999999}'),
    ("file_read", b'{"path":"a.txt","offset":' + b"9" * 5000 + b"}"),
    ("write", b'{"path":"a.txt","content":"\xff\xfe"}'),
]


@pytest.mark.parametrize(
    ("name", "raw"), HOSTILE_RAW, ids=[f"{n}-{i}" for i, (n, _) in enumerate(HOSTILE_RAW)]
)
def test_hostile_input_through_the_executable(world: Env, name: str, raw: bytes) -> None:
    import subprocess
    import sys

    (world.project / "a.txt").write_text("alpha\n")
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "tool", name, "--json", "-"],
        input=raw,
        capture_output=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert_contract(proc.returncode, proc.stdout.decode(), proc.stderr.decode("utf-8", "replace"))


# The tools the fuzz leaves out, each for a reason; a new tool is fuzzed unless it is named here.
NOT_FUZZED = {
    "browser": "a valid call starts Chromium",
    "generate_image": "a valid call goes to an image API",
    "place_search": "a valid call goes to a search API",
    "request_directory_access": "a valid call asks the owner",
    "subagents": "a valid call runs model workers",
    "web": "a valid call fetches from the network",
    "web_fetch": "a valid call fetches from the network",
    "web_search": "a valid call goes to a search API",
}


def test_the_fuzzed_set_is_the_registry_but_the_named_exceptions() -> None:
    left_out = {s.name for s in default_registry().all()} - {s.name for s in OFFLINE}
    assert left_out <= NOT_FUZZED.keys()
    assert len(OFFLINE) >= len(default_registry().all()) - len(NOT_FUZZED)
    assert Path(__file__).exists()


@pytest.mark.parametrize(
    ("name", "flag"), [("grep", b"--patterns"), ("ast_grep", b"--pattern"), ("file_read", b"--path")]
)
def test_undecodable_flag_bytes_are_refused_as_input(world: Env, name: str, flag: bytes) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable.encode(), b"-m", b"fermix_cli", b"tool", name.encode(), flag, b"ab\xffcd"],
        capture_output=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr and proc.stdout == b""
    assert json.loads(proc.stderr)["error"]["code"] == "invalid_input"
