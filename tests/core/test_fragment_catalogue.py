"""The station engine keeps what it read of the catalogue between fragments (engine/known.py): its
choices and track objects are those of an engine that reads everything afresh, and a catalogue
change another process commits (a scan, with a new catalogue stamp) holds from the very next
fragment on."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.accounts import sessions
from airwave.core.catalog import similarity_index, space
from airwave.core.clock import FixedClock
from airwave.core.radio import playlist
from airwave.core.radio.engine.known import Known
from airwave.core.services import Services
from airwave.store import stamps
from airwave.store.db import Database
from airwave.store.models import (
    Album,
    Artist,
    AuthSession,
    Genre,
    Listener,
    StationSeed,
    Track,
    TrackGenre,
)

from .conftest import Rows, statements

ARTISTS, ALBUMS_PER_ARTIST, TRACKS_PER_ALBUM = 12, 2, 4


@dataclass
class World:
    listener_id: int
    session_id: int
    stations: dict[str, int]  # by seed kind: AR, TR, GE
    artist_tracks: dict[int, list[int]]  # the seeded artist's tracks, by artist id
    seed_artist: int


def _world(database: Database, settings: Settings, clock: FixedClock) -> World:
    """A small catalogue as a scan leaves it (with a new stamp), a plus listener and a station of
    each seed kind."""
    now = clock.now()
    with database.write() as db:
        genres = [Genre(name=f"G{g}", name_key=f"g{g}", category=f"C{g % 2}") for g in range(3)]
        db.add_all(genres)
        db.flush()
        artist_tracks: dict[int, list[int]] = {}
        for a in range(ARTISTS):
            artist = Artist(name=f"A{a}", name_key=f"a{a}", sort_name=f"A{a}", created_at=now)
            db.add(artist)
            db.flush()
            for b in range(ALBUMS_PER_ARTIST):
                album = Album(
                    title=f"B{a}.{b}", title_key=f"b{a}.{b}", artist_id=artist.id, created_at=now
                )
                db.add(album)
                db.flush()
                for t in range(TRACKS_PER_ALBUM):
                    track = Track(
                        title=f"T{a}.{b}.{t}",
                        artist_id=artist.id,
                        album_id=album.id,
                        duration=120.0 + t,
                        codec="flac",
                        fingerprint=f"{a:012d}{b:014d}{t:014d}",
                        path=f"/music/{a}/{b}/{t}.flac",
                        lyrics="[00:01.00]la la\n[00:02.50]la" if t == 0 else None,
                        rg_track_gain=-3.5 if t == 1 else None,
                        added_at=now,
                    )
                    db.add(track)
                    db.flush()
                    artist_tracks.setdefault(artist.id, []).append(track.id)
                    db.add(TrackGenre(track_id=track.id, genre_id=genres[a % 3].id, position=0))
        stamps.bump_catalog(db)
        rows = Rows(db, now)
        listener = rows.listener("plus")
        session = sessions.start_session(
            db, settings, now, listener, keep_logged_in=True, address=None, user_agent=None
        ).session
        seed_artist = sorted(artist_tracks)[0]
        seeds = {
            "AR": seed_artist,
            "TR": artist_tracks[sorted(artist_tracks)[5]][2],
            "GE": genres[1].id,
        }
        stations = {}
        for kind, ref in seeds.items():
            station = rows.station(listener)
            station.initial_kind, station.initial_ref = kind, ref
            db.add(StationSeed(station_id=station.id, kind=kind, ref_id=ref, created_at=now))
            stations[kind] = station.id
        db.flush()
    similarity_index.build(database, clock.now, force=True)  # the neighbour table, as after a scan
    return World(listener.id, session.id, stations, artist_tracks, seed_artist)


def _services(database: Database, tmp_path: Path, clock: FixedClock) -> Services:
    settings = Settings(data_dir=tmp_path / "data", engine_seed=7)
    return Services(settings, database, clock)


def _players(db: Session, world: World) -> tuple[Listener, AuthSession]:
    listener = db.get(Listener, world.listener_id)
    session = db.get(AuthSession, world.session_id)
    assert listener is not None and session is not None
    return listener, session


def _asking(services: Services, world: World, kind: str, db: Session) -> tuple:
    """What getFragment passes the engine after its session: services to the call's time."""
    listener, session = _players(db, world)
    station, now = str(world.stations[kind]), services.clock.now()
    return services, "http://radio.test", listener, session, station, "Normal", None, now


