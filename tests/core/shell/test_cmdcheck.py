"""bash's command_not_found preflight: which names are judged, and which are left to the shell."""

from __future__ import annotations

import os

import pytest

from fermix_cli.core.shell.cmdcheck import missing_commands

PATH = os.environ.get("PATH", "/usr/bin:/bin")

ROWS = [
    ("nosuchprog-1 --version", ["nosuchprog-1"]),
    ("ls | nosuchprog-1 | wc -l", ["nosuchprog-1"]),
    ("FOO=1 BAR=2 nosuchprog-1 x", ["nosuchprog-1"]),
    ("x=$(nosuchprog-1)", ["nosuchprog-1"]),
    ("echo $(nosuchprog-1)", ["nosuchprog-1"]),
    ("time nosuchprog-1", ["nosuchprog-1"]),
    ("! nosuchprog-1", ["nosuchprog-1"]),
    ("{ nosuchprog-1; }", ["nosuchprog-1"]),
    ("(cd /tmp && nosuchprog-1)", ["nosuchprog-1"]),
    ("nosuchprog-1 && nosuchprog-2; nosuchprog-1", ["nosuchprog-1", "nosuchprog-2"]),
    ("for i in 1 2; do nosuchprog-1 $i; done", ["nosuchprog-1"]),
    # left to the shell
    ("ls -la", []),
    ("echo nosuchprog-1", []),
    ('echo "$(printf x)"', []),
    ("cd /tmp; pwd; export A=1; unset A; set -e; :; true; [ -f x ] || exit 0", []),
    ("$CMD arg", []),
    ("./build.sh", []),
    ("/opt/tool/bin/x", []),
    ("A=1 B=2", []),
    ("f() { nosuchprog-1; }; f", []),
    ("command -v rg && rg x || grep x", []),
    ("nosuchprog-1 || echo fallback", []),
    ("if command -v nosuchprog-1; then nosuchprog-1; fi", []),
    ("while false; do nosuchprog-1; done", []),
    ("case x in a) nosuchprog-1;; esac", []),
    ("echo 'unbalanced", []),
    ("ls *.py", []),
]


@pytest.mark.parametrize(("command", "missing"), ROWS)
def test_missing_commands(command: str, missing: list[str]) -> None:
    assert missing_commands(command, PATH) == missing


def test_found_only_through_the_given_path(tmp_path) -> None:
    prog = tmp_path / "my-own-tool"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    assert missing_commands("my-own-tool", PATH) == ["my-own-tool"]
    assert missing_commands("my-own-tool", f"{tmp_path}:{PATH}") == []
