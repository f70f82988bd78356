"""Reads on SQLite: each thread keeps one reading connection between its reads. What must hold:
every read is its own transaction (a later read sees what was committed meanwhile), a read inside
a read works, a read that fails leaves no transaction open, and the connection goes back to the
pool when its thread ends or the database is disposed of."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import Connection, func, select, text

from airwave.store.db import Database
from airwave.store.models import Artist

from .conftest import START


def _artists(database: Database) -> int:
    with database.read() as db:
        return db.scalar(select(func.count()).select_from(Artist)) or 0


def _add_artist(database: Database, name: str) -> None:
    with database.write() as db:
        db.add(Artist(name=name, sort_name=name, name_key=name.lower(), created_at=START))


def test_each_read_sees_what_was_committed_before_it(database: Database) -> None:
    before = _artists(database)
    _add_artist(database, "Later")
    assert _artists(database) == before + 1


def test_a_read_inside_a_read_has_a_connection_of_its_own(database: Database) -> None:
    with database.read() as outer:
        outer_count = outer.scalar(select(func.count()).select_from(Artist))
        _add_artist(database, "Meanwhile")
        with database.read() as inner:
            assert inner.connection() is not outer.connection()
            assert inner.scalar(select(func.count()).select_from(Artist)) == outer_count + 1
        # the outer transaction keeps the snapshot it started with
        assert outer.scalar(select(func.count()).select_from(Artist)) == outer_count
    assert _artists(database) == outer_count + 1


def test_a_failed_read_leaves_no_transaction_open(database: Database) -> None:
    with pytest.raises(Exception, match="no such table"), database.read() as db:
        db.execute(text("SELECT * FROM no_such_table"))
    before = _artists(database)
    _add_artist(database, "After the failure")
    # a connection left inside the failed read's transaction would still see the old snapshot
    assert _artists(database) == before + 1


def test_a_thread_gives_its_connection_back_when_it_ends(database: Database) -> None:
    _artists(database)  # this thread's own
    held = database.engine.pool.checkedout()

    def reader() -> None:
        assert _artists(database) >= 0

    threads = [threading.Thread(target=reader) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert database.engine.pool.checkedout() == held


def test_disposing_of_the_database_closes_every_kept_connection(database: Database) -> None:
    gate = threading.Event()
    done = threading.Event()

    def reader() -> None:
        _artists(database)
        gate.set()
        done.wait(10)

    thread = threading.Thread(target=reader)
    thread.start()
    gate.wait(10)
    _artists(database)
    assert database.engine.pool.checkedout() >= 2
    database.dispose()
    assert database.engine.pool.checkedout() == 0
    done.set()
    thread.join()
    assert _artists(database) >= 0  # usable again after


def test_a_read_under_way_keeps_its_connection_when_the_database_is_disposed(
    database: Database,
) -> None:
    """A stopping server disposes of its database while a request may still be reading: that
    read's connection is left to its thread (closed under it, the read failed, and two threads
    on one SQLite connection can crash the process)."""
    inside, go_on = threading.Event(), threading.Event()
    counts: list[int] = []

    def reader() -> None:
        with database.read() as db:
            counts.append(db.scalar(select(func.count()).select_from(Artist)) or 0)
            inside.set()
            go_on.wait(10)
            counts.append(db.scalar(select(func.count()).select_from(Artist)) or 0)

    thread = threading.Thread(target=reader)
    thread.start()
    assert inside.wait(10)
    database.dispose()
    go_on.set()
    thread.join(10)
    assert len(counts) == 2 and counts[0] == counts[1]


def test_a_kept_connection_is_closed_once_when_its_threads_end_meets_the_dispose(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread's kept connection is given back as the thread ends, while the object is being
    finalised; the database's weak set still hands that object out meanwhile, so a dispose at the
    same moment (a server's last request thread ending as the server closes its database) closed
    it a second time, at once, from another thread: the crash of a stopping server (SIGSEGV in
    the driver, found by faulthandler). It is closed once, by one thread."""
    closing: list[str] = []
    at_once: list[int] = []
    running = [0]
    guard = threading.Lock()
    close = Connection.close

    def slow_close(self: Connection) -> None:
        with guard:
            running[0] += 1
            at_once.append(running[0])
            closing.append(threading.current_thread().name)
        time.sleep(0.3)  # the finalising thread is inside its close when the dispose comes
        try:
            close(self)
        finally:
            with guard:
                running[0] -= 1

    thread = threading.Thread(target=lambda: _artists(database), name="ending")
    monkeypatch.setattr(Connection, "close", slow_close)
    thread.start()
    deadline = time.monotonic() + 10
    while not closing and time.monotonic() < deadline:
        time.sleep(0.01)
    assert closing, "the ending thread did not give its connection back"
    database.dispose()
    thread.join(10)
    monkeypatch.setattr(Connection, "close", close)
    assert max(at_once) == 1, closing
    assert len(closing) == 1, closing


def test_loaded_objects_outlive_their_read_and_the_next_read_loads_afresh(
    database: Database,
) -> None:
    _add_artist(database, "Before")
    with database.read() as db:
        artist = db.scalars(select(Artist).where(Artist.name == "Before")).one()
    assert artist.name == "Before"  # detached, its columns loaded
    with database.write() as db:
        db.execute(Artist.__table__.update().values(name="Renamed").where(Artist.id == artist.id))
    with database.read() as db:
        assert artist not in db  # the session was emptied: nothing carried over
        again = db.get(Artist, artist.id)
        assert again is not artist and again.name == "Renamed"
    assert artist.name == "Before"


@pytest.mark.parametrize("end", ["commit", "rollback", "close"])
def test_a_read_that_ends_its_transaction_goes_on_with_a_fresh_snapshot(
    database: Database, end: str
) -> None:
    """What a call does before it writes (Call.write commits its read): the rest of the read
    sees what was committed meanwhile, and so do the reads after it."""
    with database.read() as db:
        before = db.scalar(select(func.count()).select_from(Artist))
        _add_artist(database, f"Meanwhile, {end}")
        assert db.scalar(select(func.count()).select_from(Artist)) == before  # its snapshot
        getattr(db, end)()
        assert db.scalar(select(func.count()).select_from(Artist)) == before + 1
        _add_artist(database, f"Then, {end}")
    for expected in (before + 2, before + 3):
        with database.read() as db:
            assert db.scalar(select(func.count()).select_from(Artist)) == expected
        _add_artist(database, f"After {expected}, {end}")


def test_a_prepared_statement_runs_on_the_drivers_cursor_with_values_written_into_it(
    database: Database,
) -> None:
    """A `Prepared` read runs on the driver's cursor, past SQLAlchemy's execution (no statement
    events), also when the statement holds a value of its own (`column == 3`): such a value
    used to be missing from the driver's parameters, and every run fell back to SQLAlchemy."""
    from sqlalchemy import bindparam, event

    from airwave.store.prepared import Prepared

    for name in ("Ada", "Bea", "Cy"):
        _add_artist(database, name)
    seen: list[str] = []
    event.listen(database.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    counts = Prepared(
        select(func.count())
        .select_from(Artist)
        .where(Artist.name != "Bea", Artist.name_key != bindparam("key"))
    )
    with database.read() as db:
        assert counts.scalar(db, key="cy") == 1  # Ada: Bea is left out by the statement itself
        assert counts.scalar(db, key="zed") == 2
    assert seen == []
