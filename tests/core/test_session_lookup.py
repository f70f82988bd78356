"""The per-call session lookup (sessions.authenticate): what it accepts and refuses, and that the
listener and session it hands back read as the stored rows do; and `reads_only`, which keeps
work run on the event loop from waiting for a write lock."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect

from airwave.config import Settings
from airwave.core.accounts import sessions
from airwave.core.clock import FixedClock
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database, WouldBlock, reads_only
from airwave.store.models import AuthSession, Listener

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


def test_reads_only_refuses_writes_before_taking_the_lock(database: Database) -> None:
    with reads_only():
        with database.read() as db:
            assert db.get(Listener, 1) is None  # reads go on
        with pytest.raises(WouldBlock), database.write():
            pytest.fail("a write ran inside reads_only()")
    with database.write() as db:  # the lock was never taken, and writes work again after
        assert db.get(Listener, 1) is None
