"""The bulk writer's SQLite path stores what SQLAlchemy's own insert stores, fills constant
defaults, and reports a driver error as SQLAlchemy's exception."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.exc import IntegrityError

from airwave.store import bulk, search_entries
from airwave.store.db import Database
from airwave.store.models import LibraryFile, SearchEntry

from .conftest import START


def _file(n: int) -> dict:
    return {
        "path": f"/music/{n}.mp3",
        "path_hash": f"hash-{n}",
        "size": 1000 + n,
        "mtime_ns": 10**18 + n,
        "content_hash": None if n % 2 else f"c{n}",
        "track_id": None,
        "error": "unreadable" if n == 3 else None,
        "scanned_at": START + timedelta(microseconds=n),
    }


def test_rows_read_back_as_sqlalchemy_would_have_stored_them(database: Database) -> None:
    with database.write() as db:
        bulk.insert_rows(db.connection(), LibraryFile.__table__, [_file(n) for n in range(4)])
        db.connection().execute(insert(LibraryFile.__table__), [_file(n) for n in range(4, 8)])
    with database.read() as db:
        rows = db.scalars(select(LibraryFile).order_by(LibraryFile.id)).all()
        stored = db.execute(text("SELECT scanned_at FROM library_files ORDER BY id")).scalars()
        raw = list(stored)
    assert [r.path for r in rows] == [f"/music/{n}.mp3" for n in range(8)]
    for n, row in enumerate(rows):
        expected = _file(n)
        assert {k: getattr(row, k) for k in expected} == expected
        assert row.scanned_at.tzinfo is not None
    assert len(raw[0]) == len(raw[4])  # the same text form both ways


def test_constant_defaults_are_filled_and_errors_are_sqlalchemys(database: Database) -> None:
    entry = {"kind": "TR", "ref_id": 1, "name": "Hour 1", "key": "hour 1"}  # no context, weight
    with database.write() as db:
        search_entries.add(db.connection(), [entry])
    with database.read() as db:
        row = db.scalars(select(SearchEntry)).one()
        assert (row.context, row.weight) == ("", 0)
        found = db.execute(
            text("SELECT rowid FROM search_fts WHERE search_fts MATCH 'hour'")
        ).scalars()
        assert list(found) == [row.id]
    with pytest.raises(IntegrityError), database.write() as db:
        bulk.insert_rows(db.connection(), LibraryFile.__table__, [_file(1), _file(1)])
    with database.read() as db:
        assert db.scalar(select(LibraryFile.id)) is None  # the whole batch rolled back
