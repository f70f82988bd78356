"""The music catalogue as listeners see it: lookups, discographies, similar artists, genres,
lyrics."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.core.catalog import kept, similar
from airwave.errors import ApiError, ErrorCode
from airwave.library import names
from airwave.store.models import (
    Album,
    Artist,
    Artwork,
    Genre,
    Station,
    StationSeed,
    Track,
    TrackGenre,
    TrackProfile,
)
from airwave.store.prepared import Prepared
from airwave.store.sql import among

PRESENT = Track.missing_since.is_(None)


@dataclass
class TrackView:
    track: Track
    artist: Artist
    album: Album
    album_artist: Artist
    album_art: Artwork | None
    genres: list[str]


@dataclass(frozen=True)
class Picture:
    """One artwork, or (when there is none) a mosaic of album covers named by their content
    hashes."""

    artwork: Artwork | None = None
    mosaic: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArtistView:
    """An artist with the picture it is shown with and how many listeners have a station seeded
    by it."""

    artist: Artist
    picture: Picture
    listener_count: int


def resolve(token: str, *expected: ids.Kind) -> ids.Ref:
    """Parse a musicId/pandoraId/seoToken naming one of the expected kinds."""
    ref = ids.parse(token or "")
    if ref is None:
        raise ApiError(
            ErrorCode.NOT_FOUND, f"{token[:80]!r} is not a musicId, pandoraId or seoToken"
        )
    if expected and ref.kind not in expected:
        raise ApiError(
            ErrorCode.INVALID_PANDORA_TYPE,
            f"{token[:80]!r} names a {ref.kind}, not a {' or '.join(expected)}",
        )
    return ref


def _both(kind: ids.Kind, number: int) -> str:
    """An id as clients of either kind give it: musicId and pandoraId."""
    return f"{ids.music_id(kind, number)} ({ids.pandora_id(kind, number)})"


def artist(db: Session, artist_id: int) -> Artist:
    row = db.get(Artist, artist_id)
    # two index lookups, not one OR over a join (which plans as a scan of every track)
    has_tracks = row is not None and (
        db.scalar(select(Track.id).where(Track.artist_id == artist_id, PRESENT).limit(1))
        is not None
        or db.scalar(
            select(Track.id)
            .join(Album, Album.id == Track.album_id)
            .where(Album.artist_id == artist_id, PRESENT)
            .limit(1)
        )
        is not None
    )
    if not has_tracks:
        raise ApiError(ErrorCode.NOT_FOUND, f"no artist {_both('artist', artist_id)}")
    return row  # type: ignore[return-value]


def album(db: Session, album_id: int) -> Album:
    row = db.get(Album, album_id)
    if row is None or not db.scalar(
        select(func.count(Track.id)).where(Track.album_id == album_id, PRESENT)
    ):
        raise ApiError(ErrorCode.NOT_FOUND, f"no album {_both('album', album_id)}")
    return row


def track(db: Session, track_id: int) -> Track:
    row = db.get(Track, track_id)
    if row is None or row.missing_since is not None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no track {_both('track', track_id)}")
    return row


def art_of(db: Session, art_id: int | None) -> Artwork | None:
    return db.get(Artwork, art_id) if art_id else None


def artwork_by_hash(db: Session, content_hash: str) -> Artwork | None:
    return db.scalar(select(Artwork).where(Artwork.content_hash == content_hash))


def artist_picture(db: Session, artist_row: Artist) -> Picture:
    """The artist's own picture, else a mosaic of their album covers."""
    own = art_of(db, artist_row.art_id)
    return Picture(own) if own else Picture(mosaic=tuple(cover_hashes(db, artist_row.id)))


