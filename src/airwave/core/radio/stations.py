"""Stations of a listener: creation from seeds, listing, seeds, shuffle, Thumbprint Radio and
feedback."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core import ids
from airwave.core.catalog import catalog, kept
from airwave.errors import ApiError, ErrorCode
from airwave.library.names import search_key
from airwave.store.models import (
    Album,
    Artist,
    Artwork,
    Feedback,
    Genre,
    Listener,
    ShuffleMember,
    Station,
    StationSeed,
    Track,
    TrackGenre,
)
from airwave.store.prepared import Columns, Prepared
from airwave.store.sql import among

_COUNT = Prepared(  # on every getStations
    select(func.count(Station.id)).where(
        Station.listener_id == bindparam("listener_id"), Station.is_shuffle.is_(False)
    )
)


def count_stations(db: Session, listener_id: int) -> int:
    """The listener's stations as getStations lists them: all but the shuffle station, which
    `station/shuffle` names (clients that know shuffle add it themselves; listing it too would
    show it twice)."""
    return _COUNT.scalar(db, listener_id=listener_id) or 0


_STATION_TABLE = Station.__table__
_STATIONS = _STATION_TABLE.c
_STATION_COLUMNS = Columns(Station)
_PAGE = Prepared(  # the page of getStations, the tuner's and the apps' station lists
    select(*_STATION_TABLE.columns)
    .where(_STATIONS.listener_id == bindparam("listener_id"), _STATIONS.is_shuffle.is_(False))
    .order_by(
        _STATIONS.last_played_at.is_(None),
        _STATIONS.last_played_at.desc(),
        _STATIONS.created_at.desc(),
        _STATIONS.id.desc(),
    )
    .offset(bindparam("start"))
    .limit(bindparam("size"))
)


def list_stations(
    db: Session, listener_id: int, start: int, size: int
) -> tuple[int, list[Station]]:
    """Most recently played first, then never-played ones by creation time, newest first; the
    shuffle station is not listed (see count_stations). The stations are detached objects, for
    reading only."""
    total = count_stations(db, listener_id)
    if total == 0 or start >= total:
        return total, []
    rows = _PAGE.all(db, listener_id=listener_id, start=start, size=size)
    return total, [_STATION_COLUMNS.detached(row) for row in rows]


def _station_number(station_id: str) -> int | None:
    ref = ids.parse(station_id) if station_id.startswith("ST:") else None
    return ref.id if ref and ref.kind == "station" else ids.parse_number(station_id)


def get_station(db: Session, listener_id: int, station_id: str) -> Station:
    """The listener's station; STATION_DOES_NOT_EXIST or USER_NOT_AUTHORIZED otherwise."""
    number = _station_number(station_id)
    return _owned(db.get(Station, number) if number is not None else None, listener_id, station_id)


_STATION_BY_ID = Prepared(
    select(*_STATION_TABLE.columns).where(_STATIONS.id == bindparam("station_id"))
)


def read_station(db: Session, listener_id: int, station_id: str) -> Station:
    """get_station for a read (a fragment's choice, on every getFragment): the station as a
    detached object, without the ORM's loading, for reading only."""
    number = _station_number(station_id)
    row = _STATION_BY_ID.first(db, station_id=number) if number is not None else None
    station = _STATION_COLUMNS.detached(row) if row is not None else None
    return _owned(station, listener_id, station_id)


def _owned(station: Station | None, listener_id: int, station_id: str) -> Station:
    if station is None:
        raise ApiError(ErrorCode.STATION_DOES_NOT_EXIST, f"no station {station_id[:40]!r}")
    if station.listener_id != listener_id:
        raise ApiError(
            ErrorCode.USER_NOT_AUTHORIZED,
            f"station {station_id[:40]!r} belongs to another listener",
        )
    return station


def find_by_name(db: Session, listener_id: int, key_words: list[str], limit: int) -> list[Station]:
    """The listener's stations whose name contains every word (a listener has at most a few
    hundred)."""
    rows = db.scalars(select(Station).where(Station.listener_id == listener_id))
    return [s for s in rows if all(f" {w}" in f" {search_key(s.name)}" for w in key_words)][:limit]


