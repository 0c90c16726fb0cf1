"""A run's result on disk: what the worker knows before the runner has recorded it.

The worker writes `result.json` into the run's directory (temp file, fsync, rename, directory fsync)
as soon as the command or loop has finished, then reports it to the runner. If the runner dies
between the two, the next tick's reconciliation finds the file and records the run as what it was
(`ok` or `error`) instead of `interrupted`. Nothing is ever re-run either way. A runner that records
the run itself removes the file.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from ..core.fsops import atomic_write
from ..core.paths import FermixPaths
from .execute import RunOutcome

RESULT_FILE = "result.json"
RESULT_MAX_BYTES = 4 * 1024 * 1024


def result_path(paths: FermixPaths, job_id: str, run_id: str) -> Path:
    return paths.data_dir / "jobs" / job_id / run_id / RESULT_FILE


def save_result(paths: FermixPaths, job_id: str, run_id: str, outcome: RunOutcome) -> Path:
    """Write the outcome durably; a crash leaves either no file or the whole file."""
    target = result_path(paths, job_id, run_id)
    paths.ensure_dir(target.parent)  # private (0700): the file needs no mode of its own
    payload = json.dumps({"run_id": run_id, "outcome": outcome.to_dict()}, ensure_ascii=False, default=str)
    atomic_write(str(target), payload.encode("utf-8"))  # temp file, fsync, rename, fsync of the directory
    return target


def load_result(paths: FermixPaths, job_id: str, run_id: str) -> RunOutcome | None:
    """The outcome a worker saved for this run, or None (absent, unreadable, or another run's)."""
    path = result_path(paths, job_id, run_id)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with contextlib.closing(os.fdopen(fd, "rb")) as f:
        raw = f.read(RESULT_MAX_BYTES + 1)
    if len(raw) > RESULT_MAX_BYTES:
        return None
    try:
        data: Any = json.loads(raw)
    except ValueError:
        return None
    if (
        not isinstance(data, dict)
        or data.get("run_id") != run_id
        or not isinstance(data.get("outcome"), dict)
    ):
        return None
    outcome = RunOutcome.from_dict(data["outcome"])
    return outcome if outcome.status in ("ok", "error") else None


def discard_result(paths: FermixPaths, job_id: str, run_id: str) -> None:
    """Remove the saved result once the run row holds it (and the run's directory, if now empty)."""
    path = result_path(paths, job_id, run_id)
    try:
        path.unlink()
    except FileNotFoundError:
        return
    with contextlib.suppress(OSError):  # not empty: output.md lives there too
        path.parent.rmdir()
