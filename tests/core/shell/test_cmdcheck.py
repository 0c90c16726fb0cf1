"""bash's command_not_found preflight: which names are judged, and which are left to the shell."""

from __future__ import annotations

import os
from pathlib import Path

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
    # a guard: the name it looks up may rightly be missing
    ("command -v nosuchprog-1 >/dev/null && nosuchprog-1 --run", []),
    ("command -V nosuchprog-1 && nosuchprog-1", []),
    ("type nosuchprog-1 >/dev/null 2>&1 && nosuchprog-1", []),
    ("which nosuchprog-1 && nosuchprog-1 x", []),
    ('[ -x "$(command -v nosuchprog-1)" ] && nosuchprog-1', []),
    ("command -v nosuchprog-1 && nosuchprog-2", ["nosuchprog-2"]),
    # PATH may change: nothing after that point is judged
    (". venv/bin/activate && nosuchprog-1", []),
    ("source .venv/bin/activate; nosuchprog-1 -q", []),
    ('export PATH="$PWD/bin:$PATH" && nosuchprog-1', []),
    ("export PATH=/opt/nosuch/bin:/usr/bin; nosuchprog-1", []),
    ("declare -x PATH=/opt/nosuch/bin; nosuchprog-1", []),
    ("PATH=/opt/nosuch/bin:/usr/bin; nosuchprog-1", []),
    ('PATH="$HOME/bin:$PATH"\nnosuchprog-1', []),
    ("PATH+=:/opt/nosuch/bin; nosuchprog-1", []),
    ("PATH=/opt/nosuch/bin nosuchprog-1 --run", []),
    ("FOO=1 PATH=/opt/nosuch/bin nosuchprog-1", []),
    ("pip install nosuchprog-1 && nosuchprog-1 --version", []),
    ("python3 -m pip install --user nosuchprog-1; nosuchprog-1", []),
    ("sudo -H pip3.12 install nosuchprog-1 && nosuchprog-1", []),
    ("pipx install nosuchprog-1 && nosuchprog-1", []),
    ("uv tool install nosuchprog-1 && nosuchprog-1", []),
    ("npm i -g nosuchprog-1; nosuchprog-1", []),
    ("npm install --global nosuchprog-1 && nosuchprog-1", []),
    ("yarn global add nosuchprog-1 && nosuchprog-1", []),
    ("cargo install nosuchprog-1 && nosuchprog-1", []),
    ("go install example.com/nosuchprog-1@latest && nosuchprog-1", []),
    ("apt-get install -y nosuchprog-1 && nosuchprog-1", []),
    ("pacman -Sy nosuchprog-1 && nosuchprog-1", []),
    ("nix-env -iA nixpkgs.nosuchprog-1 && nosuchprog-1", []),
    ("./configure && make && make install && nosuchprog-1", []),
    ("install -m 755 build/nosuchprog-1 /usr/local/bin/ && nosuchprog-1", []),
    ("cp build/nosuchprog-1 ~/.local/bin/ && nosuchprog-1", []),
    ("ln -s $PWD/nosuchprog-1 /usr/local/bin/nosuchprog-1 && nosuchprog-1", []),
    ("chmod +x /usr/local/bin/nosuchprog-1; nosuchprog-1", []),
    ("hash -r; nosuchprog-1", []),
    ("alias nosuchprog-1=ls\nnosuchprog-1", []),
    ('eval "$(printf PATH=/opt/nosuch/bin)"; nosuchprog-1', []),
    ("use_venv() { . venv/bin/activate; }; use_venv; nosuchprog-1", []),
    # still judged: names before that point, the installer itself, and ordinary commands
    ("nosuchprog-2 x; pip install nosuchprog-1 && nosuchprog-1", ["nosuchprog-2"]),
    ("pytset -q", ["pytset"]),
    ("cd /tmp && pytset -q", ["pytset"]),
    ("export FOO=/opt/nosuch/bin; echo install; nosuchprog-1", ["nosuchprog-1"]),
    ("cp a.txt b.txt && nosuchprog-1", ["nosuchprog-1"]),
    ("chmod +x ./build.sh && nosuchprog-1", ["nosuchprog-1"]),
    ("use_venv() { . venv/bin/activate; }; nosuchprog-1; use_venv", ["nosuchprog-1"]),
    ("X=$(nosuchprog-1) nosuchprog-2", ["nosuchprog-1", "nosuchprog-2"]),
]


# Installers the rows call, whether or not this machine has them.
FAKE_PROGRAMS = (
    "sudo",
    "pip3.12",
    "pipx",
    "uv",
    "yarn",
    "go",
    "pacman",
    "nix-env",
    "cargo",
    "npm",
    "apt-get",
)


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """PATH for the rows: the fake installers, `~/.local/bin` (HOME is a temp dir), then the real PATH."""
    fakes = tmp_path / "fakes"
    fakes.mkdir()
    for name in FAKE_PROGRAMS:
        (fakes / name).write_text("#!/bin/sh\nexit 0\n")
        (fakes / name).chmod(0o755)
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return f"{fakes}:{home}/.local/bin:{PATH}"


@pytest.mark.parametrize(("command", "missing"), ROWS)
def test_missing_commands(command: str, missing: list[str], path: str) -> None:
    assert missing_commands(command, path) == missing


def test_a_missing_installer_is_still_judged(tmp_path: Path) -> None:
    assert missing_commands("pip install nosuchprog-1 && nosuchprog-1", str(tmp_path)) == ["pip"]


def test_found_only_through_the_given_path(tmp_path: Path) -> None:
    prog = tmp_path / "my-own-tool"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    assert missing_commands("my-own-tool", PATH) == ["my-own-tool"]
    assert missing_commands("my-own-tool", f"{tmp_path}:{PATH}") == []


@pytest.mark.parametrize("entry", [".", "", "bin", "~/bin"])
def test_a_relative_path_entry_leaves_every_name_to_the_shell(entry: str) -> None:
    """`sh` resolves a relative PATH entry against the command's working directory (which `cd` changes),
    never against fermix's own: no name can be called missing for certain."""
    assert missing_commands("nosuchprog-1", f"/usr/bin:{entry}:/bin") == []
    assert missing_commands("nosuchprog-1", "/usr/bin:/bin") == ["nosuchprog-1"]