# ---------------------------------------------------------------- seeds and creation

SEED_KINDS = {"artist": "AR", "track": "TR", "genre": "GE"}
KIND_NAMES = {v: k for k, v in SEED_KINDS.items()}
MAX_NAME = 64
MAX_SEEDS = 100


@dataclass(frozen=True)
class SeedRef:
    kind: str  # AR / TR / GE
    ref_id: int

    @property
    def music_id(self) -> str:
        return ids.music_id(KIND_NAMES[self.kind], self.ref_id)  # type: ignore[arg-type]


def seed_from(
    station_code: str | None = None, pandora_id: str | None = None, music_id: str | None = None
) -> SeedRef:
    """The seed a createStation/addSeed request names; STATION_CODE_INVALID when it names nothing
    seedable."""
    given = [v for v in (station_code, pandora_id, music_id) if v is not None]
    if len(given) != 1:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, "give exactly one of stationCode, pandoraId or musicId"
        )
    value = given[0]
    ref = ids.parse_station_code(value) if station_code is not None else ids.parse(value)
    if ref is None or ref.kind not in SEED_KINDS:
        raise ApiError(
            ErrorCode.STATION_CODE_INVALID,
            f"{value[:80]!r} does not name an artist, track or genre",
        )
    return SeedRef(SEED_KINDS[ref.kind], ref.id)


def seed_name(db: Session, seed: SeedRef) -> str:
    """The default station name for a seed; STATION_CODE_INVALID when the object does not exist."""
    try:
        if seed.kind == "AR":
            return f"{catalog.artist(db, seed.ref_id).name} Radio"
        if seed.kind == "TR":
            return f"{catalog.track(db, seed.ref_id).title} Radio"
        genre = catalog.genre(db, seed.ref_id)
        if (
            db.scalar(select(TrackGenre.track_id).where(TrackGenre.genre_id == genre.id).limit(1))
            is None
        ):
            raise ApiError(ErrorCode.NOT_FOUND, "empty genre")
        return f"{genre.name} Radio"
    except ApiError as exc:
        if exc.error is ErrorCode.NOT_FOUND:
            raise ApiError(
                ErrorCode.STATION_CODE_INVALID, f"{seed.music_id} is not in the catalogue"
            ) from None
        raise


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ApiError(ErrorCode.INVALID_REQUEST, "a station name cannot be blank")
    if len(name) > MAX_NAME:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, f"station names are at most {MAX_NAME} characters"
        )
    return name


def create_station(
    db: Session, listener_id: int, seed: SeedRef, name: str | None, max_stations: int, now: datetime
) -> tuple[Station, bool]:
    """A new station grown from one seed, or the listener's existing station for that seed
    (created=False)."""
    default = seed_name(db, seed)
    existing = db.scalar(
        select(Station)
        .where(
            Station.listener_id == listener_id,
            Station.initial_kind == seed.kind,
            Station.initial_ref == seed.ref_id,
        )
        .order_by(Station.id)
        .limit(1)
    )
    if existing is not None:
        return existing, False
    if count_stations(db, listener_id) >= max_stations:
        raise ApiError(ErrorCode.MAX_STATIONS_REACHED, f"your plan allows {max_stations} stations")
    shuffle = shuffle_station(db, listener_id)
    follows_all = shuffle is not None and set(shuffle_member_ids(db, shuffle.id)) == {
        s.id
        for s in db.scalars(
            select(Station).where(Station.listener_id == listener_id, Station.is_shuffle.is_(False))
        )
    }
    station = Station(
        listener_id=listener_id,
        name=_clean_name(name) if name else default[:MAX_NAME],
        description="",
        created_at=now,
        total_play_time=0,
        is_shuffle=False,
        is_thumbprint=False,
        initial_kind=seed.kind,
        initial_ref=seed.ref_id,
    )
    db.add(station)
    db.flush()
    db.add(StationSeed(station_id=station.id, kind=seed.kind, ref_id=seed.ref_id, created_at=now))
    if follows_all and shuffle is not None:
        db.add(ShuffleMember(shuffle_id=shuffle.id, station_id=station.id))
    db.flush()
    return station, True


_STATION_LOCKED = Prepared(  # a fragment's station, the listener's own only, its row locked
    select(*_STATION_TABLE.columns)
    .where(_STATIONS.id == bindparam("station_id"), _STATIONS.listener_id == bindparam("listener"))
    .with_for_update()
)


def lock_station(db: Session, listener_id: int, station_id: str) -> Station:
    """get_station inside a write transaction (a fragment's), holding the row against concurrent
    fragments (PostgreSQL), as a detached object for reading, as read_station gives it (the
    fragment reads the station and changes nothing of it). SQLite's writer already holds the
    database's lock: there the row is read as read_station reads it."""
    if db.get_bind().dialect.name == "sqlite":
        return read_station(db, listener_id, station_id)
    number = _station_number(station_id)
    if number is not None:  # read and locked in one statement, the listener's own only
        row = _STATION_LOCKED.first(db, station_id=number, listener=listener_id)
        if row is not None:
            return _STATION_COLUMNS.detached(row)
    station = get_station(db, listener_id, station_id)  # the right error
    db.refresh(station, with_for_update=True)  # made a moment ago: it is there after all
    return station


def update_station(station: Station, name: str | None, description: str | None) -> None:
    if station.is_shuffle and (name is not None or description is not None):
        raise ApiError(ErrorCode.CALL_NOT_ALLOWED, "the shuffle station cannot be renamed")
    if name is not None:
        station.name = _clean_name(name)
    if description is not None:
        station.description = description.strip()


def seeds_of(db: Session, station_id: int) -> list[StationSeed]:
    return list(
        db.scalars(
            select(StationSeed)
            .where(StationSeed.station_id == station_id)
            .order_by(StationSeed.created_at, StationSeed.id)
        )
    )


def add_seed(db: Session, station: Station, seed: SeedRef, now: datetime) -> StationSeed:
    if station.is_shuffle or station.is_thumbprint:
        raise ApiError(
            ErrorCode.CALL_NOT_ALLOWED, "seeds cannot be added to shuffle or Thumbprint Radio"
        )
    seed_name(db, seed)
    found = db.scalar(
        select(StationSeed).where(
            StationSeed.station_id == station.id,
            StationSeed.kind == seed.kind,
            StationSeed.ref_id == seed.ref_id,
        )
    )
    if found is not None:
        return found
    if len(seeds_of(db, station.id)) >= MAX_SEEDS:
        raise ApiError(ErrorCode.CALL_NOT_ALLOWED, f"a station has at most {MAX_SEEDS} seeds")
    row = StationSeed(station_id=station.id, kind=seed.kind, ref_id=seed.ref_id, created_at=now)
    db.add(row)
    db.flush()
    return row


def delete_seed(db: Session, station: Station, seed: SeedRef) -> None:
    rows = seeds_of(db, station.id)
    match = [r for r in rows if r.kind == seed.kind and r.ref_id == seed.ref_id]
    if not match:
        raise ApiError(ErrorCode.NOT_FOUND, f"{seed.music_id} is not a seed of this station")
    if len(rows) == 1:
        raise ApiError(ErrorCode.CALL_NOT_ALLOWED, "a station keeps at least one seed")
    db.delete(match[0])


def remove_station(db: Session, station: Station) -> None:
    db.execute(delete(Station).where(Station.id == station.id))


# ---------------------------------------------------------------- shuffle and Thumbprint Radio

THUMBPRINT_MINIMUM = 15


def shuffle_station(db: Session, listener_id: int) -> Station | None:
    return db.scalar(
        select(Station)
        .where(Station.listener_id == listener_id, Station.is_shuffle.is_(True))
        .order_by(Station.id)
        .limit(1)
    )


def shuffle_member_ids(db: Session, shuffle_id: int) -> list[int]:
    return list(
        db.scalars(
            select(ShuffleMember.station_id)
            .where(ShuffleMember.shuffle_id == shuffle_id)
            .order_by(ShuffleMember.station_id)
        )
    )


