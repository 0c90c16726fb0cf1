"""Writing a new file into a folder fermix owns (the media folder, the outbox, the inbox) without replacing one."""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from .errors import ToolError

MAX_TRIES = 10_000
NAME_MAX = 255  # bytes in one file name (Linux, macOS)


def write_new_file(folder: Path, name: str, data: bytes) -> Path:
    """Write `data` to a file called `name` in `folder` (or `name-N`), never replacing one; its path."""
    return _new_file(folder, name, lambda f: f.write(data))


def copy_new_file(folder: Path, name: str, source: Path) -> Path:
    """Copy the file at `source` to `name` in `folder` (or `name-N`), never replacing one; its path.

    The source is opened first, so an unreadable source leaves nothing behind.
    """
    with open(source, "rb") as src:
        return _new_file(folder, name, lambda f: shutil.copyfileobj(src, f))


def _new_file(folder: Path, name: str, fill: Callable[[BinaryIO], object]) -> Path:
    stem, ext = posixpath.splitext(name)
    if not stem:  # ".bashrc": the whole name is the stem
        stem, ext = name, ""
    for n in range(1, MAX_TRIES + 1):
        candidate = folder / _fitted(stem, ext if n == 1 else f"-{n}{ext}")
        try:
            fd = os.open(
                candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                fill(f)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            candidate.unlink(missing_ok=True)
            raise
        return candidate
    raise ToolError(
        "outbox_full", f"{folder} already holds {MAX_TRIES} files named like {name}.", {"name": name}
    )


def _fitted(stem: str, suffix: str = "") -> str:
    """`stem + suffix` cut to NAME_MAX bytes by shortening the stem (never inside a character), so a
    numbered copy of a long name still fits; an over-long suffix (a long extension) is cut too."""
    if len(os.fsencode(suffix)) > NAME_MAX // 2:
        suffix = suffix[:16]
    room = NAME_MAX - len(os.fsencode(suffix))
    while len(os.fsencode(stem)) > room:
        stem = stem[:-1]
    return stem + suffix
