"""What the station engine keeps of the catalogue between calls: each present track's artist,
album, explicit flag and length, an artist's first tracks, a genre's id bounds, a track's
neighbour list in the similarity index, and what a track object shows of a track. All of it is
valid while the catalogue stamp holds (core/catalog/kept.py): a fragment reads the stamp once
instead of running a statement per lookup."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from airwave.core.catalog import catalog, kept, space
from airwave.store.models import Album, Artist, Artwork, Genre, Track, TrackGenre
from airwave.store.prepared import Columns, Prepared
from airwave.store.sql import bounds

# a present track as the rules see it: (artist id, album id, explicit, seconds)
Meta = tuple[int, int, bool, float]

ARTIST_TRACKS = 400  # an artist seed's anchors are drawn from its first this many tracks
MOSAIC = 4  # covers in the mosaic of an artist without a picture (catalog.cover_hashes)

_TRACKS = Track.__table__.c
_TRACK_GENRES = TrackGenre.__table__.c
_IN_CHUNK = 900  # ids per IN list (SQLite's bound-parameter limit is far above)

# statements built once: building and hashing one costs more than running it
_META_ROWS = Prepared(
    select(
        _TRACKS.id, _TRACKS.artist_id, _TRACKS.album_id, _TRACKS.explicit, _TRACKS.duration
    ).where(_TRACKS.id.in_(bindparam("ids", expanding=True)), _TRACKS.missing_since.is_(None))
)
_ARTIST_TRACK_IDS = Prepared(
    select(_TRACKS.id)
    .where(_TRACKS.artist_id == bindparam("artist_id"), _TRACKS.missing_since.is_(None))
    .order_by(_TRACKS.id)
    .limit(ARTIST_TRACKS)
)
_GENRE_BOUNDS_ROW = Prepared(
    bounds(_TRACK_GENRES.track_id, _TRACK_GENRES.genre_id == bindparam("genre_id"))
)

# None: not a present track (never eligible)
_META: kept.Kept[int, Meta | None] = kept.Kept(limit=200_000)
_ARTIST_TRACKS: kept.Kept[int, tuple[int, ...]] = kept.Kept(limit=50_000)
_GENRE_BOUNDS: kept.Kept[int, tuple[int, int] | None] = kept.Kept(limit=50_000)


@dataclass(frozen=True)
class Shown:
    """What a track object shows of a track from the catalogue (no listener, no spin). Its rows
    are detached from any session: read-only."""

    view: catalog.TrackView
    artist_picture: catalog.Picture
    lyrics: catalog.Lyrics | None


_SHOWN: kept.Kept[int, Shown | None] = kept.Kept(limit=10_000)
# (neighbour ids, similarities), read only; None: the track has no list. About 1 KB each.
Neighbors = tuple[np.ndarray, np.ndarray]
_NEIGHBORS: kept.Kept[int, Neighbors | None] = kept.Kept(limit=16_384)
_PICTURES: kept.Kept[int, catalog.Picture] = kept.Kept(limit=50_000)  # by artist

_TRACK_COLUMNS = Columns(Track)
_ARTIST_COLUMNS = Columns(Artist)
_ALBUM_COLUMNS = Columns(Album)
_ARTWORK_COLUMNS = Columns(Artwork)
_ARTIST_T = Artist.__table__
_ALBUM_T = Album.__table__
_ALBUM_ARTIST_T = Artist.__table__.alias("album_artist")
_ALBUM_ART_T = Artwork.__table__.alias("album_art")
_ARTIST_ART_T = Artwork.__table__.alias("artist_art")
# a track with its artist, album, album artist, cover and the artist's own picture: plain
# columns, each table's in its own order, made into detached objects (no ORM loading)
_SHOWN_PARTS = (
    (_TRACK_COLUMNS, Track.__table__),
    (_ARTIST_COLUMNS, _ARTIST_T),
    (_ALBUM_COLUMNS, _ALBUM_T),
    (_ARTIST_COLUMNS, _ALBUM_ARTIST_T),
    (_ARTWORK_COLUMNS, _ALBUM_ART_T),
    (_ARTWORK_COLUMNS, _ARTIST_ART_T),
)
_SHOWN_ROWS = Prepared(
    select(*(column for _, table in _SHOWN_PARTS for column in table.columns))
    .select_from(Track.__table__)
    .join(_ARTIST_T, _ARTIST_T.c.id == _TRACKS.artist_id)
    .join(_ALBUM_T, _ALBUM_T.c.id == _TRACKS.album_id)
    .join(_ALBUM_ARTIST_T, _ALBUM_ARTIST_T.c.id == _ALBUM_T.c.artist_id)
    .outerjoin(_ALBUM_ART_T, _ALBUM_ART_T.c.id == _ALBUM_T.c.art_id)
    .outerjoin(_ARTIST_ART_T, _ARTIST_ART_T.c.id == _ARTIST_T.c.art_id)
    .where(_TRACKS.id.in_(bindparam("ids", expanding=True)))
)


def _shown_objects(row: Any) -> list[Any]:  # noqa: ANN401
    """A row of _SHOWN_ROWS as its six objects; None for an artwork the outer joins missed."""
    objects: list[Any] = []
    at = 0
    for columns, _ in _SHOWN_PARTS:
        values = row[at : at + columns.width]
        at += columns.width
        objects.append(None if values[0] is None else columns.detached(values))
    return objects


_GENRES = Genre.__table__.c
_GENRE_NAMES = Prepared(
    select(_TRACK_GENRES.track_id, _GENRES.name)
    .join(Genre.__table__, _GENRES.id == _TRACK_GENRES.genre_id)
    .where(_TRACK_GENRES.track_id.in_(bindparam("ids", expanding=True)))
    .order_by(_TRACK_GENRES.track_id, _TRACK_GENRES.position)
)
_ALBUMS = Album.__table__.c
_ARTWORK = Artwork.__table__.c
_RANKED_COVERS = (
    select(
        _ALBUMS.artist_id,
        _ARTWORK.content_hash,
        func.row_number()
        .over(
            partition_by=_ALBUMS.artist_id,
            order_by=(_ALBUMS.year.desc().nulls_last(), _ALBUMS.id),
        )
        .label("n"),
    )
    .join(Artwork.__table__, _ARTWORK.id == _ALBUMS.art_id)
    .where(_ALBUMS.artist_id.in_(bindparam("ids", expanding=True)))
    .subquery()
)
# the covers of an artist's mosaic as catalog.cover_hashes orders them, for several artists
_COVERS = Prepared(
    select(_RANKED_COVERS.c.artist_id, _RANKED_COVERS.c.content_hash)
    .where(_RANKED_COVERS.c.n <= MOSAIC)
    .order_by(_RANKED_COVERS.c.artist_id, _RANKED_COVERS.c.n)
)
_SIZE: kept.Kept[str, tuple[int, int, int]] = kept.Kept(limit=1)


Stamp = tuple[Hashable, int]  # kept.stamp()'s


class Unread:
    """Known's stamp not read yet."""


