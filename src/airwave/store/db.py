"""Engine, sessions and migrations for SQLite (WAL, the embedded default) and PostgreSQL."""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from airwave.errors import ApiError, ErrorCode
from airwave.store.private import FILE_MODE, private_file, tighten

if TYPE_CHECKING:  # alembic is imported only when there is something to migrate
    from alembic.config import Config as AlembicConfig

MIGRATIONS = Path(__file__).with_name("migrations")
_WRITE = "airwave_write"
_PG_MIGRATION_LOCK = 0x41495257  # any constant shared by all server processes
# PostgreSQL: a pooled connection unused this many seconds is pinged before it is handed out
PING_AFTER_IDLE = 1.0
# PostgreSQL reads on the event loop (inside `reads_only()`) run on connections of their own that
# give up rather than hold every other request of the process up: a statement that runs (or
# waits for a lock) longer than this, sent data the server does not acknowledge for
# LOOP_UNACKED_MS, or no free connection of theirs raises WouldBlock, and the caller runs the
# work again in a worker thread, on the ordinary read connections.
LOOP_STATEMENT_MS = 100
LOOP_UNACKED_MS = 1000
LOOP_CONNECTIONS = 2  # the event loop's reads, and a read inside one of them
_IDLE_SINCE = "airwave_idle_since"
READ_ONLY = "airwave_read_only"  # a pooled connection's info: a thread's own reader holds it
WAL_SIZE_LIMIT = 8 << 20  # bytes SQLite's write-ahead log is cut back to when it starts over
BUSY_TIMEOUT = 5.0  # default seconds a statement waits for a lock before the call answers 503
# PostgreSQL: lock_not_available (lock_timeout), serialization_failure, deadlock_detected.
log = logging.getLogger("airwave.store")
_PG_CONTENTION = frozenset({"55P03", "40001", "40P01"})


def contention_error(exc: BaseException) -> ApiError | None:
    """The clean 503 answer when `exc` is a database lock wait that ran out, else None."""
    if not isinstance(exc, DBAPIError):
        return None
    orig = exc.orig
    busy = getattr(orig, "sqlstate", None) in _PG_CONTENTION or (
        type(orig).__name__ == "OperationalError"
        and any(
            word in str(orig).lower()
            for word in ("database is locked", "database is busy", "database table is locked")
        )
    )
    if not busy:
        return None
    log.warning(
        "database busy",
        extra={
            "sqlstate": getattr(orig, "sqlstate", None),
            "statement": " ".join(str(exc.statement or "").split())[:160],
        },
    )
    return _busy()


def wait_longer(db: Session, seconds: float) -> None:
    """Let this transaction's lock waits run up to `seconds` (PostgreSQL; SQLite serialises writes).

    For the few writes that must not fail because the account is busy, such as a deletion.
    """
    if db.get_bind().dialect.name == "postgresql":
        db.execute(text(f"SET LOCAL lock_timeout = {max(1, int(seconds * 1000))}"))


_DELETION_LOCKS = 0x4157  # advisory lock space: listener ids, held by their deletion


def lock_listener_for_deletion(db: Session, listener_id: int) -> None:
    """Mark a listener's deletion as in flight until this transaction ends (PostgreSQL).

    An advisory lock rather than a row lock: the listener's own calls keep their lock order, so
    the deletion cannot deadlock with them.
    """
    if db.get_bind().dialect.name == "postgresql":
        db.execute(
            text("SELECT pg_advisory_xact_lock(:space, :key)"),
            {"space": _DELETION_LOCKS, "key": listener_id},
        )


def await_listener_deletion(db: Session, listener_id: int) -> None:
    """Wait until no deletion of the listener is in flight (PostgreSQL; SQLite: nothing to wait)."""
    if db.get_bind().dialect.name == "postgresql":
        db.execute(
            text("SELECT pg_advisory_xact_lock_shared(:space, :key)"),
            {"space": _DELETION_LOCKS, "key": listener_id},
        )


