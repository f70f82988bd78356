"""The one password-change rule (credentials.change_password) and the use cases built on it."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.accounts import credentials, resets, sessions, throttle
from airwave.core.clock import FixedClock
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database
from airwave.store.models import AuthSession, Listener, ThrottleCounter

from .conftest import Rows

_LINK = re.compile(r"/#/reset\?token=([A-Za-z0-9_-]+)")


def _mailable(settings: Settings) -> Settings:
    return settings.model_copy(update={"smtp_host": "mail.invalid"})


def _session(db: Session, settings: Settings, clock: FixedClock, listener: Listener) -> int:
    issued = sessions.start_session(
        db, settings, clock.now(), listener, keep_logged_in=False, address=None, user_agent=None
    )
    return issued.session.id


def _token(db: Session, settings: Settings, clock: FixedClock, listener: Listener) -> str:
    outgoing = resets.request_reset(
        db, _mailable(settings), clock.now(), listener.username, None, "http://x"
    )
    assert outgoing is not None
    db.flush()
    match = _LINK.search(outgoing.message.get_content())
    assert match is not None
    return match[1]


def _failed_login(db: Session, settings: Settings, clock: FixedClock, listener: Listener) -> None:
    throttle.reserve_login(db, settings, clock.now(), listener.username_key, "10.0.0.1", None)


def _counters(db: Session, listener: Listener) -> int:
    key = throttle.login_key(listener.username_key)
    return db.scalar(select(func.count()).where(ThrottleCounter.key == key)) or 0


def _live_sessions(db: Session, listener: Listener) -> set[int]:
    return set(db.scalars(select(AuthSession.id).where(AuthSession.listener_id == listener.id)))


def test_a_new_password_retires_links_ends_other_sessions_and_lifts_throttling(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock
) -> None:
    listener = rows.listener()
    listener.email = "l@example.org"
    mine, other = (_session(db, settings, clock, listener) for _ in range(2))
    token = _token(db, settings, clock, listener)
    _failed_login(db, settings, clock, listener)
    assert _counters(db, listener) == 1

    clock.advance(300)
    credentials.change_password(db, clock.now(), listener, "new-hash", keep_session_id=mine)

    assert listener.password_hash == "new-hash" and listener.password_changed_at == clock.now()
    assert _live_sessions(db, listener) == {mine} and other != mine
    with pytest.raises(ApiError) as refused:
        resets.check_token(db, clock.now(), token)
    assert refused.value.error is ErrorCode.CONTENT_HAS_EXPIRED
    assert _counters(db, listener) == 0


def test_without_a_session_to_keep_every_session_ends(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock
) -> None:
    listener = rows.listener()
    _session(db, settings, clock, listener)
    credentials.change_password(db, clock.now(), listener, "new-hash")
    assert _live_sessions(db, listener) == set()


def test_the_operator_and_the_reset_link_share_the_rule(
    database: Database, settings: Settings, clock: FixedClock
) -> None:
    services = Services(_mailable(settings), database, clock)
    with database.write() as db:
        listener = Rows(db, clock.now()).listener()
        listener.email = "l@example.org"
        name = listener.username
        _session(db, settings, clock, listener)
        first = _token(db, settings, clock, listener)
    credentials.set_password(services, name, "operator's choice")
    with database.read() as db:
        with pytest.raises(ApiError) as refused:
            resets.check_token(db, clock.now(), first)
        assert refused.value.error is ErrorCode.CONTENT_HAS_EXPIRED
        row = db.scalar(select(Listener).where(Listener.username == name))
        assert row is not None and _live_sessions(db, row) == set()

    with database.write() as db:
        second = _token(db, settings, clock, row)
    with pytest.raises(ApiError) as weak:
        credentials.reset_password(services, second, "short")
    assert weak.value.error is ErrorCode.INVALID_PASSWORD  # and the link still works
    credentials.reset_password(services, second, "a long new password")
    with pytest.raises(ApiError) as spent:
        credentials.reset_password(services, second, "another long password")
    assert spent.value.error is ErrorCode.CONTENT_HAS_EXPIRED
