"""One Ctrl-C stops a one-shot command even when its KeyboardInterrupt is swallowed by a finalizer."""

from __future__ import annotations

import contextlib
import signal
import time

import pytest

from fermix_cli.core.cancel import install_interrupt_flag, interrupt_requested, sleep_unless_interrupted


def test_a_swallowed_interrupt_still_stops_the_next_wait() -> None:
    before = signal.getsignal(signal.SIGINT)
    undo = install_interrupt_flag()
    try:
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        # What the garbage collector does to an exception raised in a __del__: drops it.
        with contextlib.suppress(KeyboardInterrupt):
            handler(signal.SIGINT, None)
        assert interrupt_requested()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            sleep_unless_interrupted(30)
        assert time.monotonic() - started < 1
    finally:
        undo()
    assert not interrupt_requested()
    assert signal.getsignal(signal.SIGINT) is before


def test_without_an_interrupt_the_wait_is_a_sleep() -> None:
    undo = install_interrupt_flag()
    try:
        started = time.monotonic()
        sleep_unless_interrupted(0.12)
        assert 0.1 <= time.monotonic() - started < 2
    finally:
        undo()
