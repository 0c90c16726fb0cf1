"""Was this process started, directly or not, by fermix? (`fermix sandbox confirm` refuses if so.)

Three signs, any one is enough: the spawn marker every fermix child carries in its environment
(`FERMIX_SPAWNED`, set by `shell.procgroup`); the marker in the environment an ancestor process started
with; or an ancestor that is itself a fermix process. This catches a model asking a shell tool to
approve its own request, including through `env -u` or a nested shell. It is not a security
boundary: a command can reach a service outside fermix's process tree, or simply edit config.toml
(the shell tool is not an OS sandbox).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .shell.procgroup import SPAWN_MARKER

MAX_ANCESTORS = 64
_FERMIX_NAMES = frozenset({"fermix", "fermix.pyz"})


def spawned_by_fermix(env: Mapping[str, str] | None = None, pid: int | None = None) -> bool:
    """True when `pid` (default: this process) or one of its ancestors shows a fermix spawn sign."""
    env = os.environ if env is None else env
    if SPAWN_MARKER in env:
        return True
    current = os.getppid() if pid is None else _parent(pid)
    for _ in range(MAX_ANCESTORS):
        if current is None or current <= 1:
            return False
        if _has_marker(current) or _is_fermix(current):
            return True
        current = _parent(current)
    return False


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        return int(raw[raw.rfind(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _has_marker(pid: int) -> bool:
    prefix = SPAWN_MARKER.encode() + b"="
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return any(entry.startswith(prefix) for entry in f.read().split(b"\0"))
    except OSError:
        return False


def is_fermix_cmdline(argv: list[str]) -> bool:
    """A command line that runs fermix: `fermix ...`, `python -m fermix_cli ...`, `fermix.pyz ...`."""
    for i, arg in enumerate(argv[:4]):
        base = os.path.basename(arg)
        if base in _FERMIX_NAMES or arg.endswith("fermix_cli/__main__.py"):
            return True
        if arg == "-m" and i + 1 < len(argv) and argv[i + 1] in ("fermix_cli", "fermix_cli.__main__"):
            return True
    return False


def _is_fermix(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return False
    return is_fermix_cmdline([a.decode("utf-8", "replace") for a in raw.split(b"\0") if a])