def artist_pictures(db: Session, artists: list[Artist]) -> dict[int, Picture]:
    """As artist_picture for each of these artists, in two statements whatever their number:
    their own pictures, then the others' album covers."""
    art_ids = {a.art_id for a in artists if a.art_id}
    own = (
        {art.id: art for art in db.scalars(select(Artwork).where(among(db, Artwork.id, art_ids)))}
        if art_ids
        else {}
    )
    bare = [a.id for a in artists if not (a.art_id and a.art_id in own)]
    covers: dict[int, list[str]] = {}
    if bare:
        place = (
            func.row_number()
            .over(
                partition_by=Album.artist_id,
                order_by=(Album.year.desc().nulls_last(), Album.id),
            )
            .label("place")
        )
        ranked = (
            select(Album.artist_id, Artwork.content_hash, place)
            .join(Album, Album.art_id == Artwork.id)
            .where(among(db, Album.artist_id, bare))
            .subquery()
        )
        for artist_id, content_hash in db.execute(
            select(ranked.c.artist_id, ranked.c.content_hash)
            .where(ranked.c.place <= MOSAIC_COVERS)
            .order_by(ranked.c.artist_id, ranked.c.place)
        ):
            covers.setdefault(artist_id, []).append(content_hash)
    return {
        a.id: Picture(own[a.art_id])
        if a.art_id and a.art_id in own
        else Picture(mosaic=tuple(covers.get(a.id, ())))
        for a in artists
    }


def artist_views(db: Session, artist_ids: list[int]) -> list[ArtistView]:
    """Artists with their pictures, in the order given (ids no longer in the catalogue are left
    out)."""
    rows = {a.id: a for a in db.scalars(select(Artist).where(among(db, Artist.id, artist_ids)))}
    counts = listener_counts(db, "AR", list(rows))
    pictures = artist_pictures(db, list(rows.values()))
    return [ArtistView(rows[a], pictures[a], counts.get(a, 0)) for a in artist_ids if a in rows]


def artist_view(db: Session, artist_row: Artist) -> ArtistView:
    return ArtistView(
        artist_row,
        artist_picture(db, artist_row),
        listener_counts(db, "AR", [artist_row.id]).get(artist_row.id, 0),
    )


def listeners_of_any(db: Session, kind: str, ref_ids: list[int]) -> int:
    """Listeners with a station seeded by any of these artists, tracks or genres."""
    if not ref_ids:
        return 0
    return (
        db.scalar(
            select(func.count(func.distinct(Station.listener_id)))
            .join(StationSeed, StationSeed.station_id == Station.id)
            .where(StationSeed.kind == kind, StationSeed.ref_id.in_(ref_ids))
        )
        or 0
    )


def listeners_seeded_by(kind: str, ref_id: Any) -> Any:  # noqa: ANN401  # SQL expressions
    """Listeners with a station seeded by the artist, track or genre `ref_id` names (a column of
    the enclosing query): a scalar subquery, one index lookup per row."""
    return (
        select(func.count(func.distinct(Station.listener_id)))
        .join(StationSeed, StationSeed.station_id == Station.id)
        .where(StationSeed.kind == kind, StationSeed.ref_id == ref_id)
        .scalar_subquery()
    )


_SEEDS = StationSeed.__table__.c
_STATIONS = Station.__table__.c
_LISTENER_COUNTS = Prepared(  # every station list, artist and genre list
    select(_SEEDS.ref_id, func.count(func.distinct(_STATIONS.listener_id)))
    .join_from(StationSeed.__table__, Station.__table__, _SEEDS.station_id == _STATIONS.id)
    .where(_SEEDS.kind == bindparam("kind"), _SEEDS.ref_id.in_(bindparam("ids", expanding=True)))
    .group_by(_SEEDS.ref_id)
)


def listener_counts(db: Session, kind: str, ref_ids: list[int]) -> dict[int, int]:
    """Listeners with a station seeded by each of these artists, tracks or genres (kind AR, TR or
    GE); ids no station is seeded by are left out."""
    if not ref_ids:
        return {}
    return dict(_LISTENER_COUNTS.all(db, kind=kind, ids=sorted(set(ref_ids))))


def gains(db: Session, tracks: list[Track]) -> dict[int, float | None]:
    """Each track's gain in dB: its ReplayGain tag, else the measured loudness of its sound
    profile."""
    measured = (
        dict(
            db.execute(
                select(TrackProfile.track_id, TrackProfile.gain_db).where(
                    TrackProfile.track_id.in_([t.id for t in tracks])
                )
            ).all()
        )
        if tracks
        else {}
    )
    return {
        t.id: t.rg_track_gain if t.rg_track_gain is not None else measured.get(t.id) for t in tracks
    }


def album_peak(db: Session, album_id: int) -> float | None:
    """The album's ReplayGain peak (full scale 1.0): the highest of its tracks' peak tags, known
    only when every present track of the album has one."""
    highest, untagged = db.execute(
        select(func.max(Track.rg_track_peak), func.count() - func.count(Track.rg_track_peak)).where(
            Track.album_id == album_id, PRESENT
        )
    ).one()
    return float(highest) if highest is not None and not untagged else None


def track_views(db: Session, track_ids: list[int]) -> list[TrackView]:
    """Tracks with everything a track object shows, in the order given, in four queries."""
    if not track_ids:
        return []
    tracks = {t.id: t for t in db.scalars(select(Track).where(Track.id.in_(track_ids)))}
    albums = {
        a.id: a
        for a in db.scalars(
            select(Album).where(Album.id.in_({t.album_id for t in tracks.values()}))
        )
    }
    artist_ids = {t.artist_id for t in tracks.values()} | {a.artist_id for a in albums.values()}
    artists = {a.id: a for a in db.scalars(select(Artist).where(Artist.id.in_(artist_ids)))}
    art_ids = {a.art_id for a in albums.values() if a.art_id}
    arts = (
        {a.id: a for a in db.scalars(select(Artwork).where(Artwork.id.in_(art_ids)))}
        if art_ids
        else {}
    )
    genres: dict[int, list[str]] = {}
    for track_id, name in db.execute(
        select(TrackGenre.track_id, Genre.name)
        .join(Genre, Genre.id == TrackGenre.genre_id)
        .where(TrackGenre.track_id.in_(list(tracks)))
        .order_by(TrackGenre.track_id, TrackGenre.position)
    ):
        genres.setdefault(track_id, []).append(name)
    views = []
    for track_id in track_ids:
        t = tracks.get(track_id)
        if t is None:
            continue
        al = albums[t.album_id]
        views.append(
            TrackView(
                t,
                artists[t.artist_id],
                al,
                artists[al.artist_id],
                arts.get(al.art_id or -1),
                genres.get(track_id, []),
            )
        )
    return views


def discography(db: Session, artist_id: int) -> list[tuple[Album, Artwork | None, int]]:
    """Albums by the artist (as album artist), newest first, with art and present track count."""
    rows = db.execute(
        select(Album, func.count(Track.id))
        .join(Track, Track.album_id == Album.id)
        .where(Album.artist_id == artist_id, PRESENT)
        .group_by(Album.id)
        .order_by(Album.year.desc().nulls_last(), Album.title)
    ).all()
    arts = {
        a.id: a
        for a in db.scalars(
            select(Artwork).where(Artwork.id.in_([al.art_id for al, _ in rows if al.art_id]))
        )
    }
    return [(al, arts.get(al.art_id or -1), count) for al, count in rows]


def appears_on(db: Session, artist_id: int) -> list[Album]:
    """Albums of other album artists (compilations) with a track by this artist."""
    return list(
        db.scalars(
            select(Album)
            .join(Track, Track.album_id == Album.id)
            .where(Track.artist_id == artist_id, Album.artist_id != artist_id, PRESENT)
            .distinct()
        )
    )


def album_tracks(db: Session, album_id: int) -> list[int]:
    return list(
        db.scalars(
            select(Track.id)
            .where(Track.album_id == album_id, PRESENT)
            .order_by(Track.disc_no.nulls_first(), Track.track_no.nulls_last(), Track.title)
        )
    )


def artists_genres(db: Session, artist_ids: list[int]) -> dict[int, Counter[int]]:
    """artist_genres of each of these artists, in one statement."""
    found: dict[int, Counter[int]] = {a: Counter() for a in artist_ids}
    if not artist_ids:
        return found
    for artist_id, genre_id, count in db.execute(
        select(Track.artist_id, TrackGenre.genre_id, func.count())
        .join(Track, Track.id == TrackGenre.track_id)
        .where(among(db, Track.artist_id, artist_ids), PRESENT)
        .group_by(Track.artist_id, TrackGenre.genre_id)
        .order_by(Track.artist_id, TrackGenre.genre_id)
    ):
        found[artist_id][genre_id] = count
    return found


def artist_genres(db: Session, artist_id: int) -> Counter[int]:
    return Counter(
        dict(
            db.execute(
                select(TrackGenre.genre_id, func.count())
                .join(Track, Track.id == TrackGenre.track_id)
                .where(Track.artist_id == artist_id, PRESENT)
                .group_by(TrackGenre.genre_id)
            ).all()
        )
    )


