"""request_directory_access and `fermix sandbox confirm|deny`: the pending-grant token lifecycle."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.spawned import is_fermix_cmdline, spawned_by_fermix
from tests.conftest import REPO, Env, Result


def cli(world: Env, *args: str, env: dict[str, str] | None = None) -> Result:
    p = subprocess.run(
        [sys.executable, "-m", "fermix_cli", *args],
        capture_output=True,
        text=True,
        cwd=world.project,
        env={**world.env, **(env or {})},
        timeout=60,
    )
    return Result(p.returncode, p.stdout, p.stderr)


def allowed_roots(world: Env) -> list[str]:
    import tomllib

    path = world.fermix_home / "config.toml"
    if not path.exists():
        return []
    return list(tomllib.loads(path.read_text()).get("sandbox", {}).get("allowed_roots", []))


def rows(world: Env) -> list[dict[str, Any]]:
    db = world.fermix_home / "state.db"
    if not db.exists():
        return []
    c = sqlite3.connect(db)
    c.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in c.execute("SELECT * FROM directory_access_requests ORDER BY created_at")]
    except sqlite3.OperationalError:
        return []
    finally:
        c.close()


@pytest.fixture
def target(world: Env) -> Path:
    d = world.home / "other-project"
    d.mkdir()
    (d / "notes.md").write_text("hello\n")
    return d


def request(world: Env, path: str, reason: str = "compare configs") -> Result:
    return cli(
        world, "tool", "request_directory_access", "--json", json.dumps({"path": path, "reason": reason})
    )


def test_request_then_confirm_persists_the_grant(world: Env, target: Path) -> None:
    before = cli(world, "tool", "file_read", "--json", json.dumps({"path": str(target / "notes.md")}))
    assert before.code == 3 and "request_directory_access" in before.error()["message"]
    r = request(world, str(target))
    assert r.code == 0, r.stderr
    out = r.json()
    token = out["token"]
    assert out["status"] == "pending" and out["path"] == str(target) and out["expires_in_s"] == 60
    assert len(token) == 10 and all(c in "0123456789abcdef" for c in token)
    assert f"Approve with: fermix sandbox confirm {token} (expires in 60s)" in out["message"]
    assert "Reason: compare configs" in out["message"] and str(target) in out["message"]
    assert out["config_change"] == {"section": "sandbox", "key": "allowed_roots", "add": str(target)}
    assert allowed_roots(world) == []  # nothing granted yet
    c = cli(world, "sandbox", "confirm", token)
    assert c.code == 0, c.stderr
    assert c.stdout == f"granted: {target}\n"
    assert allowed_roots(world) == [str(target)]
    assert rows(world)[0]["status"] == "confirmed"
    after = cli(world, "tool", "file_read", "--json", json.dumps({"path": str(target / "notes.md")}))
    assert after.code == 0 and after.json()["content"] == "hello"


def test_tokens_are_single_use(world: Env, target: Path) -> None:
    token = request(world, str(target)).json()["token"]
    assert cli(world, "sandbox", "confirm", token).code == 0
    again = cli(world, "sandbox", "confirm", token)
    assert again.code == 1 and again.error()["code"] == "token_used"
    denied = cli(world, "sandbox", "deny", token)
    assert denied.code == 1 and denied.error()["code"] == "token_used"


def test_deny_discards_the_request(world: Env, target: Path) -> None:
    token = request(world, str(target)).json()["token"]
    d = cli(world, "sandbox", "deny", token)
    assert d.code == 0 and d.stdout == f"denied: {target} (token {token})\n"
    c = cli(world, "sandbox", "confirm", token)
    assert c.code == 1 and c.error()["code"] == "token_used"
    assert allowed_roots(world) == []
    assert rows(world)[0]["status"] == "denied"


def test_unknown_token(world: Env) -> None:
    r = cli(world, "sandbox", "confirm", "0123456789")
    assert r.code == 1 and r.error()["code"] == "not_found"


def test_expiry_after_sixty_seconds(world: Env, target: Path, invoke) -> None:
    from fermix_cli.tools.access.requests import confirm_request

    t0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    token = invoke("request_directory_access", {"path": str(target), "reason": "r"}, clock=lambda: t0)[
        "token"
    ]
    ctx = world.context(clock=lambda: t0 + timedelta(seconds=60))
    try:
        with pytest.raises(ToolError) as e:
            confirm_request(ctx, token)
    finally:
        ctx.close()
    assert e.value.code == "token_expired"
    assert rows(world)[0]["status"] == "expired"
    assert allowed_roots(world) == []
    # A second token, confirmed one second before the end of its life, works.
    token2 = invoke("request_directory_access", {"path": str(target), "reason": "r"}, clock=lambda: t0)[
        "token"
    ]
    assert token2 != token
    ctx = world.context(clock=lambda: t0 + timedelta(seconds=59))
    try:
        req, added = confirm_request(ctx, token2)
    finally:
        ctx.close()
    assert added and req.path == str(target) and allowed_roots(world) == [str(target)]


def test_expired_token_through_the_cli(world: Env, target: Path, invoke) -> None:
    long_ago = datetime.now(UTC) - timedelta(seconds=61)
    token = invoke("request_directory_access", {"path": str(target), "reason": "r"}, clock=lambda: long_ago)[
        "token"
    ]
    r = cli(world, "sandbox", "confirm", token)
    assert r.code == 1 and r.error()["code"] == "token_expired"
    assert allowed_roots(world) == []


def test_duplicate_request_returns_the_pending_token(world: Env, target: Path, invoke) -> None:
    first = invoke("request_directory_access", {"path": str(target), "reason": "r"})
    second = invoke("request_directory_access", {"path": str(target) + "/", "reason": "again"})
    assert second["status"] == "already_pending" and second["token"] == first["token"]
    assert f"already pending with token {first['token']}" in second["message"]
    other_session = invoke("request_directory_access", {"path": str(target), "reason": "r"}, session_id="s2")
    assert other_session["token"] != first["token"]
    assert len(rows(world)) == 2


def test_already_allowed(world: Env, invoke) -> None:
    (world.project / "sub").mkdir()
    out = invoke("request_directory_access", {"path": "sub", "reason": "r"})
    assert out == {
        "status": "already_allowed",
        "path": str(world.project / "sub"),
        "message": f"Access to {world.project / 'sub'} is already allowed — no approval needed; retry the operation.",
    }
    assert rows(world) == []


@pytest.mark.parametrize(
    "path",
    ["/", "~", "@HOME", "@FERMIX_HOME", "~/.ssh", "/etc", "/usr/lib", "/proc", "/dev", "@ROOT", "@HOME/.aws"],
)
def test_unsafe_roots_are_refused_up_front(world: Env, path: str) -> None:
    for d in (".ssh", ".aws"):
        (world.home / d).mkdir(exist_ok=True)
    world.fermix_home.mkdir(exist_ok=True)
    path = path.replace("@HOME", str(world.home)).replace("@FERMIX_HOME", str(world.fermix_home))
    path = path.replace("@ROOT", str(world.root))  # an ancestor of the home
    r = request(world, path)
    assert r.code == 3, r.stderr
    assert r.error()["code"] == "unsafe_root"
    assert rows(world) == []


def test_not_a_directory(world: Env, target: Path) -> None:
    r = request(world, str(target / "notes.md"))
    assert r.code == 1 and r.error()["code"] == "not_found"
    r = request(world, str(target / "missing"))
    assert r.code == 1 and r.error()["code"] == "not_found"


def test_blank_reason(world: Env, target: Path) -> None:
    r = request(world, str(target), reason="  ")
    assert r.code == 2 and r.error()["code"] == "missing_reason"


@pytest.mark.parametrize(
    "ctx_kw",
    [
        {"origin": "scheduled"},
        {"origin": "subagent", "depth": 1},
        {"origin": "skill"},
        {"origin": "mcp"},
        {"origin": "interactive", "attended": False},
        {"origin": "cli", "attended": False},
        {"origin": "interactive", "depth": 1},
        {"origin": "interactive", "job_id": "job_1"},
    ],
)
def test_model_driven_calls_are_refused(world: Env, target: Path, invoke, ctx_kw: dict[str, Any]) -> None:
    with pytest.raises(ToolError) as e:
        invoke("request_directory_access", {"path": str(target), "reason": "r"}, **ctx_kw)
    assert e.value.code == "not_attended"
    assert e.value.message == "directory access requests need an attended owner conversation"
    assert e.value.exit_class == 3
    assert rows(world) == []


def test_guest_is_refused(world: Env, target: Path) -> None:
    r = cli(
        world,
        "--trust",
        "guest",
        "tool",
        "request_directory_access",
        "--json",
        json.dumps({"path": str(target), "reason": "r"}),
    )
    assert r.code == 3 and r.error()["code"] == "policy_denied"


@pytest.mark.parametrize("answer", [True, False])
def test_interactive_session_asks_the_owner_on_the_spot(
    world: Env, target: Path, invoke, answer: bool
) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def confirm(question: str, details: dict[str, Any]) -> bool:
        asked.append((question, details))
        return answer

    out = invoke(
        "request_directory_access",
        {"path": str(target), "reason": "compare configs"},
        origin="interactive",
        extras={"confirm": confirm},
    )
    assert asked == [
        (
            f"Allow fermix to access {target}?",
            {"reason": "compare configs", "config change": f'[sandbox] allowed_roots += ["{target}"]'},
        )
    ]
    assert out["status"] == ("granted" if answer else "denied")
    assert allowed_roots(world) == ([str(target)] if answer else [])
    assert [r["status"] for r in rows(world)] == ["confirmed" if answer else "denied"]
    reread = invoke("file_read", {"path": str(target / "notes.md")}) if answer else None
    assert reread is None or reread["content"] == "hello"


def test_agent_repl_confirm_and_deny(world: Env, target: Path) -> None:
    first = request(world, str(target)).json()["token"]
    second_dir = world.home / "second"
    second_dir.mkdir()
    second = request(world, str(second_dir)).json()["token"]
    r = world.run("agent", "-m", "echo", input=f"/confirm {first}\n/deny {second}\n/confirm nope\n/exit\n")
    assert r.code == 0, r.stderr
    assert f"granted: {target}" in r.stdout and f"denied: {second_dir}" in r.stdout
    assert "not_found" in r.stdout or "unknown" in r.stdout.lower()
    assert allowed_roots(world) == [str(target)]


def test_interactive_owner_turn_may_ask(world: Env, target: Path, invoke) -> None:
    out = invoke("request_directory_access", {"path": str(target), "reason": "r"}, origin="interactive")
    assert out["status"] == "pending"
    assert (
        f"/confirm {out['token']}" in out["message"]
        and f"fermix sandbox confirm {out['token']}" in out["message"]
    )


def test_unsafe_at_confirm_time_is_refused(world: Env, target: Path) -> None:
    """The grant is checked again when confirmed: a directory made protected since is refused."""
    token = request(world, str(target)).json()["token"]
    # Replace the directory by a symlink into ~/.ssh: the stored path now resolves to a protected place.
    (world.home / ".ssh").mkdir()
    target.rename(world.home / "moved")
    target.symlink_to(world.home / ".ssh")
    r = cli(world, "sandbox", "confirm", token)
    assert r.code == 3 and r.error()["code"] == "unsafe_root"
    assert allowed_roots(world) == []
    assert rows(world)[0]["status"] == "pending"


# ----- confirm from a process fermix started ---------------------------------------------------


def test_confirm_from_a_fermix_shell_is_refused(world: Env, target: Path) -> None:
    world.fermix_home.mkdir(exist_ok=True)
    (world.fermix_home / "config.toml").write_text('[sandbox.env]\nallow = ["PYTHONPATH", "FERMIX_HOME"]\n')
    token = request(world, str(target)).json()["token"]
    attempts = [
        f"{sys.executable} -m fermix_cli sandbox confirm {token}",
        f"env -u FERMIX_SPAWNED {sys.executable} -m fermix_cli sandbox confirm {token}",
        f"sh -c 'unset FERMIX_SPAWNED; {sys.executable} -m fermix_cli sandbox confirm {token}; true'",
        f"env -u FERMIX_SPAWNED sh -c '{sys.executable} -m fermix_cli sandbox confirm {token}; true'",
    ]
    for command in attempts:
        r = cli(world, "tool", "shell", "--json", json.dumps({"command": command}))
        assert "not_attended" in (r.stdout + r.stderr), command
        assert "refuses to run from a process fermix started" in (r.stdout + r.stderr)
    assert allowed_roots(world) == [] and rows(world)[0]["status"] == "pending"
    # The same token still works from the owner's own terminal.
    assert cli(world, "sandbox", "confirm", token).code == 0


def test_spawned_detection() -> None:
    assert spawned_by_fermix({"FERMIX_SPAWNED": "x"})
    assert not spawned_by_fermix({}, pid=os.getpid())  # pytest is not a fermix process


def test_the_owners_timeout_wrapper_is_not_a_fermix_ancestor(tmp_path: Path) -> None:
    """`timeout 30 fermix tool ...` typed by the owner: the `timeout` process names fermix in its
    arguments but is not fermix, so the call is not taken for one fermix started."""
    fake = tmp_path / "fermix"  # a `fermix` on the command line that becomes the checking process
    check = "from fermix_cli.core.spawned import spawned_by_fermix; print(spawned_by_fermix())"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -c '{check}'\n")
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "FERMIX_SPAWNED"}
    env["PYTHONPATH"] = str(REPO)
    for wrapper in (["timeout", "30"], ["nice", "-n", "1", "timeout", "30"]):
        out = subprocess.run([*wrapper, str(fake)], capture_output=True, text=True, env=env, timeout=60)
        assert out.stdout.strip() == "False", (wrapper, out.stderr)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/usr/bin/python3", "/usr/local/bin/fermix", "tool", "shell"], True),
        (["fermix", "agent"], True),
        (["python3", "-m", "fermix_cli", "tool", "shell"], True),
        (["python3", "/opt/fermix.pyz", "tool", "shell"], True),
        (["python3", str(REPO / "fermix_cli" / "__main__.py")], True),
        (["python3", "-m", "pytest", "tests"], False),
        (["bash", "-c", "echo fermix"], False),
        (["vim", "fermix_notes.txt"], False),
        (["/usr/bin/python3.12", "-I", "-X", "importtime", "-m", "fermix_cli", "agent"], True),
        (["python3", "-Im", "fermix_cli"], True),
        (["/opt/venv/bin/fermix.pyz", "tool", "file_read"], True),
        # The owner's own wrappers around a fermix call are not fermix: only the program itself counts.
        (["/usr/bin/time", "-f", "%es", "fermix", "tool", "computer_use"], False),
        (["timeout", "30", "fermix", "tool", "computer_use"], False),
        (["nice", "fermix.pyz", "tool"], False),
        (["python3", "-c", "import os; os.system('fermix')", "fermix"], False),
        (["python3", "-X", "fermix", "script.py"], False),
    ],
)
def test_fermix_command_lines(argv: list[str], expected: bool) -> None:
    assert is_fermix_cmdline(argv) is expected


# ----- the grant reaches the context that asked; blocked roots; spawned callers -------------------


def test_granted_then_the_retry_in_the_same_context_works(world: Env, target: Path) -> None:
    """The message says "retry": the retry in the same session (the same context) must then be allowed."""
    from fermix_cli.core.registry import default_registry

    registry = default_registry()
    ctx = world.context(origin="interactive", extras={"confirm": lambda question, details: True})
    try:
        with pytest.raises(ToolError) as e:
            registry.invoke("file_read", {"path": str(target / "notes.md")}, ctx)
        assert e.value.code == "outside_root"
        out = registry.invoke("request_directory_access", {"path": str(target), "reason": "r"}, ctx)
        assert out["status"] == "granted" and "retry the operation" in out["message"]
        assert registry.invoke("file_read", {"path": str(target / "notes.md")}, ctx)["content"] == "hello"
    finally:
        ctx.close()


def test_a_directory_under_a_blocked_root_is_refused_up_front_and_at_confirm(
    world: Env, target: Path
) -> None:
    world.fermix_home.mkdir(exist_ok=True)
    token = request(world, str(target)).json()["token"]  # asked before the block
    (world.fermix_home / "config.toml").write_text(f'[sandbox]\nblocked_roots = ["{target}"]\n')
    r = request(world, str(target))
    assert r.code == 3 and r.error()["code"] == "blocked_root"
    c = cli(world, "sandbox", "confirm", token)
    assert c.code == 3 and c.error()["code"] == "blocked_root"
    assert allowed_roots(world) == []
    assert [row["status"] for row in rows(world)] == ["pending"]


def test_a_process_fermix_spawned_cannot_ask(world: Env, target: Path) -> None:
    r = cli(
        world,
        "tool",
        "request_directory_access",
        "--json",
        json.dumps({"path": str(target), "reason": "r"}),
        env={"FERMIX_SPAWNED": "1"},
    )
    assert r.code == 3, r.stderr
    err = r.error()
    assert err["code"] == "not_attended" and err["details"]["spawned"] is True
    assert "fermix grant path DIR" in err["message"]
    assert rows(world) == []
    # Nor is the tool offered there; from the owner's own terminal it is.
    listed = cli(world, "tool", "list", "--json", env={"FERMIX_SPAWNED": "1"}).json()
    assert "request_directory_access" not in [t["name"] for t in listed]
    assert "request_directory_access" in [t["name"] for t in cli(world, "tool", "list", "--json").json()]
