"""The coding `hash_edit` tool: hashline patches planned by the pure engine, committed through the sandbox.

The order of a call (hashline.md §4.7): parse; resolve every section's path (and MV destination)
without following final symlinks; take the per-file mutation locks in sorted order; plan every
section against the session's snapshot store (nothing is written if any section fails); check that
no file changed under us; commit each effect atomically in sorted canonical order and record its new
snapshot. Store writes the engine makes while failing (tag mismatch, unseen lines) persist, because
each store call is its own short transaction.
"""

from __future__ import annotations

import os
import posixpath
from typing import Annotated, Any

from fermix_cli.core.context import ToolContext
from fermix_cli.core.errors import ToolError
from fermix_cli.core.params import Field
from fermix_cli.core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs
from fermix_cli.tools.coding.diskio import lock_dir, not_regular, read_limited, session_store
from fermix_cli.tools.coding.hashedit import (
    Destination,
    EditPlan,
    LoadedFile,
    MoveFile,
    RemoveFile,
    SectionPlan,
    WriteFile,
    plan_edit,
    repeated_noop_error,
)
from fermix_cli.tools.coding.patchparse import Section, parse_patch
from fermix_cli.tools.coding.pathrules import Target, ToolPath, check_parents, display_path, resolve_target
from fermix_cli.tools.coding.refusals import (
    edit_not_found,
    edit_symlink,
    partial_commit,
    path_recovered,
    read_directory,
    rem_not_regular,
)
from fermix_cli.tools.coding.snapshot_db import SqliteSnapshotStore

from ...core.records import Record

WARNINGS = "\n\nWarnings:\n"


class HashEditParams(Params):
    input: Annotated[
        str,
        Field(
            description=(
                "The patch: sections that start [PATH#TAG] (copied from the latest read or hash_edit "
                "output), then ops on the tagged file's line numbers: SWAP N.=M:, SWAP.BLK N:, DEL N.=M, "
                "DEL.BLK N, INS.PRE N:, INS.POST N:, INS.BLK.POST N:, INS.HEAD:, INS.TAIL:, MV DEST, REM. "
                "Body rows are +TEXT (a literal leading + or - is written ++ / +-)."
            )
        ),
    ]


class _Resolved(Record, frozen=True):
    where: ToolPath
    warning: str | None = None


