"""The original hardline: seven regular-expression rules over the whitespace-collapsed command."""

from __future__ import annotations

import re

from fermix_cli.core.shell.hardline.rules import (
    DD,
    FORK_BOMB,
    KILL_ALL,
    MKFS,
    RM_PROTECTED,
    SHUTDOWN,
    SUDO_STDIN,
    Finding,
)

_RM_WORDS = frozenset({"rm", "\\rm", "/bin/rm", "/usr/bin/rm", "'rm'"})
_RM_TARGETS = frozenset({"", "~", "$HOME", "/etc", "/usr", "/bin", "/sbin", "/System", "/Library"})
# "Standalone" is read as: in command position (line start, after a control operator, or after sudo).
_COMMAND_START = r"(?:^|[;&|(]|\bsudo)\s*(?:\S*/)?"
_END = r"(?=$|[\s;&|)])"
_PATTERNS: tuple[tuple[re.Pattern[str], Finding], ...] = (
    (re.compile(r"\bmkfs(?:\.[\w-]+)?\s"), Finding(MKFS, "mkfs")),
    (re.compile(r"\bdd\b.*\bof=/dev/"), Finding(DD, "dd_block_device")),
    (re.compile(r"\bkill\s+(?:-9\s+)?-1(?=\s*(?:$|[;&|)]))"), Finding(KILL_ALL, "kill_all")),
    (re.compile(r"\bpkill\b[^;&|]*\s-u\s*\$\{?USER\b"), Finding(KILL_ALL, "kill_all")),
    (re.compile(_COMMAND_START + r"(?:shutdown|reboot|poweroff)" + _END), Finding(SHUTDOWN, "shutdown")),
    (re.compile(r"\bsystemctl\s+poweroff\b"), Finding(SHUTDOWN, "shutdown")),
    (re.compile(_COMMAND_START + r"init\s+0" + _END), Finding(SHUTDOWN, "shutdown")),
)
_SUDO_STDIN = re.compile(r"\bsudo\b[^;|&\n]*?(?<!\S)-S(?!\S)")


def original_finding(command: str) -> Finding | None:
    """The first of the original seven rules the command trips, if any."""
    trimmed = command.strip()
    collapsed = " ".join(trimmed.split())
    if _recursive_rm_of_root(collapsed.split(" ")):
        return Finding(RM_PROTECTED, "rm_protected_root")
    if ":(){ :|:& };:" in collapsed or ":(){:|:&};:" in collapsed.replace(" ", ""):
        return Finding(FORK_BOMB, "fork_bomb")
    for pattern, finding in _PATTERNS:
        if pattern.search(collapsed):
            return finding
    if _SUDO_STDIN.search(trimmed):
        return Finding(SUDO_STDIN, "sudo_stdin")
    return None


def _recursive_rm_of_root(tokens: list[str]) -> bool:
    if tokens[:1] and tokens[0] in _RM_WORDS:
        rest = tokens[1:]
    elif tokens[:2] == ["command", "rm"]:
        rest = tokens[2:]
    else:
        return False
    flagged = any(t.startswith("-") and "r" in t for t in rest)
    return flagged and any(t.rstrip("/") in _RM_TARGETS for t in rest if not t.startswith("-"))
