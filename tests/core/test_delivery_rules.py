"""What a valid audio URL may still deliver: a live listener, and a file still in the library."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from airwave.audio.signing import AudioGrant
from airwave.core.clock import FixedClock
from airwave.core.radio.delivery import audio_source
from airwave.errors import ApiError, ErrorCode

from .conftest import Rows


def grant(listener_id: int, track_id: int, clock: FixedClock) -> AudioGrant:
    return AudioGrant(listener_id, track_id, "original", clock.now() + timedelta(hours=1), None)


def refusal(db: Session, g: AudioGrant) -> ErrorCode:
    with pytest.raises(ApiError) as caught:
        audio_source(db, g, g.expires_at - timedelta(hours=1))
    return caught.value.error


def test_a_live_listener_gets_the_tracks_file(db: Session, rows: Rows, clock: FixedClock) -> None:
    listener, track = rows.listener(), rows.track(duration=200.0, path="/music/x.flac")
    source = audio_source(db, grant(listener.id, track.id, clock), clock.now())
    assert (source.track_id, source.path, source.codec, source.duration) == (
        track.id,
        "/music/x.flac",
        "flac",
        200.0,
    )


def test_a_suspended_listener_is_refused(db: Session, rows: Rows, clock: FixedClock) -> None:
    listener, track = rows.listener(disabled=True), rows.track()
    assert refusal(db, grant(listener.id, track.id, clock)) is ErrorCode.LISTENER_SUSPENDED


def test_a_deleted_listener_is_refused(db: Session, rows: Rows, clock: FixedClock) -> None:
    listener, track = rows.listener(), rows.track()
    db.delete(listener)
    db.flush()
    assert refusal(db, grant(listener.id, track.id, clock)) is ErrorCode.USER_NOT_AUTHORIZED


def test_a_track_gone_from_the_library_is_not_found(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    listener, missing, pathless = rows.listener(), rows.track(), rows.track(path=None)
    missing.missing_since = clock.now()
    db.flush()
    assert refusal(db, grant(listener.id, missing.id, clock)) is ErrorCode.NOT_FOUND
    assert refusal(db, grant(listener.id, pathless.id, clock)) is ErrorCode.NOT_FOUND
    assert refusal(db, grant(listener.id, 10**6, clock)) is ErrorCode.NOT_FOUND