def similar_artists(db: Session, artist_id: int, limit: int = 10) -> list[Artist]:
    """Artists whose tracks share the most genres with this one's (weighted by track counts)."""
    mine = artist_genres(db, artist_id)
    if not mine:
        return []
    rows = db.execute(
        select(Track.artist_id, TrackGenre.genre_id, func.count())
        .join(TrackGenre, TrackGenre.track_id == Track.id)
        .where(TrackGenre.genre_id.in_(list(mine)), Track.artist_id != artist_id, PRESENT)
        .group_by(Track.artist_id, TrackGenre.genre_id)
    ).all()
    total = sum(mine.values())
    score: Counter[int] = Counter()
    for other, genre_id, count in rows:
        score[other] += min(count, mine[genre_id]) / total
    best = [a for a, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]
    found = {a.id: a for a in db.scalars(select(Artist).where(Artist.id.in_(best)))}
    return [found[a] for a in best if a in found]


def similar_tracks(db: Session, track_row: Track, limit: int = 10) -> list[int]:
    """Other tracks sharing the track's genres, closest in year, not by the same artist first."""
    genre_ids = list(
        db.scalars(select(TrackGenre.genre_id).where(TrackGenre.track_id == track_row.id))
    )
    if not genre_ids:
        return list(
            db.scalars(
                select(Track.id)
                .where(Track.artist_id == track_row.artist_id, Track.id != track_row.id, PRESENT)
                .limit(limit)
            )
        )
    shared = func.count(TrackGenre.genre_id)
    rows = db.execute(
        select(Track.id, Track.artist_id, Track.year, shared)
        .join(TrackGenre, TrackGenre.track_id == Track.id)
        .where(TrackGenre.genre_id.in_(genre_ids), Track.id != track_row.id, PRESENT)
        .group_by(Track.id, Track.artist_id, Track.year)
        .order_by(shared.desc(), Track.id)
        .limit(400)
    ).all()
    year = track_row.year or 0

    def rank(row) -> tuple:  # noqa: ANN001
        return (-row[3], row[1] == track_row.artist_id, abs((row[2] or year) - year), row[0])

    picked, per_artist = [], Counter()
    for row in sorted(rows, key=rank):
        if per_artist[row[1]] < 2:
            picked.append(row[0])
            per_artist[row[1]] += 1
        if len(picked) == limit:
            break
    return picked


def nearest_tracks(db: Session, track_row: Track, limit: int = 10) -> list[int]:
    """Neighbours in the similarity space; shared genres while the space is not built yet."""
    return similar.similar_tracks(db, track_row.id, limit) or similar_tracks(db, track_row, limit)


def nearest_artists(db: Session, artist_id: int, limit: int = 10) -> list[Artist]:
    """Neighbours in the similarity space; shared genres while the space is not built yet."""
    found = similar.similar_artists(db, artist_id, limit)
    if not found:
        return similar_artists(db, artist_id, limit)
    rows = {a.id: a for a in db.scalars(select(Artist).where(Artist.id.in_(found)))}
    return [rows[a] for a in found if a in rows]


def top_tracks(db: Session, artist_id: int, limit: int) -> list[int]:
    """The artist's present tracks most played across listeners (then in album order)."""
    from airwave.store.models import Spin

    plays = (
        select(Spin.track_id, func.count(Spin.id).label("n"))
        .where(Spin.artist_id == artist_id)
        .group_by(Spin.track_id)
        .subquery()
    )
    return list(
        db.scalars(
            select(Track.id)
            .outerjoin(plays, plays.c.track_id == Track.id)
            .where(Track.artist_id == artist_id, PRESENT)
            .order_by(
                func.coalesce(plays.c.n, 0).desc(),
                Track.album_id,
                Track.disc_no.nulls_first(),
                Track.track_no.nulls_last(),
                Track.id,
            )
            .limit(limit)
        )
    )


def artist_track_ids(db: Session, artist_id: int) -> list[int]:
    """Every present track of the artist, album by album in disc and track order."""
    return list(
        db.scalars(
            select(Track.id)
            .where(Track.artist_id == artist_id, PRESENT)
            .order_by(
                Track.album_id, Track.disc_no.nulls_first(), Track.track_no.nulls_last(), Track.id
            )
        )
    )


def track_count(db: Session, artist_id: int) -> int:
    return db.scalar(select(func.count(Track.id)).where(Track.artist_id == artist_id, PRESENT)) or 0


