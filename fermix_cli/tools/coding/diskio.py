"""How the coding tools reach the disk and the session: bounded file reads and the snapshot store.

Shared by `read`, `hash_edit` and `write` (it is not a tool module; the engine modules stay pure).
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING

from fermix_cli.core.errors import ToolError
from fermix_cli.core.fsops import open_regular_file
from fermix_cli.tools.coding.hashline import MAX_FILE_BYTES
from fermix_cli.tools.coding.refusals import read_directory, read_not_found

if TYPE_CHECKING:
    from pathlib import Path

    from fermix_cli.core.context import ToolContext
    from fermix_cli.tools.coding.snapshot_db import SqliteSnapshotStore


def session_store(ctx: ToolContext) -> SqliteSnapshotStore:
    """The hashline snapshot store of the calling session (state.db opens on first use)."""
    from fermix_cli.tools.coding.snapshot_db import SqliteSnapshotStore

    return SqliteSnapshotStore(ctx.state, ctx.session_id)


def lock_dir(ctx: ToolContext) -> Path:
    """Where the per-file mutation locks live."""
    from fermix_cli.core.filelocks import mutation_lock_dir

    return mutation_lock_dir(ctx.paths)


def too_large(display: str, size: int) -> ToolError:
    """The 1 MiB refusal, with the file's real size."""
    return ToolError(
        "too_large",
        f"{display} is {size} bytes; read is limited to 1 MiB files. Use grep, or bash for large files.",
        {"path": display, "bytes": size},
    )


def not_regular(display: str) -> ToolError:
    """A FIFO, socket or device where a text file was expected."""
    return ToolError(
        "not_regular_file",
        f"{display} is not a regular file; only text files can be read.",
        {"path": display},
    )


def read_limited(path: str, display: str) -> tuple[bytes, os.stat_result]:
    """A canonical file's bytes (at most 1 MiB) and its stat, with read's refusals in `display` terms."""
    try:
        fd = open_regular_file(path)
    except (FileNotFoundError, NotADirectoryError):
        raise read_not_found(display) from None
    except IsADirectoryError:
        raise read_directory(display) from None
    except ToolError as e:
        if e.code == "invalid_path" and e.message.startswith("Not a regular file"):
            raise not_regular(display) from None
        raise
    except OSError as e:
        if e.errno == errno.EACCES:
            raise ToolError("permission_denied", f"Permission denied: {display}", {"path": display}) from None
        raise ToolError("read_failed", f"Failed to read {display}: {e.strerror}", {"path": display}) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_size > MAX_FILE_BYTES:
            raise too_large(display, st.st_size)
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # grew since fstat
        raise too_large(display, len(data))
    return data, st