class WouldBlock(Exception):
    """Work inside `reads_only()` asked for a write, or a PostgreSQL read there gave up (see
    LOOP_STATEMENT_MS): the caller runs the work again where it may wait (a worker thread).
    Nothing was written."""


_READS_ONLY: ContextVar[bool] = ContextVar("airwave_reads_only", default=False)


@contextmanager
def reads_only() -> Iterator[None]:
    """Within: `Database.write()` raises WouldBlock, and PostgreSQL reads run on the event loop's
    own connections (`Database._read_on_loop`). For work run on the event loop, which must never
    wait for a write lock, nor long for a read."""
    token = _READS_ONLY.set(True)
    try:
        yield
    finally:
        _READS_ONLY.reset(token)


def transaction_block(connection: Connection) -> None:
    """Open the transaction block a PostgreSQL server-side cursor needs, on a read's connection
    (reads run in autocommit: see `Database._install_postgres_reads`, which ends the block with
    the read, as for SQLAlchemy's own streamed results). A write already has one."""
    driver = connection.connection.driver_connection
    if getattr(driver, "autocommit", False):  # between statements: no transaction is open
        driver.autocommit = False  # the next statement starts one, read only


def _busy() -> ApiError:
    return ApiError(
        ErrorCode.READONLY_MODE,
        "the database is busy with other writes; try again in a moment",
        retry_after=2,
    )