def ensure_shuffle(db: Session, listener_id: int, now: datetime) -> Station:
    """The listener's shuffle station, created on first use mixing all their stations."""
    station = shuffle_station(db, listener_id)
    if station is not None:
        return station
    station = Station(
        listener_id=listener_id,
        name="Shuffle",
        description="",
        created_at=now,
        total_play_time=0,
        is_shuffle=True,
        is_thumbprint=False,
    )
    db.add(station)
    db.flush()
    for other in db.scalars(
        select(Station.id).where(Station.listener_id == listener_id, Station.is_shuffle.is_(False))
    ):
        db.add(ShuffleMember(shuffle_id=station.id, station_id=other))
    db.flush()
    return station


def set_shuffle(db: Session, listener_id: int, station_ids: list[str], now: datetime) -> Station:
    shuffle = ensure_shuffle(db, listener_id, now)
    chosen = []
    for station_id in station_ids:
        station = get_station(db, listener_id, station_id)
        if station.is_shuffle:
            raise ApiError(ErrorCode.CALL_NOT_ALLOWED, "shuffle cannot include itself")
        chosen.append(station.id)
    db.execute(delete(ShuffleMember).where(ShuffleMember.shuffle_id == shuffle.id))
    for station_id in sorted(set(chosen)):
        db.add(ShuffleMember(shuffle_id=shuffle.id, station_id=station_id))
    db.flush()
    return shuffle


def thumbs_up_count(db: Session, listener_id: int) -> int:
    return (
        db.scalar(
            select(func.count(func.distinct(Feedback.track_id))).where(
                Feedback.listener_id == listener_id, Feedback.is_positive.is_(True)
            )
        )
        or 0
    )


def create_thumbprint(db: Session, listener_id: int, max_stations: int, now: datetime) -> Station:
    existing = db.scalar(
        select(Station)
        .where(Station.listener_id == listener_id, Station.is_thumbprint.is_(True))
        .limit(1)
    )
    if existing is not None:
        return existing
    have = thumbs_up_count(db, listener_id)
    if have < THUMBPRINT_MINIMUM:
        raise ApiError(
            ErrorCode.THUMBPRINT_RADIO_NOT_ELIGIBLE,
            f"Thumbprint Radio needs {THUMBPRINT_MINIMUM} thumbs-up; you have {have}",
        )
    if count_stations(db, listener_id) >= max_stations:
        raise ApiError(ErrorCode.MAX_STATIONS_REACHED, f"your plan allows {max_stations} stations")
    station = Station(
        listener_id=listener_id,
        name="Thumbprint Radio",
        description="",
        created_at=now,
        total_play_time=0,
        is_shuffle=False,
        is_thumbprint=True,
    )
    db.add(station)
    db.flush()
    return station


# ---------------------------------------------------------------- feedback


def feedback_counts(db: Session, station_id: int) -> tuple[int, int]:
    rows = dict(
        db.execute(
            select(Feedback.is_positive, func.count())
            .where(Feedback.station_id == station_id)
            .group_by(Feedback.is_positive)
        ).all()
    )
    return rows.get(True, 0), rows.get(False, 0)


def set_feedback(
    db: Session, listener_id: int, station_id: int, track_id: int, positive: bool, now: datetime
) -> Feedback:
    """Thumb a track on a station; a second thumb replaces the first."""
    row = db.scalar(
        select(Feedback).where(Feedback.station_id == station_id, Feedback.track_id == track_id)
    )
    if row is None:
        row = Feedback(
            listener_id=listener_id,
            station_id=station_id,
            track_id=track_id,
            is_positive=positive,
            created_at=now,
        )
        db.add(row)
    else:
        row.is_positive, row.created_at = positive, now
    db.flush()
    return row


def get_feedback(db: Session, listener_id: int, feedback_id: str) -> Feedback:
    number = ids.parse_number(feedback_id)
    row = db.get(Feedback, number) if number is not None else None
    if row is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no feedback {feedback_id[:40]!r}")
    if row.listener_id != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "that feedback belongs to another listener")
    return row


