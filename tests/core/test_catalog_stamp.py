"""The catalogue stamp (store/stamps.py), which every list that keeps what it shows reads first: a
SQLite thread's reader reads it once between changes of the database, and sees a change made by
any other connection (another process's scan, this process's writer) at its next read."""

from __future__ import annotations

from pathlib import Path

from airwave.core.catalog import kept
from airwave.store import stamps
from airwave.store.db import Database


def _traced_stamp(database: Database, traced: list[str]) -> int | None:
    with database.read() as db:
        driver = db.connection().connection.driver_connection
        driver.set_trace_callback(traced.append)
        try:
            return stamps.catalog_stamp(db)
        finally:
            driver.set_trace_callback(None)


def _reads(traced: list[str]) -> int:
    return sum("FROM catalog_stamp" in s for s in traced)


def test_the_stamp_is_read_once_between_changes_and_every_change_is_seen_at_once(
    database: Database, tmp_path: Path
) -> None:
    traced: list[str] = []
    first = _traced_stamp(database, traced)
    assert first is not None
    for _ in range(3):
        assert _traced_stamp(database, traced) == first
    assert _reads(traced) == 1

    other = Database(f"sqlite:///{tmp_path / 'airwave.db'}")  # another process: a scan, say
    try:
        with other.write() as db:
            stamps.bump_catalog(db)
        second = _traced_stamp(database, traced)
        assert second not in (None, first)
        assert _reads(traced) == 2
    finally:
        other.dispose()

    with database.write() as db:  # this process's own writer is another connection too
        stamps.bump_catalog(db)
    third = _traced_stamp(database, traced)
    assert third not in (None, first, second)
    assert _reads(traced) == 3
    with database.write() as db:  # a writer reads the stamp its own transaction set
        stamps.bump_catalog(db)
        assert stamps.catalog_stamp(db) not in (None, third)


def test_what_is_kept_is_dropped_when_another_process_changes_the_catalogue(
    database: Database, tmp_path: Path
) -> None:
    kept_here: kept.Kept[str, int] = kept.Kept(limit=10)
    with database.read() as db:
        values = kept_here.current(db)
        assert values is not None
        values["answer"] = 42
    with database.read() as db:
        assert kept_here.current(db) == {"answer": 42}
    other = Database(f"sqlite:///{tmp_path / 'airwave.db'}")
    try:
        with other.write() as db:
            stamps.bump_catalog(db)
    finally:
        other.dispose()
    with database.read() as db:
        assert kept_here.current(db) == {}
