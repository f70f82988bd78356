"""A station list (station/getStations, the tuner's station list): what each station shows of
its seed is read for all of the list's seeds at once, and kept while the catalogue is unchanged,
so a list costs the same few statements however many stations it holds, and a catalogue change
shows at once."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from airwave.core.radio import stations
from airwave.store import stamps
from airwave.store.db import Database
from airwave.store.models import Artist, Genre, Station, StationSeed, TrackGenre

from .conftest import Rows, statements


def _grown(db: Session, rows: Rows, listener_id: int, kind: str, ref: int) -> Station:
    station = Station(
        listener_id=listener_id,
        name=f"{kind}{ref}",
        created_at=rows.now,
        initial_kind=kind,
        initial_ref=ref,
    )
    db.add(station)
    db.flush()
    db.add(StationSeed(station_id=station.id, kind=kind, ref_id=ref, created_at=rows.now))
    db.flush()
    return station


def _list(db: Session, listener_id: int) -> list[tuple[object, ...]]:
    _total, views = stations.station_page(db, listener_id, 0, 1000)
    return [
        (
            v.station.id,
            v.picture,
            v.genres,
            v.initial_seed.listener_count if v.initial_seed else None,
            v.initial_seed.artist.name if v.initial_seed and v.initial_seed.artist else None,
            v.initial_seed.track.track.title if v.initial_seed and v.initial_seed.track else None,
            v.initial_seed.genre.name if v.initial_seed and v.initial_seed.genre else None,
        )
        for v in views
    ]


def test_a_station_list_costs_the_same_statements_for_3_or_30_stations(
    database: Database, db: Session, rows: Rows
) -> None:
    genre = Genre(name="Ambient", name_key="ambient", category="ambient")
    db.add(genre)
    db.flush()
    tracks = [rows.track() for _ in range(15)]
    for track in tracks:
        db.add(TrackGenre(track_id=track.id, genre_id=genre.id))
    stamps.bump_catalog(db)
    few, many = rows.listener(), rows.listener()
    seeds = [("AR", t.artist_id) for t in tracks] + [("TR", t.id) for t in tracks[:14]]
    seeds += [("GE", genre.id)]
    for kind, ref in [seeds[0], seeds[15], seeds[-1]]:  # an artist, a song, a genre
        _grown(db, rows, few.id, kind, ref)
    for kind, ref in seeds:
        _grown(db, rows, many.id, kind, ref)
    db.flush()

    # the first list after a catalogue change reads its seeds' looks together
    stamps.bump_catalog(db)
    with statements(database, db) as cold_few:
        _list(db, few.id)
    stamps.bump_catalog(db)
    with statements(database, db) as cold_many:
        first = _list(db, many.id)
    assert len(cold_many) == len(cold_few), cold_many
    assert len(first) == 30
    assert {s[3] for s in first} >= {1, 2}  # listener counts: both listeners' stations counted
    with statements(database, db) as small:
        _list(db, few.id)
    with statements(database, db) as large:
        again = _list(db, many.id)
    assert again == first
    assert len(large) == len(small), large

    # a catalogue change shows at once: the artist's new name, in every station grown from it
    artist_id = tracks[0].artist_id
    db.execute(update(Artist).where(Artist.id == artist_id).values(name="Renamed"))
    stamps.bump_catalog(db)
    db.expire_all()
    named = [s[4] for s in _list(db, many.id) if s[4] is not None]
    assert named.count("Renamed") == 1 and len(named) == 15