class Database:
    """The engine (on PostgreSQL, and a second one of its own for reads); `read()` and `write()`
    hand out ORM sessions with the right transaction."""

    def __init__(self, url: str, busy_timeout: float = BUSY_TIMEOUT) -> None:
        self.url = make_url(url)
        timeout_ms = max(1, int(busy_timeout * 1000))
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        if self.is_sqlite:
            database = self.url.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
                _private_sqlite_files(Path(database))
            self.engine = create_engine(
                # Sized for the API's worker threads (each may hold a reader and a writer) so that
                # connections are reused rather than reopened under load.
                self.url,
                pool_size=64,
                max_overflow=16,
                connect_args={"check_same_thread": False},
            )
            self._install_sqlite_hooks(self.engine, timeout_ms)
        else:
            from airwave.store.models import postgresql_partial_indexes

            postgresql_partial_indexes()
            options = " ".join(
                filter(None, [self.url.query.get("options"), f"-c lock_timeout={timeout_ms}"])
            )
            # Writes, and the engine used directly: a transaction per `write()`, as usual.
            # Both pools hand out the connection returned last (LIFO): after a burst has opened
            # several, the calls of a quieter moment keep to one, which stays warm (psycopg
            # prepares a statement on its fifth run on a connection) and is never idle long
            # enough to be pinged (_install_idle_ping), while the others sit until they are
            # needed again. Taken in turn (FIFO), each of them would be.
            self.engine = create_engine(
                self.url,
                pool_size=8,
                max_overflow=16,
                pool_use_lifo=True,
                # added to the URL's own `options` (such as a search_path), never in place of them
                connect_args={"options": options},
            )
            self._install_idle_ping(self.engine)
            # Reads: connections of their own (_install_postgres_reads)
            read_only = f"{options} -c default_transaction_read_only=on"
            self._reads_engine = self._postgres_reads_engine(
                {"options": read_only}, pool_size=8, max_overflow=16
            )
            # Reads on the event loop: see LOOP_STATEMENT_MS
            self._loop_engine = self._postgres_reads_engine(
                {
                    "options": f"{read_only} -c statement_timeout={LOOP_STATEMENT_MS}",
                    "tcp_user_timeout": LOOP_UNACKED_MS,
                },
                pool_size=LOOP_CONNECTIONS,
                max_overflow=0,
                pool_timeout=0.01,
            )
        self.busy_timeout = busy_timeout
        # SQLite has one writer: this process's writers queue here (woken at once, in turn) rather
        # than in SQLite's busy handler, which polls with sleeps and lets busy writers starve one.
        self._writer = threading.RLock() if self.is_sqlite else None
        self._read = sessionmaker(
            self.engine if self.is_sqlite else self._reads_engine,
            expire_on_commit=False,
            autoflush=False,
        )
        self._loop_read = (
            None
            if self.is_sqlite
            else sessionmaker(self._loop_engine, expire_on_commit=False, autoflush=False)
        )
        # SQLite: each thread keeps one reading connection (see `_own_reader`); PostgreSQL: the
        # event loop keeps one of its own (`_own_loop_reader`)
        self._readers: threading.local | None = threading.local() if self.is_sqlite else None
        self._loop_readers = threading.local()
        self._kept: weakref.WeakSet[_Reader | _LoopReader] = weakref.WeakSet()
        self._disposed = threading.Event()
        self._write = sessionmaker(
            self.engine.execution_options(**{_WRITE: True}), expire_on_commit=False, autoflush=False
        )

    @staticmethod
    def _install_sqlite_hooks(engine: Engine, busy_timeout_ms: int) -> None:
        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            cursor.execute("PRAGMA foreign_keys=ON")
            # the log is reused from its start once all of it is in the database and no reader
            # uses it; what a burst made it grow past this is given back to the disk then
            cursor.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            driver = conn.connection.dbapi_connection
            # Writers take the lock up front so two writers queue instead of deadlocking; a
            # wait for it that runs out is told as SQLAlchemy tells it (a busy database: 503)
            if conn.get_execution_options().get(_WRITE):
                try:
                    driver.execute("BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    raise DBAPIError.instance("BEGIN IMMEDIATE", (), exc, sqlite3.Error) from exc
            else:  # takes no lock, so cannot be busy
                driver.execute("BEGIN")

    def _postgres_reads_engine(self, connect_args: dict[str, Any], **pool: Any) -> Engine:  # noqa: ANN401
        """An engine of read-only connections (`_install_postgres_reads`), pinged after idling,
        handing out the connection returned last (see the writes' engine)."""
        engine = create_engine(self.url, pool_use_lifo=True, connect_args=connect_args, **pool)
        self._install_idle_ping(engine)
        self._install_postgres_reads(engine)
        return engine

    @staticmethod
    def _install_postgres_reads(engine: Engine) -> None:
        """PostgreSQL reads run in autocommit, on connections whose every transaction is read
        only (`default_transaction_read_only`): no BEGIN and no COMMIT around a read, two round
        trips fewer a call. What a read sees is unchanged: at PostgreSQL's isolation level, READ
        COMMITTED, each statement of a transaction sees the database as of its own start anyway.
        A write inside a read fails.

        A statement that needs a transaction block (a server-side cursor streaming a large
        result, a SET LOCAL) opens one, read only, that lasts until the read ends; it then ends
        in COMMIT, not ROLLBACK: the same to the database (nothing can have been written), but
        psycopg forgets every statement it prepared on the connection at a ROLLBACK, and it
        prepares a statement on its fifth run on a connection so that it is not parsed and
        planned again on every run."""

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.autocommit = True

        @event.listens_for(engine, "before_cursor_execute")
        def _block(
            conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool
        ) -> None:
            options = context.execution_options
            if (options.get("stream_results") or options.get("yield_per")) or statement.startswith(
                "SET LOCAL"
            ):
                transaction_block(conn)

        @event.listens_for(engine, "rollback")
        def _rollback(conn: Any) -> None:
            if conn.invalidated:  # the server dropped it: nothing to end, the pool replaces it
                return
            driver = conn.connection.driver_connection
            if driver.autocommit:
                return
            try:  # the driver's rollback that follows then finds no transaction, and keeps them
                driver.commit()
                driver.autocommit = True
            except engine.dialect.loaded_dbapi.Error:
                pass  # a broken connection: the rollback that follows deals with it as before

        @event.listens_for(engine, "checkin")
        def _checkin(dbapi_connection: Any, _record: Any) -> None:
            # returned with a transaction the read did not end (the pool rolled it back)
            if dbapi_connection is not None and not dbapi_connection.autocommit:
                try:
                    dbapi_connection.autocommit = True
                except engine.dialect.loaded_dbapi.Error:
                    pass  # broken: the pool discards it

    @staticmethod
    def _install_idle_ping(engine: Engine) -> None:
        """A pooled connection that sat unused for PING_AFTER_IDLE is pinged when it is taken,
        and replaced if the server dropped it (a restart, an idle timeout). One used a moment
        ago is not: a ping on every checkout would add a round trip to every call."""

        @event.listens_for(engine, "checkin")
        def _checkin(_dbapi_connection: Any, record: Any) -> None:
            record.info[_IDLE_SINCE] = time.monotonic()

        @event.listens_for(engine, "checkout")
        def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
            since = record.info.pop(_IDLE_SINCE, None)
            if since is None or time.monotonic() - since < PING_AFTER_IDLE:
                return  # new, or in use a moment ago
            try:
                alive = engine.dialect.do_ping(dbapi_connection)
            except engine.dialect.loaded_dbapi.Error as exc:
                raise DisconnectionError(f"pooled connection dropped: {exc}") from exc
            if not alive:
                raise DisconnectionError("pooled connection dropped")

    @contextmanager
    def read(self) -> Iterator[Session]:
        if self._loop_read is not None and _READS_ONLY.get():
            with self._read_on_loop() as session:
                yield session
            return
        try:
            # closing ends the transaction; loaded objects stay usable
            with _reading(self._own_reader(), self._read) as session:
                yield session
        except DBAPIError as exc:
            mapped = contention_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    @contextmanager
    def _read_on_loop(self) -> Iterator[Session]:
        """A PostgreSQL read inside `reads_only()`, on the event loop's own connections: any
        failure of the database's (a statement past LOOP_STATEMENT_MS, a dropped connection, none
        free) raises WouldBlock, and the caller runs the work again in a worker thread, where it
        fails, waits or succeeds as every other read does. The thread keeps one of them, and its
        session, between reads (`_LoopReader`); a read inside that one takes another."""
        try:
            with _reading(self._own_loop_reader(), self._loop_read) as session:
                yield session
        except (DBAPIError, PoolTimeout) as exc:
            raise WouldBlock(f"a read on the event loop gave up: {type(exc).__name__}") from exc

    def _own_loop_reader(self) -> _LoopReader | None:
        reader: _LoopReader | None = getattr(self._loop_readers, "reader", None)
        if reader is not None and reader.busy:
            return None
        if reader is None or not reader.usable():
            if reader is not None:  # the server dropped it: its place in the pool is given back
                reader.close()
            reader = self._loop_readers.reader = _LoopReader(
                self._loop_engine.connect(), self._disposed
            )
            self._kept.add(reader)
        return reader if reader.take() else None

    @contextmanager
    def write(self, wait: float | None = None) -> Iterator[Session]:
        """A transaction that commits when the block ends normally and rolls back otherwise.

        A wait for the write lock past the busy timeout (or `wait` seconds, for this process's
        own writers) answers 503 READONLY_MODE with Retry-After.
        """
        if _READS_ONLY.get():
            raise WouldBlock("a write inside reads_only()")
        timeout = self.busy_timeout if wait is None else wait
        if self._writer is not None and not self._writer.acquire(timeout=timeout):
            raise _busy()
        try:
            with self._write() as session, session.begin():
                yield session
        except DBAPIError as exc:
            mapped = contention_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        finally:
            if self._writer is not None:
                self._writer.release()

    def _own_reader(self) -> _Reader | None:
        """This thread's own reading connection, taken for one read (SQLite), or None: the read
        then takes a connection from the pool, as on PostgreSQL.

        A pool checkout and its return cost about as much as a small query; a thread that reads
        on every call (the event loop, the API's worker threads) keeps its connection instead.
        A read inside another read of the same thread uses the pool. The connection returns to
        the pool when its thread ends or the database is disposed of.
        """
        if self._readers is None:
            return None
        reader: _Reader | None = getattr(self._readers, "reader", None)
        if reader is None or not reader.usable():
            reader = self._readers.reader = _Reader(self.engine.connect(), self._disposed)
            self._kept.add(reader)
        return reader if reader.take() else None

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def current_revision(self) -> str | None:
        """The schema's migration revision (None for an empty database)."""
        try:
            with self.engine.connect() as conn:
                return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        except DBAPIError:  # no alembic_version table yet
            return None

    def migrate(self) -> None:
        """Bring the schema to the newest revision; safe when several processes start at once.
        An instance already at the newest revision costs one query (and no import of alembic)."""
        if self.current_revision() == head_revision():
            return
        from alembic import command

        with self.engine.begin() as conn:
            if not self.is_sqlite:
                # another server may be migrating for long
                conn.execute(text("SET LOCAL lock_timeout = 0"))
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            cfg = _alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def dispose(self) -> None:
        self._disposed.set()
        for reader in list(self._kept):
            reader.close()  # (one in a read stays its thread's: the process is ending)
        self.engine.dispose()
        if not self.is_sqlite:
            self._reads_engine.dispose()
            self._loop_engine.dispose()


class _Kept:
    """A connection a thread keeps for its reads, and the ORM session bound to it.

    Its thread takes it for a read (`take`) and alone reads on it; `close` may also come from
    the thread that disposes of the database, or run as the object is finalised when its thread
    ends, and those two can meet: a finalised object is still in the database's weak set, which
    hands it out again. Each closes under the object's lock, once; a reader busy in a read is
    left to its thread (two threads on one SQLite connection can crash the process), and one
    finalised after its database was disposed of is left as it is (the process is ending)."""

    __slots__ = ("__weakref__", "_closed", "_disposed", "_lock", "busy", "connection", "session")

    def __init__(self, connection: Connection, disposed: threading.Event) -> None:
        self.connection = connection
        self.session: Session | None = None
        self.busy = False
        self._closed = False
        self._disposed = disposed
        self._lock = threading.Lock()

    def usable(self) -> bool:
        return not (self._closed or self.connection.closed or self.connection.invalidated)

    def take(self) -> bool:
        """For one read of its thread: False while one runs (a read inside a read), or once
        closed."""
        with self._lock:
            if self.busy or self._closed:
                return False
            self.busy = True
            return True

    def _session(self, make: sessionmaker[Session]) -> Session:
        if self.session is None:
            self.session = make(bind=self.connection)
        return self.session

    def close(self) -> bool:
        """Give the connection back; False (nothing done) while its thread is in a read."""
        with self._lock:
            if self._closed:
                return True
            if self.busy:
                return False
            self._closed = True
            self._close()
            return True

    def _close(self) -> None:
        raise NotImplementedError

    def __del__(self) -> None:  # the thread ended: its connection goes back to the pool
        if self._disposed.is_set() or sys.is_finalizing():
            return
        with suppress(Exception):  # the pool may be disposed of already
            self.close()


class _Reader(_Kept):
    """A thread's own reading connection (SQLite), and the ORM session bound to it.

    Both are made once, and the session's transaction, as SQLAlchemy sees it, outlives the read
    that began it: each read is a transaction of SQLite's own, begun and ended on the driver's
    connection (BEGIN, then ROLLBACK), and the session is emptied after it, so that loaded
    objects stay usable, detached, as after a closed session. Making and ending the session's
    and the connection's transaction objects for every read cost about as much as the rest of a
    one-row read. A commit or rollback inside a read ends SQLAlchemy's transaction as always (the
    next statement begins another, with a fresh snapshot); an error inside a read closes the
    session. Returned to the pool when the thread ends."""

    __slots__ = ()

    def __init__(self, connection: Connection, disposed: threading.Event) -> None:
        super().__init__(connection, disposed)
        # It reads only (SQLite refuses a write on it), so other connections' commits are all
        # that change what it sees: `Prepared(remember=...)` keeps rows on it by data_version.
        connection.connection.driver_connection.execute("PRAGMA query_only = ON")
        connection.connection.info[READ_ONLY] = True

    @contextmanager
    def reading(self, make: sessionmaker[Session]) -> Iterator[Session]:
        try:
            session = self._session(make)
            driver = self.connection.connection.dbapi_connection
            if session.in_transaction() and not driver.in_transaction:
                driver.execute("BEGIN")  # else the session's next statement begins one
            try:
                yield session
            except BaseException:
                self.session = None
                try:
                    session.close()
                except Exception:  # noqa: BLE001 - the read's own error is the one to tell
                    with suppress(Exception):  # the next read takes a new connection
                        self.connection.invalidate()
                raise
            session.expunge_all()
            if driver.in_transaction:
                driver.rollback()
        finally:
            self.busy = False

    def _close(self) -> None:
        if not (self.connection.closed or self.connection.invalidated):
            proxied = self.connection.connection
            proxied.info.pop(READ_ONLY, None)
            with suppress(Exception):  # broken: the pool discards it
                proxied.driver_connection.execute("PRAGMA query_only = OFF")
        self.connection.close()


@contextmanager
def _reading(
    reader: _Reader | _LoopReader | None, make: sessionmaker[Session]
) -> Iterator[Session]:
    """A read on the thread's kept connection and session, or, where it has none free, on a
    session of its own from the pool."""
    if reader is None:
        with make() as session:
            yield session
    else:
        with reader.reading(make) as session:
            yield session


class _LoopReader(_Kept):
    """The event loop's own PostgreSQL reading connection (one of the loop engine's), and the ORM
    session bound to it, kept between reads as a SQLite thread's reader is: a quick call's read
    makes and closes no session and takes no connection from the pool and back. The connection
    runs in autocommit, so nothing stays open on the server between reads. An error inside a read
    closes the session, and the next read makes another on the same connection; a connection
    the server dropped is invalidated by SQLAlchemy, and the next read takes a new one. A
    statement that opened a transaction block (see `_install_postgres_reads`) is ended with the
    session, as a read's close always ended it."""

    __slots__ = ()

    @contextmanager
    def reading(self, make: sessionmaker[Session]) -> Iterator[Session]:
        try:
            session = self._session(make)
            try:
                yield session
            except BaseException:
                self.session = None
                with suppress(Exception):  # the read's own error is the one to tell
                    session.close()
                raise
            session.expunge_all()
            if not self.connection.connection.driver_connection.autocommit:
                self.session = None
                session.close()  # ends the block as the pool's return did
        finally:
            self.busy = False

    def _close(self) -> None:
        session, self.session = self.session, None
        with suppress(Exception):  # dropped, or the pool disposed of already
            if session is not None:
                session.close()
            self.connection.close()


def _private_sqlite_files(database: Path) -> None:
    """The database holds password hashes: 0600, as SQLite then also makes its -wal and -shm."""
    private_file(database)
    for companion in ("-wal", "-shm", "-journal"):
        tighten(database.with_name(database.name + companion), FILE_MODE)


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Schema comparison skips the search index's hand-made parts (migration 0002)."""
    if type_ == "table" and name and name.startswith(("search_fts", "search_tri")):
        return False
    return not (type_ == "index" and name == "ix_search_entries_key_trgm")


def head_revision() -> str:
    """The newest migration's revision: migrations are named NNNN_*.py with revision "NNNN"
    (tests/api/test_store.py checks this against alembic's own idea of the head)."""
    numbers = [p.name[:4] for p in (MIGRATIONS / "versions").glob("[0-9][0-9][0-9][0-9]_*.py")]
    return max(numbers)


def _alembic_config() -> AlembicConfig:
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg
