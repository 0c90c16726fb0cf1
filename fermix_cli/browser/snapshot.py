"""snapshot: the page as an accessibility-tree view (roles, names, states) with `ref` handles.

The view is built by `snapshot_js.SNAPSHOT` inside the current document, every time (never a cache), so
a snapshot after a navigation or a single-page-app swap shows what is there now, with the document's
`ready_state`. Each snapshot gets a random token, saved for the tab in the session file; the refs live on
the document under that token, so a later CLI call resolves a ref only against the latest snapshot of
the same live document (see `Tab.resolve_ref`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .page import Tab
from .session import Session
from .snapshot_js import SNAPSHOT

MAX_LINES = 3000


def take_snapshot(
    session: Session,
    tab: Tab,
    *,
    interactive: bool,
    compact: bool,
    depth: int | None,
    include_urls: bool,
) -> dict[str, Any]:
    tab.check_no_dialog()
    token = os.urandom(8).hex()
    options = {
        "token": token,
        "interactive": interactive,
        "compact": compact,
        "depth": depth,
        "includeUrls": include_urls,
        "maxLines": MAX_LINES,
    }
    result = tab.evaluate(f"{SNAPSHOT}({json.dumps(options)})")
    session.state.setdefault("refs", {})[tab.target_id] = {"token": token}
    session.save()
    return {"tab": tab.target_id, **result}
