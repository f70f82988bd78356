"""Prepared.all and .scalars, the few-row reads every fragment runs on the driver's cursor: the
same rows, converted the same way (aware UTC times, booleans), as SQLAlchemy's own execution of
the statement, with bound times, limits and literal values; and the station a fragment reads
that way."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, insert, inspect, select
from sqlalchemy.orm import Session

from airwave.core.radio import stations
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Spin, Station
from airwave.store.prepared import Prepared

from .conftest import Rows

_SPINS = Spin.__table__.c
_TRACK_COLUMNS = {"track_id": "id", "artist_id": "artist_id", "album_id": "album_id"}
_RECENT = (
    select(_SPINS.id, _SPINS.track_id, _SPINS.is_replay, _SPINS.issued_at)
    .where(_SPINS.station_id == bindparam("station_id"), _SPINS.issued_at > bindparam("since"))
    .order_by(_SPINS.issued_at.desc(), _SPINS.id.desc())
    .limit(bindparam("limit"))
)
_IN_WINDOW = (
    select(_SPINS.track_id)
    .where(_SPINS.station_id == bindparam("station_id"), _SPINS.is_replay.is_(False))
    .order_by(_SPINS.id)
    .limit(2000)
)


def test_rows_and_their_conversions_are_sqlalchemys(db: Session, rows: Rows) -> None:
    listener = rows.listener()
    station = rows.station(listener)
    tracks = [rows.track() for _ in range(3)]
    made = [
        {
            "token": secrets.token_hex(8),
            "listener_id": listener.id,
            "station_id": station.id,
            "is_replay": n == 4,  # n minutes and microseconds ago
            "issued_at": rows.now - timedelta(minutes=n, microseconds=n),
        }
        | {k: getattr(tracks[n % 3], c) for k, c in _TRACK_COLUMNS.items()}
        for n in range(7)
    ]
    db.execute(insert(Spin.__table__), made)
    params = {"station_id": station.id, "since": rows.now - timedelta(minutes=5), "limit": 4}
    got = Prepared(_RECENT).all(db, **params)
    assert got == [tuple(r) for r in db.execute(_RECENT, params)]
    assert len(got) == 4
    assert all(r[3].utcoffset() == timedelta(0) for r in got)
    assert [r[2] for r in got] == [False, False, False, False]
    assert Prepared(_RECENT).all(db, **{**params, "station_id": station.id + 1}) == []

    window = Prepared(_IN_WINDOW).scalars(db, station_id=station.id)
    assert window == list(db.scalars(_IN_WINDOW, {"station_id": station.id}))
    assert len(window) == 6  # the replay is left out


def test_a_station_read_for_a_fragment_is_the_stored_row_and_refuses_as_get_station(
    db: Session, rows: Rows
) -> None:
    owner, other = rows.listener(), rows.listener()
    station = rows.station(owner)
    station.initial_kind, station.initial_ref, station.last_played_at = "AR", 7, rows.now
    db.flush()
    read = stations.read_station(db, owner.id, str(station.id))
    assert inspect(read).detached
    columns = [c.key for c in inspect(Station).column_attrs]
    assert [getattr(read, c) for c in columns] == [getattr(station, c) for c in columns]
    for listener_id, station_id, error in [
        (other.id, str(station.id), ErrorCode.USER_NOT_AUTHORIZED),
        (owner.id, str(station.id + 1), ErrorCode.STATION_DOES_NOT_EXIST),
        (owner.id, "nonsense", ErrorCode.STATION_DOES_NOT_EXIST),
    ]:
        for read_one in (stations.read_station, stations.get_station):
            with pytest.raises(ApiError) as refused:
                read_one(db, listener_id, station_id)
            assert refused.value.error is error