def _fragment(services: Services, world: World, kind: str) -> list[playlist.TrackItem]:
    with services.database.write() as db:
        result = playlist.next_fragment(db, *_asking(services, world, kind, db))
    return [item for item in result.items if isinstance(item, playlist.TrackItem)]


def _shown(item: playlist.TrackItem) -> tuple:
    """What a track object says of a spin, but its random token and signed URLs."""
    view = item.view
    return (
        item.spin.id,
        view.track.id,
        view.track.title,
        view.artist.name,
        view.album.title,
        view.album_artist.name,
        tuple(view.genres),
        item.artist_picture.mosaic,
        item.gain,
        None if item.lyrics is None else (item.lyrics.lines, item.lyrics.timed),
        item.rating,
        item.is_seed,
        item.is_bookmarked,
        item.spin.seed_music_id,
        item.spin.audio_encoding,
        item.links.encoding,
    )


def _play(services: Services, world: World, rounds: int, *, fresh: bool) -> list[tuple]:
    """Fragments of every station in turn, a quarter of an hour apart; with `fresh`, the
    catalogue stamp changes before each (so nothing kept is used) and the engine reads all."""
    clock = services.clock
    assert isinstance(clock, FixedClock)
    shown = []
    for _ in range(rounds):
        for kind in ("AR", "TR", "GE"):
            if fresh:
                with services.database.write() as db:
                    stamps.bump_catalog(db)
            shown += [_shown(item) for item in _fragment(services, world, kind)]
            clock.advance(15 * 60)
    return shown


def test_kept_catalogue_changes_no_choice_and_no_track_object(
    migrated: Path, tmp_path: Path, clock: FixedClock
) -> None:
    """Two copies of one instance, same engine seed: one engine keeps what it read, the other
    reads everything afresh for every fragment; they hand out the same tracks, shown alike."""
    first = tmp_path / "first.db"
    shutil.copyfile(migrated, first)
    database = Database(f"sqlite:///{first}")
    settings = Settings(data_dir=tmp_path / "data", engine_seed=7)
    world = _world(database, settings, clock)
    database.dispose()
    second = tmp_path / "second.db"
    shutil.copyfile(first, second)
    start = clock.now()
    played = {}
    for name, path, fresh in (("kept", first, False), ("fresh", second, True)):
        database = Database(f"sqlite:///{path}")
        services = _services(database, tmp_path, FixedClock(start))
        try:
            played[name] = _play(services, world, rounds=6, fresh=fresh)
        finally:
            database.dispose()
    assert len(played["kept"]) == 6 * 3 * playlist.FRAGMENT_SIZE
    assert played["kept"] == played["fresh"]
    assert any(s[9] is not None for s in played["kept"])  # lyrics were shown
    assert any(s[8] == -3.5 for s in played["kept"])  # a ReplayGain tag was


def test_a_scan_in_another_process_holds_from_the_next_fragment(
    database: Database, tmp_path: Path, clock: FixedClock
) -> None:
    """Tracks a scan marks missing are never handed out once it commits, and a retitled track
    shows its new title, although the engine had kept both."""
    settings = Settings(data_dir=tmp_path / "data", engine_seed=7)
    world = _world(database, settings, clock)
    services = _services(database, tmp_path, clock)
    own = world.artist_tracks[world.seed_artist]
    seen = {item.view.track.id for _ in range(3) for item in _fragment(services, world, "AR")}
    assert seen & set(own)  # the artist's tracks were read, and kept
    # one the station has not played (a played one may not repeat soon) stays, retitled
    kept_one = next(t for t in own if t not in seen)
    gone = [t for t in own if t != kept_one]
    other = Database(str(database.engine.url))  # another process's connection to the database
    try:
        with other.write() as db:
            db.execute(update(Track).where(Track.id.in_(gone)).values(missing_since=clock.now()))
            db.execute(update(Track).where(Track.id == kept_one).values(title="Renamed"))
            stamps.bump_catalog(db)
    finally:
        other.dispose()
    clock.advance(4 * 3600)  # past the artist's cap in the rules' window
    handed: list[playlist.TrackItem] = []
    for _ in range(8):
        handed += _fragment(services, world, "AR")
        clock.advance(30 * 60)
    assert not {item.view.track.id for item in handed} & set(gone)
    titles = [item.view.track.title for item in handed if item.view.track.id == kept_one]
    assert titles == ["Renamed"]  # the seed artist's one track left, as the scan named it


