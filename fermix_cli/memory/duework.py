"""Which facts the memory review may read, and the one read that says whether any is new.

Cheap to import: the review's due-work source (`jobs/memoryreview.py`, run by `fermix jobs run`) asks this
before loading any config.
"""

from __future__ import annotations

# The owner's own facts: what a review may read (never a guest's notes or a job's memory).
OWN_FACTS = (
    "created_trust = 'operator' AND source_id = 'main' AND scope_type IN ('owner', 'agent', 'conversation')"
)
# Is any of the owner's facts newer than what the last successful review consolidated? One indexed read,
# with no config loaded, so an idle tick stays cheap.
ANY_NEW_FACT = f"""
WITH last AS (SELECT max(through) AS t FROM memory_reviews WHERE status = 'ok')
SELECT 1 FROM memories, last
WHERE {OWN_FACTS} AND (last.t IS NULL OR updated_at > last.t OR (archived_at IS NOT NULL AND archived_at > last.t))
LIMIT 1
"""
