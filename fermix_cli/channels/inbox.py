"""The local inbox: an append-only JSON-lines file `<data dir>/inbox/NAME.jsonl` per address.

`fermix inbox NAME` reads it. Each message is one line written with a single O_APPEND write under an
exclusive lock and fsynced, so concurrent writers never interleave, a message that was reported delivered
is on disk, and one whose write was cut short (a full disk) is cut back off.
A file is copied into `<data dir>/inbox/NAME.files/` and its message names the copy; a copy never replaces
an earlier one (a name already taken gets `-2`, `-3`, ... before its extension).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path
from typing import Any

from ..core.errors import ToolError
from ..core.newfile import copy_new_file
from ..core.paths import FermixPaths
from .base import Capability, ChannelError, Sent

TEXT_MAX = 256 * 1024


def inbox_dir(paths: FermixPaths) -> Path:
    return paths.data_dir / "inbox"


class InboxChannel:
    platform = "inbox"
    capabilities: frozenset[Capability] = frozenset({"text", "file"})
    max_text = TEXT_MAX

    def __init__(self, paths: FermixPaths) -> None:
        self.paths = paths

    def send_text(self, address: str, text: str, meta: dict[str, Any]) -> Sent:
        record = {**meta, "text": text[:TEXT_MAX], "truncated": len(text) > TEXT_MAX}
        return Sent(self.platform, address, {"path": str(self._append(address, record))})

    def send_file(self, address: str, path: Path, caption: str, meta: dict[str, Any]) -> Sent:
        if path.is_dir():
            raise ChannelError(
                f"{path} is a directory; send a file (an archive of the folder, or one file in it).",
                code="not_a_file",
                permanent=True,
            )
        if not path.is_file():
            raise ChannelError(
                f"{path} is not a readable file (missing, or not a regular file).",
                code="unreadable_file",
                permanent=True,
            )
        try:
            folder = self.paths.ensure_dir(inbox_dir(self.paths) / f"{address}.files")
            copy = copy_new_file(folder, path.name, path)
        except OSError as e:
            raise ChannelError(f"cannot copy {path} into the inbox: {e}") from None
        except ToolError as e:
            raise ChannelError(f"cannot copy {path} into the inbox: {e.message}") from None
        record = {**meta, "text": caption[:TEXT_MAX], "truncated": len(caption) > TEXT_MAX, "file": str(copy)}
        return Sent(self.platform, address, {"path": str(self._append(address, record)), "file": str(copy)})

    def _append(self, address: str, record: dict[str, Any]) -> Path:
        """One JSON line appended with a single write (O_APPEND), then fsync.

        Under an exclusive lock on the file, so that a write that fails part-way (a full disk) is cut
        back off before anyone appends after it: a message reported undelivered leaves nothing behind,
        and the next one starts on a line of its own.
        """
        import fcntl

        try:
            folder = self.paths.ensure_dir(inbox_dir(self.paths))
            target = folder / f"{address}.jsonl"
            line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if size and not _ends_a_line(target, size):
                    line = b"\n" + line  # a torn line left by an older fermix, or one not cut back
                try:
                    written = os.write(fd, line)
                    if written != len(line):
                        raise OSError(
                            errno.ENOSPC, f"short write to {target} ({written} of {len(line)} bytes)"
                        )
                    os.fsync(fd)
                except OSError:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)
                    raise
            finally:
                os.close(fd)  # releases the lock
        except OSError as e:
            raise ChannelError(str(e)) from None
        return target


def _ends_a_line(target: Path, size: int) -> bool:
    with open(target, "rb") as f:
        f.seek(size - 1)
        return f.read(1) == b"\n"


def _message_in(line: str) -> dict[str, Any] | None:
    """The message on a line: the whole line, or a message glued onto the end of a torn one."""
    try:
        value = json.loads(line)
    except ValueError:
        value = None
        decoder = json.JSONDecoder()
        at = line.find('{"', 1)
        while at != -1:
            try:
                found, end = decoder.raw_decode(line, at)
            except ValueError:
                at = line.find('{"', at + 1)
                continue
            if not line[end:].strip():
                value = found
                break
            at = line.find('{"', at + 1)
    return value if isinstance(value, dict) else None


def read_inbox(paths: FermixPaths, address: str, limit: int) -> list[dict[str, Any]]:
    """The last `limit` messages of an inbox, oldest first; unreadable lines (a torn write) are skipped,
    and a message glued onto a torn line (written by an older fermix) is still read."""
    target = inbox_dir(paths) / f"{address}.jsonl"
    try:
        with open(target, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    for line in reversed(lines):  # newest first, so a limit parses only what it returns
        message = _message_in(line)
        if message is not None:
            out.append(message)
            if len(out) == limit:
                break
    return out[::-1]
