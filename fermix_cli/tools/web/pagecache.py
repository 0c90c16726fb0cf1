"""The `web` tool's page cache in state.db: immutable snapshots behind `web:<ref>`, the newest 64 kept.

A reference is a hash of the snapshot's URL, title and text, so storing the same page again gives the same
reference; it then counts as the newest instead of being stored twice. Reading never touches the network.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from ...core.records import Record

if TYPE_CHECKING:
    from ...core.context import ToolContext

CAPACITY = 64
SNAPSHOT_BYTES = 40_000
PREFIX = "web:"
_REF = re.compile(r"^web:[0-9a-f]{16}$")


class Snapshot(Record, frozen=True):
    ref: str
    url: str
    title: str | None
    content_type: str | None
    source: str  # "open" (a direct GET) or "exa" (a search extract)
    text: str
    truncated_by: tuple[str, ...]  # limits that cut the text when it was captured


def make_snapshot(
    url: str,
    title: str | None,
    content_type: str | None,
    source: str,
    text: str,
    truncated_by: tuple[str, ...] = (),
) -> Snapshot:
    """A snapshot with its text cut to 40000 UTF-8 bytes and its reference derived from its content."""
    data = text.encode("utf-8")
    if len(data) > SNAPSHOT_BYTES:
        text = data[:SNAPSHOT_BYTES].decode("utf-8", "ignore")
        truncated_by = (*truncated_by, "snapshot_limit")
    digest = hashlib.sha256("\0".join((url, title or "", text)).encode("utf-8", "surrogatepass"))
    return Snapshot(PREFIX + digest.hexdigest()[:16], url, title, content_type, source, text, truncated_by)


def is_reference(text: str) -> bool:
    return _REF.match(text) is not None


def store(ctx: ToolContext, snapshots: list[Snapshot]) -> None:
    """Keep `snapshots` as the newest entries (in order) and evict beyond the newest 64, in one transaction."""
    if not snapshots:
        return
    stamp = ctx.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    with ctx.state.write() as db:
        seq = int(db.execute("SELECT coalesce(max(seq), 0) FROM web_snapshots").fetchone()[0])
        for snap in snapshots:
            seq += 1
            db.execute(
                "INSERT INTO web_snapshots (ref, seq, url, title, content_type, source, text, truncated_by,"
                " created_at) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(ref) DO UPDATE SET seq = excluded.seq",
                (snap.ref, seq, snap.url, snap.title, snap.content_type, snap.source, snap.text,
                 ",".join(snap.truncated_by), stamp),
            )  # fmt: skip
        db.execute(
            "DELETE FROM web_snapshots WHERE seq < "
            "(SELECT seq FROM web_snapshots ORDER BY seq DESC LIMIT 1 OFFSET ?)",
            (CAPACITY - 1,),
        )


def load(ctx: ToolContext, ref: str) -> Snapshot | None:
    rows = ctx.state.query(
        "SELECT ref, url, title, content_type, source, text, truncated_by FROM web_snapshots WHERE ref = ?",
        (ref,),
    )
    if not rows:
        return None
    row = rows[0]
    return Snapshot(
        row["ref"],
        row["url"],
        row["title"],
        row["content_type"],
        row["source"],
        row["text"],
        tuple(reason for reason in row["truncated_by"].split(",") if reason),
    )