class SandboxFiles:
    """The engine's `EditFiles` over the sandbox, with every path resolved before the locks are taken."""

    def __init__(self, ctx: ToolContext, store: SqliteSnapshotStore) -> None:
        self._ctx = ctx
        self._store = store
        self._sources: dict[str, _Resolved | ToolError] = {}
        self._dests: dict[str, Target | ToolError] = {}
        self.loaded: dict[str, os.stat_result] = {}
        self.raw: dict[str, bytes] = {}

    # ----- resolution (before the locks) ------------------------------------------------------

    def prepare(self, sections: tuple[Section, ...]) -> list[str]:
        """Resolve every section path and MV destination; the canonical paths to lock."""
        paths: list[str] = []
        for section in sections:
            if section.tag is None:
                continue  # the engine refuses it before loading anything
            source = self._source(section)
            if isinstance(source, _Resolved):
                paths.append(source.where.path)
            if section.fileop is not None and section.fileop.dest is not None:
                dest = self._dest(section.fileop.dest)
                if isinstance(dest, Target):
                    paths.append(dest.where.path)
        return paths

    def _source(self, section: Section) -> _Resolved | ToolError:
        if section.path not in self._sources:
            try:
                self._sources[section.path] = self._resolve(section)
            except ToolError as e:
                self._sources[section.path] = e
        return self._sources[section.path]

    def _resolve(self, section: Section) -> _Resolved | ToolError:
        # Resolved as written, not from the merge key: `/cwd/link/x` may reach through a symlink where
        # `link/x` may not. Merged spellings name one file; each still meets the path rules as it would alone.
        first, *others = section.written
        target = resolve_target(self._ctx, first, tool="hash_edit")
        for other in others:
            resolve_target(self._ctx, other, tool="hash_edit")
        display = target.where.display
        rem = section.fileop is not None and section.fileop.kind == "REM"
        if target.lstat is None:
            return self._recover(section, target) or edit_not_found(display)
        if target.is_regular:
            return _Resolved(target.where)
        if rem:
            return rem_not_regular(display)
        if target.is_symlink:
            return edit_symlink(display)
        return read_directory(display) if target.is_dir else not_regular(display)

    def _recover(self, section: Section, missing: Target) -> _Resolved | None:
        """Tag-based path recovery: exactly one session snapshot with this basename and tag."""
        assert section.tag is not None
        name = posixpath.basename(missing.where.path)
        candidates = [p for p in self._store.paths_with(name, section.tag) if p != missing.where.path]
        if len(candidates) != 1:
            return None
        try:
            found = resolve_target(self._ctx, candidates[0], tool="hash_edit")
        except ToolError:
            return None
        if not found.is_regular or not os.access(found.where.path, os.W_OK):
            return None
        notice = path_recovered(section.path, section.tag, found.where.display)
        return _Resolved(found.where, notice)

    def _dest(self, dest: str) -> Target | ToolError:
        if dest not in self._dests:
            try:
                self._dests[dest] = resolve_target(self._ctx, dest, tool="hash_edit")
            except ToolError as e:
                self._dests[dest] = e
        return self._dests[dest]

    # ----- the EditFiles protocol (under the locks) -------------------------------------------

    def load(self, section: Section) -> LoadedFile:
        resolved = self._source(section)
        if isinstance(resolved, ToolError):
            raise resolved
        where = resolved.where
        try:
            raw, st = read_limited(where.path, where.display)
        except ToolError as e:
            if e.code == "not_found":
                raise edit_not_found(where.display) from None
            raise
        self.loaded[where.path] = st
        self.raw[where.path] = raw
        return LoadedFile(where.display, where.path, raw, resolved.warning)

    def destination(self, dest: str, source: LoadedFile) -> Destination:
        target = self._dest(dest)
        if isinstance(target, ToolError):
            raise target
        if target.is_symlink:
            raise edit_symlink(target.where.display)
        if target.lstat is None:
            check_parents(target.where.path, target.where.display)
        return Destination(target.where.display, target.where.path, target.lstat is not None)

    # ----- commit -----------------------------------------------------------------------------

    def check_writable(self, plan: EditPlan) -> None:
        """Refuse, before anything is written, to change a file its user could not write in place.

        A move that keeps the content is a rename, which `mv` allows on a read-only file too; REM likewise.
        """
        from fermix_cli.core.fsops import refuse_read_only

        for section in plan.sections:
            effect = section.effect
            if isinstance(effect, WriteFile) or (
                isinstance(effect, MoveFile) and effect.data != self.raw.get(effect.source)
            ):
                refuse_read_only(section.canonical, section.path)

    def check_unchanged(self, plan: EditPlan) -> None:
        """Refuse to commit over a file that changed after it was planned (outside fermix's locks)."""
        for section in plan.sections:
            before = self.loaded.get(section.canonical)
            if section.effect is None or before is None:
                continue
            try:
                now = os.stat(section.canonical, follow_symlinks=False)
            except OSError:
                now = None
            if now is None or _identity(now) != _identity(before):
                raise ToolError(
                    "conflict",
                    f"{section.path} changed while the edit was being prepared; nothing was written. "
                    "Re-read the file and retry.",
                    {"path": section.path},
                )


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _effect_key(section: SectionPlan) -> str:
    effect = section.effect
    if isinstance(effect, MoveFile):
        return effect.source
    return effect.path if effect is not None else section.canonical


def _apply(effect: WriteFile | MoveFile | RemoveFile, store: SqliteSnapshotStore) -> None:
    from fermix_cli.core.fsops import atomic_write, move_with_content, remove_regular_file

    if isinstance(effect, WriteFile):
        atomic_write(effect.path, effect.data)
    elif isinstance(effect, MoveFile):
        # One step for a user to see: the file is at the source, or whole (edited) at the destination.
        try:
            move_with_content(effect.source, effect.dest, effect.data)
        except FileExistsError:
            raise ToolError(
                "destination_exists", f"{effect.dest} appeared before the move; nothing was moved."
            ) from None
        store.move(effect.source, effect.dest)
    else:
        remove_regular_file(effect.path)


def _commit(plan: EditPlan, store: SqliteSnapshotStore) -> None:
    ordered = sorted(plan.sections, key=_effect_key)
    written: list[str] = []
    for index, section in enumerate(ordered):
        if section.effect is None:
            continue
        try:
            _apply(section.effect, store)
        except (OSError, ToolError) as e:
            reason = (
                e.message
                if isinstance(e, ToolError)
                else f"Failed to write {section.path}: {e.strerror or e}"
            )
            if len(ordered) == 1:
                raise ToolError("write_failed", reason, {"path": section.path}) from None
            raise partial_commit(reason, written, [s.path for s in ordered[index:]]) from None
        written.append(section.path)
        if section.snapshot is not None:
            snap = section.snapshot
            store.record(snap.path, snap.tag, snap.text, snap.seen)


