"""The coding `write` tool: create or replace a whole file, atomically, and record its snapshot.

The answer carries the new `[PATH#TAG]` and the snapshot is recorded with every line seen, so a
`hash_edit` can follow a `write` without another `read` (hashline.md §10; this supersedes the
contract's "no tag" note).
"""

from __future__ import annotations

from typing import Annotated, Any

from fermix_cli.core.context import ToolContext
from fermix_cli.core.errors import ToolError
from fermix_cli.core.params import Field
from fermix_cli.core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from fermix_cli.tools.coding.diskio import lock_dir, session_store
from fermix_cli.tools.coding.hashline import MAX_FILE_BYTES, compute_tag, normalise_eol, split_rows


class WriteParams(Params):
    path: Annotated[
        str,
        Field(
            max_length=4096,
            description="File to create or replace; relative paths start at (and stay in) the working directory",
        ),
    ]
    content: Annotated[
        str, Field(description="The whole new content, written verbatim (UTF-8, at most 1 MiB; may be empty)")
    ]


def _symlink_refused(display: str) -> ToolError:
    return ToolError(
        "symlink_refused",
        f"write refuses {display}: the final path component is a symbolic link.",
        {"path": display},
    )


def write(p: WriteParams, ctx: ToolContext) -> dict[str, Any]:
    from fermix_cli.core.filelocks import mutation_locks
    from fermix_cli.core.fsops import DirSyncError, atomic_write, refuse_read_only
    from fermix_cli.tools.coding.pathrules import check_parents, resolve_target

    try:
        data = p.content.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(
            "invalid_content", "content contains unpaired surrogates; write takes valid Unicode text only."
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(
            "too_large", f"content is {len(data)} bytes; write is limited to 1 MiB.", {"bytes": len(data)}
        )
    target = resolve_target(ctx, p.path, tool="write")
    path, display = target.where.path, target.where.display
    if target.is_symlink:
        raise _symlink_refused(display)
    if target.is_dir:
        raise ToolError(
            "is_directory", f"{display} is a directory; write needs a file path.", {"path": display}
        )
    if target.lstat is not None and not target.is_regular:
        raise ToolError(
            "not_regular_file",
            f"{display} is not a regular file; write replaces regular files only.",
            {"path": display},
        )
    if target.is_regular:
        refuse_read_only(path, display)
    check_parents(path, display)
    text = normalise_eol(p.content)
    tag = compute_tag(p.content)
    store = session_store(ctx)
    undurable: OSError | None = None
    with mutation_locks(lock_dir(ctx), [path]):
        try:
            existed = atomic_write(path, data, create_parents=True, strict_dir_sync=True)
        except DirSyncError as e:
            existed, undurable = target.lstat is not None, e
        except IsADirectoryError:
            raise ToolError(
                "is_directory", f"{display} is a directory; write needs a file path.", {"path": display}
            ) from None
        except OSError as e:
            raise ToolError(
                "write_failed", f"Failed to write {display}: {e.strerror or e}", {"path": display}
            ) from None
        store.record(path, tag, text, range(1, len(split_rows(text)) + 1))
        store.clear_noops([path])
    if undurable is not None:
        raise ToolError(
            "write_not_durable",
            f"{display} was replaced but the directory sync failed ({undurable.strerror or undurable}).",
            {"path": display, "tag": tag},
        )
    action = "replaced" if existed else "created"
    return {
        "content": f"Wrote {len(data)} bytes to {display} ({action})\n[{display}#{tag}]",
        "path": display,
        "bytes": len(data),
        "created": not existed,
        "tag": tag,
    }


TOOLS = specs(
    ToolSpec(
        name="write",
        category="coding",
        policy_class="read_write",
        toolsets=frozenset({"coding"}),
        description=(
            "Create or fully replace a file with `content` (verbatim, UTF-8, at most 1 MiB; empty is allowed). "
            "Atomic; parent directories are created; a final symlink is refused. Answers with the new "
            "[PATH#TAG], so hash_edit can follow without a read."
        ),
        params=WriteParams,
        handler=write,
        render=lambda r: r["content"],
        hints=Hints(destructive=True, idempotent=True),
        when_to_use="Create a new file or replace a whole one. For changes to part of a file, use hash_edit.",
        examples=(Example({"path": "notes/todo.md", "content": "- buy milk\n"}, "create or replace a file"),),
        failure_modes=(
            FailureMode("too_large", "content is over 1 MiB"),
            FailureMode("symlink_refused", "the final path component is a symbolic link (dangling ones too)"),
            FailureMode("is_directory", "the path is a directory"),
            FailureMode("read_only_file", "the file exists and the user may not write it (e.g. mode 0444)"),
            FailureMode("write_not_durable", "the file was replaced but its directory could not be synced"),
            FailureMode("outside_cwd", "a relative path leaves the working directory"),
            FailureMode("outside_root", "the destination is outside the sandbox roots"),
            FailureMode("protected_path", "the destination is protected, or inside a .git directory"),
        ),
    ),
)
