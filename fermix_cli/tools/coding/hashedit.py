"""hash_edit as a pure planner: parse, validate every section, apply, and describe the effects to commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.blocks import BlockResolver, lower_hunks, resolve_block
from fermix_cli.tools.coding.hashline import (
    BOM,
    MAX_FILE_BYTES,
    clip_row,
    compute_tag,
    decode_text,
    normalise,
    normalise_eol,
)
from fermix_cli.tools.coding.patchparse import EDGE_OPS, Section, parse_patch
from fermix_cli.tools.coding.preview import preview_rows
from fermix_cli.tools.coding.recovery import (
    EDGE_DRIFT,
    RECOVERED_EARLIER,
    RECOVERED_EXTERNAL,
    RECOVERED_REMAPPED,
    line_map,
    mismatch_error,
    remap_offset,
)
from fermix_cli.tools.coding.repairs import apply_repairs
from fermix_cli.tools.coding.snapshots import SnapshotRecord, SnapshotStore
from fermix_cli.tools.coding.splice import LineEdit, check_edits, splice

from ...core.records import Record

UNSEEN_LIST_LIMIT = 40
UNSEEN_COLUMNS = 512


class LoadedFile(Record, frozen=True):
    """A section's file as the caller resolved and read it.

    `path` is the display path for headers and messages (cwd-relative inside cwd), `canonical` the
    snapshot key, `raw` the current bytes, `warning` e.g. the tag-based path recovery notice.
    """

    path: str
    canonical: str
    raw: bytes
    warning: str | None = None


class Destination(Record, frozen=True):
    """An `MV` destination as the caller resolved it (display path, canonical path, already exists)."""

    path: str
    canonical: str
    exists: bool


class EditFiles(Protocol):
    """The caller's file access; both methods raise `ToolError` for the path refusals they own."""

    def load(self, section: Section) -> LoadedFile:
        """Resolve `section.written` and read the file (symlink, missing, not regular, protected, recovery)."""
        ...

    def destination(self, dest: str, source: LoadedFile) -> Destination:
        """Resolve an `MV` destination as written (path rules, final symlink refusal)."""
        ...


class WriteFile(Record, frozen=True):
    """Replace the file at canonical `path` with `data` (atomically)."""

    path: str
    data: bytes


class MoveFile(Record, frozen=True):
    """Write `data` at canonical `dest` (creating parents), remove `source`, and move its snapshot history."""

    source: str
    dest: str
    data: bytes


class RemoveFile(Record, frozen=True):
    """Delete the regular file at canonical `path`."""

    path: str


Effect = WriteFile | MoveFile | RemoveFile


class SectionPlan(Record, frozen=True):
    """One prepared section: the effect to commit (None for a no-op) and the snapshot to record after it."""

    path: str
    canonical: str
    effect: Effect | None
    snapshot: SnapshotRecord | None
    response: str
    payload: str


class EditPlan(Record, frozen=True):
    """Every section of a call, all validated; nothing has been written yet."""

    sections: tuple[SectionPlan, ...]

    @property
    def response(self) -> str:
        """The tool's answer: section responses joined by blank lines."""
        return "\n\n".join(section.response for section in self.sections)


def noop_message(path: str) -> str:
    """The answer to a lone section that parsed and applied but changed nothing."""
    return (
        f"Edits to {path} parsed and applied cleanly, but produced no change: the file already has this "
        "content. Re-read the file if you expected a difference."
    )


def repeated_noop_error(path: str, count: int) -> ToolError | None:
    """The STOP error once one path has had `count` >= 3 byte-identical no-op payloads in a row."""
    if count < 3:
        return None
    return ToolError(
        "repeated_noop",
        f"STOP. Edits to {path} have been a byte-identical no-op {count} times in a row — re-read the file "
        "and change your approach instead of resending.",
    )