_ACTIONS: dict[type, str] = {WriteFile: "edited", MoveFile: "moved", RemoveFile: "deleted"}


def _describe(section: SectionPlan, cwd: str) -> dict[str, Any]:
    effect = section.effect
    _, _, warnings = section.response.partition(WARNINGS)
    out: dict[str, Any] = {
        "path": section.path,
        "tag": section.snapshot.tag if section.snapshot is not None else None,
        "action": _ACTIONS.get(type(effect), "unchanged"),
        "warnings": warnings.split("\n") if warnings else [],
    }
    if isinstance(effect, MoveFile):
        out["moved_to"] = display_path(effect.dest, cwd)
    return out


def hash_edit(p: HashEditParams, ctx: ToolContext) -> dict[str, Any]:
    from fermix_cli.core.filelocks import mutation_locks

    cwd = ctx.sandbox.turn_cwd()
    sections = parse_patch(p.input, cwd)  # parse errors come first, before any path is touched
    store = session_store(ctx)
    files = SandboxFiles(ctx, store)
    repairs = ctx.config.capabilities.tools.hash_edit.repairs
    with mutation_locks(lock_dir(ctx), files.prepare(sections)):
        plan = plan_edit(p.input, files, store, repairs=repairs, cwd=cwd)
        if len(plan.sections) == 1 and plan.sections[0].effect is None:
            only = plan.sections[0]
            error = repeated_noop_error(only.path, store.noop_streak(only.canonical, only.payload))
            if error is not None:
                raise error
        else:
            files.check_writable(plan)
            files.check_unchanged(plan)
            _commit(plan, store)
            store.clear_noops(s.canonical for s in plan.sections)
    return {
        "content": plan.response,
        "changed": any(s.effect is not None for s in plan.sections),
        "files": [_describe(s, cwd) for s in plan.sections],
    }


TOOLS = specs(
    ToolSpec(
        name="hash_edit",
        category="coding",
        policy_class="read_write",
        toolsets=frozenset({"coding"}),
        description=(
            "Apply a hashline patch to existing UTF-8 files. Each section starts [PATH#TAG] copied from the "
            "latest read or hash_edit output of this session; line numbers are those of that output. Ops: "
            "SWAP N.=M: / DEL N.=M / INS.PRE N: / INS.POST N: / INS.HEAD: / INS.TAIL: with +TEXT body rows, "
            "block ops SWAP.BLK / DEL.BLK / INS.BLK.POST, whole-file MV DEST and REM. Every section is "
            "validated before anything is written; writes are atomic. Answers with the new [PATH#TAG] and a "
            "preview. Does not create files: use write."
        ),
        params=HashEditParams,
        handler=hash_edit,
        render=lambda r: r["content"],
        hints=Hints(destructive=True),
        when_to_use=(
            "Change part of a file you have read in this session. On a stale-tag error, copy the header "
            "from your last successful edit or re-read the file."
        ),
        examples=(
            Example(
                {"input": "[greet.py#C918]\nSWAP 2.=2:\n+    greeting = 'Hi'\nINS.POST 3:\n+    return msg"},
                "replace line 2 and insert after line 3 (numbers of the tagged read)",
            ),
            Example({"input": "[todo.txt#FEEF]\nDEL 2.=3\nINS.TAIL:\n+zeta"}, "delete two lines, append one"),
            Example(
                {"input": "[svc.py#F796]\nMV lib/svc.py"}, "move a file (its tag stays valid at the new path)"
            ),
        ),
        failure_modes=(
            FailureMode(
                "stale_tag", "the file changed since the tagged read and the edit cannot be remapped"
            ),
            FailureMode("unseen_lines", "the edit touches rows the tagged output never showed (now listed)"),
            FailureMode("missing_tag", "a section header has no #TAG"),
            FailureMode("invalid_patch", "the patch does not parse; the message names the line"),
            FailureMode("not_found", "the file does not exist (hash_edit never creates files)"),
            FailureMode("symlink_refused", "the final path component is a symbolic link"),
            FailureMode("no_change", "a section of a multi-section batch changes nothing"),
            FailureMode("repeated_noop", "the same no-op edit was sent three times in a row"),
            FailureMode(
                "read_only_file", "the file is not writable by the user (e.g. mode 0444); nothing is written"
            ),
            FailureMode("conflict", "the file changed while the edit was being prepared"),
            FailureMode("write_failed", "the disk refused a write; a batch lists what was written"),
            FailureMode("outside_root", "the path is outside the sandbox roots"),
            FailureMode("protected_path", "the path is protected, or inside a .git directory"),
        ),
    ),
)
