"""What rg's walk skipped, from its `--debug` log: the directories a walk entered, which `rg --files`
(files only) cannot show.

rg logs every entry its walk skips (hidden, ignored by a rule file, excluded by a glob) as
`ignoring PATH: Ignore(…)`; `Run(walk_log=True)` and `list_files(skipped=…)` collect them. `find`
uses them to look for directories that hold no listed file; `glob_search` to check that the literal directories a pattern starts with are ones rg's walk would
enter.
"""

from __future__ import annotations

import os
from typing import Any

from .ripgrep import Run, Scope


def lossy(rel: str) -> str:
    """`rel` as rg's log shows it."""
    return rel if rel.isascii() else os.fsencode(rel).decode("utf-8", "replace")


def skipped_children(scope: Scope, dirs: list[str], deadline: float, sandbox: Any) -> set[str] | None:
    """Which children of `dirs` (directories below `scope.root`, relative to it; the root itself is
    always walked) rg's walk skips, with every rule that applies from above: one rg reading each of
    them one level deep. Relative to the root, as `lossy` shows them; None when the deadline passed
    first."""
    extra = [f"./{d}" for d in dirs if d]  # more paths for rg to walk (before `--`: "./" keeps them paths)
    run = Run(
        scope.replace(max_depth=1),
        ["--files", "--null", "--debug", *extra],
        deadline,
        sandbox,
        walk_log=True,
        restate_above=False,  # the extra paths' parents below the root hold rules too: rg reads them
    )
    run.records()
    return None if run.stats.timed_out else run.skipped
