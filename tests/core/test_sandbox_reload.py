"""Sandbox changes made while fermix runs: a long-lived context (an agent session, a chat server,
`--jsonl`) sees `fermix grant|revoke|sandbox mode` at its next tool call; a config that turns invalid
fails closed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.registry import default_registry
from tests.conftest import Env


@pytest.fixture
def granted(world: Env) -> Path:
    """A directory outside every root (and outside the home), with a file in it."""
    d = world.root / "elsewhere" / "g"
    d.mkdir(parents=True)
    (d / "f.txt").write_text("granted content\n")
    return d


def read(ctx: Any, path: Path) -> Any:
    return default_registry().invoke("file_read", {"path": str(path)}, ctx)


def config_text(world: Env) -> str:
    path = world.fermix_home / "config.toml"
    return path.read_text() if path.exists() else ""


# ----- a long-lived context sees changes at its next call ----------------------------------------


def test_a_revoke_from_another_process_reaches_a_running_context(world: Env, granted: Path) -> None:
    assert world.run("grant", "path", str(granted)).code == 0
    ctx = world.context(origin="interactive")
    try:
        assert read(ctx, granted / "f.txt")["content"] == "granted content"
        r = world.run("revoke", "path", str(granted))
        assert r.code == 0, r.stderr
        with pytest.raises(ToolError) as e:
            read(ctx, granted / "f.txt")
        assert e.value.code == "outside_root"
        # ... and a grant made while it runs is seen as well.
        assert world.run("grant", "path", str(granted)).code == 0
        assert read(ctx, granted / "f.txt")["content"] == "granted content"
        # So is a change of mode: strict drops the launch cwd (the project) as a root.
        (world.project / "p.txt").write_text("project file")
        assert read(ctx, world.project / "p.txt")["content"] == "project file"
        assert world.run("sandbox", "mode", "strict").code == 0
        with pytest.raises(ToolError) as e:
            read(ctx, world.project / "p.txt")
        assert e.value.code == "outside_root"
    finally:
        ctx.close()


def test_a_derived_context_sees_the_change_too(world: Env, granted: Path) -> None:
    """A session's run context is derived from its base and keeps the base's config object."""
    assert world.run("grant", "path", str(granted)).code == 0
    base = world.context(origin="interactive")
    try:
        base.sandbox  # noqa: B018 - built before the run context is derived, as Agent.open does
        run = base.derive(share_sandbox=True, record_calls=False)
        assert read(run, granted / "f.txt")["content"] == "granted content"
        assert world.run("revoke", "path", str(granted)).code == 0
        with pytest.raises(ToolError) as e:
            read(run, granted / "f.txt")
        assert e.value.code == "outside_root"
    finally:
        base.close()


def test_a_config_turned_invalid_fails_closed_until_fixed(world: Env, granted: Path) -> None:
    assert world.run("grant", "path", str(granted)).code == 0
    good = config_text(world)
    ctx = world.context(origin="interactive")
    try:
        assert read(ctx, granted / "f.txt")["content"] == "granted content"
        (world.fermix_home / "config.toml").write_text(good + '\n[sandbox.env]\nmode = "everything"\n')
        for _ in range(2):  # the old, wider sandbox is never used again: every call fails, typed
            with pytest.raises(ToolError) as e:
                read(ctx, granted / "f.txt")
            assert e.value.code == "invalid_config"
            assert "sandbox.env.mode" in e.value.message
        (world.fermix_home / "config.toml").write_text(good)
        assert read(ctx, granted / "f.txt")["content"] == "granted content"
    finally:
        ctx.close()


def test_unchanged_config_is_not_read_again(world: Env, granted: Path) -> None:
    assert world.run("grant", "path", str(granted)).code == 0
    ctx = world.context(origin="interactive")
    try:
        read(ctx, granted / "f.txt")
        config, sandbox = ctx.config, ctx.sandbox
        read(ctx, granted / "f.txt")
        assert ctx.config is config and ctx.sandbox is sandbox
    finally:
        ctx.close()


def test_jsonl_calls_see_a_revoke_between_lines(world: Env, granted: Path) -> None:
    """`fermix tool NAME --jsonl` is one process, one context, for every line."""
    assert world.run("grant", "path", str(granted)).code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "fermix_cli", "tool", "file_read", "--jsonl"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=world.env,
        cwd=world.project,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        line = json.dumps({"path": str(granted / "f.txt")}) + "\n"
        proc.stdin.write(line)
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        assert first["ok"] is True
        assert world.run("revoke", "path", str(granted)).code == 0
        proc.stdin.write(line)
        proc.stdin.close()
        second = json.loads(proc.stdout.readline())
        assert second["ok"] is False and second["error"]["code"] == "outside_root"
    finally:
        proc.wait(timeout=60)