def present_artists(db: Session, artist_ids: list[int]) -> set[int]:
    """Those of these artists that `artist` finds: with a present track of their own or on one
    of their albums, in two statements."""
    if not artist_ids:
        return set()
    on_albums = db.scalars(
        select(Album.artist_id)
        .join(Track, Track.album_id == Album.id)
        .where(among(db, Album.artist_id, artist_ids), PRESENT)
        .distinct()
    )
    return artists_with_tracks(db, artist_ids) | set(on_albums)


def artists_with_tracks(db: Session, artist_ids: list[int]) -> set[int]:
    """Those of these artists with a track in the catalogue, in one statement."""
    if not artist_ids:
        return set()
    return set(
        db.scalars(
            select(Track.artist_id)
            .where(among(db, Track.artist_id, artist_ids), PRESENT)
            .distinct()
        )
    )


# A genre's tracks are counted and probed from the genre index: its rows there, less those of
# missing tracks (few, found through the partial index of missing tracks). Joined with the present
# tracks, PostgreSQL read the whole of `tracks` for one genre (0.1 s at 1M tracks) and hashed both
# tables for the genres of a category or the playable genres (0.3-0.5 s). Counts are kept while the
# catalogue stamp holds: every genre's at once for browsing (0.1 s at 1M), one genre's for a search
# result or a genre object.
_TG = TrackGenre.__table__.alias("tg")
_TG_TRACK = Track.__table__.alias("tg_track")
_GENRE_TRACKS = _TG.join(_TG_TRACK, _TG_TRACK.c.id == _TG.c.track_id)
_PLAYABLE = (
    select(1)
    .select_from(_GENRE_TRACKS)
    .where(_TG.c.genre_id == Genre.id, _TG_TRACK.c.missing_since.is_(None))
    .exists()
)
_PLAYABLE_GENRE_IDS = select(Genre.id).where(_PLAYABLE).order_by(Genre.id)
_GENRE_ROWS = select(func.count()).select_from(_TG).where(_TG.c.genre_id == bindparam("genre_id"))
_GENRE_MISSING = (
    select(func.count())
    .select_from(_GENRE_TRACKS)
    .where(_TG.c.genre_id == bindparam("genre_id"), _TG_TRACK.c.missing_since.is_not(None))
)
_GENRE_COUNT = select(_GENRE_ROWS.scalar_subquery() - _GENRE_MISSING.scalar_subquery())
_ALL_ROWS = select(_TG.c.genre_id, func.count()).group_by(_TG.c.genre_id)
_ALL_MISSING = (
    select(_TG.c.genre_id, func.count())
    .select_from(_GENRE_TRACKS)
    .where(_TG_TRACK.c.missing_since.is_not(None))
    .group_by(_TG.c.genre_id)
)
_GENRE_CATEGORIES = select(Genre.id, Genre.category)
_GENRE_COUNTS: kept.Kept[int, int] = kept.Kept(limit=50_000)
_ALL_GENRE_COUNTS: kept.Kept[None, dict[int, int]] = kept.Kept(limit=1)


def genre_counts(db: Session) -> dict[int, int]:
    """Every genre with present tracks: how many."""

    def count() -> dict[int, int]:
        conn = db.connection()
        counts = dict(conn.execute(_ALL_ROWS).all())
        for genre_id, missing in conn.execute(_ALL_MISSING):
            counts[genre_id] -= missing
        return {genre_id: n for genre_id, n in counts.items() if n > 0}

    return _ALL_GENRE_COUNTS.get(kept.stamp(db), None, count)


def genre_track_count(db: Session, genre_id: int) -> int:
    """The genre's present tracks."""
    return genre_track_counts(db, [genre_id])[genre_id]


def genre_track_counts(db: Session, genre_ids: list[int]) -> dict[int, int]:
    """Each of these genres' present tracks (the catalogue stamp read once for all of them)."""
    at = kept.stamp(db)
    every = _ALL_GENRE_COUNTS.at(at)
    if every is not None and None in every:
        return {g: every[None].get(g, 0) for g in genre_ids}

    def count(genre_id: int) -> int:
        return int(db.connection().execute(_GENRE_COUNT, {"genre_id": genre_id}).scalar() or 0)

    return {g: _GENRE_COUNTS.get(at, g, lambda g=g: count(g)) for g in genre_ids}


def genre_categories(db: Session) -> list[str]:
    """Categories with playable genres, by name."""
    counts = genre_counts(db)
    return sorted(
        {category for genre_id, category in db.execute(_GENRE_CATEGORIES) if genre_id in counts}
    )


