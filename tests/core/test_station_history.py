"""A station's history as the engine reads it: its last 50 spins and every spin in the three-hour
window, newest first, with replays left out; whether the window holds fewer or more than 50."""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import insert
from sqlalchemy.orm import Session

from airwave.core.radio import playlist
from airwave.core.radio.engine.rules import Rules
from airwave.store.models import Spin

from .conftest import Rows


def _spins(
    db: Session, rows: Rows, minutes_ago: list[float], replay_every: int = 0
) -> tuple[int, list[int]]:
    """Spins of one new station at these ages; their ids, newest first (replays left out)."""
    listener = rows.listener()
    station = rows.station(listener)
    track = rows.track()
    made = [
        {
            "token": secrets.token_hex(8),
            "listener_id": listener.id,
            "station_id": station.id,
            "track_id": track.id,
            "artist_id": track.artist_id,
            "album_id": track.album_id,
            "is_replay": bool(replay_every) and n % replay_every == 0,
            "issued_at": rows.now - timedelta(minutes=age),
        }
        for n, age in enumerate(minutes_ago)
    ]
    ids = db.execute(insert(Spin.__table__).returning(Spin.__table__.c.id), made).scalars().all()
    kept = [(m["issued_at"], i) for m, i in zip(made, ids, strict=True) if not m["is_replay"]]
    return station.id, [i for _, i in sorted(kept, reverse=True)]


def _history_ids(db: Session, station_id: int, rows: Rows) -> list[int]:
    history = playlist._history(db, station_id, Rules(), rows.now)
    got = db.execute(Spin.__table__.select().where(Spin.__table__.c.station_id == station_id)).all()
    by_key = {(r.track_id, r.issued_at): r.id for r in got}
    return [by_key[(p.track_id, p.at)] for p in history.spins]


def test_the_history_is_the_last_50_spins_and_the_whole_window_newest_first(
    db: Session, rows: Rows
) -> None:
    # an hour of a listener playing along: 15 spins in the window, 45 before it
    station, newest = _spins(db, rows, [4 * n for n in range(60)] + [300 + n for n in range(20)])
    assert _history_ids(db, station, rows) == newest[:50]
    # a burst of skips: 80 spins in the window, more than the last 50
    station, newest = _spins(db, rows, [n for n in range(80)] + [200 + n for n in range(10)])
    assert _history_ids(db, station, rows) == newest[:80]
    # a short history: all of it
    station, newest = _spins(db, rows, [30 * n for n in range(12)])
    assert _history_ids(db, station, rows) == newest
    # replays are not radio: left out (a spin every 2 minutes, every third a replay: 60 radio
    # spins in the three hours)
    station, newest = _spins(db, rows, [2 * n for n in range(120)], replay_every=3)
    assert _history_ids(db, station, rows) == newest[:60]
