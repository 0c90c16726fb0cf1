"""Filesystem tools of the agent toolset: file_read, file_write, file_edit."""

from __future__ import annotations

import io
import os
import posixpath
import stat
from collections.abc import Iterator
from typing import Annotated, Any

from ..core.context import ToolContext
from ..core.errors import ToolError, world_error
from ..core.fsops import atomic_write, non_directory_ancestor, open_regular_file, trailing_slash_error
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs

READ_CAP = 100_000
_SKIP_CHUNK = 1024 * 1024
EDIT_MAX_BYTES = 32 * 1024 * 1024
WRITE_MAX_CHARS = 8 * 1024 * 1024

PathStr = Annotated[
    str, Field(max_length=4096, description="Path to the file; relative paths start at the working directory")
]


def _os_error(path: str, e: OSError, verb: str) -> ToolError:
    if isinstance(e, NotADirectoryError) and verb == "write":
        return _not_a_directory(path, e.filename or os.path.dirname(path))
    if isinstance(e, FileNotFoundError | NotADirectoryError):
        return ToolError("not_found", f"File not found: {path}", {"path": path})
    if isinstance(e, IsADirectoryError):
        return world_error("invalid_path", f"Path is a directory: {path}", {"path": path})
    code = "write_failed" if verb == "write" else "read_failed"
    return ToolError(code, f"Failed to {verb} file: {e.strerror or e}", {"path": path})


def _not_a_directory(path: str, parent: str) -> ToolError:
    return ToolError(
        "not_a_directory",
        f"Cannot create {path}: {parent} exists and is not a directory.",
        {"path": path, "parent": parent},
    )


def _write_target(ctx: ToolContext, raw: str, *, tool: str, reject_dotdot: bool = False) -> str:
    """The canonical path to write, never through a final symlink (dangling ones included) and never
    with a trailing `/`; sandbox denials come first, judged on where the path leads."""
    from ..core.pathcanon import canonicalize

    path = ctx.sandbox.write_path(raw, tool=tool, reject_dotdot=reject_dotdot)
    parent, name = posixpath.split(ctx.sandbox.anchor(raw, reject_dotdot=reject_dotdot))
    leaf = posixpath.join(canonicalize(parent or "/"), name) if name not in ("", ".", "..") else path
    try:
        st: os.stat_result | None = os.lstat(leaf)
    except OSError:
        st = None
    if raw.endswith("/"):
        raise trailing_slash_error(leaf, st, dir_code="invalid_path")
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise ToolError(
            "symlink_refused",
            f"{tool} refuses {leaf}: the final path component is a symbolic link; write the real file path "
            "instead.",
            {"path": leaf},
        )
    return path


# ----- file_read -------------------------------------------------------------------------------


class FileReadParams(Params):
    path: PathStr
    offset: Annotated[int | None, Field(le=2**31, description="1-based first line to return (default 1)")] = (
        None
    )
    limit: Annotated[int | None, Field(le=2**31, description="Number of lines to return (default: all)")] = (
        None
    )


def file_read(p: FileReadParams, ctx: ToolContext) -> dict[str, Any]:
    for name, value in (("offset", p.offset), ("limit", p.limit)):
        if value is not None and value < 1:
            kind = (
                "offset must be a positive integer (1-indexed)"
                if name == "offset"
                else "limit must be a positive integer"
            )
            raise ToolError("invalid_range", f"{kind}, got: {value}", {"field": name})
    path = ctx.sandbox.read_path(p.path, tool="file_read")
    offset = p.offset or 1
    try:
        fd = open_regular_file(path)
    except OSError as e:
        raise _os_error(path, e, "read") from None
    out: list[str] = []
    used = 0
    truncated = False
    next_offset = None
    lineno = 0
    with os.fdopen(fd, "rb") as f:
        for raw, whole in _bounded_lines(f, READ_CAP):
            lineno += 1
            if lineno < offset:
                continue
            if p.limit is not None and len(out) >= p.limit:
                next_offset = lineno
                break
            cost = len(raw.rstrip(b"\n")) + (1 if out else 0)
            if used + cost > READ_CAP or not whole:
                if not out:
                    raise ToolError(
                        "too_large",
                        f"Line {lineno} alone exceeds the {READ_CAP}-byte output cap",
                        {"path": path, "line": lineno},
                    )
                truncated = True
                next_offset = lineno
                break
            out.append(_decode_line(raw, path, lineno))
            used += cost
    if not out and offset > max(lineno, 1):
        raise ToolError(
            "invalid_range",
            f"offset {offset} is beyond the end of the file ({lineno} lines total). Use offset 1 to read from "
            "the start" + (f", or offset {lineno} for the last line." if lineno else "."),
            {"path": path, "offset": offset, "total_lines": lineno},
        )
    return {
        "path": path,
        "content": "\n".join(out),
        "offset": offset,
        "lines": len(out),
        "truncated": truncated,
        "next_offset": next_offset,
    }