def category_by_token(db: Session, token: str) -> str:
    for name in genre_categories(db):
        if ids.slug(name) == token or name == token:
            return name
    raise ApiError(ErrorCode.NOT_FOUND, f"no genre category {token[:80]!r}")


def genres_in(db: Session, category: str) -> list[tuple[Genre, int]]:
    """The category's genres with present tracks and how many, the biggest first."""
    counts = genre_counts(db)
    return sorted(
        (
            (g, counts[g.id])
            for g in db.scalars(select(Genre).where(Genre.category == category))
            if g.id in counts
        ),
        key=lambda pair: (-pair[1], pair[0].name),
    )


def genre(db: Session, genre_id: int) -> Genre:
    row = db.get(Genre, genre_id)
    if row is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no genre G{genre_id}")
    return row


def playable_genre_ids(db: Session) -> list[int]:
    """Genres with present tracks, in id order (each probed for one)."""
    return list(db.connection().execute(_PLAYABLE_GENRE_IDS).scalars())


def genre_sample(db: Session, genre_id: int, limit: int = 5) -> list[int]:
    """A spread of a genre's tracks: at most one per artist first."""
    # the genre's first tracks from its index, then the present ones among them (as a join,
    # PostgreSQL walked the tracks' primary key from the first track: 5-8 ms at 1M tracks)
    first = (
        select(TrackGenre.track_id)
        .where(TrackGenre.genre_id == genre_id)
        .order_by(TrackGenre.track_id)
        .limit(500)
    )
    rows = db.execute(
        select(Track.id, Track.artist_id).where(Track.id.in_(first), PRESENT).order_by(Track.id)
    ).all()
    if not rows:  # the genre's first 500 tracks are all missing: its present ones, wherever
        rows = db.execute(
            select(Track.id, Track.artist_id)
            .join(TrackGenre, TrackGenre.track_id == Track.id)
            .where(TrackGenre.genre_id == genre_id, PRESENT)
            .order_by(Track.id)
            .limit(500)
        ).all()
    picked, artists = [], set()
    for track_id, artist_id in rows:
        if artist_id not in artists:
            picked.append(track_id)
            artists.add(artist_id)
        if len(picked) == limit:
            return picked
    return (picked + [t for t, _ in rows if t not in picked])[:limit]


MOSAIC_COVERS = 4  # album covers in the mosaic of an artist without a picture


def cover_hashes(db: Session, artist_id: int, limit: int = MOSAIC_COVERS) -> list[str]:
    """Content hashes of the artist's album covers (for the mosaic of an artist without a
    picture)."""
    return list(
        db.scalars(
            select(Artwork.content_hash)
            .join(Album, Album.art_id == Artwork.id)
            .where(Album.artist_id == artist_id)
            .order_by(Album.year.desc().nulls_last(), Album.id)
            .limit(limit)
        )
    )


# ------------------------------------------------------------------ lyrics

_LRC_TIME = re.compile(r"\[(\d{1,3}):(\d{2})(?:[.:](\d{1,3}))?\]")
_LRC_META = re.compile(r"^\[(ar|ti|al|au|by|length|offset|re|ve|la):.*\]$", re.IGNORECASE)


@dataclass
class Lyrics:
    lyric_id: str
    checksum: str
    lines: list[str]
    timed: list[tuple[float, str]]
    credits: str


def lyrics_of(track_row: Track) -> Lyrics | None:
    text = (track_row.lyrics or "").strip()
    if not text:
        return None
    lines, timed, credits = [], [], []
    for raw in text.splitlines():
        line = raw.strip()
        if _LRC_META.match(line):
            if line[1:3].lower() in ("au", "by"):
                credits.append(line[4:-1].strip())
            continue
        stamps = _LRC_TIME.findall(line)
        words = _LRC_TIME.sub("", line).strip()
        for minutes, seconds, fraction in stamps:
            at = (
                int(minutes) * 60
                + int(seconds)
                + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)
            )
            timed.append((round(at, 3), words))
        lines.append(words)
    timed.sort()
    checksum = hashlib.sha1(text.encode()).hexdigest()[:16]
    return Lyrics(f"LY{track_row.id}", checksum, lines, timed, "; ".join(c for c in credits if c))


def search_key(text: str) -> str:
    return names.search_key(text)
