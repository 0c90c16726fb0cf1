"""The turns of `fermix serve telegram`: FIFO per conversation, conversations side by side, and the
journal that lets a restart neither lose a message nor run a turn twice.

A conversation is a chat (its forum topics included: the reference's thread scope `root`). Its messages
are answered one after another in Telegram's order; different chats are answered at the same time, at
most `limit` turns at once.

The journal (`run/telegram.turns.json`) holds every update taken from Telegram whose turn has not ended,
and whether that turn has started. An update enters it before the saved offset moves past it and leaves
it when its turn ends. After a restart an update whose turn never started is answered as usual; one whose
turn had started (the server was killed during it) is not run again, since its tools may have acted
already, and its chat is told instead: turns are at most once.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from ..core.logs import logger

log = logger("fermix.telegram")


class TurnJournal:
    """The updates taken whose turns have not ended, kept in a JSON file rewritten atomically on each change."""

    def __init__(self, path: Path, ensure_dir: Callable[[Path], Path]) -> None:
        self.path = path
        self._ensure_dir = ensure_dir
        self._lock = threading.Lock()
        self._entries: dict[int, dict[str, Any]] = self._read()

    def _read(self) -> dict[int, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:  # nothing to replay is better than not serving at all
            log.error("telegram: ignoring the unreadable turn journal %s: %s", self.path, e)
            return {}
        entries: dict[int, dict[str, Any]] = {}
        for entry in data if isinstance(data, list) else []:
            update = entry.get("update") if isinstance(entry, dict) else None
            if isinstance(update, dict) and isinstance(update.get("update_id"), int):
                entries[update["update_id"]] = {"update": update, "started": bool(entry.get("started"))}
        return entries

    def __contains__(self, update_id: object) -> bool:
        return update_id in self._entries

    def pending(self) -> list[tuple[dict[str, Any], bool]]:
        """(update, whether its turn had started), oldest first."""
        with self._lock:
            return [(e["update"], e["started"]) for _, e in sorted(self._entries.items())]

    def add(self, updates: list[dict[str, Any]]) -> None:
        with self._lock:
            for update in updates:
                self._entries.setdefault(update["update_id"], {"update": update, "started": False})
            self._write()

    def start(self, update_id: int) -> None:
        with self._lock:
            if update_id in self._entries:
                self._entries[update_id]["started"] = True
                self._write()

    def end(self, update_id: int) -> None:
        with self._lock:
            if self._entries.pop(update_id, None) is not None:
                self._write()

    def _write(self) -> None:
        from ..core.fsops import atomic_write

        self._ensure_dir(self.path.parent)
        entries = [self._entries[k] for k in sorted(self._entries)]
        atomic_write(str(self.path), json.dumps(entries, ensure_ascii=False).encode("utf-8"), new_mode=0o600)


class ConversationQueues:
    """Items handed to `work` on worker threads: FIFO per key, keys side by side, at most `limit` at once.

    A key whose turn is over goes to the back of the line when it has more: one busy chat never holds a
    worker while others wait. `close` lets the items running end and starts no other.
    """

    def __init__(self, work: Callable[[Any], None], limit: int = 4) -> None:
        self.work = work
        self.limit = max(1, limit)
        self._cond = threading.Condition()
        self._queues: dict[Hashable, deque[Any]] = {}
        self._ready: deque[Hashable] = deque()  # keys with an item waiting and none running
        self._running: set[Hashable] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, key: Hashable, item: Any) -> None:
        with self._cond:
            if self._closed:
                return
            queue = self._queues.setdefault(key, deque())
            queue.append(item)
            if key not in self._running and len(queue) == 1:
                self._ready.append(key)
            if len(self._threads) < self.limit and len(self._ready) > self._idle():
                thread = threading.Thread(target=self._worker, name="telegram-turn", daemon=True)
                self._threads.append(thread)
                thread.start()
            self._cond.notify_all()

    def _idle(self) -> int:
        return len(self._threads) - len(self._running)

    @property
    def running(self) -> int:
        return len(self._running)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def settled(self, timeout: float) -> bool:
        """Wait up to `timeout` s for every item to end (once closed: every item running); whether they did."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not self._running and (self._closed or not self._queues), timeout
            )

    def _worker(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or bool(self._ready))
                if self._closed:
                    return
                key = self._ready.popleft()
                item = self._queues[key].popleft()
                self._running.add(key)
            try:
                self.work(item)
            except Exception:  # `work` keeps its own boundary; this one keeps the worker alive
                log.exception("telegram: a turn failed outside its own error handling")
            finally:
                with self._cond:
                    self._running.discard(key)
                    if self._queues[key]:
                        self._ready.append(key)
                    else:
                        del self._queues[key]
                    self._cond.notify_all()
