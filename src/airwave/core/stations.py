"""Stations of a listener: creation from seeds, listing, seeds, shuffle, Thumbprint Radio and feedback."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Feedback, ShuffleMember, Station, StationSeed, TrackGenre


_COUNT = select(func.count(Station.id)).where(Station.listener_id == bindparam("listener_id"))


def count_stations(db: Session, listener_id: int) -> int:
    return db.scalar(_COUNT, {"listener_id": listener_id}) or 0


def list_stations(db: Session, listener_id: int, start: int, size: int) -> tuple[int, list[Station]]:
    """Most recently played first, then never-played ones by creation time, newest first."""
    total = count_stations(db, listener_id)
    if total == 0 or start >= total:
        return total, []
    rows = db.scalars(
        select(Station)
        .where(Station.listener_id == listener_id)
        .order_by(
            Station.last_played_at.is_(None),
            Station.last_played_at.desc(),
            Station.created_at.desc(),
            Station.id.desc(),
        )
        .offset(start)
        .limit(size)
    )
    return total, list(rows)


def get_station(db: Session, listener_id: int, station_id: str) -> Station:
    """The listener's station; STATION_DOES_NOT_EXIST or USER_NOT_AUTHORIZED otherwise."""
    ref = ids.parse(station_id) if station_id.startswith("ST:") else None
    number = ref.id if ref and ref.kind == "station" else ids.parse_number(station_id)
    station = db.get(Station, number) if number is not None else None
    if station is None:
        raise ApiError(ErrorCode.STATION_DOES_NOT_EXIST, f"no station {station_id[:40]!r}")
    if station.listener_id != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, f"station {station_id[:40]!r} belongs to another listener")
    return station


def find_by_name(db: Session, listener_id: int, key_words: list[str], limit: int) -> list[Station]:
    """The listener's stations whose name contains every word (a listener has at most a few hundred)."""
    from airwave.library.names import search_key

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


def seed_from(station_code: str | None = None, pandora_id: str | None = None, music_id: str | None = None) -> SeedRef:
    """The seed a createStation/addSeed request names; STATION_CODE_INVALID when it names nothing seedable."""
    given = [v for v in (station_code, pandora_id, music_id) if v is not None]
    if len(given) != 1:
        raise ApiError(ErrorCode.INVALID_REQUEST, "give exactly one of stationCode, pandoraId or musicId")
    value = given[0]
    ref = ids.parse_station_code(value) if station_code is not None else ids.parse(value)
    if ref is None or ref.kind not in SEED_KINDS:
        raise ApiError(ErrorCode.STATION_CODE_INVALID, f"{value[:80]!r} does not name an artist, track or genre")
    return SeedRef(SEED_KINDS[ref.kind], ref.id)


def seed_name(db: Session, seed: SeedRef) -> str:
    """The default station name for a seed; STATION_CODE_INVALID when the object does not exist."""
    from airwave.core import catalog

    try:
        if seed.kind == "AR":
            return f"{catalog.artist(db, seed.ref_id).name} Radio"
        if seed.kind == "TR":
            return f"{catalog.track(db, seed.ref_id).title} Radio"
        genre = catalog.genre(db, seed.ref_id)
        if not db.scalar(select(func.count()).select_from(TrackGenre).where(TrackGenre.genre_id == genre.id)):
            raise ApiError(ErrorCode.NOT_FOUND, "empty genre")
        return f"{genre.name} Radio"
    except ApiError as exc:
        if exc.error is ErrorCode.NOT_FOUND:
            raise ApiError(ErrorCode.STATION_CODE_INVALID, f"{seed.music_id} is not in the catalogue") from None
        raise


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ApiError(ErrorCode.INVALID_REQUEST, "a station name cannot be blank")
    if len(name) > MAX_NAME:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"station names are at most {MAX_NAME} characters")
    return name


def regular_count(db: Session, listener_id: int) -> int:
    """Stations that count towards the tier's limit (the shuffle station does not)."""
    return db.scalar(select(func.count(Station.id)).where(Station.listener_id == listener_id,
                                                          Station.is_shuffle.is_(False))) or 0


