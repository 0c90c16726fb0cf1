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
# A path prefix never spans a control operator; `\S*` here would rescan the rest of the line
# from every operator (quadratic on `a;a;a;...`).
_COMMAND_START = r"(?:^|[;&|(]|\bsudo)\s*(?:[^\s;&|()]*/)?"
_END = r"(?=$|[\s;&|)])"
_PATTERNS: tuple[tuple[re.Pattern[str], Finding], ...] = (
    (re.compile(r"\bmkfs(?:\.[\w-]+)?\s"), Finding(MKFS, "mkfs")),
    (re.compile(r"\bkill\s+(?:-9\s+)?-1(?=\s*(?:$|[;&|)]))"), Finding(KILL_ALL, "kill_all")),
    (re.compile(_COMMAND_START + r"(?:shutdown|reboot|poweroff)" + _END), Finding(SHUTDOWN, "shutdown")),
    (re.compile(r"\bsystemctl\s+poweroff\b"), Finding(SHUTDOWN, "shutdown")),
    (re.compile(_COMMAND_START + r"init\s+0" + _END), Finding(SHUTDOWN, "shutdown")),
)
_DD = re.compile(r"\bdd\b")
_OF_DEV = re.compile(r"\bof=/dev/")
_PKILL = re.compile(r"\bpkill\b")
_USER_SELECTOR = re.compile(r"\s-u\s*\$\{?USER\b")
_OPERATOR = re.compile(r"[;&|]")
_SUDO = re.compile(r"\bsudo\b")
_DASH_S = re.compile(r"(?<!\S)-S(?!\S)")
_SUDO_END = re.compile(r"[;|&\n]")


def original_finding(command: str) -> Finding | None:
    """The first of the original seven rules the command trips, if any."""
    trimmed = command.strip()
    collapsed = " ".join(trimmed.split())
    if _recursive_rm_of_root(collapsed.split(" ")):
        return Finding(RM_PROTECTED, "rm_protected_root")
    if ":(){ :|:& };:" in collapsed or ":(){:|:&};:" in collapsed.replace(" ", ""):
        return Finding(FORK_BOMB, "fork_bomb")
    if _dd_to_device(collapsed):
        return Finding(DD, "dd_block_device")
    if _pkill_user(collapsed):
        return Finding(KILL_ALL, "kill_all")
    for pattern, finding in _PATTERNS:
        if pattern.search(collapsed):
            return finding
    if _sudo_stdin(trimmed):
        return Finding(SUDO_STDIN, "sudo_stdin")
    return None


def _dd_to_device(collapsed: str) -> bool:
    """`\\bdd\\b.*\\bof=/dev/`, without the regex's backtracking from every `dd` (quadratic)."""
    first_dd = _DD.search(collapsed)
    if first_dd is None:
        return False
    return _OF_DEV.search(collapsed, first_dd.end()) is not None


def _pkill_user(collapsed: str) -> bool:
    """`\\bpkill\\b[^;&|]*\\s-u\\s*\\$\\{?USER\\b`, one segment at a time (the regex is quadratic)."""
    for segment in _OPERATOR.split(collapsed):
        pkill = _PKILL.search(segment)
        if pkill is not None and _USER_SELECTOR.search(segment, pkill.end()):
            return True
    return False


def _sudo_stdin(trimmed: str) -> bool:
    """`\\bsudo\\b[^;|&\\n]*?(?<!\\S)-S(?!\\S)`, one segment at a time (the regex is quadratic)."""
    for segment in _SUDO_END.split(trimmed):
        sudo = _SUDO.search(segment)
        if sudo is not None and _DASH_S.search(segment, sudo.end()):
            return True
    return False


def _recursive_rm_of_root(tokens: list[str]) -> bool:
    if tokens[:1] and tokens[0] in _RM_WORDS:
        rest = tokens[1:]
    elif tokens[:2] == ["command", "rm"]:
        rest = tokens[2:]
    else:
        return False
    flagged = any(t.startswith("-") and "r" in t for t in rest)
    return flagged and any(t.rstrip("/") in _RM_TARGETS for t in rest if not t.startswith("-"))