def test_neighbour_lists_are_kept_until_the_similarity_index_changes(
    database: Database, tmp_path: Path, clock: FixedClock
) -> None:
    """The engine reads a track's neighbour list once while the catalogue stamp holds; a build of
    the similarity index in another process sets a new stamp, and the next read has its lists."""
    settings = Settings(data_dir=tmp_path / "data", engine_seed=7)
    world = _world(database, settings, clock)
    tracks = [t for ids in world.artist_tracks.values() for t in ids]
    with statements(database) as seen:
        with database.read() as db:
            before = Known(db).neighbors(tracks[:10])
        assert set(before) == set(tracks[:10])
        assert sum("track_neighbors" in s for s in seen) == 1
        with database.read() as db:  # kept: no statement for them
            again = Known(db).neighbors(tracks[:10])
        assert sum("track_neighbors" in s for s in seen) == 1
        assert all(again[t] is before[t] for t in before)
        with pytest.raises(ValueError):
            again[tracks[0]][0][0] = -1  # shared between calls: read only
    other = Database(
        str(database.engine.url)
    )  # another process: two tracks in three in a new genre
    try:
        with other.write() as db:
            genre = Genre(name="Extra", name_key="extra", category="C9")
            db.add(genre)
            db.flush()
            for n, track_id in enumerate(tracks):
                if n % 3:
                    db.add(TrackGenre(track_id=track_id, genre_id=genre.id, position=1))
        similarity_index.build(other, clock.now, force=True)
    finally:
        other.dispose()
    with database.read() as db:
        after = Known(db).neighbors(tracks[:10])
        fresh = space.neighbors_of(db, tracks[:10])
    assert any(not np.array_equal(after[t][0], before[t][0]) for t in before)
    assert all(np.array_equal(after[t][0], fresh[t][0]) for t in fresh)
    assert all(np.array_equal(after[t][1], fresh[t][1]) for t in fresh)


def test_a_warm_fragment_runs_a_bounded_number_of_statements(
    database: Database, tmp_path: Path, clock: FixedClock
) -> None:
    """Once the engine has read what it keeps, a fragment costs a fixed, small number of
    statements (it took about twenty before the engine kept anything)."""
    settings = Settings(data_dir=tmp_path / "data", engine_seed=7)
    world = _world(database, settings, clock)
    services = _services(database, tmp_path, clock)
    for _ in range(3):
        for kind in ("AR", "TR", "GE"):
            _fragment(services, world, kind)
            clock.advance(15 * 60)
    for kind in ("AR", "TR", "GE"):
        with statements(database) as seen:
            _fragment(services, world, kind)
        clock.advance(15 * 60)
        # the two reads of _fragment's own are not the fragment's
        assert len(seen) - 2 <= STATEMENT_BOUND[kind], (kind, seen)


