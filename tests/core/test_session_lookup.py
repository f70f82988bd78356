"""The per-call session lookup (sessions.authenticate): what it accepts and refuses, and that the
listener and session it hands back read as the stored rows do; and `reads_only`, which keeps
work run on the event loop from waiting for a write lock."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect
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


def test_reads_only_refuses_writes_before_taking_the_lock(database: Database) -> None:
    with reads_only():
        with database.read() as db:
            assert db.get(Listener, 1) is None  # reads go on
        with pytest.raises(WouldBlock), database.write():
            pytest.fail("a write ran inside reads_only()")
    with database.write() as db:  # the lock was never taken, and writes work again after
        assert db.get(Listener, 1) is None
