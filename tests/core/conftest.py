"""In-process fixtures for the core rules: a migrated SQLite database, a fixed clock, a few rows."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.clock import FixedClock
from airwave.store.db import Database
from airwave.store.models import Album, Artist, Listener, Station, Track

START = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)


@contextmanager
def statements(database: Database) -> Iterator[list[str]]:
    """The SQL statements run on the database's connections meanwhile."""
    seen: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        seen.append(statement)

    event.listen(database.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(database.engine, "before_cursor_execute", count)


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
