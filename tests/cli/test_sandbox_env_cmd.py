"""`fermix sandbox env [allow|deny|unset|set|get]`, run as the real CLI against a real config.toml."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from typing import Any

from tests.conftest import Env, Result

MINE = '# my settings\n[sandbox]\nmode = "standard"  # chosen on purpose\n'


def env_table(world: Env) -> dict[str, Any]:
    data = tomllib.loads((world.fermix_home / "config.toml").read_text())
    return data.get("sandbox", {}).get("env", {})  # type: ignore[no-any-return]


def shell_env(world: Env, name: str, **extra: str) -> Result:
    """What a shell command run by the `shell` tool receives for `name`."""
    proc = subprocess.run(
        [sys.executable, "-m", "fermix_cli", "tool", "shell", "--json", f'{{"command":"printenv {name}"}}'],
        capture_output=True,
        text=True,
        cwd=world.project,
        env={**world.env, **extra},
        timeout=60,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def test_allow_deny_unset_edit_config_toml_and_keep_its_comments(world: Env) -> None:
    world.fermix_home.mkdir()
    (world.fermix_home / "config.toml").write_text(MINE)
    r = world.run("sandbox", "env", "allow", "GH_TOKEN")
    assert (r.code, r.stdout) == (0, "allowed: GH_TOKEN\n")
    assert (
        world.run("sandbox", "env", "allow", "GH_TOKEN").stdout
        == "GH_TOKEN is already allowed; nothing changed\n"
    )
    assert world.run("sandbox", "env", "deny", "AWS_SECRET_ACCESS_KEY").code == 0
    assert env_table(world) == {"allow": ["GH_TOKEN"], "deny": ["AWS_SECRET_ACCESS_KEY"]}
    # deny takes a name off the allow list, and allow off the deny list: the last word wins.
    r = world.run("sandbox", "env", "deny", "GH_TOKEN", "--json")
    assert r.json() == {"name": "GH_TOKEN", "changed": ["allow", "deny"], "message": "denied: GH_TOKEN"}
    assert world.run("sandbox", "env", "allow", "GH_TOKEN").stdout == "allowed: GH_TOKEN (no longer denied)\n"
    assert env_table(world) == {"allow": ["GH_TOKEN"], "deny": ["AWS_SECRET_ACCESS_KEY"]}
    text = (world.fermix_home / "config.toml").read_text()
    assert text.startswith(MINE)  # comments and layout kept
    assert (
        world.run("sandbox", "env", "unset", "AWS_SECRET_ACCESS_KEY").stdout
        == "unset: AWS_SECRET_ACCESS_KEY\n"
    )
    r = world.run("sandbox", "env", "unset", "NEVER_SET")
    assert (r.code, r.stdout) == (0, "NEVER_SET was not configured in [sandbox.env]; nothing changed\n")
    assert env_table(world) == {"allow": ["GH_TOKEN"], "deny": []}
    listing = world.run("sandbox", "env", "--json").json()
    assert listing["mode"] == "list" and "PATH" in listing["base"]
    assert listing["names"] == [{"name": "GH_TOKEN", "status": "allowed", "source": "env"}]
    explain = world.run("sandbox", "explain").stdout
    assert "env: mode list; allowed names: GH_TOKEN" in explain


def test_an_allowed_name_reaches_commands_and_a_denied_one_does_not(world: Env) -> None:
    assert shell_env(world, "FERMIX_T_VAR", FERMIX_T_VAR="abc").stdout.strip() == ""  # not passed by default
    assert world.run("sandbox", "env", "allow", "FERMIX_T_VAR").code == 0
    r = shell_env(world, "FERMIX_T_VAR", FERMIX_T_VAR="abc")
    assert r.code == 0 and "abc" in r.stdout
    assert world.run("sandbox", "env", "deny", "FERMIX_T_VAR").code == 0
    assert "abc" not in shell_env(world, "FERMIX_T_VAR", FERMIX_T_VAR="abc").stdout


def test_set_takes_the_value_from_a_helper_and_get_masks_it(world: Env) -> None:
    r = world.run(
        "sandbox", "env", "set", "TOKEN_X", "--timeout-ms", "2000", "--", "printf", "s3cret-%s", "value"
    )
    assert (r.code, r.stdout) == (0, "set: TOKEN_X from helper printf s3cret-%s value\n")
    assert env_table(world) == {
        "vars": {
            "TOKEN_X": {
                "source": "command",
                "command": "printf",
                "args": ["s3cret-%s", "value"],
                "timeout_ms": 2000,
            }
        }
    }
    r = world.run("sandbox", "env", "get", "TOKEN_X")
    assert (r.code, r.stdout) == (0, "TOKEN_X=***\n")
    assert world.run("sandbox", "env", "get", "TOKEN_X", "--json").json() == {
        "name": "TOKEN_X",
        "value": "***",
        "masked": True,
    }
    r = world.run("sandbox", "env", "get", "TOKEN_X", "--unsafe-print")
    assert (r.code, r.stdout) == (0, "TOKEN_X=s3cret-value\n")
    assert "printf" in world.run("sandbox", "env").stdout  # the listing names the helper, never the value
    assert "s3cret-value" not in world.run("sandbox", "env").stdout


def test_get_says_why_a_name_has_no_value(world: Env) -> None:
    world.run("sandbox", "env", "allow", "UNSET_FOR_SURE_X")
    world.run("sandbox", "env", "deny", "DENIED_X")
    world.run("sandbox", "env", "set", "BROKEN_X", "--", "false")
    cases = [
        ("UNSET_FOR_SURE_X", "missing_env", "not set in fermix's environment"),
        ("BROKEN_X", "missing_env", "exited with code 1"),
        ("DENIED_X", "env_denied", "fermix sandbox env allow DENIED_X"),
        ("NOT_LISTED_X", "env_not_allowed", "fermix sandbox env allow NOT_LISTED_X"),
    ]
    for name, code, words in cases:
        r = world.run("sandbox", "env", "get", name)
        assert (r.code, r.error()["code"], r.stdout) == (1, code, ""), name
        assert words in r.error()["message"], name
    assert world.run("sandbox", "env", "get", "PATH").stdout == "PATH=***\n"  # a base name is always passed


def test_bad_names_and_who_may_change_it(world: Env) -> None:
    for args in (("allow", "1BAD"), ("deny", "A-B"), ("set", "A B", "--", "true"), ("get", "X=1")):
        r = world.run("sandbox", "env", *args)
        assert (r.code, r.error()["code"]) == (2, "invalid_env_name"), args
    assert world.run("sandbox", "env", "set", "NO_HELPER").code == 2
    r = world.run("--trust", "guest", "sandbox", "env", "allow", "GH_TOKEN")
    assert (r.code, r.error()["code"]) == (3, "policy_denied")
    # A command fermix started (a model's shell) cannot widen its own environment or print a secret.
    for args in (("allow", "GH_TOKEN"), ("get", "PATH", "--unsafe-print")):
        proc = subprocess.run(
            [sys.executable, "-m", "fermix_cli", "sandbox", "env", *args],
            capture_output=True,
            text=True,
            env={**world.env, "FERMIX_SPAWNED": "1"},
            timeout=60,
        )
        assert proc.returncode == 3 and '"not_attended"' in proc.stderr, args
    assert not (world.fermix_home / "config.toml").exists()