def plan_edit(
    text: str,
    files: EditFiles,
    store: SnapshotStore,
    *,
    repairs: bool = True,
    resolver: BlockResolver | None = resolve_block,
    cwd: str | None = None,
) -> EditPlan:
    """Prepare a whole hash_edit call; any failure raises before the caller writes anything.

    `cwd` lets section PATHs that name one file in different spellings merge (`parse_patch`).

    Failures may still record snapshots through `store`, as the reference requires: a tag mismatch
    records the live file, and a complete unseen-line listing marks those lines seen.
    """
    plans: list[SectionPlan] = []
    owners: dict[str, str] = {}
    for section in parse_patch(text, cwd):
        if section.tag is None:
            raise ToolError(
                "missing_tag",
                f"Missing hashline snapshot tag for {section.path}; use [{section.path}#tag] from your latest "
                "read/search output. To create a new file, use the write tool.",
            )
        target = files.load(section)
        if target.canonical in owners:
            raise ToolError(
                "duplicate_target",
                "Multiple hashline sections resolve to the same file "
                f"({owners[target.canonical]}, {section.path}).",
            )
        owners[target.canonical] = section.path
        dest = None
        if section.fileop is not None and section.fileop.kind == "MV":
            assert section.fileop.dest is not None
            dest = files.destination(section.fileop.dest, target)
            if dest.canonical == target.canonical:
                raise ToolError("invalid_move", f"MV destination is the same as {target.path}.")
            if dest.exists:
                raise ToolError(
                    "destination_exists",
                    f"MV destination {dest.path} already exists; remove it first or pick another name.",
                )
        plans.append(_plan_section(section, target, dest, store, repairs, resolver))
    if len(plans) > 1:
        for plan in plans:
            if plan.effect is None:
                raise ToolError(
                    "no_change",
                    noop_message(plan.path) + " Every section of a multi-section batch must change its "
                    "file; drop this section and resend.",
                )
    return EditPlan(tuple(plans))


def _format_lines(numbers: Sequence[int]) -> str:
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _guard_seen(
    edits: Sequence[LineEdit],
    base_lines: list[str],
    seen: frozenset[int],
    target: LoadedFile,
    tag: str,
    store: SnapshotStore,
    recorded: bool,
) -> None:
    """Reject edits touching rows the tagged snapshot never showed; a full listing marks them seen."""
    # The phantom element after a final newline, and the lone element of an empty file, are no rows.
    real = len(base_lines) - 1 if base_lines[-1] == "" else len(base_lines)
    touched = {n for edit in edits for n in edit.anchors if n <= real}
    unseen = sorted(touched - seen)
    if not unseen:
        return
    listed = unseen[:UNSEEN_LIST_LIMIT]
    rows = [f"{n}:{clip_row(base_lines[n - 1], UNSEEN_COLUMNS)}" for n in listed]
    if len(unseen) > len(listed):
        rows.append(f"[{len(unseen) - len(listed)} more unseen lines not listed; read them before retrying]")
    elif recorded:
        store.mark_seen(target.canonical, tag, unseen)
    else:
        store.record(target.canonical, tag, "\n".join(base_lines), unseen)
    raise ToolError(
        "unseen_lines",
        f"This edit targets line(s) {_format_lines(unseen)} of {target.path} that were not shown in the read "
        f"output for [{target.path}#{tag}]. They are listed below and now count as seen; check them and "
        "resend the edit if it is still right.\n\n" + "\n".join(rows),
        {"lines": unseen},
    )