def list_feedback(
    db: Session,
    listener_id: int,
    station_id: int | None,
    positive: bool | None,
    start: int,
    size: int,
) -> tuple[int, list[Feedback]]:
    """Newest first."""
    where = [Feedback.listener_id == listener_id]
    if station_id is not None:
        where.append(Feedback.station_id == station_id)
    if positive is not None:
        where.append(Feedback.is_positive.is_(positive))
    total = db.scalar(select(func.count(Feedback.id)).where(*where)) or 0
    rows = db.scalars(
        select(Feedback)
        .where(*where)
        .order_by(Feedback.created_at.desc(), Feedback.id.desc())
        .offset(start)
        .limit(size)
    )
    return total, list(rows)


def feedback_for(db: Session, station_id: int, track_id: int) -> Feedback:
    row = db.scalar(
        select(Feedback).where(Feedback.station_id == station_id, Feedback.track_id == track_id)
    )
    if row is None:
        raise ApiError(ErrorCode.NOT_FOUND, "that track has no feedback on this station")
    return row


def station_names(db: Session, station_ids: set[int]) -> dict[int, str]:
    if not station_ids:
        return {}
    return dict(
        db.execute(select(Station.id, Station.name).where(Station.id.in_(station_ids))).all()
    )


def listener_count(db: Session, kind: str, ref_id: int) -> int:
    """Listeners with a station seeded by this artist, track or genre."""
    return catalog.listener_counts(db, kind, [ref_id]).get(ref_id, 0)


def cover_hashes_of(db: Session, station: Station, limit: int = 4) -> list[str]:
    """Album covers for a shuffle or Thumbprint station's mosaic: its stations' or thumbs-up
    tracks' albums."""
    if station.is_shuffle:
        members = select(ShuffleMember.station_id).where(ShuffleMember.shuffle_id == station.id)
        tracks = select(Track.id).join(
            StationSeed, (StationSeed.kind == "TR") & (StationSeed.ref_id == Track.id)
        )
        artist_tracks = (
            select(Track.album_id)
            .join(StationSeed, (StationSeed.kind == "AR") & (StationSeed.ref_id == Track.artist_id))
            .where(StationSeed.station_id.in_(members))
        )
        album_ids = list(db.scalars(artist_tracks.limit(200)))
        album_ids += list(
            db.scalars(
                select(Track.album_id)
                .where(Track.id.in_(tracks.where(StationSeed.station_id.in_(members))))
                .limit(50)
            )
        )
    else:
        album_ids = list(
            db.scalars(
                select(Track.album_id)
                .join(Feedback, Feedback.track_id == Track.id)
                .where(Feedback.listener_id == station.listener_id, Feedback.is_positive.is_(True))
                .order_by(Feedback.created_at.desc())
                .limit(200)
            )
        )
    hashes: list[str] = []
    for album_id in dict.fromkeys(album_ids):
        found = db.scalar(
            select(Artwork.content_hash)
            .join(Album, Album.art_id == Artwork.id)
            .where(Album.id == album_id)
        )
        if found and found not in hashes:
            hashes.append(found)
        if len(hashes) == limit:
            break
    return hashes


# ---------------------------------------------------------------- views: what a station object
# shows


@dataclass(frozen=True)
class SeedView:
    """A seed with the catalogue object it names (exactly one of artist, track, genre) and its
    picture."""

    kind: str
    ref_id: int
    listener_count: int
    picture: catalog.Picture
    artist: Artist | None = None
    track: catalog.TrackView | None = None
    genre: Genre | None = None


@dataclass(frozen=True)
class StationView:
    """A station with its picture, the artwork that picture comes from, genres, initial seed and
    shuffle members."""

    station: Station
    picture: catalog.Picture
    artwork: Artwork | None  # for artId and dominantColor
    genres: list[str]
    initial_seed: SeedView | None
    shuffle_ids: list[int] | None  # shuffle stations only


@dataclass(frozen=True)
class StationDetails:
    view: StationView
    seeds: list[SeedView]
    positive_feedback_count: int
    negative_feedback_count: int


