"""Start-up without the cyclic garbage collector: a command's imports are its longest-lived objects.

Importing the modules a call needs allocates tens of thousands of objects that live until the process
ends; the collector would scan them again and again (about 1 ms of a 25 ms tool call) and free almost
nothing. `pause_collector()` turns it off for the start-up; `resume_collector()` turns it back on, so
the command's own work is collected as usual. When fermix owns the process (`freeze=True`, the
command-line entry point), everything alive by then moves into the permanent generation first
(`gc.freeze()`), so no later collection rescans the imports. An in-process caller (a test, an
embedding program) is never frozen, and the entry point resumes in a `finally`, so it never keeps a
paused collector either.
"""

from __future__ import annotations

import gc

_paused = False
_freeze = False


def pause_collector(*, freeze: bool = False) -> None:
    """Turn the collector off for start-up, unless someone else already did."""
    global _paused, _freeze
    if gc.isenabled():
        gc.disable()
        _paused, _freeze = True, freeze


def resume_collector() -> None:
    """Turn the collector back on (once; a no-op if it was not paused here), freezing start-up if asked."""
    global _paused
    if _paused:
        _paused = False
        if _freeze:
            gc.freeze()
        gc.enable()
