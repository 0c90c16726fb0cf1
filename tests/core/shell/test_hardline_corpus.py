"""The ordinary-command corpus: commands from everyday shell use that the hardline must let through.

A gate that refuses ordinary work trains people to switch it off, so every line of
`corpus/ordinary.txt` (and every entry of `corpus/ordinary_multiline.txt`) is a test case. The
blocked side of the ledger is the BLOCKED table in test_hardline.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fermix_cli.core.errors import ToolError
from fermix_cli.core.shell.hardline.judge import check_command
from fermix_cli.core.shell.lex import MAX_INPUT_CHARS
from tests.core.shell.test_hardline import ENV

CORPUS = Path(__file__).parent / "corpus"


def _lines(name: str) -> list[str]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _entries(name: str) -> list[str]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    body = text.split("\n", 1)[1] if text.startswith("#") else text
    return [entry.strip("\n") for entry in body.split("\n----\n") if entry.strip()]


ORDINARY = _lines("ordinary.txt") + _entries("ordinary_multiline.txt")


def test_the_corpus_is_large_enough() -> None:
    assert len(ORDINARY) >= 500


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_command_passes(command: str) -> None:
    try:
        check_command(command, ENV)
    except ToolError as exc:  # pragma: no cover - the message is the point
        pytest.fail(f"refused {command!r}: {exc.details}")


@pytest.mark.parametrize(
    "command",
    [
        "echo " + "a" * (MAX_INPUT_CHARS - 5),
        "true; " * (MAX_INPUT_CHARS // 6 - 10),
        "echo " + "é" * (MAX_INPUT_CHARS - 5),
        "cat <<'EOF'\n" + "line $x\n" * ((MAX_INPUT_CHARS - 20) // 8) + "EOF\n",
        "echo " + "\\a" * ((MAX_INPUT_CHARS - 5) // 2),
    ],
    ids=["one-word", "many-commands", "multibyte", "heredoc", "escapes"],
)
def test_commands_up_to_the_schema_limit_are_parsed(command: str) -> None:
    assert len(command) <= MAX_INPUT_CHARS
    check_command(command, ENV)


def test_a_command_past_the_limit_fails_closed() -> None:
    with pytest.raises(ToolError) as info:
        check_command("echo " + "a" * MAX_INPUT_CHARS, ENV)
    assert info.value.details["rule"] == "parse_error"


# Ordinary-looking commands the reference's rules refuse on purpose (see fermix-behaviour.md §3.1
# and §3.2); kept here so that the ledger is honest, and so that relaxing one is a visible decision.
DOCUMENTED_REFUSALS = [
    "printf 'mkfs.ext4 /dev/sda\\n' > notes.txt",  # original rule 2: the word mkfs, anywhere
    "pkill -u \"$USER\" -f 'sleep 1000'",  # original rule 5: pkill ... -u $USER
    'for dir in build dist .cache; do rm -rf "$dir"; done',  # rm of a bare unknown expansion
    'cleanup() { rm -rf "$WORKDIR"; }; trap cleanup EXIT',
    "find ~ -name '*.swp' -delete",  # find -delete: the start paths are the targets
    "tmp=$(mktemp -d); trap 'rm -rf \"$tmp\"' EXIT",  # a trap string is judged on its own
]


@pytest.mark.parametrize("command", DOCUMENTED_REFUSALS)
def test_documented_refusals_stay_refused(command: str) -> None:
    with pytest.raises(ToolError):
        check_command(command, ENV)


@pytest.mark.parametrize(
    "command",
    [
        'rm -rf "$(mktemp -d)"',
        'tmp=$(mktemp -d) && rm -rf "$tmp"',
        'd=$(mktemp -d -p "$HOME"); rm -rf "$d"',
        'chown -R "$USER" ./data',
        "chown -R $USER:$GROUP build/",
        'chgrp -R "$GROUP" ./shared',
    ],
)
def test_what_the_judge_can_know_is_not_refused(command: str) -> None:
    check_command(command, ENV)


@pytest.mark.parametrize(
    "command",
    [
        'rm -rf "$(mktemp -d)"/../..',
        'tmp=$(mktemp -d); tmp=$(pwd); rm -rf "$tmp"',
        'rm -rf "$(mktemp -d; echo /)"',
        'chown -R "$USER" /',
        "chown -R alice ~",
        'chmod -R -w "$HOME"',
        "chmod -R --reference=a.txt /etc",
    ],
)
def test_what_the_judge_cannot_vouch_for_is_still_refused(command: str) -> None:
    with pytest.raises(ToolError):
        check_command(command, ENV)
