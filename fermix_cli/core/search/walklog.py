"""What rg's walk skipped, from its `--debug` log: the directories a walk entered, which `rg --files`
(files only) cannot show.

rg logs every entry its walk skips (hidden, ignored by a rule file, excluded by a glob) as
`ignoring PATH: Ignore(…)`. `find` uses it to look for directories that hold no listed file;
`glob_search` to check that the literal directories a pattern starts with are ones rg's walk would
enter.
"""

from __future__ import annotations

import os
from typing import Any

from .ripgrep import Run, Scope, messages

_WALK_LOG = "rg: DEBUG|ignore::walk|"
_SKIPPED = ": ignoring "
LIST_MODE = ("--files", "--null", "--debug")


class WalkLogRun(Run):
    """An `rg --files --debug` run (`LIST_MODE`) that keeps the entries its walk skipped (`skipped`,
    relative to the root, as `lossy` shows them: rg's log puts U+FFFD for bytes that are not UTF-8)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.skipped: set[str] = set()

    def _read_debug(self, err: str) -> str:
        for ln in messages(err):  # a name with a line break stays one message
            if ln.startswith(_WALK_LOG) and _SKIPPED in ln:
                rel = ln.partition(_SKIPPED)[2].partition(": Ignore(")[0]
                self.skipped.add(rel[2:] if rel.startswith("./") else rel)
        return super()._read_debug(err)


def lossy(rel: str) -> str:
    """`rel` as rg's log shows it."""
    return rel if rel.isascii() else os.fsencode(rel).decode("utf-8", "replace")


def skipped_children(scope: Scope, dirs: list[str], deadline: float, sandbox: Any) -> set[str] | None:
    """Which children of `dirs` (directories below `scope.root`, relative to it; the root itself is
    always walked) rg's walk skips, with every rule that applies from above: one rg reading each of
    them one level deep. Relative to the root, as `lossy` shows them; None when the deadline passed
    first."""
    extra = [f"./{d}" for d in dirs if d]  # more paths for rg to walk (before `--`: "./" keeps them paths)
    run = WalkLogRun(scope.replace(max_depth=1), [*LIST_MODE, *extra], deadline, sandbox)
    run.records()
    return None if run.stats.timed_out else run.skipped