def test_a_served_fragment_reads_the_catalogue_stamp_only_to_choose(
    database: Database, tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """getFragment as the API serves it (playlist.serve_fragment: a plan on the read snapshot,
    the write, the track objects read after it): the catalogue's stamp is read by the plan and
    by the write, which checks the plan against it; the track objects are read under the
    write's stamp, not after another read of it (on PostgreSQL a statement, where SQLite keeps
    the stamp read between changes), and show the spins written."""
    settings = Settings(data_dir=tmp_path / "data", engine_seed=7)
    world = _world(database, settings, clock)
    services = _services(database, tmp_path, clock)
    for kind in ("AR", "TR", "GE"):
        _fragment(services, world, kind)
        clock.advance(15 * 60)
    reads: list[Session] = []
    read_stamp = stamps.catalog_stamp

    def counted(db: Session) -> int | None:
        reads.append(db)
        return read_stamp(db)

    monkeypatch.setattr(stamps, "catalog_stamp", counted)
    for kind in ("AR", "TR", "GE"):
        reads.clear()
        with database.read() as read:
            asking = _asking(services, world, kind, read)
            served = playlist.serve_fragment(read, database.write, *asking)
        assert len(reads) == 2 and reads[0] is read and reads[1] is not read, kind
        tracks = [i for i in served.items if isinstance(i, playlist.TrackItem)]
        assert len(tracks) == playlist.FRAGMENT_SIZE
        assert len({i.spin.token for i in tracks}) == len(tracks)
        assert all(i.view.track.id == i.spin.track_id for i in tracks)
        clock.advance(15 * 60)


# statements of a warm fragment of a plus listener on SQLite (it took 25-30 before the engine kept
# the catalogue): the station, the stamp, the listener's claim, limits, history, tired tracks,
# thumbs, seeds, neighbours, the spins' insert, the claim's update, and for tracks not handed out
# before, their track objects; a genre station also pages through its genre
STATEMENT_BOUND = {"AR": 16, "TR": 16, "GE": 18}


def _write(
    services: Services, world: World, kind: str, plan: playlist.FragmentPlan | None
) -> list[int]:
    with services.database.write() as db:
        listener, session = _players(db, world)
        written = playlist.write_fragment(
            db,
            services,
            listener,
            session,
            str(world.stations[kind]),
            "Normal",
            None,
            services.clock.now(),
            plan,
        )
    return [spin.track_id for spin in written.spins]


def _plan(services: Services, world: World, kind: str) -> playlist.FragmentPlan | None:
    with services.database.read() as db:
        listener = db.get(Listener, world.listener_id)
        assert listener is not None
        return playlist.plan_fragment(
            db, services, listener, str(world.stations[kind]), services.clock.now()
        )


def test_tracks_chosen_before_the_write_are_those_the_write_would_choose(
    database: Database, tmp_path: Path, clock: FixedClock
) -> None:
    """getFragment chooses on a read snapshot, out of the write lock (playlist.plan_fragment):
    while the station has played nothing since, the write takes exactly what it would have
    chosen itself (same engine seed and history); a plan overtaken by another fragment of the
    station, or by a scan, is chosen afresh, so the radio rules see that fragment's spins and no
    vanished track is handed out."""
    settings = Settings(data_dir=tmp_path / "data", engine_seed=7)
    world = _world(database, settings, clock)
    services = _services(database, tmp_path, clock)
    for kind in ("AR", "TR", "GE"):
        for _ in range(3):
            plan = _plan(services, world, kind)
            assert plan is not None and len(plan.picks) == playlist.FRAGMENT_SIZE
            planned = [pick.track_id for pick, _ in plan.picks]
            assert _write(services, world, kind, plan) == planned
            clock.advance(15 * 60)
    # overtaken: another fragment of the station is written between the plan and its write
    stale = _plan(services, world, "AR")
    assert stale is not None
    between = _write(services, world, "AR", None)
    assert [pick.track_id for pick, _ in stale.picks] == between  # the same choice, twice
    again = _write(services, world, "AR", stale)
    assert not set(again) & set(between)  # chosen afresh: nothing just played repeats
    # overtaken by a scan: a planned track vanished from the library meanwhile
    clock.advance(15 * 60)
    planned = _plan(services, world, "AR")
    assert planned is not None
    vanished = planned.picks[0][0].track_id
    other = Database(str(database.engine.url))  # the scan is another process
    try:
        with other.write() as db:
            db.execute(update(Track).where(Track.id == vanished).values(missing_since=clock.now()))
            stamps.bump_catalog(db)
    finally:
        other.dispose()
    assert vanished not in _write(services, world, "AR", planned)
    # a plan for another station, or for another moment, is not taken either
    other = _plan(services, world, "GE")
    assert other is not None
    assert _write(services, world, "TR", other) != [p.track_id for p, _ in other.picks]
    # nothing to plan (no such station): the write answers the error, as it always did
    with database.read() as db:
        listener = db.get(Listener, world.listener_id)
        assert listener is not None
        assert playlist.plan_fragment(db, services, listener, "999999", clock.now()) is None
