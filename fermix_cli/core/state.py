"""state.db: the one SQLite file. WAL, busy_timeout, BEGIN IMMEDIATE for every write, lazy open.

Nothing else opens the database file: closing any descriptor on it would drop this process's locks.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ToolError, missing_module_error, state_busy
from .homecheck import HomeIdentity
from .migrations import Migration, all_migrations, apply_missing
from .paths import make_private_dirs
from .records import Record

if TYPE_CHECKING:
    import sqlite3
    from types import ModuleType

    from .catalog import Catalog

BUSY_TIMEOUT_MS = 10_000

T = TypeVar("T")

# Writers in one process queue on a lock per file before BEGIN IMMEDIATE: threads (subagent workers)
# wake the moment the writer before them commits, instead of in SQLite's busy handler's sleeps
# (1 to 100 ms each). Other processes still meet busy_timeout.
_WRITE_LOCKS: dict[str, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.RLock:
    key = os.fspath(path)
    with _WRITE_LOCKS_GUARD:
        lock = _WRITE_LOCKS.get(key)
        if lock is None:
            lock = _WRITE_LOCKS[key] = threading.RLock()
        return lock


def sqlite_module() -> ModuleType:
    """The sqlite3 module; a typed error naming the fix where this Python was built without it."""
    try:
        import sqlite3
    except ImportError as e:
        raise missing_module_error(e) or e from None
    return sqlite3


def is_busy(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's "database is locked" (BUSY or LOCKED): contention, not a broken file."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        type(exc).__module__ == "sqlite3"  # sqlite3 itself is imported only where it is used
        and type(exc).__name__ == "OperationalError"
        and isinstance(code, int)
        and code & 0xFF in (5, 6)
    )


def patiently(
    call: Callable[[], T],
    *,
    patience: float,
    what: str,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`call()`, tried again with a growing pause while state.db stays busy, for up to `patience` s.

    Each try already waits busy_timeout in SQLite; this is for writes that must not be lost to one
    slow transaction of another process (a run's outcome). Once patience runs out, `state_busy`.
    """
    from .logs import logger

    deadline = clock() + patience
    pause = 0.05
    while True:
        try:
            return call()
        except ToolError as e:
            if e.code != "state_busy" or clock() >= deadline:
                raise
            logger("fermix.state").warning("%s: state.db is busy; trying again", what)
        except Exception as e:
            if not is_busy(e):
                raise
            if clock() >= deadline:
                raise state_busy() from None
            logger("fermix.state").warning("%s: state.db is busy (%s); trying again", what, e)
        sleep(max(0.0, min(pause, deadline - clock())))
        pause = min(pause * 2, 2.0)


