"""Persistence: migrations match the models on both backends; restarts and kills lose nothing."""

from __future__ import annotations

import signal
import threading
import time
from datetime import UTC, datetime

import httpx
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import func, inspect, text
from sqlalchemy.exc import DBAPIError
from support import Backend, Server, unique

from airwave.store.db import Database, _alembic_config, head_revision, include_name
from airwave.store.models import Base


def _database(backend: Backend) -> Database:
    url = backend.pg.url if backend.pg else f"sqlite:///{backend.data_dir / 'airwave.db'}"
    return Database(url)


def test_migrations_build_exactly_the_models(make_backend) -> None:
    db = _database(make_backend())
    try:
        db.migrate()
        db.migrate()  # a second run is a no-op
        # the quick check at start (no alembic import) knows the head alembic knows
        assert (
            db.current_revision()
            == head_revision()
            == ScriptDirectory.from_config(_alembic_config()).get_current_head()
        )
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"include_name": include_name})
            diff = compare_metadata(context, Base.metadata)
            tables = set(inspect(conn).get_table_names())
        assert diff == [], diff
        assert {
            "listeners",
            "auth_sessions",
            "throttle_counters",
            "stations",
            "alembic_version",
        } <= tables
    finally:
        db.dispose()


@pytest.mark.postgresql_only
def test_a_connection_the_database_dropped_is_replaced(make_backend, monkeypatch) -> None:
    """A pooled connection the server ended while it sat idle (a restart, an idle timeout) is
    noticed when it is next taken, and the read runs on a new one; one in use a moment ago is
    handed out without a round trip of its own."""
    import psycopg

    from airwave.store import db as store_db

    backend = make_backend()
    assert backend.pg is not None
    monkeypatch.setattr(store_db, "PING_AFTER_IDLE", 0.2)
    db = _database(backend)
    try:
        db.migrate()
        with db.read() as session:
            first = session.execute(text("SELECT pg_backend_pid()")).scalar()
        with psycopg.connect(backend.pg.plain_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        time.sleep(0.3)
        with db.read() as session:
            second = session.execute(text("SELECT pg_backend_pid()")).scalar()
        assert second != first
        with db.read() as session:  # taken again at once: the same connection, no ping
            assert session.execute(text("SELECT pg_backend_pid()")).scalar() == second
    finally:
        db.dispose()


@pytest.mark.postgresql_only
def test_after_a_burst_quiet_calls_keep_to_one_warm_connection(make_backend, monkeypatch) -> None:
    """Once a burst has opened several pooled connections, calls coming one at a time take the
    connection returned last: it stays warm, and none is pinged for having sat idle while the
    others were taken in turn."""
    from airwave.store import db as store_db

    monkeypatch.setattr(store_db, "PING_AFTER_IDLE", 0.2)
    db = _database(make_backend())
    pings: list[object] = []
    try:
        db.migrate()
        for engine in (db.engine, db._reads_engine):
            real = engine.dialect.do_ping
            monkeypatch.setattr(
                engine.dialect, "do_ping", lambda c, real=real: pings.append(c) or real(c)
            )
        pid = text("SELECT pg_backend_pid()")
        with db.read() as a, db.read() as b, db.read() as c, db.read() as d:  # a burst: four
            burst = {s.execute(pid).scalar() for s in (a, b, c, d)}
        with db.write() as w, db.write() as x, db.write() as y:
            burst_writes = {s.execute(pid).scalar() for s in (w, x, y)}
        assert len(burst) == 4 and len(burst_writes) == 3
        readers, writers = set(), set()
        for _ in range(8):  # every 0.1 s: each of four taken in turn would sit idle 0.3 s
            with db.read() as session:
                readers.add(session.execute(pid).scalar())
            with db.write() as session:
                writers.add(session.execute(pid).scalar())
            time.sleep(0.1)
        assert len(readers) == 1 and len(writers) == 1
        assert pings == []
    finally:
        db.dispose()


@pytest.mark.postgresql_only
def test_reads_keep_their_prepared_statements_and_cannot_write(make_backend) -> None:
    """On PostgreSQL a read opens no transaction block (no BEGIN, no COMMIT: each statement is
    its own, as READ COMMITTED makes them anyway) and cannot write: a statement run often on a
    connection stays prepared there across reads (so it is not parsed and planned on every run),
    a write inside a read fails and leaves nothing behind, and writes still write and roll back.
    What needs a transaction block gets one, read only, until the read ends: a large result
    streamed through a server-side cursor, a SET LOCAL."""
    import psycopg
    from psycopg.pq import TransactionStatus

    from airwave.store.models import Artist

    backend = make_backend()
    db = _database(backend)
    count = "SELECT count(*) FROM artists WHERE name <> :name"

    def status(session) -> TransactionStatus:  # noqa: ANN001
        return session.connection().connection.driver_connection.info.transaction_status

    try:
        db.migrate()
        for _ in range(8):  # psycopg prepares a statement on its fifth run on a connection
            with db.read() as session:
                assert session.execute(text(count), {"name": "x"}).scalar() == 0
                pid = session.execute(text("SELECT pg_backend_pid()")).scalar()
                assert status(session) == TransactionStatus.IDLE  # no transaction block
        add = text(
            "INSERT INTO artists (name, sort_name, name_key, is_composer, created_at) "
            "VALUES ('Read', 'Read', 'read', false, now())"
        )
        with pytest.raises(Exception, match="read-only transaction"), db.read() as session:
            session.execute(add)
        with pytest.raises(RuntimeError, match="undone"), db.write() as session:
            session.execute(add)
            raise RuntimeError("undone")
        with db.write() as session:
            now = datetime.now(UTC)
            session.add_all(
                Artist(name=f"Kept {n}", sort_name="Kept", name_key=f"kept {n}", created_at=now)
                for n in range(50)
            )
        with db.read() as session:
            assert session.execute(text("SELECT pg_backend_pid()")).scalar() == pid
            names = session.execute(text("SELECT name FROM artists")).scalars().all()
            assert len(names) == 50 and "Read" not in names
            # a stream: a server-side cursor, in a read-only transaction block of its own
            streamed = session.execute(
                text("SELECT name FROM artists ORDER BY id").execution_options(yield_per=7)
            )
            assert status(session) == TransactionStatus.INTRANS
            assert list(streamed.scalars()) == sorted(names, key=lambda n: int(n.split()[1]))
            with pytest.raises(Exception, match="read-only transaction"):
                session.execute(add)
        with db.read() as session:  # the block ended with the read; the statements kept
            assert session.execute(text("SELECT pg_backend_pid()")).scalar() == pid
            assert status(session) == TransactionStatus.IDLE
            prepared = session.execute(text("SELECT statement FROM pg_prepared_statements"))
            assert any("FROM artists WHERE name <>" in s for s in prepared.scalars())
            session.execute(text("SET LOCAL lock_timeout = 1234"))
            assert session.execute(text("SHOW lock_timeout")).scalar() == "1234ms"
        with db.read() as session:  # SET LOCAL lasted as long as its read
            assert session.execute(text("SELECT pg_backend_pid()")).scalar() == pid
            assert session.execute(text("SHOW lock_timeout")).scalar() != "1234ms"
        with psycopg.connect(backend.pg.plain_url, autocommit=True) as admin:
            idle = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND state <> 'idle'",
                (pid,),
            ).fetchone()
        assert idle == (0,)  # no read left a transaction open
    finally:
        db.dispose()


def test_prepared_reads_of_lists_are_sqlalchemys(make_backend) -> None:
    """A Prepared read with a list (`column.in_(bindparam(..., expanding=True))`) gives the rows
    SQLAlchemy's own execution gives, whatever the list's length (none, one, many, more than
    SQLite's old limit of 999 parameters), with other parameters before and after it and each
    item converted as SQLAlchemy converts it (aware UTC times), and its columns converted as
    SQLAlchemy converts them (floats and decimals); the statement takes one form for all
    lengths up to each power of two (a list's last item repeated)."""
    from datetime import timedelta

    from sqlalchemy import Float, Numeric, bindparam, cast, select

    from airwave.store.models import Artist
    from airwave.store.prepared import Prepared

    db = _database(make_backend())
    artist = Artist.__table__.c
    statement = (
        select(
            artist.id,
            artist.name,
            artist.created_at,
            cast(artist.id, Float) / 4,  # PostgreSQL's numeric conversions depend on the type
            cast(artist.id, Numeric(12, 2)) / 8,
        )
        .where(
            artist.name != bindparam("other"),
            artist.created_at.in_(bindparam("times", expanding=True)),
            artist.id.in_(bindparam("ids", expanding=True)),
        )
        .order_by(artist.id)
        .limit(bindparam("limit"))
    )
    prepared = Prepared(statement)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        db.migrate()
        with db.write() as session:
            session.add_all(
                Artist(
                    name=f"A{n}",
                    sort_name=f"A{n}",
                    name_key=f"a{n}",
                    created_at=start + timedelta(minutes=n),
                )
                for n in range(1200)
            )
        with db.read() as session:
            ids = list(session.scalars(select(artist.id).order_by(artist.id)))
            times = [start + timedelta(minutes=n) for n in range(0, 1200, 2)]
            for wanted, at in [([], times), (ids[:1], times), (ids[3:9], times[:2]), (ids, times)]:
                params = {"other": "A4", "times": at, "ids": wanted, "limit": 1000}
                got = prepared.all(session, **params)
                assert got == [tuple(r) for r in session.execute(statement, params)]
                assert all(r[2].utcoffset() == timedelta(0) for r in got)
                assert all(r[3] == r[0] / 4 and isinstance(r[3], float) for r in got)
            assert [r[1] for r in prepared.all(session, **{**params, "ids": ids[3:9]})] == [
                "A6",
                "A8",
            ]
            assert len(prepared.all(session, **params)) == 599  # A4 left out
            assert prepared.scalars(session, other="A0", times=[start], ids=ids, limit=5) == []
        # one form of the statement per lengths rounded up to a power of two (ids, times)
        lengths = next(iter(prepared._forms.values())).expanded
        assert set(lengths) == {(0, 1024), (1, 1024), (8, 2), (2048, 1024), (8, 1024), (2048, 1)}
    finally:
        db.dispose()


def test_a_few_rows_inserted_in_one_statement_come_back_with_their_ids(make_backend) -> None:
    """bulk.insert_returning: the rows stored as SQLAlchemy stores them (aware UTC times, the
    columns' constant defaults), the columns asked for read back, a constraint broken told as
    SQLAlchemy's IntegrityError, and rows too many for one statement inserted all the same."""
    from datetime import timedelta

    from sqlalchemy import select
    from sqlalchemy.exc import IntegrityError

    from airwave.store import bulk
    from airwave.store.models import Artist

    db = _database(make_backend())
    table = Artist.__table__
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    def rows(names: list[str]) -> list[dict]:
        return [
            {
                "name": n,
                "sort_name": n,
                "name_key": n.lower(),
                "created_at": at + timedelta(seconds=i),
            }
            for i, n in enumerate(names)
        ]

    try:
        db.migrate()
        with db.write() as session:
            got = bulk.insert_returning(
                session.connection(), table, rows(["A", "B", "C"]), ("id", "name_key")
            )
        with db.read() as session:
            stored = session.execute(
                select(table.c.id, table.c.name_key, table.c.created_at, table.c.is_composer)
            ).all()
        assert sorted(got) == sorted((r[0], r[1]) for r in stored)
        assert [r[2] for r in sorted(stored, key=lambda r: r[1])] == [
            at + timedelta(seconds=i) for i in range(3)
        ]
        assert {r[3] for r in stored} == {False}  # the column's default, written by the insert
        with pytest.raises(IntegrityError), db.write() as session:
            bulk.insert_returning(session.connection(), table, rows(["D", "a"]), ("id",))
        many = [f"M{n}" for n in range(8000)]  # 40,000 values: over SQLite's limit for one
        with db.write() as session:
            got = bulk.insert_returning(session.connection(), table, rows(many), ("name_key",))
        assert sorted(r[0] for r in got) == sorted(n.lower() for n in many)
        with db.read() as session:
            assert session.scalar(select(func.count()).select_from(table)) == 8003
    finally:
        db.dispose()


def test_a_prepared_update_changes_the_rows_sqlalchemy_would(make_backend) -> None:
    """Prepared.run: an UPDATE with a list and an aware time changes the rows SQLAlchemy's own
    execution would, tells how many, and a broken constraint is SQLAlchemy's IntegrityError."""
    from datetime import timedelta

    from sqlalchemy import bindparam, select, update
    from sqlalchemy.exc import IntegrityError

    from airwave.store.models import Artist
    from airwave.store.prepared import Prepared

    db = _database(make_backend())
    table = Artist.__table__
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    rename = Prepared(
        update(table)
        .where(table.c.id.in_(bindparam("ids", expanding=True)))
        .values(created_at=bindparam("at"), sort_name=bindparam("sort"))
    )
    key = Prepared(
        update(table).where(table.c.id == bindparam("id")).values(name_key=bindparam("key"))
    )
    try:
        db.migrate()
        with db.write() as session:
            session.add_all(
                Artist(name=n, sort_name=n, name_key=n.lower(), created_at=at) for n in "ABCDE"
            )
        with db.write() as session:
            ids = list(session.scalars(select(table.c.id).order_by(table.c.id)))
            assert rename.run(session, ids=ids[1:4], at=at + timedelta(hours=1), sort="x") == 3
            assert rename.run(session, ids=[], at=at, sort="y") == 0
        with db.read() as session:
            got = session.execute(
                select(table.c.sort_name, table.c.created_at).order_by(table.c.id)
            ).all()
        assert got == [("A", at)] + [("x", at + timedelta(hours=1))] * 3 + [("E", at)]
        with pytest.raises(IntegrityError), db.write() as session:
            key.run(session, id=ids[0], key="b")  # B's key
    finally:
        db.dispose()


def test_sqlite_runs_in_wal_mode(tmp_path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        db.migrate()
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        db.dispose()


def test_sessions_survive_a_restart(make_backend) -> None:
    backend = make_backend()
    first = Server(backend, ["--open-registration"]).start()
    api = first.client()
    api.register(unique("restart"))
    assert first.stop() == 0
    second = Server(backend).start()
    try:
        assert second.client().ok("v1/station/getStations", token=api.token)["totalStations"] == 0
    finally:
        second.stop()


def test_a_killed_server_loses_no_committed_account(make_backend) -> None:
    backend = make_backend()
    server = Server(backend, ["--open-registration"]).start()
    api = server.client()
    names = [unique("kill") for _ in range(20)]
    for name in names:
        api.register(name)
    server.stop(signal.SIGKILL)
    again = Server(backend).start()
    try:
        for name in names:
            again.client().login(name, "correct horse battery")
    finally:
        again.stop()


def test_sigterm_lets_requests_in_flight_finish(make_backend) -> None:
    backend = make_backend()
    server = Server(backend, ["--open-registration"]).start()
    api = server.client()
    api.register(unique("drain"))
    results: list[int] = []
    sending = threading.Event()

    def slow_upload() -> None:
        def body():
            yield b'{"pageSize": 5, "pad": "'
            sending.set()  # connected, headers and the first part sent
            time.sleep(1.0)  # the signal arrives while this request is being received
            yield b'x"}'

        with httpx.Client(base_url=server.url, timeout=20, cookies={"csrftoken": "lol"}) as http:
            response = http.post(
                "/api/v1/station/getStations",
                content=body(),
                headers={
                    "X-CsrfToken": "lol",
                    "Content-Type": "application/json",
                    "X-AuthToken": api.token or "",
                },
            )
            results.append(response.status_code)

    worker = threading.Thread(target=slow_upload)
    worker.start()
    assert sending.wait(10)
    time.sleep(0.2)
    started = time.monotonic()
    assert server.stop(signal.SIGTERM) == 0
    worker.join(10)
    assert results == [200]
    assert time.monotonic() - started < 10
    assert server.wait_for_log(lambda line: "server stopped" in line)


def test_expired_sessions_are_purged_in_the_background(start_server) -> None:
    server = start_server(
        "--open-registration",
        env={"AIRWAVE_SESSION_TIMEOUT": "1", "AIRWAVE_HOUSEKEEPING_INTERVAL": "1"},
    )
    server.client().register(unique("purge"))
    count = _database(server.backend)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with count.read() as db:
                if db.scalar(text("SELECT COUNT(*) FROM auth_sessions")) == 0:
                    break
            time.sleep(0.2)
        else:
            raise AssertionError("expired session was never purged")
    finally:
        count.dispose()


@pytest.mark.postgresql_only
def test_the_event_loops_reads_keep_one_session_and_end_what_a_read_opened(make_backend) -> None:
    """A thread's reads inside `reads_only()` keep one session and connection between them; an
    error inside one leaves the next a new session on the same connection, and a statement that
    opened a transaction block (SET LOCAL) has it ended with the read."""
    from airwave.store.db import LOOP_STATEMENT_MS, reads_only

    backend = make_backend()
    db = _database(backend)
    pid = text("SELECT pg_backend_pid()")
    timeout = text("SHOW statement_timeout")
    try:
        db.migrate()
        with reads_only(), db.read() as first:
            loop_pid = first.execute(pid).scalar()
        with reads_only(), db.read() as again:
            assert again is first and again.execute(pid).scalar() == loop_pid
        with pytest.raises(LookupError), reads_only(), db.read() as failing:
            failing.execute(pid)
            raise LookupError("the call's own error")
        with reads_only(), db.read() as after:
            assert after is not first and after.execute(pid).scalar() == loop_pid
            after.execute(text("SET LOCAL statement_timeout = 1234"))
            assert after.execute(timeout).scalar() == "1234ms"
        with reads_only(), db.read() as later:
            assert later.execute(pid).scalar() == loop_pid
            assert later.execute(timeout).scalar() == f"{LOOP_STATEMENT_MS}ms"
            assert later.connection().connection.driver_connection.autocommit
    finally:
        db.dispose()


@pytest.mark.postgresql_only
def test_reads_on_the_event_loop_give_up_rather_than_wait(make_backend) -> None:
    """PostgreSQL reads inside `reads_only()` (a quick call on the event loop) run on connections
    of their own that give up: a lock held past LOOP_STATEMENT_MS, a connection the server
    dropped, or none of them free raise WouldBlock (the caller runs the work again in a worker
    thread), and the next read there works. Other reads wait as they always did."""
    import psycopg

    from airwave.store.db import LOOP_CONNECTIONS, LOOP_STATEMENT_MS, WouldBlock, reads_only

    backend = make_backend()
    assert backend.pg is not None
    db = _database(backend)
    pid = text("SELECT pg_backend_pid()")
    count = text("SELECT count(*) FROM artists")
    try:
        db.migrate()
        with db.read() as session:
            assert session.execute(text("SHOW statement_timeout")).scalar() == "0"
        with reads_only(), db.read() as session:
            assert session.execute(text("SHOW statement_timeout")).scalar() == (
                f"{LOOP_STATEMENT_MS}ms"
            )
            assert session.execute(text("SHOW transaction_read_only")).scalar() == "on"
            assert session.execute(count).scalar() == 0
            loop_pid = session.execute(pid).scalar()
        with psycopg.connect(backend.pg.plain_url) as admin:  # a transaction, until rollback
            admin.execute(f'LOCK TABLE "{backend.pg.name}".artists IN ACCESS EXCLUSIVE MODE')
            with pytest.raises(WouldBlock), reads_only(), db.read() as session:
                session.execute(count)
            admin.rollback()
        with reads_only(), db.read() as session:  # the same connection, usable again
            assert session.execute(pid).scalar() == loop_pid
            assert session.execute(count).scalar() == 0
        with psycopg.connect(backend.pg.plain_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (loop_pid,))
        time.sleep(0.1)
        with pytest.raises(WouldBlock), reads_only(), db.read() as session:
            session.execute(count)
        with reads_only(), db.read() as session:  # a new connection
            assert session.execute(pid).scalar() != loop_pid
        with db.read() as session:  # an ordinary read that loses its connection: the error
            dropped = session.execute(pid).scalar()
            with psycopg.connect(backend.pg.plain_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (dropped,))
            time.sleep(0.1)
            with pytest.raises(DBAPIError, match="terminating connection"):
                session.execute(count)
        with reads_only():
            with pytest.raises(WouldBlock):  # every connection of the loop's in use
                with db.read() as a, db.read() as b, db.read() as c:
                    sessions = (a, b, c)[:LOOP_CONNECTIONS]
                    assert all(s.execute(count).scalar() == 0 for s in sessions)
                    c.execute(count)
            with db.read() as session:  # given back
                assert session.execute(count).scalar() == 0
    finally:
        db.dispose()
