"""Generate `core/net/transport_async.py` from `core/net/transport.py`, so the two transports cannot drift.

The idea of encode/httpcore's `scripts/unasync.py`, run the other way: the sync transport is the source,
and a table of substitutions turns it into the async one (`httpcore.NetworkBackend` into
`httpcore.AsyncNetworkBackend`, `def connect_tcp(` into `async def connect_tcp(`, a blocking name lookup
into one run in a worker thread, ...). Every rule must apply at least once: a rule that no longer matches
means the sync source changed shape, and generation stops rather than writing a half-converted file.
`python -m fermix_cli.build docs` writes the result; `--check` (and a test) fail while it is stale.
"""

from __future__ import annotations

import re
from pathlib import Path

SOURCE = Path("fermix_cli/core/net/transport.py")
TARGET = Path("fermix_cli/core/net/transport_async.py")

BANNER = '''"""The async twin of `transport.GuardedTransport`, for async HTTP clients (the MCP SDK's).

Generated from `transport.py` by `python -m fermix_cli.build docs` (fermix_cli/build/unasync.py);
do not edit: change `transport.py` and regenerate.

Same rules, same judge: the URL is checked and the host judged on every request (`check_url`,
`HostGuard.addresses`), and below httpcore's connection pool every new connection is resolved once,
judged, and opened to an approved address only, within one connect deadline for all of a host's
addresses. Name resolution runs in a worker thread so the event loop never blocks on DNS. Imported only
when an async client is built.
"""

'''

# (pattern, replacement), applied in order; a pattern is a regular expression over the whole source.
RULES: tuple[tuple[str, str], ...] = (
    (
        r"from collections\.abc import Iterable, Iterator\n",
        "from collections.abc import AsyncIterable, AsyncIterator, Iterable\n",
    ),
    (r"\nimport time\n", "\n"),  # the async twin sleeps with anyio
    (r"\nimport httpcore\n", "\nimport anyio\nimport httpcore\n"),
    (r"httpcore\.NetworkBackend\b", "httpcore.AsyncNetworkBackend"),
    (r"httpcore\.NetworkStream\b", "httpcore.AsyncNetworkStream"),
    (r"httpcore\.SyncBackend\(\)", "httpcore.AnyIOBackend()"),
    (r"httpcore\.ConnectionPool\(", "httpcore.AsyncConnectionPool("),
    (r"httpx\.BaseTransport\b", "httpx.AsyncBaseTransport"),
    (r"httpx\.SyncByteStream\b", "httpx.AsyncByteStream"),
    (r"(?<![A-Za-z])(PinnedBackend|GuardedTransport|GuardedByteStream)\b", r"Async\1"),
    (r"\bdef (connect_tcp|connect_unix_socket|sleep)\(", r"async def \1("),
    (r"\bself\._sockets\.connect_tcp\(", "await self._sockets.connect_tcp("),
    (r"\btime\.sleep\((\w+)\)", r"await anyio.sleep(\1)"),
    (r"\bself\._guard\.addresses\(([\w.]+)\)", r"await anyio.to_thread.run_sync(self._guard.addresses, \1)"),
    (r"\bIterable\[bytes\]", "AsyncIterable[bytes]"),
    (r"\bIterator\[bytes\]", "AsyncIterator[bytes]"),
    (r"\bdef __iter__\(self\)", "async def __aiter__(self)"),
    (r"(?m)^(\s+)yield from self\._stream$", r"\1async for chunk in self._stream:\n\1    yield chunk"),
    (r"\bdef close\(self\)", "async def aclose(self)"),
    (r'getattr\(self\._stream, "close", None\)', 'getattr(self._stream, "aclose", None)'),
    (r"(?m)^(\s+)close\(\)$", r"\1await close()"),
    (r"\bdef handle_request\(", "async def handle_async_request("),
    (r"\bself\._pool\.handle_request\(", "await self._pool.handle_async_request("),
    (r"isinstance\(core_response\.stream, Iterable\)", "isinstance(core_response.stream, AsyncIterable)"),
    (r"\bself\._pool\.close\(\)", "await self._pool.aclose()"),
)


class UnasyncError(Exception):
    """The sync source no longer fits the substitution table."""


def unasync(source: str) -> str:
    """The async module for the sync transport's source text."""
    if not source.startswith('"""'):
        raise UnasyncError(f"{SOURCE} must start with its docstring")
    body = source[source.index('"""', 3) + 3 :]
    for pattern, replacement in RULES:
        body, count = re.subn(pattern, replacement, body)
        if not count:
            raise UnasyncError(f"unasync rule {pattern!r} matched nothing in {SOURCE}; update the table")
    return BANNER + body.lstrip("\n")


def generated(repo: Path) -> dict[Path, str]:
    """The generated async transport under `repo`, with its expected content."""
    return {repo / TARGET: unasync((repo / SOURCE).read_text())}
