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
import re
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


_PYTHON = re.compile(r"^python[0-9.]*$")
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-X", "-W", "-Q"})
_JOINED_M = re.compile(r"^-[bBdEiIOPqsSuvx]+m$")


def is_fermix_cmdline(argv: list[str]) -> bool:
    """A command line whose own program is fermix: `fermix ...`, `python -m fermix_cli ...`, `fermix.pyz ...`.

    Only the program itself counts (argv[0], or the script or module an interpreter runs), never a later
    argument: `timeout 30 fermix tool ...` and `time fermix ...` are the owner's wrappers, not fermix.
    """
    if not argv:
        return False
    if _names_fermix(argv[0]):
        return True
    if not _PYTHON.match(os.path.basename(argv[0])):
        return False
    args = iter(argv[1:])
    for arg in args:
        if arg == "-m":
            return next(args, "") in ("fermix_cli", "fermix_cli.__main__")
        elif arg in _PYTHON_OPTIONS_WITH_VALUE:
            next(args, None)
        elif arg == "-c" or arg == "-" or arg.startswith("-c"):
            return False  # code from the command line or stdin: not fermix's own entry point
        elif _JOINED_M.match(arg):  # joined short flags ending in m: `-Im fermix_cli`
            return next(args, "") in ("fermix_cli", "fermix_cli.__main__")
        elif arg.startswith("-"):
            continue
        else:
            return _names_fermix(arg)  # the script the interpreter runs
    return False


def _names_fermix(program: str) -> bool:
    return os.path.basename(program) in _FERMIX_NAMES or program.endswith("fermix_cli/__main__.py")


def _is_fermix(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return False
    return is_fermix_cmdline([a.decode("utf-8", "replace") for a in raw.split(b"\0") if a])
