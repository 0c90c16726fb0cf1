"""The per-profile start/stop lock: one holder at a time, across processes and across threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fermix_cli.browser.runfiles import ProfileFiles, profile_lock
from fermix_cli.core.paths import resolve_paths


def test_threads_of_one_process_wait_for_each_other(tmp_path: Path) -> None:
    # Subagent workers are threads of one process: a second start must wait for the first, not walk in.
    files = ProfileFiles(resolve_paths(str(tmp_path / "home")), "default")
    log: list[tuple[str, str]] = []
    errors: list[BaseException] = []

    def hold(name: str, seconds: float) -> None:
        try:
            with profile_lock(files, 10):
                log.append(("enter", name))
                time.sleep(seconds)
                log.append(("leave", name))
        except BaseException as e:  # reported by the assertion below
            errors.append(e)

    a = threading.Thread(target=hold, args=("a", 0.4))
    b = threading.Thread(target=hold, args=("b", 0.1))
    a.start()
    time.sleep(0.1)
    b.start()
    a.join()
    b.join()
    assert errors == []
    assert log == [("enter", "a"), ("leave", "a"), ("enter", "b"), ("leave", "b")]


def test_the_holding_thread_re_enters(tmp_path: Path) -> None:
    files = ProfileFiles(resolve_paths(str(tmp_path / "home")), "default")
    with profile_lock(files, 1), profile_lock(files, 1):  # a stop inside a start
        pass
    with profile_lock(files, 1):  # released whole
        pass
