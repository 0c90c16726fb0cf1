"""An in-memory workspace that plays the caller's part (files, snapshots, commits) around the engine."""

from __future__ import annotations

import posixpath

from fermix_cli.core.errors import ToolError
from fermix_cli.tools.coding.hashedit import (
    Destination,
    EditPlan,
    LoadedFile,
    MoveFile,
    RemoveFile,
    WriteFile,
    plan_edit,
)
from fermix_cli.tools.coding.hashline import ReadEntry, assemble_read, decode_text, parse_target
from fermix_cli.tools.coding.patchparse import Section
from fermix_cli.tools.coding.snapshots import MemorySnapshotStore


class Workspace:
    """Files as bytes keyed by relative path, a snapshot store, and read/edit calls wired like the tools."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.store = MemorySnapshotStore()

    # -- the caller's side of the EditFiles protocol
    def load(self, section: Section) -> LoadedFile:
        path = posixpath.normpath(section.path)
        if path not in self.files:
            raise ToolError(
                "not_found", f"File not found: {section.path}. Use the write tool to create new files."
            )
        return LoadedFile(section.path, "/ws/" + path, self.files[path])

    def destination(self, dest: str, source: LoadedFile) -> Destination:
        path = posixpath.normpath(dest)
        return Destination(dest, "/ws/" + path, path in self.files)

    # -- tool-shaped helpers
    def write(self, path: str, data: bytes | str) -> None:
        self.files[path] = data.encode() if isinstance(data, str) else data

    def text(self, path: str) -> str:
        return self.files[path].decode()

    def read(self, *entries: str) -> str:
        loaded = []
        for entry in entries:
            try:
                path, selector = parse_target(entry, lambda p: p in self.files)
                if path not in self.files:
                    raise ToolError("not_found", f"File not found: {path}")
                text = decode_text(self.files[path], path)
                loaded.append(ReadEntry(entry, path, text, selector))
            except ToolError as exc:
                loaded.append(ReadEntry(entry, error=exc))
        output = assemble_read(loaded)
        for entry, section in zip(loaded, output.sections, strict=True):
            if section is not None and section.tag is not None:
                self.store.record("/ws/" + entry.path, section.tag, section.text, section.shown)
        return output.content

    def plan(self, text: str, **kwargs: object) -> EditPlan:
        kwargs.setdefault("cwd", "/ws")  # the tool passes the turn's cwd, so absolute PATHs inside it merge
        return plan_edit(text, self, self.store, **kwargs)  # type: ignore[arg-type]

    def edit(self, text: str, **kwargs: object) -> str:
        plan = self.plan(text, **kwargs)
        for section in plan.sections:
            effect = section.effect
            if isinstance(effect, WriteFile):
                self.files[effect.path.removeprefix("/ws/")] = effect.data
            elif isinstance(effect, MoveFile):
                del self.files[effect.source.removeprefix("/ws/")]
                self.files[effect.dest.removeprefix("/ws/")] = effect.data
                self.store.move(effect.source, effect.dest)
            elif isinstance(effect, RemoveFile):
                del self.files[effect.path.removeprefix("/ws/")]
            if section.snapshot is not None:
                snap = section.snapshot
                self.store.record(snap.path, snap.tag, snap.text, snap.seen)
        return plan.response