@dataclass(frozen=True)
class FeedbackView:
    """A thumb with its track and the name of the station it was given on."""

    feedback: Feedback
    track: catalog.TrackView
    station_name: str


@dataclass(frozen=True)
class _SeedLook:
    """What a station shows of its initial seed but the seed's listener count: the picture, the
    artwork it comes from, genre names, and the seed (None when it left the catalogue), counted
    as 0. The same for every station grown from that seed while the catalogue stamp holds."""

    picture: catalog.Picture
    artwork: Artwork | None
    genres: tuple[str, ...]
    seed: SeedView | None


# by (kind, ref id); a station list of 100 stations ran some 950 statements, ~9 a station
_SEED_LOOKS: kept.Kept[tuple[str, int], _SeedLook] = kept.Kept(limit=10_000)


def _looks(
    db: Session, at: tuple[object, int] | None, seeds: set[tuple[str, int]]
) -> dict[tuple[str, int], _SeedLook]:
    """The looks of these seeds: those kept, and the others read together (a few statements a
    kind of seed, and one or two a genre, however many there are), then kept."""
    kept_now = _SEED_LOOKS.at(at)
    found = {s: kept_now[s] for s in seeds if kept_now is not None and s in kept_now}
    missing = [s for s in seeds if s not in found]
    if missing:
        made = _read_looks(db, missing)
        found.update(made)
        if kept_now is not None:
            kept_now.update(made)
    return found


def _read_looks(db: Session, seeds: list[tuple[str, int]]) -> dict[tuple[str, int], _SeedLook]:
    """What each of these seeds shows (see _SeedLook), read for all of them at once: artists
    with their pictures, genres and whether they are still present; tracks; genres with one
    sample track each (drawn genre by genre)."""
    wanted: dict[str, list[int]] = {"AR": [], "TR": [], "GE": []}
    looks: dict[tuple[str, int], _SeedLook] = {}
    for kind, ref in seeds:
        if kind in wanted:
            wanted[kind].append(ref)
        else:  # no such kind of seed: nothing to show
            looks[(kind, ref)] = _SeedLook(catalog.Picture(), None, (), None)
    artists = (
        {a.id: a for a in db.scalars(select(Artist).where(among(db, Artist.id, wanted["AR"])))}
        if wanted["AR"]
        else {}
    )
    pictures: dict[int, catalog.Picture] = {}
    present: set[int] = set()
    tops: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    by_hash: dict[str, Artwork] = {}
    if artists:
        pictures = catalog.artist_pictures(db, list(artists.values()))
        present = catalog.present_artists(db, list(artists))
        genres_of = catalog.artists_genres(db, list(artists))
        tops = {a: [g for g, _ in counted.most_common(3)] for a, counted in genres_of.items()}
        names = {
            g.id: g.name
            for g in db.scalars(
                select(Genre).where(among(db, Genre.id, {g for top in tops.values() for g in top}))
            )
        }
        first = {p.mosaic[0] for p in pictures.values() if p.artwork is None and p.mosaic}
        if first:
            found = db.scalars(select(Artwork).where(Artwork.content_hash.in_(first)))
            by_hash = {a.content_hash: a for a in found}
    for ref in wanted["AR"]:
        artist = artists.get(ref)
        if artist is None:
            looks[("AR", ref)] = _SeedLook(catalog.Picture(), None, (), None)
            continue
        picture = pictures[ref]
        artwork = picture.artwork or (by_hash.get(picture.mosaic[0]) if picture.mosaic else None)
        seed = SeedView("AR", ref, 0, picture, artist=artist) if ref in present else None
        looks[("AR", ref)] = _SeedLook(
            picture, artwork, tuple(names[g] for g in tops[ref] if g in names), seed
        )
    genres = (
        {g.id: g for g in db.scalars(select(Genre).where(among(db, Genre.id, wanted["GE"])))}
        if wanted["GE"]
        else {}
    )
    samples = {g: catalog.genre_sample(db, g, 1) for g in genres}
    views = {
        v.track.id: v
        for v in catalog.track_views(
            db, wanted["TR"] + [t for sample in samples.values() for t in sample]
        )
    }
    for ref in wanted["TR"]:
        view = views.get(ref)
        if view is None:
            looks[("TR", ref)] = _SeedLook(catalog.Picture(), None, (), None)
            continue
        present_track = view.track.missing_since is None
        picture = catalog.Picture(view.album_art)
        seed = SeedView("TR", ref, 0, picture, track=view) if present_track else None
        looks[("TR", ref)] = _SeedLook(picture, view.album_art, tuple(view.genres), seed)
    for ref in wanted["GE"]:
        genre = genres.get(ref)
        if genre is None:
            looks[("GE", ref)] = _SeedLook(catalog.Picture(), None, (), None)
            continue
        shown = [views[t] for t in samples[ref] if t in views]
        art = shown[0].album_art if shown else None
        picture = catalog.Picture(art)
        looks[("GE", ref)] = _SeedLook(
            picture, art, (genre.name,), SeedView("GE", ref, 0, picture, genre=genre)
        )
    return looks


