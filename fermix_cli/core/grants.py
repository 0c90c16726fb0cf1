"""Persistent sandbox grants: adding and removing `[sandbox] allowed_roots` entries in config.toml."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from typing import Any

from .config import read_document, write_document
from .errors import ToolError
from .paths import FermixPaths
from .sandbox import Sandbox


@contextlib.contextmanager
def config_lock(paths: FermixPaths) -> Iterator[None]:
    """Serialise read-modify-write of config.toml across processes."""
    paths.ensure_dir(paths.config_dir)
    fd = os.open(paths.config_dir / ".config.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def update_config(paths: FermixPaths, change: Any) -> dict[str, Any]:
    """Apply `change(doc) -> doc` under the config lock, validate, write atomically.

    `doc` is the file as a tomlkit document (a dict): comments and layout survive the edit.
    """
    with config_lock(paths):
        new = change(read_document(paths.config_file))
        write_document(paths.config_file, new)
        return dict(new.unwrap())


def unsafe_root_error(path: str, why: str) -> ToolError:
    return ToolError(
        "unsafe_root",
        f"{path} cannot be granted ({why}). Run: fermix sandbox explain",
        {"path": path, "reason": why},
    )


def check_grantable(sandbox: Sandbox, raw: str) -> str:
    """The canonical directory to grant, or `unsafe_root` / `blocked_root` / `not_found`."""
    canonical, why = sandbox.grant_refusal(raw, blocked=False)
    if why is not None:
        raise unsafe_root_error(canonical, why)
    blocked = sandbox.blocked_root_of(canonical)
    if blocked is not None:
        # Blocked roots beat grants: the grant would be written and do nothing.
        raise ToolError(
            "blocked_root",
            f"{canonical} cannot be granted: it is inside the blocked root {blocked}, and blocked roots beat "
            "grants. Remove that entry from [sandbox] blocked_roots first if the directory should be "
            "reachable. Run: fermix sandbox explain",
            {"path": canonical, "blocked_root": blocked},
        )
    if not os.path.isdir(canonical):
        raise ToolError("not_found", f"{canonical} is not an existing directory", {"path": canonical})
    return canonical


def grant_path(sandbox: Sandbox, paths: FermixPaths, raw: str) -> tuple[str, bool]:
    """Persist a grant. Returns (canonical path, whether it was newly added)."""
    canonical = check_grantable(sandbox, raw)
    added = False

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        nonlocal added
        section = doc.setdefault("sandbox", {})
        roots = list(section.get("allowed_roots", []))
        if canonical not in roots:
            roots.append(canonical)
            added = True
        section["allowed_roots"] = roots
        return doc

    update_config(paths, change)
    return canonical, added


def revoke_path(sandbox: Sandbox, paths: FermixPaths, raw: str) -> str:
    """Remove a grant, matched by its canonical form or as written in the config."""
    from .pathcanon import canonicalize

    target = canonicalize(sandbox.anchor(raw))

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        section = doc.get("sandbox", {})
        roots = list(section.get("allowed_roots", []))
        keep = [r for r in roots if r != raw and _canon_or_none(sandbox, r) != target]
        if len(keep) == len(roots):
            raise ToolError(
                "not_found", f"{target} is not granted. Run: fermix sandbox explain", {"path": target}
            )
        section["allowed_roots"] = keep
        return doc

    update_config(paths, change)
    return target


def _canon_or_none(sandbox: Sandbox, raw: str) -> str | None:
    from .pathcanon import canonicalize

    try:
        return canonicalize(sandbox.anchor(raw))
    except ToolError:
        return None
