"""Where an event's reminders go (reference 9.2 "Delivery target"), in the shape the engine snapshots.

The rules live in `fermix_cli.channels.targets.resolve_default_target` (configured target first, an
invalid one failing instead of falling through; else the owner inbox derived from the first channel
with an explicit owner id; else `no_default_target`), shared with scheduled jobs. This module turns
its answer into the snapshot an event keeps: `{"platform", "address", thread keys}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.config import Config
    from ..core.paths import FermixPaths


def resolve_default_target(config: Config, paths: FermixPaths) -> tuple[dict[str, Any], str]:
    """(target, source) with source `configured` or `derived`; never the current chat."""
    from ..channels.targets import ADDRESS_KEYS, THREAD_KEYS
    from ..channels.targets import resolve_default_target as resolve

    default = resolve(config)
    target = default.target
    address_key = next(k for k in ADDRESS_KEYS if k in target)
    snapshot = {"platform": target["platform"], "address": str(target[address_key])}
    snapshot.update({k: target[k] for k in THREAD_KEYS if k in target})
    return snapshot, default.source