def create_station(db: Session, listener_id: int, seed: SeedRef, name: str | None, max_stations: int,
                   now: datetime) -> tuple[Station, bool]:
    """A new station grown from one seed, or the listener's existing station for that seed (created=False)."""
    default = seed_name(db, seed)
    existing = db.scalar(select(Station).where(Station.listener_id == listener_id, Station.initial_kind == seed.kind,
                                               Station.initial_ref == seed.ref_id).order_by(Station.id).limit(1))
    if existing is not None:
        return existing, False
    if regular_count(db, listener_id) >= max_stations:
        raise ApiError(ErrorCode.MAX_STATIONS_REACHED, f"your plan allows {max_stations} stations")
    shuffle = shuffle_station(db, listener_id)
    follows_all = shuffle is not None and set(shuffle_member_ids(db, shuffle.id)) == {
        s.id for s in db.scalars(select(Station).where(Station.listener_id == listener_id,
                                                       Station.is_shuffle.is_(False)))}
    station = Station(listener_id=listener_id, name=_clean_name(name) if name else default[:MAX_NAME],
                      description="", created_at=now, total_play_time=0, is_shuffle=False, is_thumbprint=False,
                      initial_kind=seed.kind, initial_ref=seed.ref_id)
    db.add(station)
    db.flush()
    db.add(StationSeed(station_id=station.id, kind=seed.kind, ref_id=seed.ref_id, created_at=now))
    if follows_all and shuffle is not None:
        db.add(ShuffleMember(shuffle_id=shuffle.id, station_id=station.id))
    db.flush()
    return station, True


def lock_station(db: Session, listener_id: int, station_id: str) -> Station:
    """get_station inside a write transaction, holding the row against concurrent fragments (PostgreSQL)."""
    station = get_station(db, listener_id, station_id)
    if db.get_bind().dialect.name != "sqlite":  # SQLite writers already hold the database lock
        db.refresh(station, with_for_update=True)
    return station


def update_station(station: Station, name: str | None, description: str | None) -> None:
    if station.is_shuffle and (name is not None or description is not None):
        raise ApiError(ErrorCode.CALL_NOT_ALLOWED, "the shuffle station cannot be renamed")
    if name is not None:
        station.name = _clean_name(name)
    if description is not None:
        station.description = description.strip()


def seeds_of(db: Session, station_id: int) -> list[StationSeed]:
    return list(db.scalars(select(StationSeed).where(StationSeed.station_id == station_id)
                           .order_by(StationSeed.created_at, StationSeed.id)))


def add_seed(db: Session, station: Station, seed: SeedRef, now: datetime) -> StationSeed:
    if station.is_shuffle or station.is_thumbprint:
        raise ApiError(ErrorCode.CALL_NOT_ALLOWED, "seeds cannot be added to shuffle or Thumbprint Radio")
    seed_name(db, seed)
    found = db.scalar(select(StationSeed).where(StationSeed.station_id == station.id, StationSeed.kind == seed.kind,
                                                StationSeed.ref_id == seed.ref_id))
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
    return db.scalar(select(Station).where(Station.listener_id == listener_id, Station.is_shuffle.is_(True))
                     .order_by(Station.id).limit(1))


def shuffle_member_ids(db: Session, shuffle_id: int) -> list[int]:
    return list(db.scalars(select(ShuffleMember.station_id).where(ShuffleMember.shuffle_id == shuffle_id)
                           .order_by(ShuffleMember.station_id)))


def ensure_shuffle(db: Session, listener_id: int, now: datetime) -> Station:
    """The listener's shuffle station, created on first use mixing all their stations."""
    station = shuffle_station(db, listener_id)
    if station is not None:
        return station
    station = Station(listener_id=listener_id, name="Shuffle", description="", created_at=now, total_play_time=0,
                      is_shuffle=True, is_thumbprint=False)
    db.add(station)
    db.flush()
    for other in db.scalars(select(Station.id).where(Station.listener_id == listener_id,
                                                     Station.is_shuffle.is_(False))):
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
    return db.scalar(select(func.count(func.distinct(Feedback.track_id)))
                     .where(Feedback.listener_id == listener_id, Feedback.is_positive.is_(True))) or 0


def create_thumbprint(db: Session, listener_id: int, max_stations: int, now: datetime) -> Station:
    existing = db.scalar(select(Station).where(Station.listener_id == listener_id, Station.is_thumbprint.is_(True))
                         .limit(1))
    if existing is not None:
        return existing
    have = thumbs_up_count(db, listener_id)
    if have < THUMBPRINT_MINIMUM:
        raise ApiError(ErrorCode.THUMBPRINT_RADIO_NOT_ELIGIBLE,
                       f"Thumbprint Radio needs {THUMBPRINT_MINIMUM} thumbs-up; you have {have}")
    if regular_count(db, listener_id) >= max_stations:
        raise ApiError(ErrorCode.MAX_STATIONS_REACHED, f"your plan allows {max_stations} stations")
    station = Station(listener_id=listener_id, name="Thumbprint Radio", description="", created_at=now,
                      total_play_time=0, is_shuffle=False, is_thumbprint=True)
    db.add(station)
    db.flush()
    return station


