"""The exact path refusals and notices that the I/O side of read and hash_edit raises (hashline.md)."""

from __future__ import annotations

from collections.abc import Sequence

from fermix_cli.core.errors import ToolError


def read_not_found(path: str) -> ToolError:
    """read: the target does not exist."""
    return ToolError("not_found", f"File not found: {path}", {"path": path})


def read_directory(path: str) -> ToolError:
    """read: the target is a directory."""
    return ToolError("is_directory", f"{path} is a directory; use find or list_files.", {"path": path})


def edit_not_found(path: str) -> ToolError:
    """hash_edit: the section's file does not exist (hash_edit never creates files)."""
    return ToolError(
        "not_found", f"File not found: {path}. Use the write tool to create new files.", {"path": path}
    )


def edit_symlink(path: str) -> ToolError:
    """hash_edit: the final path component is a symlink."""
    return ToolError(
        "symlink_refused",
        f"hash_edit refuses {path}: the final path component is a symbolic link; edit the real file path instead.",
        {"path": path},
    )


def rem_not_regular(path: str) -> ToolError:
    """REM: the file is not a regular file."""
    return ToolError(
        "not_regular_file",
        f"REM refuses {path}: not a regular file (symlink, directory or special file).",
        {"path": path},
    )


def path_recovered(requested: str, tag: str, recovered: str) -> str:
    """The warning for a missing PATH matched to the one session snapshot with its basename and tag."""
    return (
        f'Path "{requested}" does not exist; matched its filename and snapshot tag #{tag} to {recovered} '
        f"(read earlier this session). Anchor future edits on [{recovered}#{tag}]."
    )


def partial_commit(error: str, written: Sequence[str], not_written: Sequence[str]) -> ToolError:
    """A write failure in the middle of a batch; nothing is rolled back."""
    return ToolError(
        "write_failed",
        f"{error}\nSections already written: {', '.join(written) or '(none)'}\n"
        f"Sections not written: {', '.join(not_written) or '(none)'}",
        {"written": list(written), "not_written": list(not_written)},
    )
