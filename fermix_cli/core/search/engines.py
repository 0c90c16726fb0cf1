"""Where the search engines are: ripgrep (`rg`) and the ast-grep CLI (`ast-grep`).

An engine is looked up in this order: next to the running interpreter (the console scripts a pip
install of fermix puts beside `python`, which is how the `ripgrep` and `ast-grep-cli` wheels ship
their binaries), then the interpreter's scripts directory, then the `bin/` directory beside the
installed `fermix_cli` package (where a `pip install --target` puts them: that is how `fermix.pyz`
carries its own, extracted with their permissions), then `PATH`. A missing engine is an error
naming the fix, never a fallback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

from ..errors import ToolError
from ..pyzbuild import extraction_dir
from ..records import Record

RG_FIX = (
    "install ripgrep next to fermix (`python -m pip install 'ripgrep>=14.1,<14.2'`, which ships binary "
    "wheels) or put `rg` on PATH (e.g. `apt-get install ripgrep`)"
)
AST_GREP_FIX = (
    "install the ast-grep CLI next to fermix (`python -m pip install 'ast-grep-cli>=0.51,<1'`) "
    "or put `ast-grep` on PATH"
)


class Engine(Record, frozen=True):
    name: str  # rg | ast-grep
    path: str
    source: str  # interpreter | scripts | bundled | PATH


_cache: dict[str, Engine | None] = {}


def _candidates(program: str) -> Iterator[tuple[str, str]]:
    """The places to look, in order, each worked out only when the one before it had no engine: a pip
    install finds it beside the interpreter and never imports sysconfig or shutil (about 2 ms of a
    search's start-up)."""
    yield os.path.join(os.path.dirname(sys.executable), program), "interpreter"
    import sysconfig

    try:
        scripts = sysconfig.get_path("scripts")
    except KeyError:  # an unusual install scheme
        scripts = None
    if scripts:
        yield os.path.join(scripts, program), "scripts"
    yield os.path.join(bundled_dir(), program), "bundled"
    import shutil

    found = shutil.which(program)
    if found:
        yield found, "PATH"


def bundled_dir() -> str:
    """The `bin/` beside the installed `fermix_cli` package: where a fermix.pyz extracts its engines."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    return os.path.join(package_parent, "bin")


def fix(program: str) -> str:
    """How to get `program` back: a fermix.pyz extracts itself again, any other install installs it."""
    cache = extraction_dir()
    if cache is None:
        return RG_FIX if program == "rg" else AST_GREP_FIX
    import shlex

    return (
        f"this fermix.pyz carries {program} in {bundled_dir()}, and its extracted copy has lost it: "
        f"remove that copy (rm -rf {shlex.quote(cache)}) and the next run extracts the file again"
    )


def looked_in(program: str) -> list[str]:
    """Every place `locate` looks for `program`, in order (for a message saying it is in none of them)."""
    return [*dict.fromkeys(path for path, _ in _candidates(program)), "PATH"]


def locate(program: str) -> Engine | None:
    """The engine binary fermix will run, or None when there is none."""
    if program in _cache:
        return _cache[program]
    engine = None
    for path, source in _candidates(program):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            engine = Engine(program, path, source)
            break
    _cache[program] = engine
    return engine


def rg() -> str:
    engine = locate("rg")
    if engine is None:
        raise ToolError(
            "search_engine_missing",
            f"ripgrep (rg) is not installed; fermix searches with it. Fix: {fix('rg')}",
            {"engine": "rg", "looked_in": looked_in("rg")},
        )
    return engine.path


def ast_grep() -> str:
    engine = locate("ast-grep")
    if engine is None:
        raise ToolError(
            "search_engine_missing",
            f"the ast-grep CLI is not installed; tree-wide ast_grep runs it. Fix: {fix('ast-grep')}",
            {"engine": "ast-grep", "looked_in": looked_in("ast-grep")},
        )
    return engine.path


def version(path: str) -> str | None:
    """The first line of `PROGRAM --version`, or None when it does not run."""
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = done.stdout.strip().splitlines()
    return line[0] if done.returncode == 0 and line else None
