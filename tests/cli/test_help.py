"""`--help` of every command: plain text that keeps what the docstring says, values named, not typed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from fermix_cli.cli.app import command, run_app
from tests.conftest import Env


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
        if not getattr(sub, "hidden", False):
            yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(command()))


def test_the_tree_is_the_whole_cli() -> None:
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"", "mcp servers", "grant path", "config set", "jobs add", "inbox"} <= paths


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) or "fermix" for p, _ in COMMANDS])
def test_help_keeps_bracketed_text_and_names_values(
    path: tuple[str, ...], cmd: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app([*path, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # wrapping may split a line anywhere
    docstring = " ".join((cmd.help or "").split())
    for bracketed in re.findall(r"\[[^\]\s]+\]", docstring):  # [mcp.servers.NAME], [sandbox], ...
        assert bracketed in out, f"fermix {' '.join(path)} --help lost {bracketed}"
    assert not re.search(r"--[\w-]+ <(str|int|float|bool|list\[str\])>", out), out
    assert "<bool>" not in out


HEAVY = ("typer", "click", "rich", "pydantic", "httpx", "zoneinfo")


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        (["--version"], "fermix "),
        (["tool", "list", "--json"], '"name"'),
        (["--help"], "Usage: fermix [OPTIONS] COMMAND"),
        (["--home", "/tmp/x", "-h"], "Commands:"),
    ],
)
def test_lines_to_print_load_no_heavy_module(world: Env, argv: list[str], expect: str) -> None:
    result, loaded = world.imports_of(argv, HEAVY)
    assert result.code == 0, result.stderr
    assert expect in result.stdout
    assert loaded == []


def test_version_reads_the_same_on_both_paths(capsys: pytest.CaptureFixture[str]) -> None:
    from fermix_cli import __version__
    from fermix_cli.__main__ import main

    assert main(["--version"]) == 0
    assert run_app(["--version"]) == 0
    assert capsys.readouterr().out == f"fermix {__version__}\n" * 2


def test_tool_help_lists_the_tools(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(["tool", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in ("file_read", "grep", "event_store", "memory_store"):
        assert f" {name}," in out or f" {name}." in out


def test_an_unknown_flag_names_the_tool_to_ask_for_help(world: Env) -> None:
    r = world.run("tool", "file_read", "--bogus", "1")
    assert r.code == 2
    assert r.error()["message"] == "unknown flag --bogus. Run: fermix tool file_read --help"


def test_root_help_is_the_typer_help_on_both_paths(
    world: Env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The generated copy equals what Typer prints at 80 columns; a narrower terminal gets live Typer help."""
    from fermix_cli.__main__ import main
    from fermix_cli.cli.roothelp import ROOT_HELP

    monkeypatch.setenv("COLUMNS", "80")
    assert run_app(["--help"]) == 0
    assert capsys.readouterr().out == ROOT_HELP
    assert main(["--help"]) == 0
    assert capsys.readouterr().out == ROOT_HELP

    env = {**world.env, "COLUMNS": "60"}
    result, loaded = world.imports_of(["--help"], ["typer"], env=env)
    assert result.code == 0, result.stderr
    assert loaded == ["typer"]
    assert max(len(line) for line in result.stdout.splitlines()) <= 60
