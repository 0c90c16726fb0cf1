"""Fixtures for the harness tests: a world with the stand-in CLIs on PATH and coding agents approved."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.standin import install

POLL_S = 0.02


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(POLL_S)


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


class Harness:
    def __init__(self, world: Any, bin_dir: Path) -> None:
        self.world = world
        self.bin_dir = bin_dir
        self.contexts: list[Any] = []

    def configure(self, harness: str = "approved = true", extra: str = "") -> None:
        cfg = self.world.fermix_home / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(f"[fermix_core.harness]\n{harness}\n{extra}")

    def ctx(self, **kw: Any) -> Any:
        ctx = self.world.context(**kw)
        self.contexts.append(ctx)
        return ctx

    def call(self, name: str, args: dict[str, Any], **kw: Any) -> Any:
        from fermix_cli.core.registry import default_registry

        return default_registry().invoke(name, args, self.ctx(**kw))

    def fails(self, name: str, args: dict[str, Any], **kw: Any) -> Any:
        from fermix_cli.core.errors import ToolError

        with pytest.raises(ToolError) as e:
            self.call(name, args, **kw)
        return e.value

    def records(self) -> list[dict[str, Any]]:
        folder = self.world.home / "standin"
        if not folder.is_dir():
            return []
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]

    def record_of(self, vendor: str = "codex") -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            found = [r for r in self.records() if r["vendor"] == vendor]
            return found[-1] if found else None

        return wait_for(find)

    def run(self, run_id: str) -> dict[str, Any]:
        return self.call("get_coding_run", {"run_id": run_id})

    def settled(self, run_id: str, timeout: float = 30.0) -> dict[str, Any]:
        return wait_for(
            lambda: (r := self.run(run_id))["status"] not in ("starting", "running") and r, timeout
        )

    def rows(self) -> list[Any]:
        ctx = self.ctx()
        return list(ctx.state.query("SELECT * FROM coding_runs ORDER BY created_at"))

    def cleanup(self) -> None:
        for ctx in self.contexts:
            try:
                rows = ctx.state.query("SELECT pid FROM coding_runs WHERE pid IS NOT NULL")
            except Exception:
                rows = []
            for row in rows:
                with contextlib.suppress(OSError):
                    os.killpg(row["pid"], signal.SIGKILL)
            ctx.close()
        for r in self.records():
            for pid in (r.get("grandchild"), r["pid"]):
                if pid:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def harness(world: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    bin_dir = tmp_path / "bin"
    install(bin_dir, sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("HOME", str(world.home))
    monkeypatch.delenv("FERMIX_SPAWNED", raising=False)
    h = Harness(world, bin_dir)
    h.configure()
    yield h
    h.cleanup()