# ---------------------------------------------------------------- feedback

def feedback_counts(db: Session, station_id: int) -> tuple[int, int]:
    rows = dict(db.execute(select(Feedback.is_positive, func.count()).where(Feedback.station_id == station_id)
                           .group_by(Feedback.is_positive)).all())
    return rows.get(True, 0), rows.get(False, 0)


def set_feedback(db: Session, listener_id: int, station_id: int, track_id: int, positive: bool,
                 now: datetime) -> Feedback:
    """Thumb a track on a station; a second thumb replaces the first."""
    row = db.scalar(select(Feedback).where(Feedback.station_id == station_id, Feedback.track_id == track_id))
    if row is None:
        row = Feedback(listener_id=listener_id, station_id=station_id, track_id=track_id, is_positive=positive,
                       created_at=now)
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


def list_feedback(db: Session, listener_id: int, station_id: int | None, positive: bool | None, start: int,
                  size: int) -> tuple[int, list[Feedback]]:
    """Newest first."""
    where = [Feedback.listener_id == listener_id]
    if station_id is not None:
        where.append(Feedback.station_id == station_id)
    if positive is not None:
        where.append(Feedback.is_positive.is_(positive))
    total = db.scalar(select(func.count(Feedback.id)).where(*where)) or 0
    rows = db.scalars(select(Feedback).where(*where).order_by(Feedback.created_at.desc(), Feedback.id.desc())
                      .offset(start).limit(size))
    return total, list(rows)


def feedback_for(db: Session, station_id: int, track_id: int) -> Feedback:
    row = db.scalar(select(Feedback).where(Feedback.station_id == station_id, Feedback.track_id == track_id))
    if row is None:
        raise ApiError(ErrorCode.NOT_FOUND, "that track has no feedback on this station")
    return row


def station_names(db: Session, station_ids: set[int]) -> dict[int, str]:
    if not station_ids:
        return {}
    return dict(db.execute(select(Station.id, Station.name).where(Station.id.in_(station_ids))).all())


def listener_count(db: Session, kind: str, ref_id: int) -> int:
    """Listeners with a station seeded by this artist, track or genre."""
    return db.scalar(select(func.count(func.distinct(Station.listener_id))).join(
        StationSeed, StationSeed.station_id == Station.id).where(StationSeed.kind == kind,
                                                                 StationSeed.ref_id == ref_id)) or 0


def cover_hashes_of(db: Session, station: Station, limit: int = 4) -> list[str]:
    """Album covers for a shuffle or Thumbprint station's mosaic: its stations' or thumbs-up tracks' albums."""
    from airwave.store.models import Album, Artwork, Track

    if station.is_shuffle:
        members = select(ShuffleMember.station_id).where(ShuffleMember.shuffle_id == station.id)
        tracks = select(Track.id).join(StationSeed, (StationSeed.kind == "TR") & (StationSeed.ref_id == Track.id))
        artist_tracks = select(Track.album_id).join(
            StationSeed, (StationSeed.kind == "AR") & (StationSeed.ref_id == Track.artist_id)
        ).where(StationSeed.station_id.in_(members))
        album_ids = list(db.scalars(artist_tracks.limit(200)))
        album_ids += list(db.scalars(select(Track.album_id).where(Track.id.in_(
            tracks.where(StationSeed.station_id.in_(members)))).limit(50)))
    else:
        album_ids = list(db.scalars(select(Track.album_id).join(Feedback, Feedback.track_id == Track.id).where(
            Feedback.listener_id == station.listener_id, Feedback.is_positive.is_(True))
            .order_by(Feedback.created_at.desc()).limit(200)))
    hashes: list[str] = []
    for album_id in dict.fromkeys(album_ids):
        found = db.scalar(select(Artwork.content_hash).join(Album, Album.art_id == Artwork.id)
                          .where(Album.id == album_id))
        if found and found not in hashes:
            hashes.append(found)
        if len(hashes) == limit:
            break
    return hashes
