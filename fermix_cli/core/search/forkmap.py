"""`ordered_map`: a function over many files, in order, with the second half done by a forked child.

The search tools spend their time in Python-level work per file (open, read, match) that a thread
cannot overlap, because it holds the GIL. On a machine with two or more cores, a child forked for
each batch of items computes the results for the second half of the batch while this process
computes the first half; the child then streams its results back through a pipe, marshalled, in
order.

The caller sees exactly what a plain loop would give:
- Results come in item order, each with its item. Items are pulled in batches, and the caller may
  stop early: the child is then killed.
- A child that fails, dies or sends garbage costs only speed: the items it did not deliver are
  computed here.
- Results must be marshal-able: None, bool, int, float, str, bytes, and tuples, lists and dicts of them.

No fork happens for short lists, off Linux, on a single core, or while other threads run (forking a
threaded process can copy a lock some other thread holds).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import sys
from collections.abc import Callable, Generator, Iterable, Sequence
from itertools import islice
from typing import Any, TypeVar

T = TypeVar("T")

# Below this many items a fork (about a millisecond) does not pay for itself.
PARALLEL_MIN_ITEMS = 512
FIRST_BATCH, BATCH = 1024, 8192
_PIPE_BUFFER = 1 << 16


def can_fork() -> bool:
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if len(os.sched_getaffinity(0)) < 2:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def ordered_map(
    items: Iterable[T],
    fn: Callable[[T], Any],
    *,
    min_items: int | None = None,
    first_batch: int = FIRST_BATCH,
    batch: int = BATCH,
) -> Generator[tuple[T, Any], None, None]:
    """(item, `fn(item)`) for each item, in order.

    Items are taken in batches (`first_batch`, then `batch` at a time), so a caller that stops early
    has pulled at most one batch more than it used from a lazy iterable such as a directory walk.
    The second half of each batch of at least `min_items` is computed in a forked child.
    """
    threshold = max(PARALLEL_MIN_ITEMS if min_items is None else min_items, 2)
    source = iter(items)
    size = first_batch
    while True:
        chunk = list(islice(source, size))
        if len(chunk) >= threshold and can_fork():
            yield from _forked(chunk, fn)
        else:
            for item in chunk:
                yield item, fn(item)
        if len(chunk) < size:
            return
        size = batch


def _forked(items: list[T], fn: Callable[[T], Any]) -> Generator[tuple[T, Any], None, None]:
    n = len(items)
    split = n // 2
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into the caller's code
        _child(items[split:], fn, read_fd, write_fd)
    os.close(write_fd)
    try:
        for item in items[:split]:
            yield item, fn(item)
        done = split
        with open(read_fd, "rb", buffering=_PIPE_BUFFER) as pipe:
            read_fd = -1  # the file object owns it now
            while done < n:
                try:
                    result = marshal.load(pipe)
                except (EOFError, ValueError, TypeError):
                    break  # the child died or failed: the rest is computed below
                yield items[done], result
                done += 1
        for item in items[done:]:
            yield item, fn(item)
    finally:
        if read_fd >= 0:
            os.close(read_fd)
        _reap(pid)


def _child(items: Sequence[Any], fn: Callable[[Any], Any], read_fd: int, write_fd: int) -> None:
    code = 1
    try:
        os.close(read_fd)
        # Ctrl-C or a SIGTERM to the group ends the child at once: the parent's Python handlers (the
        # job worker's, the tool call's) are not the child's to run.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        # Everything is computed before anything is written: the parent reads only once its own
        # half is done, and a full pipe would stall the child until then.
        results = [fn(item) for item in items]
        with open(write_fd, "wb", buffering=_PIPE_BUFFER) as pipe:
            for result in results:
                marshal.dump(result, pipe)
        code = 0
    except BaseException:  # whatever happens here, the parent computes what is missing
        pass
    finally:
        os._exit(code)


def _reap(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # a child that has exited stays until reaped
        os.kill(pid, signal.SIGKILL)
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except InterruptedError:
            continue
        except ChildProcessError:
            return