def _bounded_lines(f: io.BufferedIOBase, cap: int) -> Iterator[tuple[bytes, bool]]:
    """Each line of `f` as (at most cap + 1 bytes of it, whether that is the whole line).

    A longer line is read past in chunks, never held whole: a 10 GiB file without a newline costs
    no more memory than a short one.
    """
    while True:
        raw = f.readline(cap + 2)
        if not raw:
            return
        if len(raw) <= cap + 1 or raw.endswith(b"\n"):
            yield raw, True
            continue
        yield raw[: cap + 1], False
        if not _skip_past_newline(f):
            return


def _skip_past_newline(f: io.BufferedIOBase) -> bool:
    """Move `f` (a regular file) just past the next newline; False at the end of the file.

    One reused buffer: reading a long line in fresh 1 MiB `readline` pieces cost a new allocation, and
    its page faults, per piece (15 s for a 1.5 GiB line, against 0.3 s this way).
    """
    buf = bytearray(_SKIP_CHUNK)
    while True:
        n = f.readinto(buf)
        if not n:
            return False
        i = buf.find(b"\n", 0, n)
        if i >= 0:
            f.seek(i + 1 - n, os.SEEK_CUR)
            return True


def _decode_line(raw: bytes, path: str, lineno: int) -> str:
    line = raw[:-1] if raw.endswith(b"\n") else raw
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            "not_text",
            f"Failed to read file: line {lineno} is not valid UTF-8 text; file_read reads text files only",
            {"path": path, "line": lineno},
        ) from None


def _render_read(r: dict[str, Any]) -> str:
    text = r["content"]
    if r["truncated"]:
        text += f"\n[truncated at {READ_CAP} bytes — continue with offset {r['next_offset']}]"
    return text


# ----- file_write ------------------------------------------------------------------------------


class FileWriteParams(Params):
    path: Annotated[str, Field(max_length=4096, description="Destination path")]
    content: Annotated[str, Field(max_length=WRITE_MAX_CHARS, description="File content to write (UTF-8)")]
    mkdir: Annotated[bool, Field(description="Create parent directories if they don't exist")] = True


def file_write(p: FileWriteParams, ctx: ToolContext) -> dict[str, Any]:
    path = _write_target(ctx, p.path, tool="file_write")
    data = p.content.encode("utf-8", "surrogatepass")
    parent = os.path.dirname(path)
    blocker = non_directory_ancestor(path)
    if blocker is not None:
        raise _not_a_directory(path, blocker)
    if not p.mkdir and not os.path.isdir(parent):
        raise ToolError(
            "write_failed",
            f"Failed to write file: directory {parent} does not exist (set mkdir to true to create it)",
            {"path": path},
        )
    from ..core.filelocks import mutation_lock_dir, mutation_locks

    try:
        with mutation_locks(mutation_lock_dir(ctx.paths), [path]):
            existed = atomic_write(path, data, create_parents=p.mkdir)
    except ToolError:
        raise
    except OSError as e:
        raise _os_error(path, e, "write") from None
    return {"path": path, "bytes": len(data), "created": not existed}


# ----- file_edit -------------------------------------------------------------------------------


class FileEditParams(Params):
    path: Annotated[str, Field(max_length=4096, description="Path to the file")]
    old_string: Annotated[str, Field(max_length=WRITE_MAX_CHARS, description="Exact, unique text to replace")]
    new_string: Annotated[
        str, Field(max_length=WRITE_MAX_CHARS, description="Replacement text (may be empty)")
    ]


def file_edit(p: FileEditParams, ctx: ToolContext) -> dict[str, Any]:
    from ..core.filelocks import mutation_lock_dir, mutation_locks

    if p.old_string == "":
        raise ToolError("invalid_input", "old_string must be non-empty", {"field": "old_string"})
    path = _write_target(ctx, p.path, tool="file_edit", reject_dotdot=True)
    # The read, the check and the write are one step for every fermix writer of this file.
    with mutation_locks(mutation_lock_dir(ctx.paths), [path]):
        text, before = _read_for_edit(path)
        at = _unique_offset(text, p.old_string, path)
        line = text.count("\n", 0, at) + 1
        if p.new_string == p.old_string:
            raise ToolError(
                "no_change",
                f"old_string and new_string are identical, so {path} was left unchanged (the anchor is on "
                f"line {line}). Put the text you want in new_string.",
                {"path": path, "line": line},
            )
        new_text = text[:at] + p.new_string + text[at + len(p.old_string) :]
        _replace_if_unchanged(path, before, new_text.encode("utf-8"))
    return {"path": path, "line": line, "bytes": len(new_text.encode("utf-8"))}


