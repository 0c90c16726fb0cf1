"""A broken environment (read-only home or state.db) is exit 1 with a clear code, never exit 4 or a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Env, Result

# Root ignores file modes, so as root a read-only bind mount in a private mount namespace stands in.
_AS_ROOT = os.geteuid() == 0
_CAN_UNSHARE = (
    _AS_ROOT
    and shutil.which("unshare") is not None
    and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
)


def run_with_read_only(world: Env, read_only: Path, *args: str) -> Result:
    """Run the real CLI while `read_only` (a directory or a file) cannot be written."""
    argv = [sys.executable, "-m", "fermix_cli", *args]
    if _AS_ROOT:
        if not _CAN_UNSHARE:
            pytest.skip("running as root without mount namespaces: cannot make a path read-only")
        argv = [
            "unshare",
            "-m",
            "sh",
            "-c",
            'mount --bind -o ro "$0" "$0" && exec "$@"',
            str(read_only),
            *argv,
        ]
        proc = subprocess.run(
            argv, capture_output=True, text=True, cwd=world.project, env=world.env, timeout=60
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)
    mode = read_only.stat().st_mode
    read_only.chmod(0o500 if read_only.is_dir() else 0o400)
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, cwd=world.project, env=world.env, timeout=60
        )
    finally:
        read_only.chmod(mode)
    return Result(proc.returncode, proc.stdout, proc.stderr)


CALLS: list[tuple[str, ...]] = [
    ("tool", "memory_store", "--json", '{"key":"colour","value":"blue"}'),
    ("tool", "memory_recall", "--json", '{"search":"colour"}'),
    ("tool", "read", "--json", '{"paths":["notes.txt"]}'),
    ("tool", "schedule_job", "--json", '{"name":"n","schedule":"every 15 minutes","task":"say hi"}'),
    ("tool", "file_edit", "--json", '{"path":"notes.txt","old_string":"hello","new_string":"bye"}'),
    ("tool", "write", "--json", '{"path":"notes.txt","content":"x"}'),
    ("jobs", "run"),
]


def _assert_clean_failure(r: Result) -> None:
    assert r.code in (0, 1, 3), (r.code, r.stderr)
    assert "Traceback" not in r.stderr and "Logging error" not in r.stderr, r.stderr
    if r.code != 0:
        assert r.stdout == ""
        assert json.loads(r.stderr)["error"]["code"]


@pytest.mark.parametrize("argv", CALLS, ids=lambda a: "-".join(a[:2]))
@pytest.mark.parametrize("what", ["home", "state.db"])
def test_read_only_home_or_state_is_a_tool_failure(world: Env, argv: tuple[str, ...], what: str) -> None:
    (world.project / "notes.txt").write_text("hello\n")
    assert world.tool("memory_store", {"key": "seed", "value": "v"}).code == 0  # home and state.db exist
    target = world.fermix_home if what == "home" else world.fermix_home / "state.db"
    _assert_clean_failure(run_with_read_only(world, target, *argv))


@pytest.mark.parametrize("argv", CALLS, ids=lambda a: "-".join(a[:2]))
def test_fresh_home_in_a_read_only_directory(world: Env, argv: tuple[str, ...]) -> None:
    (world.project / "notes.txt").write_text("hello\n")
    world.fermix_home.mkdir()
    _assert_clean_failure(run_with_read_only(world, world.fermix_home, *argv))


# ----- a Python built without sqlite3 or ssl (pyenv without libsqlite3-dev or libssl-dev) -----------

WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # as on a Python built without it: importing it raises ImportError
del sys.argv[1]
from fermix_cli.__main__ import main
sys.exit(main())
"""


def run_without(world: Env, modules: str, *args: str) -> Result:
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT, modules, *args],
        capture_output=True,
        text=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.mark.parametrize(
    ("blocked", "module", "headers"),
    [("_sqlite3", "sqlite3", "libsqlite3-dev"), ("_ssl", "ssl", "libssl-dev")],
)
def test_doctor_fails_naming_a_module_this_python_lacks_and_the_fix(
    world: Env, blocked: str, module: str, headers: str
) -> None:
    r = run_without(world, blocked, "doctor", "--json")
    assert r.code == 1, r.stderr
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    failed = checks["python modules"]
    assert failed["status"] == "fail" and failed["data"]["missing"] == [module]
    assert f"built without the {module} module" in failed["detail"]
    assert f"apt-get install {headers}" in failed["detail"] and "pyenv install --force" in failed["detail"]
    assert [c for c in checks.values() if c["status"] == "fail"] == [failed]
    if module == "sqlite3":  # what reads state.db says it cannot, instead of failing again
        assert checks["state.db"]["status"] == "n/a" and "python modules" in checks["state.db"]["detail"]


def test_a_tool_that_needs_sqlite3_is_a_typed_failure_naming_the_fix(world: Env) -> None:
    for argv in CALLS[:2]:
        r = run_without(world, "_sqlite3", *argv)
        assert r.code == 1 and r.stdout == "", r.stderr
        error = json.loads(r.stderr)["error"]
        assert error["code"] == "python_module_missing" and error["details"] == {"module": "sqlite3"}
        assert "libsqlite3-dev" in error["message"]
    assert not (world.fermix_home / "state.db").exists()


def test_a_web_tool_without_ssl_is_a_typed_failure_naming_the_fix(world: Env) -> None:
    world.fermix_home.mkdir(mode=0o700, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(
        '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n'
    )
    r = run_without(world, "_ssl", "tool", "web_fetch", "--json", '{"url":"http://127.0.0.1:9/"}')
    assert r.code == 1 and r.stdout == "", r.stderr
    error = json.loads(r.stderr)["error"]
    assert error["code"] == "python_module_missing" and error["details"] == {"module": "ssl"}
    assert "libssl-dev" in error["message"]


OPEN_STATE = """
import sys
from pathlib import Path
sys.modules["_sqlite3"] = None
from fermix_cli.core.errors import ToolError
from fermix_cli.core.state import StateDB
try:
    StateDB(Path(sys.argv[1]))
except ToolError as e:
    print(e.code, e.details["module"])
"""


def test_opening_state_db_without_sqlite3_raises_a_typed_error(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-c", OPEN_STATE, str(tmp_path / "state.db")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "python_module_missing sqlite3\n"
