"""Spec §6.5, one active player per account: a claim ends with its session; ids never come back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.accounts import sessions
from airwave.core.clock import FixedClock
from airwave.core.radio import player, playlist
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AuthSession, Listener, Spin

from .conftest import Rows


def _session(db: Session, settings: Settings, clock: FixedClock, listener: Listener) -> AuthSession:
    issued = sessions.start_session(
        db, settings, clock.now(), listener, keep_logged_in=False, address=None, user_agent=None
    )
    return issued.session


def _phone_plays(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock
) -> tuple[Listener, AuthSession, AuthSession]:
    """A listener whose phone holds the player claim, and their laptop."""
    listener = rows.listener()
    phone, laptop = (_session(db, settings, clock, listener) for _ in range(2))
    player.claim_player(db, listener, phone, clock.now(), force=False)
    return listener, phone, laptop


def _refused(db: Session, listener: Listener, session: AuthSession, clock: FixedClock) -> None:
    with pytest.raises(ApiError) as refused:
        player.claim_player(db, listener, session, clock.now(), force=False)
    assert refused.value.error is ErrorCode.STREAM_VIOLATION


def test_another_player_is_refused_while_the_holder_plays_and_can_take_over(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock
) -> None:
    listener, phone, laptop = _phone_plays(db, rows, settings, clock)
    clock.advance(60)
    _refused(db, listener, laptop, clock)
    player.claim_player(db, listener, laptop, clock.now(), force=True)
    _refused(db, listener, phone, clock)


@pytest.mark.parametrize("how", ["logout", "logout everywhere else", "expiry"])
def test_a_claim_ends_with_its_session(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock, how: str
) -> None:
    listener, phone, laptop = _phone_plays(db, rows, settings, clock)
    clock.advance(30)
    if how == "logout":
        sessions.end_session(db, phone.id)
    elif how == "logout everywhere else":
        sessions.end_other_sessions(db, listener.id, laptop.id)
    else:
        phone.expires_at = clock.now()
        db.flush()
    player.claim_player(db, listener, laptop, clock.now(), force=False)  # no STREAM_VIOLATION


def test_session_ids_are_never_reused(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock
) -> None:
    listener = rows.listener()
    old = _session(db, settings, clock, listener)
    player.claim_player(db, listener, old, clock.now(), force=False)
    old_id = old.id
    sessions.end_session(db, old_id)
    db.expunge(old)
    new = _session(db, settings, clock, listener)
    assert new.id > old_id  # the next login inherits nothing of the old session's claim
    other = _session(db, settings, clock, listener)
    player.claim_player(db, listener, other, clock.now(), force=False)


def test_a_claim_lasts_as_long_as_the_music_its_player_was_handed(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock
) -> None:
    listener, phone, laptop = _phone_plays(db, rows, settings, clock)
    holder = db.get(Listener, listener.id)
    assert holder is not None
    player.hold_player(holder, clock.now() + timedelta(minutes=12) + player.CLAIM_GRACE)
    clock.advance(13 * 60)  # past the old fixed 10 minutes: the phone's music still plays
    _refused(db, listener, laptop, clock)
    clock.advance(60 + 1)  # 12 minutes of music and 2 of grace have passed
    player.claim_player(db, listener, laptop, clock.now(), force=False)


def test_a_claim_on_a_short_track_lapses_soon_after_it(
    db: Session, rows: Rows, settings: Settings, clock: FixedClock
) -> None:
    listener = rows.listener()
    phone, laptop = (_session(db, settings, clock, listener) for _ in range(2))
    track = rows.track(duration=30.0)
    station = rows.station(listener)
    spin = Spin(
        token="t" * 24,
        listener_id=listener.id,
        station_id=station.id,
        track_id=track.id,
        artist_id=track.artist_id,
        album_id=track.album_id,
        reason="Normal",
        issued_at=clock.now(),
        seconds_played=0.0,
        is_replay=False,
    )
    db.add(spin)
    db.flush()
    player.claim_player(db, listener, phone, clock.now(), force=False)
    playlist.track_started(db, listener, phone, spin.token, clock.now())
    clock.advance(30 + 60)  # the track ended a minute ago: still within the grace
    _refused(db, listener, laptop, clock)
    clock.advance(61)  # nothing has played on the phone for the grace: another app may play
    player.claim_player(db, listener, laptop, clock.now(), force=False)
