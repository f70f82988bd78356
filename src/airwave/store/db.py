"""Engine, sessions and migrations for SQLite (WAL, the embedded default) and PostgreSQL."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from airwave.store.private import FILE_MODE, private_file, tighten

MIGRATIONS = Path(__file__).with_name("migrations")
_WRITE = "airwave_write"
_PG_MIGRATION_LOCK = 0x41495257  # any constant shared by all server processes


class Database:
    """One engine; `read()` and `write()` hand out ORM sessions with the right transaction."""

    def __init__(self, url: str) -> None:
        self.url = make_url(url)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        if self.is_sqlite:
            database = self.url.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
                _private_sqlite_files(Path(database))
            self.engine = create_engine(
                # Sized for the API's worker threads (each may hold a reader and a writer) so that
                # connections are reused rather than reopened under load.
                self.url, pool_size=64, max_overflow=16, connect_args={"check_same_thread": False}
            )
            self._install_sqlite_hooks(self.engine)
        else:
            self.engine = create_engine(self.url, pool_size=16, max_overflow=32, pool_pre_ping=True)
        self._read = sessionmaker(self.engine, expire_on_commit=False, autoflush=False)
        self._write = sessionmaker(
            self.engine.execution_options(**{_WRITE: True}), expire_on_commit=False, autoflush=False
        )

    @staticmethod
    def _install_sqlite_hooks(engine: Engine) -> None:
        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            # Writers take the lock up front so two writers queue instead of deadlocking.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._read() as session:  # closing ends the transaction; loaded objects stay usable
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that commits when the block ends normally and rolls back otherwise."""
        with self._write() as session, session.begin():
            yield session

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def migrate(self) -> None:
        """Bring the schema to the newest revision; safe when several processes start at once."""
        head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
        with self.engine.connect() as conn:
            if MigrationContext.configure(conn).get_current_revision() == head:
                return
        with self.engine.begin() as conn:
            if not self.is_sqlite:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            cfg = _alembic_config()
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def dispose(self) -> None:
        self.engine.dispose()


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


def _alembic_config() -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg
