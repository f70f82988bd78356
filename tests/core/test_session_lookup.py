"""The per-call session lookup (sessions.authenticate): what it accepts and refuses, and that the
listener and session it hands back read as the stored rows do; and `reads_only`, which keeps
work run on the event loop from waiting for a write lock."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, make_transient_to_detached

from airwave.config import Settings
from airwave.core.accounts import sessions
from airwave.core.clock import FixedClock
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database, WouldBlock, reads_only
from airwave.store.models import Album, Artist, Artwork, AuthSession, Listener, Track
from airwave.store.prepared import Columns

from .conftest import START


def _issue(database: Database, settings: Settings, clock: FixedClock) -> sessions.Issued:
    with database.write() as db:
        listener = Listener(
            username="Ann",
            username_key="ann",
            webname="ann-web",
            password_hash="x",
            tier="plus",
            created_at=START,
            display_name="Ann A.",
        )
        db.add(listener)
        db.flush()
        return sessions.start_session(
            db,
            settings,
            clock.now(),
            listener,
            keep_logged_in=False,
            address="10.1.2.3",
            user_agent="tests",
        )


def _columns(obj: object) -> dict[str, object]:
    mapper = inspect(type(obj))
    return {a.key: getattr(obj, a.key) for a in mapper.column_attrs}


def test_the_lookup_hands_back_the_stored_rows_detached(
    database: Database, settings: Settings, clock: FixedClock
) -> None:
    issued = _issue(database, settings, clock)
    with database.read() as db:
        auth = sessions.authenticate(db, clock.now(), issued.token, issued.cookie)
    with database.read() as db:
        stored_listener = db.get(Listener, issued.listener.id)
        stored_session = db.get(AuthSession, issued.session.id)
        assert _columns(auth.listener) == _columns(stored_listener)
        assert _columns(auth.session) == _columns(stored_session)
    state = inspect(auth.listener)
    assert state.detached and state.identity == (issued.listener.id,)
    assert auth.session.expires_at.tzinfo is not None
    assert auth.needs_touch is False
    clock.advance(sessions.TOUCH_INTERVAL.total_seconds() + 1)
    with database.read() as db:
        assert sessions.authenticate(db, clock.now(), issued.token, None).needs_touch is True


@pytest.mark.parametrize("cls", [AuthSession, Listener, Track, Artist, Album, Artwork])
def test_columns_make_the_object_make_transient_to_detached_makes(cls: type) -> None:
    """Columns.detached sets the identity key directly where the values fill every attribute:
    the object and its state are those SQLAlchemy's own function gives, and a session takes it
    as a loaded, unchanged object."""
    columns = Columns(cls)
    values = [7 if key == "id" else f"v-{key}" for key in columns.keys]
    fast = columns.detached(values)
    slow = columns._new()
    slow.__dict__.update(zip(columns.keys, values, strict=True))
    make_transient_to_detached(slow)
    assert columns._identity is not None  # these classes take the fast path
    fast_state, slow_state = inspect(fast), inspect(slow)
    for attr in (
        "key",
        "identity",
        "committed_state",
        "expired_attributes",
        "modified",
        "expired",
        "detached",
        "unloaded",
        "session_id",
        "callables",
    ):
        assert getattr(fast_state, attr) == getattr(slow_state, attr), attr
    assert fast.__dict__.keys() == slow.__dict__.keys()
    with Session() as session:
        session.add(fast)
        assert inspect(fast).persistent and not session.dirty
        assert session.identity_map[fast_state.key] is fast


def test_the_lookup_refuses_unknown_expired_and_foreign_cookies(
    database: Database, settings: Settings, clock: FixedClock
) -> None:
    issued = _issue(database, settings, clock)
    with database.read() as db:
        for token, cookie in ((None, None), ("nope", None), (issued.token, "other-cookie")):
            with pytest.raises(ApiError) as refused:
                sessions.authenticate(db, clock.now(), token, cookie)
            assert refused.value.error is ErrorCode.AUTH_INVALID_TOKEN
    clock.advance(settings.session_timeout)
    with database.read() as db, pytest.raises(ApiError) as expired:
        sessions.authenticate(db, clock.now(), issued.token, None)
    assert expired.value.error is ErrorCode.AUTH_INVALID_TOKEN


def test_a_disabled_listener_is_suspended(
    database: Database, settings: Settings, clock: FixedClock
) -> None:
    issued = _issue(database, settings, clock)
    with database.write() as db:
        listener = db.get(Listener, issued.listener.id)
        assert listener is not None
        listener.disabled = True
    with database.read() as db, pytest.raises(ApiError) as refused:
        sessions.authenticate(db, clock.now(), issued.token, None)
    assert refused.value.error is ErrorCode.LISTENER_SUSPENDED


def test_a_connection_looks_a_session_up_once_between_changes_and_sees_each_change_at_once(
    database: Database, settings: Settings, clock: FixedClock, tmp_path: Path
) -> None:
    """SQLite: a connection keeps the row it found until the database changes. Another
    Database on the same file stands for another process."""
    issued = _issue(database, settings, clock)
    statements: list[str] = []

    def authenticate() -> sessions.Authenticated:
        with database.read() as db:
            db.connection().connection.driver_connection.set_trace_callback(statements.append)
            try:
                return sessions.authenticate(db, clock.now(), issued.token, None)
            finally:
                db.connection().connection.driver_connection.set_trace_callback(None)

    def lookups() -> int:
        return sum("FROM auth_sessions" in s for s in statements)

    for _ in range(3):
        assert authenticate().listener.id == issued.listener.id
    assert lookups() == 1

    other = Database(f"sqlite:///{tmp_path / 'airwave.db'}")
    try:
        with other.write() as db:  # a change anywhere else: the next lookup reads again
            db.get(Listener, issued.listener.id).display_name = "Ann B."
        assert authenticate().listener.display_name == "Ann B."
        assert lookups() == 2
        with other.write() as db:
            db.get(Listener, issued.listener.id).disabled = True
        with pytest.raises(ApiError) as refused:
            authenticate()
        assert refused.value.error is ErrorCode.LISTENER_SUSPENDED
        with other.write() as db:
            db.get(Listener, issued.listener.id).disabled = False
            sessions.end_session(db, issued.session.id)
        with pytest.raises(ApiError) as ended:
            authenticate()
        assert ended.value.error is ErrorCode.AUTH_INVALID_TOKEN
    finally:
        other.dispose()


def test_a_threads_reading_connection_refuses_writes_so_every_change_moves_its_version(
    database: Database, settings: Settings, clock: FixedClock
) -> None:
    """A connection's own changes move no data_version: the connection that remembers rows must
    never make one, and SQLite refuses it there (`query_only`), committed or not."""
    issued = _issue(database, settings, clock)
    with database.read() as db:
        sessions.authenticate(db, clock.now(), issued.token, None)
    with pytest.raises(OperationalError, match="readonly"), database.read() as db:
        db.execute(update(Listener).values(disabled=True))
    with database.read() as db:
        assert not sessions.authenticate(db, clock.now(), issued.token, None).listener.disabled
    with database.write() as db:  # the writer's connection is not one of them
        db.execute(update(Listener).values(disabled=True))
    with database.read() as db, pytest.raises(ApiError) as refused:
        sessions.authenticate(db, clock.now(), issued.token, None)
    assert refused.value.error is ErrorCode.LISTENER_SUSPENDED


def test_reads_only_refuses_writes_before_taking_the_lock(database: Database) -> None:
    with reads_only():
        with database.read() as db:
            assert db.get(Listener, 1) is None  # reads go on
        with pytest.raises(WouldBlock), database.write():
            pytest.fail("a write ran inside reads_only()")
    with database.write() as db:  # the lock was never taken, and writes work again after
        assert db.get(Listener, 1) is None


def _slow_touches(database: Database) -> list[str]:
    """The session activity writes made on the database from now on, each held for 0.2 s (a
    slow write: a burst's other calls come while it runs)."""
    from sqlalchemy import event

    touches: list[str] = []

    @event.listens_for(database.engine, "before_cursor_execute")
    def _seen(_conn, _cursor, statement: str, *_args) -> None:  # noqa: ANN001
        if statement.startswith("UPDATE auth_sessions"):
            touches.append(statement)
            time.sleep(0.2)

    return touches


def _get_stations(app: object, token: str, count: int) -> list[Any]:
    """`count` getStations of the token at once, through the app; their answers."""
    import asyncio

    import httpx

    async def calls() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))  # type: ignore[arg-type]
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", cookies={"csrftoken": "t"}
        ) as http:
            return await asyncio.gather(
                *(
                    http.post(
                        "/api/v1/station/getStations",
                        json={},
                        headers={"X-CsrfToken": "t", "X-AuthToken": token},
                    )
                    for _ in range(count)
                )
            )

    return asyncio.run(calls())


def test_quick_calls_record_the_activity_once_a_minute_and_once_for_a_burst(
    database: Database, settings: Settings, clock: FixedClock
) -> None:
    """getStations runs on the event loop; the session's activity (a write) is recorded by one
    call in a worker thread once sessions.TOUCH_INTERVAL has passed. The session's other calls
    of that moment stay on the loop and do not write it again."""
    from airwave.api.app import create_app
    from airwave.core.services import Services

    issued = _issue(database, settings, clock)
    app = create_app(Services(settings, database, clock))
    touches = _slow_touches(database)

    def calls(count: int) -> list[Any]:
        return _get_stations(app, issued.token, count)

    def stored() -> AuthSession:
        with database.read() as db:
            found = db.get(AuthSession, issued.session.id)
            assert found is not None
            return found

    assert all(r.status_code == 200 for r in calls(3))
    assert touches == [] and stored().last_seen_at == START
    clock.advance(sessions.TOUCH_INTERVAL.total_seconds() + 1)
    answers = calls(12)
    assert [r.status_code for r in answers] == [200] * 12
    assert len(touches) == 1
    session = stored()
    assert session.last_seen_at == clock.now()
    assert session.expires_at == clock.now() + timedelta(seconds=session.timeout_seconds)
    assert all(r.status_code == 200 for r in calls(3))
    assert len(touches) == 1
    clock.advance(sessions.TOUCH_INTERVAL.total_seconds() + 1)
    assert all(r.status_code == 200 for r in calls(1))
    assert len(touches) == 2 and stored().last_seen_at == clock.now()


class _Pages:
    """station/getStations' page, wrapped: whether each call ran on the event loop's thread (the
    main thread here), and past the quick budget in CPU time (as it counts on SQLite) while
    `slow` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from airwave.api import protocol
        from airwave.api.v1 import station

        self.on_loop: list[bool] = []
        self.slow = False
        page = station.stations.station_page

        def timed_page(*args: object, **kwargs: object) -> object:
            self.on_loop.append(threading.current_thread() is threading.main_thread())
            if self.slow:
                end = time.thread_time() + protocol.QUICK_BUDGET * 2
                while time.thread_time() < end:
                    pass
            return page(*args, **kwargs)

        monkeypatch.setattr(station.stations, "station_page", timed_page)


def test_a_burst_in_worker_threads_records_the_activity_once(
    database: Database, settings: Settings, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token whose quick calls ran slow has them run in worker threads, as writing calls always
    do: a burst of them when the activity is due leaves its write to one call, as on the loop."""
    from airwave.api import protocol
    from airwave.api.app import create_app
    from airwave.core.services import Services

    monkeypatch.setattr(protocol, "SLOW_RETRY", 600.0)  # the token stays in the threads
    issued = _issue(database, settings, clock)
    app = create_app(Services(settings, database, clock))
    pages = _Pages(monkeypatch)
    pages.slow = True
    touches = _slow_touches(database)

    for _ in range(protocol.SLOW_STRIKES):  # slow calls in a row: then worker threads
        assert [r.status_code for r in _get_stations(app, issued.token, 1)] == [200]
    pages.slow = False
    pages.on_loop.clear()
    clock.advance(sessions.TOUCH_INTERVAL.total_seconds() + 1)
    answers = _get_stations(app, issued.token, 12)
    assert [r.status_code for r in answers] == [200] * 12
    assert pages.on_loop == [False] * 12
    assert len(touches) == 1
    with database.read() as db:
        stored = db.get(AuthSession, issued.session.id)
        assert stored is not None and stored.last_seen_at == clock.now()


def test_a_token_whose_quick_calls_run_slow_tries_the_loop_again_after_a_wait_that_doubles(
    database: Database, settings: Settings, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SLOW_STRIKES getStations in a row over the quick budget send the token's next ones to a
    worker thread; after SLOW_RETRY one tries the event loop again: back on the loop if it is
    quick, in the threads for twice as long if it is slow too. Fewer slow ones in a row do not."""
    from airwave.api import protocol
    from airwave.api.app import create_app
    from airwave.core.services import Services

    retry = 0.3
    monkeypatch.setattr(protocol, "SLOW_RETRY", retry)
    issued = _issue(database, settings, clock)
    app = create_app(Services(settings, database, clock))
    pages = _Pages(monkeypatch)

    def calls(count: int) -> list[bool]:
        """`count` calls one after another: whether each ran on the event loop."""
        ran = []
        for _ in range(count):
            assert [r.status_code for r in _get_stations(app, issued.token, 1)] == [200]
            ran.append(pages.on_loop[-1])
        return ran

    strikes = protocol.SLOW_STRIKES
    assert strikes > 1
    assert calls(2) == [True, True]
    pages.slow = True
    assert calls(strikes - 1) == [True] * (strikes - 1)
    pages.slow = False
    assert calls(1) == [True]  # a quick one between: the count starts again
    pages.slow = True
    assert calls(strikes + 1) == [True] * strikes + [False]  # in a row: then a worker thread
    pages.slow = False
    assert calls(2) == [False, False]  # quick again, but the wait is not over
    time.sleep(retry * 1.2)
    assert calls(3) == [True, True, True]  # one tried the loop, and the token is back
    pages.slow = True
    assert calls(strikes + 1) == [True] * strikes + [False]
    time.sleep(retry * 1.2)
    assert calls(2) == [True, False]  # the try was slow too: the next wait is twice as long
    time.sleep(retry * 1.2)
    assert calls(1) == [False]
    time.sleep(retry * 1.2)
    pages.slow = False
    assert calls(2) == [True, True]
