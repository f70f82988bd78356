"""In-process fixtures for the core rules: a migrated SQLite database, a fixed clock, a few rows."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.clock import FixedClock
from airwave.store.db import Database
from airwave.store.models import Album, Artist, Listener, Station, Track

START = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)


_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA", "SAVEPOINT", "RELEASE")


@contextmanager
def statements(database: Database, *sessions: Session) -> Iterator[list[str]]:
    """The SQL statements that read or write data meanwhile, as SQLite runs them: those run on
    the driver's cursor (store/prepared.py) too, which SQLAlchemy's events never see. Traced on
    the connections opened or taken from the pool meanwhile, the threads' kept reading
    connections and those of `sessions` (a transaction already under way)."""
    seen: list[str] = []
    traced: list[Any] = []

    def trace(statement: str) -> None:
        if not statement.lstrip().upper().startswith(_CONTROL):
            seen.append(statement)

    def install(driver: Any, *_rest: object) -> None:  # noqa: ANN401
        driver.set_trace_callback(trace)
        traced.append(driver)

    for kept in list(database._kept):
        if not (kept.connection.closed or kept.connection.invalidated):
            install(kept.connection.connection.driver_connection)
    for session in sessions:
        install(session.connection().connection.driver_connection)
    event.listen(database.engine, "connect", install)
    event.listen(database.engine, "checkout", install)
    try:
        yield seen
    finally:
        event.remove(database.engine, "connect", install)
        event.remove(database.engine, "checkout", install)
        for driver in traced:
            with suppress(Exception):  # closed meanwhile
                driver.set_trace_callback(None)


@pytest.fixture(scope="session")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated database file per session; every test gets its own copy."""
    path = tmp_path_factory.mktemp("schema") / "airwave.db"
    database = Database(f"sqlite:///{path}")
    database.migrate()
    database.dispose()
    return path


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def database(migrated: Path, tmp_path: Path) -> Iterator[Database]:
    path = tmp_path / "airwave.db"
    shutil.copyfile(migrated, path)
    database = Database(f"sqlite:///{path}")
    yield database
    database.dispose()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path)


@dataclass
class Rows:
    """Makes the few rows a rule needs, each with a fresh name."""

    db: Session
    now: datetime
    made: int = 0

    def _next(self) -> int:
        self.made += 1
        return self.made

    def listener(self, tier: str = "free", *, disabled: bool = False) -> Listener:
        n = self._next()
        listener = Listener(
            username=f"l{n}",
            username_key=f"l{n}",
            webname=f"l{n}",
            password_hash="x",
            tier=tier,
            disabled=disabled,
            created_at=self.now,
        )
        self.db.add(listener)
        self.db.flush()
        return listener

    def station(self, listener: Listener) -> Station:
        station = Station(listener_id=listener.id, name=f"s{self._next()}", created_at=self.now)
        self.db.add(station)
        self.db.flush()
        return station

    def track(self, *, duration: float = 180.0, path: str | None = "/music/a.flac") -> Track:
        n = self._next()
        artist = Artist(name=f"a{n}", name_key=f"a{n}", sort_name=f"a{n}", created_at=self.now)
        self.db.add(artist)
        self.db.flush()
        album = Album(title=f"b{n}", title_key=f"b{n}", artist_id=artist.id, created_at=self.now)
        self.db.add(album)
        self.db.flush()
        track = Track(
            title=f"t{n}",
            artist_id=artist.id,
            album_id=album.id,
            duration=duration,
            codec="flac",
            fingerprint=f"{n:040d}",
            path=path,
            added_at=self.now,
        )
        self.db.add(track)
        self.db.flush()
        return track


@pytest.fixture
def db(database: Database, clock: FixedClock) -> Iterator[Session]:
    """One write transaction for the test: rows made and rules checked see each other."""
    with database.write() as session:
        yield session


@pytest.fixture
def rows(db: Session, clock: FixedClock) -> Rows:
    return Rows(db, clock.now())