def seed_view(db: Session, kind: str, ref_id: int) -> SeedView | None:
    """A seed as spec §6.2 shows it; None when its artist, track or genre left the catalogue."""
    seed = _looks(db, kept.stamp(db), {(kind, ref_id)})[(kind, ref_id)].seed
    return None if seed is None else replace(seed, listener_count=listener_count(db, kind, ref_id))


def station_view(db: Session, station: Station) -> StationView:
    """Everything a station object shows."""
    return station_views(db, [station])[0]


def station_views(db: Session, listed: list[Station]) -> list[StationView]:
    """Everything the station objects of a list show: what their seeds show is kept under the
    catalogue stamp, and their listener counts are read in one statement per kind of seed."""
    if not listed:
        return []
    at = kept.stamp(db)
    refs: dict[str, set[int]] = {}
    for station in listed:
        if _plain(station) and station.initial_kind and station.initial_ref:
            refs.setdefault(station.initial_kind, set()).add(station.initial_ref)
    counts = {
        (kind, ref): count
        for kind, ids_ in refs.items()
        for ref, count in catalog.listener_counts(db, kind, sorted(ids_)).items()
    }
    looks = _looks(db, at, {(kind, ref) for kind, ids_ in refs.items() for ref in ids_})
    views = []
    for station in listed:
        kind, ref = station.initial_kind, station.initial_ref
        if not _plain(station):
            mosaic = catalog.Picture(mosaic=tuple(cover_hashes_of(db, station)))
            members = shuffle_member_ids(db, station.id) if station.is_shuffle else None
            views.append(StationView(station, mosaic, None, [], None, members))
        elif kind is None or ref is None:
            views.append(StationView(station, catalog.Picture(), None, [], None, None))
        else:
            look = looks[(kind, ref)]
            seed = look.seed
            if seed is not None:
                seed = replace(seed, listener_count=counts.get((kind, ref), 0))
            genres = list(look.genres)
            views.append(StationView(station, look.picture, look.artwork, genres, seed, None))
    return views


def _plain(station: Station) -> bool:
    return not (station.is_shuffle or station.is_thumbprint)


def feedback_views(db: Session, rows: list[Feedback]) -> list[FeedbackView]:
    """Thumbs with their tracks (thumbs of tracks gone from the catalogue are left out)."""
    views = {v.track.id: v for v in catalog.track_views(db, list({r.track_id for r in rows}))}
    names = station_names(db, {r.station_id for r in rows})
    return [
        FeedbackView(row, views[row.track_id], names.get(row.station_id, ""))
        for row in rows
        if row.track_id in views
    ]


# ---------------------------------------------------------------- use cases of station/*


def station_page(
    db: Session, listener_id: int, start: int, size: int
) -> tuple[int, list[StationView]]:
    """station/getStations: a page of the listener's stations, with the total."""
    total, rows = list_stations(db, listener_id, start, size)
    return total, station_views(db, rows)


