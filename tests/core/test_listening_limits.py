"""Tier limits of spec §6.6 in core, with time moved by a FixedClock rather than SQL from outside.

Skips per station and per day, fragments per window, monthly hours, stations per plan, and the
lifetime of track tokens.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from airwave.config import Settings, TierPolicy
from airwave.core.clock import FixedClock
from airwave.core.radio import listening, playlist, stations
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Listener, Spin, Station, Track

from .conftest import Rows

HOUR = 3600


def error_of(call: Callable[..., object], *args: object, **kwargs: object) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args, **kwargs)
    return caught.value


def policy(station: int = 6, daily: int = 24) -> TierPolicy:
    return TierPolicy(
        max_stations=100,
        station_skip_limit=station,
        daily_skip_limit=daily,
        ads=True,
        replays=False,
        high_quality=False,
        on_demand=False,
    )


def spin(
    db: Session,
    listener: Listener,
    station: Station | None,
    track: Track,
    at: datetime,
    *,
    started: bool = True,
    replay: bool = False,
) -> Spin:
    row = Spin(
        token=secrets.token_hex(16),
        listener_id=listener.id,
        station_id=station.id if station else None,
        track_id=track.id,
        artist_id=track.artist_id,
        album_id=track.album_id,
        issued_at=at,
        started_at=at if started else None,
        is_replay=replay,
    )
    db.add(row)
    db.flush()
    return row


# ---------------------------------------------------------------- skips


def skip(
    db: Session, tier: TierPolicy, listener: Listener, station: Station, now: datetime
) -> None:
    """Spend one skip as a request does: its own unit of work, written before the next one looks."""
    playlist._spend_skip(db, tier, listener.id, station.id, now)
    db.flush()


def test_free_tier_skips_per_station_run_out_and_come_back_after_an_hour(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    free = policy(station=6, daily=24)
    listener = rows.listener()
    station = rows.station(listener)
    assert playlist.skips_left(db, free, listener.id, station.id, clock.now()) == 6
    for _ in range(6):
        skip(db, free, listener, station, clock.now())
        clock.advance(60)
    assert playlist.skips_left(db, free, listener.id, station.id, clock.now()) == 0
    assert (
        error_of(playlist._spend_skip, db, free, listener.id, station.id, clock.now()).error
        is ErrorCode.STATION_LIMIT_REACHED
    )
    clock.advance(HOUR + 1 - 6 * 60)  # only the first skip is now more than an hour old
    assert playlist.skips_left(db, free, listener.id, station.id, clock.now()) == 1


def test_station_skips_are_counted_per_station(db: Session, rows: Rows, clock: FixedClock) -> None:
    free = policy(station=2, daily=24)
    listener = rows.listener()
    one, two = rows.station(listener), rows.station(listener)
    for _ in range(2):
        skip(db, free, listener, one, clock.now())
    assert playlist.skips_left(db, free, listener.id, one.id, clock.now()) == 0
    assert playlist.skips_left(db, free, listener.id, two.id, clock.now()) == 2


def test_the_daily_limit_spans_stations_and_resets_after_a_day(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    free = policy(station=6, daily=4)
    listener = rows.listener()
    stations_ = [rows.station(listener) for _ in range(4)]
    for station in stations_:
        skip(db, free, listener, station, clock.now())
    fresh = rows.station(listener)
    assert playlist.skips_left(db, free, listener.id, fresh.id, clock.now()) == 0
    assert (
        error_of(playlist._spend_skip, db, free, listener.id, fresh.id, clock.now()).error
        is ErrorCode.STATION_LIMIT_REACHED
    )
    clock.advance(24 * HOUR + 1)
    assert playlist.skips_left(db, free, listener.id, fresh.id, clock.now()) == 4


def test_unlimited_tiers_have_no_skip_count(
    db: Session, rows: Rows, clock: FixedClock, settings: Settings
) -> None:
    plus = settings.tier("plus")
    listener = rows.listener("plus")
    station = rows.station(listener)
    for _ in range(50):
        skip(db, plus, listener, station, clock.now())
    assert playlist.skips_left(db, plus, listener.id, station.id, clock.now()) is None


def test_skips_of_other_listeners_do_not_count(db: Session, rows: Rows, clock: FixedClock) -> None:
    free = policy(station=1, daily=1)
    me, other = rows.listener(), rows.listener()
    mine, theirs = rows.station(me), rows.station(other)
    skip(db, free, other, theirs, clock.now())
    assert playlist.skips_left(db, free, me.id, mine.id, clock.now()) == 1


# ---------------------------------------------------------------- fragments per window


def test_fragment_rate_limit_answers_playlist_exceeded_with_retry_after(
    db: Session, rows: Rows, clock: FixedClock, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, fragment_limit=2, fragment_window=600)
    listener, track = rows.listener(), rows.track()
    station = rows.station(listener)
    for _ in range(playlist.FRAGMENT_SIZE):
        spin(db, listener, station, track, clock.now())
    playlist._check_rate(
        db, settings, listener.id, clock.now()
    )  # one fragment so far: a second may come
    spin(db, listener, station, track, clock.now())  # the second has begun: that is the limit
    refused = error_of(playlist._check_rate, db, settings, listener.id, clock.now())
    assert refused.error is ErrorCode.PLAYLIST_EXCEEDED and refused.retry_after == 60
    clock.advance(601)
    playlist._check_rate(db, settings, listener.id, clock.now())  # the window has moved past them


def test_replays_do_not_count_towards_the_fragment_rate(
    db: Session, rows: Rows, clock: FixedClock, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, fragment_limit=1, fragment_window=600)
    listener, track = rows.listener(), rows.track()
    for _ in range(10):
        spin(db, listener, None, track, clock.now(), replay=True)
    playlist._check_rate(db, settings, listener.id, clock.now())


# ---------------------------------------------------------------- monthly listening cap


def capped(tmp_path: Path, hours: int) -> Settings:
    return Settings(data_dir=tmp_path, tiers={"free": {"monthly_listening_cap_hours": hours}})


def test_monthly_cap_refuses_once_reached_until_the_first_of_next_month(
    db: Session, rows: Rows, tmp_path: Path
) -> None:
    clock = FixedClock(datetime(2025, 3, 31, 22, 0, tzinfo=UTC))
    settings = capped(tmp_path, 1)
    listener, long_track = rows.listener(), rows.track(duration=1800.0)
    spin(db, listener, None, long_track, clock.now())
    listening.check_cap(db, settings, listener, clock.now())  # half an hour of one
    spin(db, listener, None, long_track, clock.now())
    refused = error_of(listening.check_cap, db, settings, listener, clock.now())
    assert refused.error is ErrorCode.LISTENER_NOT_AUTHORIZED
    assert refused.retry_after == 2 * HOUR  # 22:00 on 31 March until 1 April, 00:00 UTC
    assert "2025-04-01" in refused.message
    clock.advance(2 * HOUR)
    listening.check_cap(db, settings, listener, clock.now())


def test_only_started_tracks_count_towards_the_cap(
    db: Session, rows: Rows, clock: FixedClock, tmp_path: Path
) -> None:
    settings = capped(tmp_path, 1)
    listener, track = rows.listener(), rows.track(duration=3600.0)
    spin(db, listener, None, track, clock.now(), started=False)
    assert listening.seconds_this_month(db, listener.id, clock.now()) == 0.0
    listening.check_cap(db, settings, listener, clock.now())


def test_no_cap_by_default(db: Session, rows: Rows, clock: FixedClock, settings: Settings) -> None:
    listener, track = rows.listener(), rows.track(duration=100 * 3600.0)
    spin(db, listener, None, track, clock.now())
    listening.check_cap(db, settings, listener, clock.now())


def test_month_boundaries_are_utc() -> None:
    late = datetime(2024, 12, 31, 23, 30, tzinfo=UTC)
    assert listening.month_start(late) == datetime(2024, 12, 1, tzinfo=UTC)
    assert listening.next_month(late) == datetime(2025, 1, 1, tzinfo=UTC)
    ahead = datetime(2025, 1, 1, 0, 30, tzinfo=UTC).astimezone(timezone(timedelta(hours=-5)))
    assert listening.month_start(ahead) == datetime(
        2025, 1, 1, tzinfo=UTC
    )  # 31 Dec locally, January in UTC


# ---------------------------------------------------------------- tiers and stations


def test_tier_defaults_and_unknown_tiers_fall_back_to_free(settings: Settings) -> None:
    free, plus = settings.tier("free"), settings.tier("plus")
    assert (free.station_skip_limit, free.daily_skip_limit, free.ads) == (6, 24, True)
    assert (plus.station_skip_limit, plus.daily_skip_limit, plus.ads) == (0, 0, False)
    assert settings.tier("platinum") == free


def test_a_tier_override_keeps_the_fields_it_does_not_name(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, tiers={"free": {"max_stations": 3}})
    assert settings.tier("free").max_stations == 3
    assert settings.tier("free").station_skip_limit == 6
    with pytest.raises(ValueError, match="unknown tier"):
        Settings(data_dir=tmp_path, tiers={"gold": {"max_stations": 3}})


def test_max_stations_is_enforced_and_an_existing_seed_is_not_a_new_station(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    listener = rows.listener()
    first, second, third = (stations.SeedRef("AR", rows.track().artist_id) for _ in range(3))
    station, created = stations.create_station(db, listener.id, first, None, 2, clock.now())
    assert created and station.name.endswith(" Radio")
    stations.create_station(db, listener.id, second, None, 2, clock.now())
    again, created = stations.create_station(db, listener.id, first, None, 2, clock.now())
    assert not created and again.id == station.id  # the same seed: the station it already has
    refused = error_of(stations.create_station, db, listener.id, third, None, 2, clock.now())
    assert refused.error is ErrorCode.MAX_STATIONS_REACHED


# ---------------------------------------------------------------- track tokens


def test_a_track_token_lives_24_hours_for_its_own_listener(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    me, other, track = rows.listener(), rows.listener(), rows.track()
    issued = spin(db, me, None, track, clock.now())
    assert playlist.spin_by_token(db, me.id, issued.token, clock.now()).id == issued.id
    assert (
        error_of(playlist.spin_by_token, db, other.id, issued.token, clock.now()).error
        is ErrorCode.USER_NOT_AUTHORIZED
    )
    assert (
        error_of(playlist.spin_by_token, db, me.id, "0" * 32, clock.now()).error
        is ErrorCode.NOT_FOUND
    )
    clock.advance(24 * HOUR)
    assert playlist.spin_by_token(db, me.id, issued.token, clock.now()).id == issued.id
    clock.advance(1)
    assert (
        error_of(playlist.spin_by_token, db, me.id, issued.token, clock.now()).error
        is ErrorCode.CONTENT_HAS_EXPIRED
    )
