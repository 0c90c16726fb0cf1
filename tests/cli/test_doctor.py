"""`fermix doctor`: one line per check in the reference format, a summary, exit 1 on any FAIL."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.cli.doctor_checks import DoctorInput, run_checks, summary_line
from fermix_cli.core.migrations import all_migrations
from fermix_cli.core.paths import resolve_paths
from fermix_cli.core.search.engines import Engine
from fermix_cli.core.state import StateDB
from tests.conftest import Env

LATEST = len(all_migrations())
LINE = re.compile(r"^\[( OK |WARN|FAIL|N/A )\] (.{18}) (\S.*)$")
SUMMARY = re.compile(r"^(\d+) ok, (\d+) warning\(s\), (\d+) failure\(s\), (\d+) not applicable$")


def parse(stdout: str) -> tuple[dict[str, tuple[str, str]], str]:
    *lines, last = stdout.rstrip("\n").split("\n")
    checks: dict[str, tuple[str, str]] = {}
    for line in lines:
        m = LINE.match(line)
        assert m, f"bad doctor line: {line!r}"
        checks[m.group(2).strip()] = (m.group(1).strip(), m.group(3))
    assert SUMMARY.match(last), last
    return checks, last


def doctor(world: Env, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fermix_cli", "doctor", *args],
        env={**world.env, **(env or {})},
        cwd=world.project,
        capture_output=True,
        text=True,
        timeout=60,
    )


def status(world: Env, name: str, **kw: Any) -> tuple[str, str]:
    r = doctor(world, **kw)
    checks, _ = parse(r.stdout)
    return checks[name]


def test_fresh_install_is_healthy(world: Env) -> None:
    assert world.tool("file_write", {"path": "a.txt", "content": "x"}).code == 0
    r = doctor(world)
    assert r.returncode == 0, r.stdout + r.stderr
    checks, last = parse(r.stdout)
    expected = [
        "python",
        "python modules",
        "config",
        "home",
        "state.db",
        "sandbox",
        "providers",
        "mcp servers",
    ]
    assert list(checks)[: len(expected)] == expected
    assert {"git", "ripgrep"} <= set(checks)
    assert "chromium" not in checks  # no browser tool yet: nothing to check for
    for name in ("python modules", "config", "home", "sandbox", "job runs"):
        assert checks[name][0] == "OK", checks[name]
    n = SUMMARY.match(last)
    assert n and int(n.group(3)) == 0
    assert sum(int(x) for x in n.groups()) == len(checks)


def test_json_report(world: Env) -> None:
    r = doctor(world, "--json")
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert data["ok"] is True
    names = [c["name"] for c in data["checks"]]
    assert "state.db" in names and "sandbox" in names
    assert all(c["status"] in ("ok", "warn", "fail", "n/a") for c in data["checks"])
    assert sum(data["summary"].values()) == len(names)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[sandbox]\nmode = "sideways"\n', "sandbox.mode"),
        ("[sandbox\nmode = 1\n", "not valid TOML"),
        ('[mcp.servers.gh]\ncommand = "x"\nurl = "http://127.0.0.1:9"\n', "mcp.servers.gh"),
        ("[nonsense]\nx = 1\n", "nonsense"),
    ],
)
def test_bad_config_fails(world: Env, text: str, needle: str) -> None:
    world.fermix_home.mkdir(mode=0o700)
    (world.fermix_home / "config.toml").write_text(text)
    r = doctor(world)
    assert r.returncode == 1
    checks, _ = parse(r.stdout)
    assert checks["config"][0] == "FAIL" and needle in checks["config"][1]
    assert checks["sandbox"][0] == "N/A"
    data = json.loads(doctor(world, "--json").stdout)
    assert data["ok"] is False and data["summary"]["fail"] >= 1


@pytest.mark.parametrize(
    ("mode", "expected"), [(0o700, "OK"), (0o750, "WARN"), (0o755, "WARN"), (0o777, "FAIL")]
)
def test_home_permissions(world: Env, mode: int, expected: str) -> None:
    world.fermix_home.mkdir(mode=0o700)
    os.chmod(world.fermix_home, mode)
    tag, detail = status(world, "home")
    assert tag == expected, detail
    if expected != "OK":
        assert "chmod 700" in detail
    assert (doctor(world).returncode == 1) == (expected == "FAIL")


def test_loose_config_file_mode_warns(world: Env) -> None:
    world.fermix_home.mkdir(mode=0o700)
    cfg = world.fermix_home / "config.toml"
    cfg.write_text('[sandbox]\nmode = "strict"\n')
    os.chmod(cfg, 0o644)
    tag, detail = status(world, "home")
    assert tag == "WARN" and "config.toml" in detail and "chmod 600" in detail


def _state(world: Env) -> Path:
    paths = resolve_paths(str(world.fermix_home))
    paths.ensure_dir(paths.data_dir)
    db = StateDB(paths.state_db)
    with db.write() as conn:
        for i in range(400):
            conn.execute(
                "INSERT INTO tool_calls (id, session_id, tool, origin, trust, args_json, ok, started_at,"
                " duration_ms) VALUES (?,?,?,?,?,?,?,?,?)",
                (f"c{i}", "s", "file_read", "cli", "operator", "x" * 200, 1, "2024-01-01T00:00:00Z", 1.0),
            )
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return paths.state_db


def test_state_ok_then_corrupted(world: Env) -> None:
    path = _state(world)
    tag, detail = status(world, "state.db")
    assert tag == "OK" and f"schema {LATEST}/{LATEST}" in detail
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 6 * page
    for n in range(2, 6):  # scribble over b-tree pages, keep the header page intact
        data[n * page : n * page + 600] = os.urandom(600)
    path.write_bytes(bytes(data))
    r = doctor(world)
    assert r.returncode == 1
    checks, _ = parse(r.stdout)
    assert checks["state.db"][0] == "FAIL"


def test_state_not_a_database(world: Env) -> None:
    world.fermix_home.mkdir(mode=0o700)
    (world.fermix_home / "state.db").write_bytes(b"this is not sqlite" * 100)
    os.chmod(world.fermix_home / "state.db", 0o600)
    tag, detail = status(world, "state.db")
    assert tag == "FAIL" and "not a database" in detail


@pytest.mark.parametrize(("version", "expected"), [(99, "FAIL"), (0, "WARN")])
def test_state_schema_version(world: Env, version: int, expected: str) -> None:
    path = _state(world)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    tag, detail = status(world, "state.db")
    assert tag == expected and f"schema {version}/{LATEST}" in detail


def test_missing_granted_root_warns(world: Env) -> None:
    world.fermix_home.mkdir(mode=0o700)
    gone = world.home / "gone"
    (world.fermix_home / "config.toml").write_text(f'[sandbox]\nallowed_roots = ["{gone}", "/"]\n')
    tag, detail = status(world, "sandbox")
    assert tag == "WARN"
    assert "gone is not a directory" in detail and "refused grants" in detail


def test_bad_skill_roots_warn(world: Env) -> None:
    assert status(world, "skill roots")[0] == "OK"  # <home>/skills not made yet is fine
    world.fermix_home.mkdir(mode=0o700, exist_ok=True)
    regular = world.root / "a-file"
    regular.write_text("x")
    (world.fermix_home / "config.toml").write_text(
        f'[fermix_core.skills]\nroots = ["/nonexistent-skill-root", "{regular}", "rel/dir"]\n'
    )
    tag, detail = status(world, "skill roots")
    assert tag == "WARN"
    assert "/nonexistent-skill-root (" in detail and "does not exist" in detail
    assert f"{regular} (" in detail and "is not a directory" in detail
    assert f"{world.fermix_home / 'rel' / 'dir'} (" in detail


def test_a_skill_that_does_not_load_warns(world: Env) -> None:
    skills = world.fermix_home / "skills"
    for name, front in (
        ("fine", "name: fine\ndescription: f"),
        ("dated", "name: dated\ndescription: d\nupdated: 2024-02-30"),
    ):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(f"---\n{front}\n---\nbody\n")
    tag, detail = status(world, "skill roots")
    assert tag == "WARN", detail
    assert "1 skill(s) not loaded" in detail and f"{skills / 'dated' / 'SKILL.md'}:4: updated: " in detail
    r = doctor(world, "--json")
    check = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "skill roots")
    assert [e["code"] for e in check["data"]["errors"]] == ["invalid_frontmatter"]


def test_a_skill_md_hard_linked_to_a_protected_file_warns_as_the_tools_report_it(world: Env) -> None:
    """doctor loads skills through the sandbox, as skill_list does: a SKILL.md hard-linked to a protected
    file is a `protected_path` load error, never "loads fine", and its text is never shown."""
    secret = "sk-live-doctor-0123456789"
    auth = world.fermix_home / "auth.json"
    world.fermix_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    auth.write_text(f"---\nname: leak\ndescription: looks like a skill\n---\n{secret}\n")
    (world.fermix_home / "skills" / "leak").mkdir(parents=True)
    os.link(auth, world.fermix_home / "skills" / "leak" / "SKILL.md")
    listed = world.tool("skill_list")
    assert [e["code"] for e in listed.json()["errors"]] == ["protected_path"]  # what the tools say
    r = doctor(world, "--json")
    assert secret not in r.stdout + r.stderr
    check = next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "skill roots")
    assert check["status"] == "warn", check
    assert [(e["code"], e["path"]) for e in check["data"]["errors"]] == [
        ("protected_path", str(world.fermix_home / "skills" / "leak" / "SKILL.md"))
    ]
    assert "1 skill(s) not loaded" in check["detail"] and "protected file" in check["detail"]


def test_missing_optional_binaries(world: Env, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    r = doctor(world, env={"PATH": str(empty)})
    assert r.returncode == 0
    checks, _ = parse(r.stdout)
    assert checks["git"][0] == "WARN" and "git tools" in checks["git"][1]
    # The search engines are found beside the interpreter (installed with fermix), PATH or not.
    assert checks["ripgrep"][0] == "OK" and "beside the interpreter" in checks["ripgrep"][1]
    assert checks["ripgrep"][1].startswith("ripgrep 14.")
    assert checks["ast-grep"][0] == "OK" and checks["ast-grep"][1].startswith("ast-grep ")


def test_present_optional_binaries(world: Env, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "git"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    checks, _ = parse(doctor(world, env={"PATH": str(bin_dir)}).stdout)
    assert checks["git"][0] == "OK" and str(bin_dir) in checks["git"][1]


def test_mcp_server_command_missing(world: Env) -> None:
    world.fermix_home.mkdir(mode=0o700)
    (world.fermix_home / "config.toml").write_text(
        '[mcp.servers.gh]\ncommand = "no-such-mcp-server-binary"\n[mcp.servers.off]\ncommand = "nope"\nenabled = false\n'
    )
    tag, detail = status(world, "mcp servers")
    assert tag == "WARN" and "gh (no-such-mcp-server-binary)" in detail and "off (" not in detail


def test_checks_are_pure_functions_of_their_input(world: Env) -> None:
    inp = DoctorInput(
        paths=resolve_paths(str(world.fermix_home)),
        os_home=str(world.home),
        which=lambda _: None,
        engine=lambda _: None,
    )
    checks = run_checks(inp)
    by_name = {c.name: c for c in checks}
    assert by_name["git"].status == "warn"
    # A missing search engine is a failure that names the fix.
    assert (
        by_name["ripgrep"].status == "fail"
        and "pip install 'ripgrep>=14.1,<14.2'" in by_name["ripgrep"].detail
    )
    assert by_name["ast-grep"].status == "fail" and "ast-grep-cli" in by_name["ast-grep"].detail
    assert by_name["state.db"].status == "ok"
    assert not world.fermix_home.exists()  # the doctor creates nothing
    assert summary_line(checks).endswith("not applicable")
    found = DoctorInput(
        paths=resolve_paths(str(world.fermix_home)),
        os_home=str(world.home),
        engine=lambda name: Engine(name, f"/opt/{name}", "PATH"),
        engine_version=lambda path: f"{path.rsplit('/', 1)[-1]} 9.9",
    )
    rg_check = {c.name: c for c in run_checks(found)}["ripgrep"]
    assert rg_check.status == "ok" and rg_check.detail == "rg 9.9 at /opt/rg (on PATH)"
    for c in checks:
        assert LINE.match(c.line()), c.line()


@pytest.mark.parametrize(
    ("config", "env", "expected", "needle"),
    [
        ("", {}, "WARN", "only mock and echo"),
        ("", {"OPENAI_API_KEY": "sk-x"}, "OK", "openai from the environment"),
        ('[fermix_core.providers.openai]\ndefault_model = "m"\n', {}, "WARN", "no API key found for: openai"),
        ('[fermix_core.providers.openai]\ndefault_model = "m"\n', {"OPENAI_API_KEY": "sk"}, "OK", "openai"),
        ('[fermix_core.providers.work]\ntype = "anthropic"\napi_key_env = "WORK_KEY"\n', {}, "WARN", "work"),
        (
            '[fermix_core.providers.work]\ntype = "anthropic"\napi_key_env = "WORK_KEY"\n',
            {"WORK_KEY": "k"},
            "OK",
            "work",
        ),
        (
            '[fermix_core.providers.local]\ntype = "openai"\nbase_url = "http://127.0.0.1:8080/v1"\n',
            {},
            "OK",
            "local",
        ),
        ("[fermix_core.providers.mock]\n", {}, "OK", "mock"),
    ],
)
def test_providers(world: Env, config: str, env: dict[str, str], expected: str, needle: str) -> None:
    world.fermix_home.mkdir(mode=0o700)
    (world.fermix_home / "config.toml").write_text(config)
    clean = {k: "" for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "WORK_KEY")}
    tag, detail = status(world, "providers", env={**clean, **env})
    assert tag == expected and needle in detail, detail


def test_a_home_that_is_a_file_fails_the_home_check(world: Env) -> None:
    home_file = world.root / "homefile"
    home_file.write_text("")
    r = doctor(world, env={"FERMIX_HOME": str(home_file)})
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    checks, _ = parse(r.stdout)
    tag, detail = checks["home"]
    assert tag == "FAIL" and f"{home_file} is not a directory" in detail and "FERMIX_HOME" in detail
    for name in ("state.db", "reminders", "job runs", "agent runs"):
        assert checks[name][0] == "N/A", (name, checks[name])
        assert "see the home check" in checks[name][1]


def test_checks_that_read_state_db_say_when_they_could_not(world: Env) -> None:
    world.fermix_home.mkdir(mode=0o700)
    (world.fermix_home / "state.db").write_bytes(b"this is not sqlite" * 100)
    os.chmod(world.fermix_home / "state.db", 0o600)
    checks, _ = parse(doctor(world).stdout)
    assert checks["state.db"][0] == "FAIL"
    for name in ("reminders", "job runs", "agent runs"):
        tag, detail = checks[name]
        assert tag == "N/A" and "could not be read" in detail and "not a database" in detail, name


def test_a_state_db_without_the_tables_yet_reads_as_nothing_recorded(world: Env) -> None:
    world.fermix_home.mkdir(mode=0o700)
    conn = sqlite3.connect(world.fermix_home / "state.db")
    conn.execute("CREATE TABLE unrelated (x)")
    conn.close()
    os.chmod(world.fermix_home / "state.db", 0o600)
    checks, _ = parse(doctor(world).stdout)
    for name in ("reminders", "job runs", "agent runs"):
        assert checks[name][0] == "OK", (name, checks[name])
