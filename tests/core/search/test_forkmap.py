"""ordered_map: results in order, the second half from a forked child, and no loss when the child fails."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from fermix_cli.core.search import forkmap
from fermix_cli.core.search.forkmap import ordered_map

pytestmark = pytest.mark.skipif(not forkmap.can_fork(), reason="needs Linux, two cores and no other thread")

ITEMS = list(range(40))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_second_half_comes_from_a_child_in_order() -> None:
    parent = os.getpid()
    pairs = list(ordered_map(ITEMS, lambda i: (i * i, os.getpid()), min_items=2))
    assert [item for item, _ in pairs] == ITEMS
    out = [r for _, r in pairs]
    assert [v for v, _ in out] == [i * i for i in ITEMS]
    pids = [p for _, p in out]
    assert set(pids[:20]) == {parent}
    assert len(set(pids[20:])) == 1 and pids[20] != parent
    assert not _alive(pids[20])  # reaped


def test_short_lists_and_the_default_threshold_stay_in_process() -> None:
    parent = os.getpid()
    assert {r for _, r in ordered_map(ITEMS, lambda i: os.getpid())} == {parent}  # 40 < PARALLEL_MIN_ITEMS
    assert {r for _, r in ordered_map(ITEMS[:1], lambda i: os.getpid(), min_items=1)} == {parent}


def test_stopping_early_kills_and_reaps_the_child() -> None:
    gen = ordered_map(ITEMS, lambda i: os.getpid(), min_items=2)
    _, first = next(gen)
    gen.close()
    # The child's pid is not known to the caller; it must not be left running or as a zombie.
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
    assert first == os.getpid()


def test_a_failing_child_costs_only_speed() -> None:
    parent = os.getpid()

    def fn(i: int) -> tuple[int, int]:
        if os.getpid() != parent and i == 30:
            raise RuntimeError("the child breaks")
        return i + 1, os.getpid()

    out = [r for _, r in ordered_map(ITEMS, fn, min_items=2)]
    assert [v for v, _ in out] == [i + 1 for i in ITEMS]
    assert {p for _, p in out} == {parent}  # everything was computed here after all


def test_a_child_that_dies_mid_stream_is_finished_here() -> None:
    parent = os.getpid()
    marker = object()

    def fn(i: int) -> Any:
        # In the child, item 30 cannot be marshalled: the stream breaks after items 20..29.
        if i == 30 and os.getpid() != parent:
            return marker
        return (i, os.getpid())

    out = [r for _, r in ordered_map(ITEMS, fn, min_items=2)]
    assert [v for v, _ in out] == ITEMS
    pids = [p for _, p in out]
    assert pids[20] != parent and set(pids[20:30]) == {pids[20]}
    assert set(pids[30:]) == {parent}


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not forkmap.can_fork()
        assert {r for _, r in ordered_map(ITEMS, lambda i: os.getpid(), min_items=2)} == {os.getpid()}
    finally:
        stop.set()
        t.join()


def test_a_lazy_source_is_pulled_one_batch_at_a_time() -> None:
    pulled: list[int] = []

    def source() -> Any:
        for i in range(100):
            pulled.append(i)
            yield i

    gen = ordered_map(source(), lambda i: i * 2, min_items=2, first_batch=10, batch=30)
    got = [next(gen) for _ in range(12)]  # into the second batch
    assert got == [(i, i * 2) for i in range(12)]
    assert len(pulled) == 40  # the first batch of 10 and the next of 30, nothing more
    gen.close()
    assert [r for _, r in ordered_map(source(), lambda i: i * 2, min_items=2, first_batch=10, batch=30)] == [
        i * 2 for i in range(100)
    ]


def test_the_child_ends_on_sigterm_without_running_the_parents_handler(tmp_path) -> None:
    import signal
    import time

    marker = tmp_path / "handler-ran"
    parent = os.getpid()

    def handler(signum: int, frame: Any) -> None:
        marker.write_text(str(os.getpid()))

    def fn(i: int) -> int:
        if os.getpid() != parent and i == 20:
            os.kill(os.getpid(), signal.SIGTERM)  # the child is terminated by its own SIGTERM
            time.sleep(5)
        return i

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        assert [r for _, r in ordered_map(ITEMS, fn, min_items=2)] == ITEMS
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not marker.exists()
