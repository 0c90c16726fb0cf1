"""The turn queues of `fermix serve telegram`: FIFO per conversation, conversations side by side, a bound."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fermix_cli.cli.telegram_turns import ConversationQueues, TurnJournal


def test_at_most_limit_turns_run_at_once_and_each_key_keeps_its_order() -> None:
    lock = threading.Lock()
    running: list[str] = []
    peak = [0]
    done: list[tuple[str, int]] = []

    def work(item: tuple[str, int]) -> None:
        key, _ = item
        with lock:
            assert key not in running  # one turn per conversation at a time
            running.append(key)
            peak[0] = max(peak[0], len(running))
        time.sleep(0.05)
        with lock:
            running.remove(key)
            done.append(item)

    queues = ConversationQueues(work, limit=2)
    for n in range(3):
        for key in "abcd":
            queues.submit(key, (key, n))
    assert queues.settled(10)
    queues.close()
    assert peak[0] == 2 and len(done) == 12
    for key in "abcd":
        assert [n for k, n in done if k == key] == [0, 1, 2]


def test_a_closed_queue_starts_nothing_more_and_a_failing_item_does_not_stop_it() -> None:
    gate = threading.Event()
    seen: list[int] = []

    def work(item: int) -> None:
        seen.append(item)
        if item == 0:
            raise RuntimeError("a bug in one turn")
        gate.wait(5)

    queues = ConversationQueues(work, limit=1)
    queues.submit("a", 0)
    queues.submit("a", 1)
    queues.submit("a", 2)
    deadline = time.monotonic() + 5
    while seen != [0, 1] and time.monotonic() < deadline:
        time.sleep(0.01)
    queues.close()
    gate.set()
    assert queues.settled(5) and seen == [0, 1]  # item 2 stays queued (the journal keeps it)


def test_the_journal_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "run" / "telegram.turns.json"
    journal = TurnJournal(path, lambda p: p.mkdir(parents=True, exist_ok=True) or p)
    journal.add([{"update_id": 7, "message": {}}, {"update_id": 5, "message": {}}])
    journal.start(5)
    journal.add([{"update_id": 5, "message": {"again": True}}])  # taken twice: kept as first taken
    again = TurnJournal(path, lambda p: p)
    assert again.pending() == [
        ({"update_id": 5, "message": {}}, True),
        ({"update_id": 7, "message": {}}, False),
    ]
    again.end(5)
    again.end(7)
    assert TurnJournal(path, lambda p: p).pending() == [] and oct(path.stat().st_mode & 0o777) == "0o600"
    path.write_text("{not json")
    assert TurnJournal(path, lambda p: p).pending() == []  # unreadable: logged, serving goes on