def _plan_section(
    section: Section,
    target: LoadedFile,
    dest: Destination | None,
    store: SnapshotStore,
    repairs: bool,
    resolver: BlockResolver | None,
) -> SectionPlan:
    assert section.tag is not None
    tag = section.tag
    text = decode_text(target.raw, target.path)
    first_lf = text.find("\n")
    crlf = first_lf > 0 and text[first_lf - 1] == "\r"
    live = normalise_eol(text)
    live_lines = live.split("\n")
    live_tag = compute_tag(live)
    warnings = [target.warning] if target.warning else []
    snap = store.get(target.canonical, tag)
    edge_only = bool(section.hunks) and section.fileop is None
    edge_only = edge_only and all(h.op in EDGE_OPS for h in section.hunks)
    written = sorted({n for h in section.hunks if h.op not in EDGE_OPS for n in (h.start, h.end)})

    def mismatch(known: bool) -> ToolError:
        store.record(target.canonical, live_tag, live, ())
        return mismatch_error(target.path, tag, live_tag, known, live_lines, written)

    mapping: dict[int, int] | None = None
    stale = live_tag != tag and not edge_only
    recorded = snap is not None and (stale or normalise(snap.text) == normalise(live))
    if live_tag == tag:
        base = live
        seen = snap.seen if snap is not None and recorded else frozenset()
    elif edge_only:
        base = live
        drift = store.get(target.canonical, live_tag)
        seen = drift.seen if drift is not None else frozenset()
        warnings.append(EDGE_DRIFT)
    elif snap is None:
        raise mismatch(known=False)
    else:
        base, seen = snap.text, snap.seen
    base_lines = base.split("\n")
    lowered = lower_hunks(section.hunks, base, target.path, resolver)
    edits = list(lowered.edits)
    check_edits(edits, len(base_lines))
    if stale and snap is not None:
        mapping = line_map(base_lines, live_lines)
        offset = remap_offset(edits, base_lines, mapping)
        if offset is None:
            raise mismatch(known=True)
        edits = [edit.shifted(offset) for edit in edits]
        if offset:
            warnings.append(RECOVERED_REMAPPED)
        else:
            warnings.append(RECOVERED_EXTERNAL if snap.latest else RECOVERED_EARLIER)
    if not edge_only:
        _guard_seen(lowered.edits, base_lines, seen, target, tag, store, recorded)
    warnings.extend(lowered.warnings)
    if repairs:
        edits, repaired = apply_repairs(edits, live_lines, target.path)
        warnings.extend(repaired)
    result = splice(live_lines, edits)
    new_text = result.text
    if mapping is not None and new_text == live:
        raise mismatch(known=True)
    moved = dest is not None
    if section.fileop is not None and section.fileop.kind == "REM":
        response = f"Deleted {target.path}" + _warnings(warnings)
        return SectionPlan(
            target.path, target.canonical, RemoveFile(target.canonical), None, response, section.source
        )
    if new_text == live and not moved:
        return SectionPlan(
            target.path, target.canonical, None, None, noop_message(target.path), section.source
        )
    out = new_text.replace("\n", "\r\n") if crlf else new_text
    data = ((BOM if text.startswith(BOM) else "") + out).encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(
            "too_large",
            f"{target.path} would be {len(data)} bytes after this edit; hash_edit is limited to 1 MiB files.",
        )
    new_tag = compute_tag(new_text)
    rows, shown = preview_rows(result)
    renumber = result.new_number()
    old_seen = {mapping.get(n, 0) for n in seen} if mapping is not None else set(seen)
    new_seen = {renumber[n] for n in old_seen if n in renumber}
    new_seen |= {i + 1 for i, origin in enumerate(result.origin) if origin is None} | shown
    out_path = dest.path if dest is not None else target.path
    head = [f"[{out_path}#{new_tag}]", *lowered.resolved]
    if dest is not None:
        head.append(f"Moved to {dest.path}")
    response = "\n".join(head + rows) + _warnings(warnings)
    key = dest.canonical if dest is not None else target.canonical
    snapshot = SnapshotRecord(key, new_tag, new_text, frozenset(new_seen))
    effect: Effect = (
        MoveFile(target.canonical, dest.canonical, data)
        if dest is not None
        else WriteFile(target.canonical, data)
    )
    return SectionPlan(target.path, target.canonical, effect, snapshot, response, section.source)


def _warnings(warnings: Sequence[str]) -> str:
    return "\n\nWarnings:\n" + "\n".join(warnings) if warnings else ""