def create(
    db: Session,
    settings: Settings,
    listener: Listener,
    station_code: str | None,
    pandora_id: str | None,
    music_id: str | None,
    name: str | None,
    now: datetime,
) -> StationView:
    """station/createStation: a station grown from the seed named, within the tier's station
    limit. The stationCode 'sh' + the shuffle station's id names the shuffle station itself (a
    client starts shuffle that way)."""
    if station_code is not None and station_code.startswith("sh"):
        shuffle = shuffle_station(db, listener.id)
        if (
            shuffle is None
            or station_code[2:] != str(shuffle.id)
            or pandora_id is not None
            or music_id is not None
        ):
            raise ApiError(
                ErrorCode.STATION_CODE_INVALID,
                f"{station_code[:80]!r} does not name your shuffle station",
            )
        return station_view(db, shuffle)
    seed = seed_from(station_code, pandora_id, music_id)
    station, _created = create_station(
        db, listener.id, seed, name, settings.tier(listener.tier).max_stations, now
    )
    return station_view(db, station)


def remove(db: Session, listener_id: int, station_id: str) -> None:
    """station/removeStation."""
    remove_station(db, get_station(db, listener_id, station_id))


def update(
    db: Session, listener_id: int, station_id: str, name: str | None, description: str | None
) -> StationView:
    """station/updateStation: rename or describe a station."""
    station = get_station(db, listener_id, station_id)
    update_station(station, name, description)
    db.flush()
    return station_view(db, station)


def details(db: Session, listener_id: int, station_id: str) -> StationDetails:
    """station/getStationDetails: a station with its seeds and how many thumbs it has."""
    station = get_station(db, listener_id, station_id)
    seeds = [seed_view(db, s.kind, s.ref_id) for s in seeds_of(db, station.id)]
    up, down = feedback_counts(db, station.id)
    return StationDetails(station_view(db, station), [s for s in seeds if s is not None], up, down)


def add_station_seed(
    db: Session,
    listener_id: int,
    station_id: str,
    pandora_id: str | None,
    music_id: str | None,
    now: datetime,
) -> SeedView:
    """station/addSeed: grow a station from one more artist, track or genre."""
    seed = seed_from(None, pandora_id, music_id)
    add_seed(db, get_station(db, listener_id, station_id), seed, now)
    db.flush()
    found = seed_view(db, seed.kind, seed.ref_id)
    assert found is not None
    return found


def delete_station_seed(
    db: Session, listener_id: int, station_id: str, pandora_id: str | None, music_id: str | None
) -> None:
    """station/deleteSeed."""
    seed = seed_from(None, pandora_id, music_id)
    delete_seed(db, get_station(db, listener_id, station_id), seed)


def feedback_page(
    db: Session,
    listener_id: int,
    station_id: str | None,
    positive: bool | None,
    start: int,
    size: int,
) -> tuple[int, list[FeedbackView]]:
    """The listener's thumbs, on one station or all of them, newest first, with the total."""
    station = get_station(db, listener_id, station_id).id if station_id is not None else None
    total, rows = list_feedback(db, listener_id, station, positive, start, size)
    return total, feedback_views(db, rows)


def shuffle_view(
    db: Session, listener_id: int, now: datetime, station_ids: list[str] | None = None
) -> StationView:
    """station/shuffle: the listener's shuffle station, created on first use; with station ids,
    it mixes those from now on."""
    if station_ids is not None:
        return station_view(db, set_shuffle(db, listener_id, station_ids, now))
    return station_view(db, ensure_shuffle(db, listener_id, now))


def update_shuffle(
    db: Session, listener_id: int, station_ids: list[str], now: datetime
) -> StationView:
    """station/updateShuffleStation: choose the stations shuffle mixes."""
    return station_view(db, set_shuffle(db, listener_id, station_ids, now))


def thumbprint(db: Session, settings: Settings, listener: Listener, now: datetime) -> StationView:
    """station/createThumbprintStation, within the tier's station limit."""
    station = create_thumbprint(db, listener.id, settings.tier(listener.tier).max_stations, now)
    return station_view(db, station)
