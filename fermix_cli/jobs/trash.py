"""A removed job's output directory, set aside before the removal commits and deleted after it.

`jobs/<id>/` is renamed to `jobs/.trash-<id>-<12 hex>` inside the removal's write transaction, so a kill
after the commit leaves no `jobs/<id>/` for a job added later under the same id to find. What a killed
`remove_job` or `schedule_job` left is swept by the next one, inside its own write transaction (which
removals of other processes cannot interleave with): the trash of a job no longer in state.db is deleted,
that of a job still there (its removal was killed before the commit) goes back in place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
from pathlib import Path

_TRASH = ".trash-"


def jobs_dir(data_dir: Path) -> Path:
    return data_dir / "jobs"


def set_aside(data_dir: Path, job_id: str) -> Path | None:
    """Rename `jobs/<job_id>/` to a trash name; the new path, or None when the job has no output."""
    source = jobs_dir(data_dir) / job_id
    trash = source.with_name(f"{_TRASH}{job_id}-{os.urandom(6).hex()}")
    try:
        os.rename(source, trash)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise
    return trash


def put_back(data_dir: Path, job_id: str, trash: Path) -> None:
    """Undo `set_aside` (the removal did not commit)."""
    with contextlib.suppress(OSError):  # a run made jobs/<id>/ meanwhile: the sweep leaves the rest alone
        os.rename(trash, jobs_dir(data_dir) / job_id)


def sweep(db: sqlite3.Connection, data_dir: Path) -> list[Path]:
    """Settle what killed removals left; returns the trash to delete once the caller's transaction commits.

    Call it inside a write transaction. A job id that has no row but still has a `jobs/<id>/` (a removal
    by an older fermix, killed after its commit) is set aside too.
    """
    try:
        names = os.listdir(jobs_dir(data_dir))
    except OSError:
        return []
    doomed: list[Path] = []
    for name in names:
        if name.startswith(_TRASH):
            job_id = name[len(_TRASH) :].rpartition("-")[0]
        elif name.startswith("."):
            continue  # not a job's
        else:
            job_id = name
        if not job_id:
            continue
        alive = db.execute("SELECT 1 FROM scheduled_jobs WHERE id = ?", (job_id,)).fetchone() is not None
        path = jobs_dir(data_dir) / name
        if alive:
            if name != job_id:
                put_back(data_dir, job_id, path)
        elif name != job_id:
            doomed.append(path)
        else:
            trash = set_aside(data_dir, job_id)
            if trash is not None:
                doomed.append(trash)
    return doomed


def delete(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)  # whatever stays is swept again by the next add or remove