UNREAD = Unread()


class Known:
    """The catalogue as one call of the engine reads it, through what earlier calls kept."""

    def __init__(self, db: Session, stamp: Stamp | None | Unread = UNREAD) -> None:
        """`stamp`: the catalogue's stamp as an earlier read of this call took it (read before
        anything it reads here, as the stamp must be: see Kept.current); read now by default."""
        self.db = db
        if isinstance(stamp, Unread):
            stamp = kept.stamp(db)  # before any catalogue read (see Kept.current)
        self.stamp = stamp
        self._meta = _or_own(_META.at(stamp))
        self._artist_tracks = _or_own(_ARTIST_TRACKS.at(stamp))
        self._genre_bounds = _or_own(_GENRE_BOUNDS.at(stamp))
        self._shown = _or_own(_SHOWN.at(stamp))
        self._neighbors = _or_own(_NEIGHBORS.at(stamp))
        self._pictures = _or_own(_PICTURES.at(stamp))
        self._size = _or_own(_SIZE.at(stamp))

    def neighbors(self, track_ids: Iterable[int]) -> dict[int, Neighbors]:
        """The similarity index's neighbour lists of these tracks (those that have one). The
        arrays are shared with other calls: read only."""
        kept_lists = self._neighbors
        wanted = list(dict.fromkeys(track_ids))
        missing = [t for t in wanted if t not in kept_lists]
        if missing:
            found = space.neighbors_of(self.db, missing)
            for track_id in missing:
                pair = found.get(track_id)
                if pair is not None:
                    for array in pair:
                        array.flags.writeable = False
                kept_lists[track_id] = pair
        out: dict[int, Neighbors] = {}
        for track_id in wanted:
            pair = kept_lists.get(track_id)
            if pair is not None:
                out[track_id] = pair
        return out

    def library_size(self) -> tuple[int, int, int]:
        """Present tracks, artists and albums, each counted up to just past what the relaxed
        rules tell apart (101, 4, 3): bounded at any size."""
        found = self._size.get("size")
        if found is None:
            present = _TRACKS.missing_since.is_(None)

            def at_most(column: Any, limit: int) -> int:
                inner = select(column).where(present).distinct().limit(limit).subquery()
                return self.db.scalar(select(func.count()).select_from(inner)) or 0

            found = (
                at_most(_TRACKS.id, 101),
                at_most(_TRACKS.artist_id, 4),
                at_most(_TRACKS.album_id, 3),
            )
            self._size["size"] = found
        return found

    def meta(self, track_ids: Iterable[int]) -> dict[int, Meta | None]:
        """Each track's artist, album, explicit flag and length; None for a track not present."""
        wanted = list(dict.fromkeys(track_ids))
        known = self._meta
        missing = [t for t in wanted if t not in known]
        for start in range(0, len(missing), _IN_CHUNK):
            chunk = missing[start : start + _IN_CHUNK]
            rows = _META_ROWS.all(self.db, ids=chunk)
            found = {r[0]: (r[1], r[2], bool(r[3]), float(r[4] or 0.0)) for r in rows}
            for track_id in chunk:
                known[track_id] = found.get(track_id)
        return {t: known.get(t) for t in wanted}

    def artist_tracks(self, artist_id: int) -> tuple[int, ...]:
        """The artist's first ARTIST_TRACKS present tracks, by id."""
        found = self._artist_tracks.get(artist_id)
        if found is None:
            found = tuple(_ARTIST_TRACK_IDS.scalars(self.db, artist_id=artist_id))
            self._artist_tracks[artist_id] = found
        return found

    def genre_bounds(self, genre_id: int) -> tuple[int, int] | None:
        """The smallest and largest track id tagged with the genre (present or not); None when
        none is."""
        if genre_id in self._genre_bounds:
            return self._genre_bounds[genre_id]
        bounds = _GENRE_BOUNDS_ROW.first(self.db, genre_id=genre_id)
        found = None if bounds is None or bounds[0] is None else (int(bounds[0]), int(bounds[1]))
        self._genre_bounds[genre_id] = found
        return found

    def shown(self, track_ids: Iterable[int]) -> dict[int, Shown]:
        """What track objects show of these tracks (ids not in the catalogue are left out): for
        those not kept, three statements whatever their number."""
        wanted = list(dict.fromkeys(track_ids))
        known = self._shown
        missing = [t for t in wanted if t not in known]
        if missing:
            self._read_shown(missing)
        return {t: s for t in wanted if (s := known.get(t)) is not None}

    def _read_shown(self, track_ids: list[int]) -> None:
        db = self.db
        # detached from the start: neither this transaction's end nor a rollback expires what
        # other calls will read
        rows = [_shown_objects(row) for row in _SHOWN_ROWS.all(db, ids=track_ids)]
        genres: dict[int, list[str]] = {}
        for track_id, name in _GENRE_NAMES.all(db, ids=track_ids):
            genres.setdefault(track_id, []).append(name)
        pictures = self._pictures
        bare = {artist.id for _, artist, _, _, _, own in rows if own is None} - set(pictures)
        mosaics: dict[int, list[str]] = {}
        if bare:
            for artist_id, content_hash in _COVERS.all(db, ids=sorted(bare)):
                mosaics.setdefault(artist_id, []).append(content_hash)
        for track, artist, album, album_artist, album_art, own in rows:
            if artist.id not in pictures:
                pictures[artist.id] = (
                    catalog.Picture(own)
                    if own is not None
                    else catalog.Picture(mosaic=tuple(mosaics.get(artist.id, ())))
                )
            view = catalog.TrackView(
                track, artist, album, album_artist, album_art, genres.get(track.id, [])
            )
            self._shown[track.id] = Shown(view, pictures[artist.id], catalog.lyrics_of(track))
        for track_id in track_ids:
            self._shown.setdefault(track_id, None)


def _or_own(values: dict | None) -> dict:
    """A Kept's values, or (no stamp to keep them under) a dict for this call only."""
    return {} if values is None else values