class StateDB:
    """One connection per thread, in autocommit mode; transactions are explicit.

    Threads that come and go (subagent workers) borrow a connection from the one their caller holds
    (`lend`, `take_back`) instead of opening and closing their own: a borrowed connection is used by
    one thread at a time, and one handed back inside a transaction is closed, never lent again.
    """

    def __init__(
        self,
        path: Path,
        migrations: Sequence[Migration] | None = None,
        *,
        catalog: Catalog | None = None,
        migrate: bool = True,
        same_thread: bool = True,
    ) -> None:
        """Open (creating and migrating) `path`; the migrations are the catalog's unless given."""
        self.path = path
        self._migrations = migrations
        self._catalog = catalog
        self.conn = self._connect(same_thread)
        # Taken once the file exists: every commit checks the home is still this one (homecheck).
        self.identity = HomeIdentity.capture(path.parent, path)
        self._spares: list[StateDB] = []
        self._spares_lock = threading.Lock()
        self._closed = False
        if migrate:
            self.migrate()

    def lend(self) -> StateDB:
        """A connection to the same file for another thread: a spare handed back earlier, else a new one.

        The file is already migrated (this connection did it). Give it back with `take_back`.
        """
        while True:
            with self._spares_lock:
                spare = self._spares.pop() if self._spares else None
            if spare is None:
                return StateDB(
                    self.path, self._migrations, catalog=self._catalog, migrate=False, same_thread=False
                )
            if spare.identity is None or spare.identity.problem() is None:
                return spare
            spare.close()  # the home was replaced meanwhile: that connection writes nowhere useful

    def take_back(self, db: StateDB) -> None:
        """Keep a lent connection for the next borrower; close it if it is mid-transaction or we are closed."""
        with self._spares_lock:
            if not self._closed and not db.conn.in_transaction:
                self._spares.append(db)
                return
        db.close()

    def _unavailable(self, why: str) -> ToolError:
        return ToolError(
            "state_unavailable",
            f"cannot open {self.path}: {why}. Check the file and its directory, or run: fermix doctor",
            {"path": str(self.path)},
        )

    def _connect(self, same_thread: bool = True) -> sqlite3.Connection:
        sqlite3 = sqlite_module()
        try:
            make_private_dirs(self.path.parent)
            self._refuse_links()
            if not os.path.lexists(self.path):
                # Create the file 0600 ourselves; SQLite gives -wal and -shm the database file's mode.
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        except OSError as e:
            raise self._unavailable(e.strerror or str(e)) from None
        try:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=same_thread,  # a lent connection moves between threads, one at a time
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise sqlite3.OperationalError(f"could not switch to WAL (journal_mode={mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # SQLite follows links; look again now that it has opened the file and its WAL.
            try:
                self._refuse_links()
            except ToolError:
                conn.close()
                raise
        except sqlite3.Error as e:
            if is_busy(e):
                raise state_busy() from None
            raise self._unavailable(str(e)) from None
        conn.row_factory = sqlite3.Row
        return conn

    def _refuse_links(self) -> None:
        """Refuse a state.db (or its -wal, -shm) that is a symlink or not a regular file.

        SQLite would follow a link and create or write a database wherever it points.
        """
        for path in (self.path, *(self.path.with_name(self.path.name + s) for s in ("-wal", "-shm"))):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError as e:
                raise ToolError(
                    "state_unavailable", f"cannot inspect {path}: {e.strerror}", {"path": str(path)}
                ) from None
            if not stat.S_ISREG(st.st_mode):
                kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                raise ToolError(
                    "state_unavailable",
                    f"{path} is {kind}; fermix opens its state only as a regular file inside its home. "
                    "Move the link away (fermix recreates an empty state), or point FERMIX_HOME "
                    "at the real directory.",
                    {"path": str(path), "reason": "symlink" if kind == "a symlink" else "not_regular"},
                )

    @property
    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> int:
        """Apply missing migrations in one BEGIN IMMEDIATE transaction; safe with concurrent starters.

        `user_version` counts the migrations applied, so an up-to-date file costs one PRAGMA and the
        declaring modules are imported only when something is missing.
        """
        target = known_count(self._migrations, self._catalog)
        if self.schema_version == target:
            return target
        with self.write() as db:
            current = int(db.execute("PRAGMA user_version").fetchone()[0])
            if current > target:
                raise ToolError(
                    "state_too_new",
                    f"{self.path} has schema version {current}, newer than this fermix ({target}). Upgrade fermix.",
                    {"path": str(self.path), "version": current},
                )
            migrations = self._migrations if self._migrations is not None else all_migrations(self._catalog)
            try:
                return apply_missing(db, migrations)
            except ToolError as e:
                raise ToolError(
                    e.code, f"{self.path}: {e.message}", {"path": str(self.path), **e.details}
                ) from None

    @contextlib.contextmanager
    def write(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """A BEGIN IMMEDIATE transaction; `durable` forces synchronous=FULL for this commit.

        Before committing it checks the home is still the one opened (`home_vanished` otherwise): a
        commit into a deleted home's unlinked file would succeed and be lost.
        """
        with _write_lock(self.path):
            if durable:
                self.conn.execute("PRAGMA synchronous = FULL")
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.check_home()
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                if durable:
                    self.conn.execute("PRAGMA synchronous = NORMAL")

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent snapshot for several queries."""
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()

    def check_home(self) -> None:
        """Raise `home_vanished` if the home or state.db opened is no longer what the paths name."""
        if self.identity is not None:
            self.identity.check()

    def close(self) -> None:
        with self._spares_lock:
            self._closed = True
            spares, self._spares = self._spares, []
        for spare in spares:
            spare.close()
        self.conn.close()
        if self.identity is not None:
            self.identity.release()


class StateReport(Record, frozen=True):
    """What `inspect_state` found: integrity, schema version and size, without migrating anything."""

    exists: bool
    ok: bool
    detail: str
    schema_version: int | None = None
    latest_version: int = 0
    bytes: int = 0


def known_count(migrations: Sequence[Migration] | None = None, catalog: Catalog | None = None) -> int:
    """How many migrations this fermix knows: the given list's, else the catalog's (read by name)."""
    if migrations is not None:
        return len(migrations)
    from .catalog import default_catalog

    catalog = catalog or default_catalog()
    return len(catalog.migration_names) or len(all_migrations(catalog))


def schema_missing(exc: sqlite3.Error) -> bool:
    """True when `exc` says a table or column is not there (a state.db from before it was added): a
    read-only reader may take that as "nothing recorded yet". Any other error (not a database, corrupt,
    unreadable) is not that, and must be reported."""
    import sqlite3  # `exc` is one of its errors: it is there

    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(
        ("no such table", "no such column")
    )


def inspect_state(path: Path) -> StateReport:
    """Check a state.db without changing it (for `fermix doctor`): quick_check and user_version.

    Never call this in a process that has a StateDB open on the same file: closing this connection
    would drop that connection's locks.
    """
    latest = known_count()
    if not path.exists():
        return StateReport(False, True, "not created yet", latest_version=latest)
    size = path.stat().st_size
    sqlite3 = sqlite_module()
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
    except sqlite3.Error as e:
        return StateReport(True, False, f"cannot open: {e}", latest_version=latest, bytes=size)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.Error as e:
        return StateReport(True, False, f"unreadable: {e}", latest_version=latest, bytes=size)
    finally:
        conn.close()
    if problems != ["ok"]:
        return StateReport(True, False, f"quick_check: {'; '.join(problems[:3])}", version, latest, size)
    return StateReport(True, True, "quick_check ok", version, latest, size)