def _read_for_edit(path: str) -> tuple[str, os.stat_result]:
    try:
        fd = open_regular_file(path)
        with os.fdopen(fd, "rb") as f:
            before = os.fstat(f.fileno())
            raw = f.read(EDIT_MAX_BYTES + 1)
    except NotADirectoryError as e:
        parent = e.filename or os.path.dirname(path)
        raise ToolError(
            "not_a_directory",
            f"{path} does not exist: {parent} is not a directory.",
            {"path": path, "parent": parent},
        ) from None
    except OSError as e:
        raise _os_error(path, e, "read") from None
    if len(raw) > EDIT_MAX_BYTES:
        raise ToolError("too_large", f"File is larger than {EDIT_MAX_BYTES} bytes: {path}", {"path": path})
    try:
        return raw.decode("utf-8"), before
    except UnicodeDecodeError:
        raise ToolError(
            "not_text", f"Failed to read file: not valid UTF-8 text: {path}", {"path": path}
        ) from None


def _unique_offset(text: str, old: str, path: str) -> int:
    count = text.count(old)
    if count == 0:
        raise ToolError("not_found", "old_string not found", {"path": path})
    if count > 1:
        raise ToolError(
            "not_unique",
            f"old_string is not unique; found {count} occurrences. Make the anchor longer until it is unique.",
            {"path": path, "count": count},
        )
    return text.index(old)


def _replace_if_unchanged(path: str, before: os.stat_result, data: bytes) -> None:
    """Write `data` unless a writer outside fermix's locks changed the file since it was read."""
    try:
        now = os.stat(path, follow_symlinks=False)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
            raise ToolError(
                "conflict",
                f"{path} changed while it was being edited; read it again and retry",
                {"path": path},
            )
        atomic_write(path, data)
    except ToolError:
        raise
    except OSError as e:
        raise _os_error(path, e, "write") from None


TOOLS = specs(
    ToolSpec(
        name="file_read",
        category="filesystem",
        policy_class="read_only",
        owner_only=True,
        description=(
            "Read a UTF-8 text file. Returns lines joined with newlines; `offset` (1-based) and `limit` "
            "pick a range. Output stops at 100000 bytes and says which offset to continue from."
        ),
        params=FileReadParams,
        handler=file_read,
        render=_render_read,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Read a known file, or a range of it. Use content_search or glob_search to find files first.",
        examples=(
            Example({"path": "notes/todo.md"}, "the whole file, up to the output cap"),
            Example({"path": "src/app.py", "offset": 120, "limit": 40}, "lines 120-159"),
        ),
        failure_modes=(
            FailureMode("not_found", "the file does not exist"),
            FailureMode("invalid_path", "the path is a directory, empty, or contains a NUL byte"),
            FailureMode("invalid_range", "offset or limit is below 1, or offset is past the last line"),
            FailureMode("outside_root", "the path is outside the sandbox roots; ask for a grant"),
            FailureMode("protected_path", "the path holds credentials or fermix state and is never readable"),
        ),
    ),
    ToolSpec(
        name="file_write",
        category="filesystem",
        policy_class="read_write",
        description=(
            "Write a UTF-8 text file atomically, replacing it if it exists and creating parent directories "
            "(unless mkdir is false). An existing file keeps its mode; a final symlink is refused."
        ),
        params=FileWriteParams,
        handler=file_write,
        render=lambda r: f"Wrote {r['bytes']} bytes to {r['path']}",
        hints=Hints(destructive=True, idempotent=True),
        when_to_use="Create a file or replace its whole content. For a small change, use file_edit.",
        examples=(Example({"path": "notes/todo.md", "content": "- buy milk\n"}, "create or replace a file"),),
        failure_modes=(
            FailureMode("outside_root", "the destination is outside the sandbox roots"),
            FailureMode("protected_path", "the destination is protected, or inside a .git directory"),
            FailureMode(
                "write_failed", "the directory is missing (mkdir false) or the disk refused the write"
            ),
            FailureMode("read_only_file", "the file exists and the user may not write it (e.g. mode 0444)"),
            FailureMode("not_a_directory", "a parent on the path exists and is not a directory"),
            FailureMode("symlink_refused", "the final path component is a symbolic link (dangling ones too)"),
        ),
    ),
    ToolSpec(
        name="file_edit",
        category="filesystem",
        policy_class="read_write",
        description=(
            "Replace exactly one unique occurrence of old_string with new_string, atomically, keeping the "
            "file's mode. Fails if old_string is missing or appears more than once."
        ),
        params=FileEditParams,
        handler=file_edit,
        render=lambda r: f"Replaced unique anchor in {r['path']}",
        hints=Hints(destructive=True),
        when_to_use="Change a small part of an existing file. Make old_string long enough to be unique.",
        examples=(
            Example(
                {"path": "app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"}, "flip a flag"
            ),
        ),
        failure_modes=(
            FailureMode("not_found", "the file does not exist, or old_string does not occur in it"),
            FailureMode("not_unique", "old_string occurs more than once; the count is in details"),
            FailureMode("invalid_path", "the path contains a `..` component"),
            FailureMode("conflict", "the file changed during the edit"),
            FailureMode("read_only_file", "the user may not write the file (e.g. mode 0444)"),
            FailureMode("not_a_directory", "a parent on the path is a file, so the file cannot exist"),
            FailureMode("no_change", "new_string equals old_string; the file is not rewritten"),
            FailureMode("symlink_refused", "the final path component is a symbolic link"),
        ),
    ),
)
