"""A config.toml that cannot be read (bad UTF-8, nested too deeply, a FIFO) fails closed and fast, never exit 4."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Env


def _bad_utf8(p: Path) -> None:
    p.write_bytes(b'[sandbox]\nmode = "\xff\xfe"\n')


def _deep_arrays(p: Path) -> None:
    p.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")


def _deep_inline_tables(p: Path) -> None:
    p.write_text("a = " + "{b = " * 2000 + "1" + "}" * 2000 + "\n")


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _directory(p: Path) -> None:
    p.mkdir()


BAD_CONFIGS: dict[str, Callable[[Path], None]] = {
    "bad-utf8": _bad_utf8,
    "deep-arrays": _deep_arrays,
    "deep-inline-tables": _deep_inline_tables,
    "fifo": _fifo,
    "directory": _directory,
}

COMMANDS: list[tuple[str, ...]] = [
    ("tool", "find", "--json", '{"query":"x"}'),
    ("tool", "tool_help", "--json", '{"name":"find"}'),
    ("jobs", "run"),
    ("config", "get"),
    ("config", "set", "sandbox.mode", "open"),
    ("sandbox", "status"),
    ("doctor",),
    ("jobs", "add", "nightly", "--schedule", "every 15 minutes", "--command", "true"),
    ("jobs",),
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: "-".join(a[:2]))
@pytest.mark.parametrize("kind", sorted(BAD_CONFIGS))
def test_unreadable_config_fails_closed(world: Env, kind: str, argv: tuple[str, ...]) -> None:
    world.fermix_home.mkdir(parents=True)
    BAD_CONFIGS[kind](world.fermix_home / "config.toml")
    r = world.run(*argv, timeout=30)  # a FIFO must not make it wait for a writer
    assert r.code in (0, 1, 2), (r.code, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    if argv[0] == "tool" and argv[1] != "tool_help":
        assert r.code == 2 and '"invalid_config"' in r.stderr, r.stderr
