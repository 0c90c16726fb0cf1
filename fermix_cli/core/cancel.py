"""A cancel token: how whoever started a call tells the work still running in it to stop.

The caller that gives up on a call (an MCP client's `notifications/cancelled`, a server shutting down)
sets the token on the call's `ToolContext` (`ctx.cancel`); work that can run for long watches it. The
shell runner (`shell.procgroup.run_captured`) waits on `wake_fd()` next to the child's output, so a
cancel stops the child's whole process group at once instead of at the command's timeout. Setting it is
safe from any thread and idempotent; it is never unset.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator


class CancelToken:
    __slots__ = ("_children", "_event", "_lock", "_wakers", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._wakers: list[int] = []
        self._children: list[CancelToken] = []
        self.reason = ""

    def child(self) -> CancelToken:
        """A token cancelled with this one (and on its own too): a worker's, under its caller's call."""
        token = CancelToken()
        with self._lock:
            if not self._event.is_set():
                self._children.append(token)
                return token
        token.cancel(self.reason)
        return token

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "the caller cancelled the call") -> None:
        """Mark the call cancelled and wake everything waiting on it (the first reason is kept)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            for fd in self._wakers:
                with contextlib.suppress(OSError):
                    os.write(fd, b"x")
            children, self._children = self._children, []
        for token in children:
            token.cancel(reason)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled (True) or until `timeout` seconds pass (False)."""
        return self._event.wait(timeout)

    @contextlib.contextmanager
    def wake_fd(self) -> Iterator[int]:
        """A descriptor that turns readable once the token is cancelled (already readable if it is)."""
        read, write = os.pipe()
        os.set_blocking(write, False)
        with self._lock:
            self._wakers.append(write)
            if self._event.is_set():
                os.write(write, b"x")
        try:
            yield read
        finally:
            with self._lock:
                self._wakers.remove(write)
            os.close(read)
            os.close(write)


# Ctrl-C in a one-shot command. Python turns SIGINT into KeyboardInterrupt wherever the main thread is,
# and where that is a finalizer run by the garbage collector (`__del__`, a weakref callback) the
# exception is printed and dropped: the command would carry on as if no key was pressed. The handler
# below also raises this flag, which the model loop and slow waits check, so one Ctrl-C always stops.
_interrupt = {"requested": False}


def interrupt_requested() -> bool:
    """Whether Ctrl-C was pressed since `install_interrupt_flag` (for code that must not miss it)."""
    return _interrupt["requested"]


def stop_signals(*signals: int) -> list[int]:
    """`signals` plus SIGHUP (the terminal closed, ssh dropped), unless SIGHUP is ignored (`nohup`): the
    signals a long-running command treats as its stop signal (main thread, where handlers are set)."""
    import signal

    stops = list(signals)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        stops.append(signal.SIGHUP)
    return stops


def install_interrupt_flag() -> Callable[[], None]:
    """Make SIGINT, SIGTERM (a `kill`, a service stopping) and SIGHUP (the terminal closed, ssh dropped)
    raise the flag and then KeyboardInterrupt (main thread only), so the run ends `interrupted` and says
    so, its running command's process group killed; returns the undo. An ignored SIGHUP (`nohup`) stays
    ignored."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_int(signum: int, frame: object) -> None:
        _interrupt["requested"] = True
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, on_int) for sig in stop_signals(signal.SIGINT, signal.SIGTERM)}

    def undo() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _interrupt["requested"] = False

    return undo


def sleep_unless_interrupted(seconds: float) -> None:
    """time.sleep that ends with KeyboardInterrupt once Ctrl-C was pressed, even if that was swallowed.

    The main thread, where Ctrl-C lands, wakes every 50 ms to look at the flag. Another thread (a
    subagent worker) never receives KeyboardInterrupt, like a model call blocked in a read: it sleeps
    in one piece and looks at the flag before and after.
    """
    import time

    if threading.current_thread() is not threading.main_thread():
        if _interrupt["requested"]:
            raise KeyboardInterrupt
        time.sleep(max(0.0, seconds))
        if _interrupt["requested"]:
            raise KeyboardInterrupt
        return
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if _interrupt["requested"]:
            raise KeyboardInterrupt
        time.sleep(min(left, 0.05))


class TimeLimit:
    """An overall limit on a one-shot run (`fermix ask --timeout`): when it passes, the run is stopped
    as Ctrl-C stops it, so a model call in flight is abandoned and a running tool ends the same way.

    At the limit a timer thread cancels `cancel` (work on other threads that watches the token stops)
    and sends SIGINT to the main thread (a blocked read wakes; a command being started holds it until
    its process group is known, `shell.procgroup`). The main thread sees KeyboardInterrupt; `reached`
    tells that one from a real Ctrl-C. Wrap the run in `running()`, which arms the timer once. Armed on
    another thread, only the token is cancelled.
    """

    def __init__(self, seconds: float, cancel: CancelToken | None = None) -> None:
        self.seconds = seconds
        self.cancel = cancel
        self.reached = False
        self._lock = threading.Lock()
        self._armed = False
        self._main = False  # armed on the main thread: the one a signal can stop

    def _fire(self) -> None:
        import signal

        with self._lock:
            if not self._armed:
                return
            self._armed = False
            self.reached = True
        if self._main:
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        if self.cancel is not None:
            self.cancel.cancel(f"the run reached its time limit ({self.seconds:g} s)")

    def _disarm(self) -> bool:
        """Stop the timer; True when the stop was already sent."""
        with self._lock:
            self._armed = False
            return self.reached

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Arm the limit for the block. A stop sent just as the block ended is taken inside it, so
        KeyboardInterrupt never lands in whatever the caller does next."""
        import time

        timer = threading.Timer(self.seconds, self._fire)
        timer.daemon = True
        self._main = threading.current_thread() is threading.main_thread()
        self._armed = True
        timer.start()
        try:
            yield
        except BaseException:
            self._disarm()
            timer.cancel()
            raise
        sent = self._disarm()
        timer.cancel()
        if sent and self._main:
            end = time.monotonic() + 1.0
            while time.monotonic() < end:  # the SIGINT on its way raises here
                time.sleep(0.01)
