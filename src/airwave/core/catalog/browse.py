"""Browsing the library as folder-style apps do: album artists A-Z, albums with their counts,
album lists in several orders, genres with counts. Present tracks only."""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass

from sqlalchemy import Select, func, literal_column, or_, select
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.core.catalog import kept
from airwave.core.catalog.catalog import (
    PRESENT,
    art_of,
    artist_picture,
    genre_counts,
    genre_track_count,
)
from airwave.errors import ApiError, ErrorCode
from airwave.library import names
from airwave.store.models import (
    Album,
    Artist,
    Artwork,
    CollectionItem,
    Genre,
    Spin,
    Track,
    TrackGenre,
)
from airwave.store.sql import among, among_rows, bounds

ALBUM_ORDERS = (
    "random",
    "newest",
    "alphabeticalByName",
    "alphabeticalByArtist",
    "byYear",
    "byGenre",
    "starred",
    "frequent",
    "recent",
)


@dataclass(frozen=True)
class ArtistEntry:
    artist: Artist
    album_count: int


@dataclass(frozen=True)
class AlbumEntry:
    """An album with its album artist, cover, and what its present tracks add up to."""

    album: Album
    artist: Artist
    art: Artwork | None
    song_count: int
    duration: float
    genre: str | None


# an album with at least one present track (a probe of ix_tracks_present_album, migration 0015)
_HAS_PRESENT_TRACK = select(Track.id).where(Track.album_id == Album.id, PRESENT).exists()


# every album artist (Subsonic apps list them on start): ~40 ms to read at 100,000 tracks
_EVERY_ARTIST: kept.Kept[str, tuple[ArtistEntry, ...]] = kept.Kept(limit=1)


def album_artists(db: Session, artist_ids: list[int] | None = None) -> list[ArtistEntry]:
    """Every artist with at least one album of present tracks, by sort name (or those of
    `artist_ids`, in their order)."""
    # albums with a present track (one probe of a partial index each), counted per artist; for
    # given artists only theirs are counted, not the whole catalogue's
    counted = select(Album.artist_id, func.count(Album.id).label("albums")).where(
        _HAS_PRESENT_TRACK
    )
    if artist_ids is not None:
        counted = counted.where(Album.artist_id.in_(artist_ids))
    albums = counted.group_by(Album.artist_id).subquery()
    query = select(Artist, albums.c.albums).join(albums, albums.c.artist_id == Artist.id)
    if artist_ids is None:
        known = _EVERY_ARTIST.current(db)
        if known is not None and (every := known.get("every")) is not None:
            return list(every)
        rows = db.execute(query.order_by(func.lower(Artist.sort_name), Artist.id)).all()
        entries = [ArtistEntry(artist, count) for artist, count in rows]
        if known is not None:
            known["every"] = tuple(entries)
        return entries
    found = {a.id: ArtistEntry(a, n) for a, n in db.execute(query.where(Artist.id.in_(artist_ids)))}
    return [found[i] for i in artist_ids if i in found]


def albums(db: Session, album_ids: list[int]) -> list[AlbumEntry]:
    """The albums (those with present tracks), in the order given."""
    if not album_ids:
        return []
    rows = db.execute(
        select(Album, Artist, func.count(Track.id), func.coalesce(func.sum(Track.duration), 0))
        .join(Artist, Artist.id == Album.artist_id)
        .join(Track, Track.album_id == Album.id)
        .where(Album.id.in_(album_ids), PRESENT)
        .group_by(Album.id, Artist.id)
    ).all()
    art_ids = [album.art_id for album, *_ in rows if album.art_id]
    arts = (
        {a.id: a for a in db.scalars(select(Artwork).where(Artwork.id.in_(art_ids)))}
        if art_ids
        else {}
    )
    genres = _album_genres(db, [album.id for album, *_ in rows])
    found = {
        album.id: AlbumEntry(
            album, artist, arts.get(album.art_id or -1), count, float(total), genres.get(album.id)
        )
        for album, artist, count, total in rows
    }
    return [found[i] for i in album_ids if i in found]


def _album_genres(db: Session, album_ids: list[int]) -> dict[int, str]:
    """Each album's most common first genre of its tracks."""
    counts: dict[int, dict[str, int]] = {}
    for album_id, name in db.execute(
        select(Track.album_id, Genre.name)
        .join(TrackGenre, TrackGenre.track_id == Track.id)
        .join(Genre, Genre.id == TrackGenre.genre_id)
        .where(Track.album_id.in_(album_ids), TrackGenre.position == 0, PRESENT)
    ):
        tally = counts.setdefault(album_id, {})
        tally[name] = tally.get(name, 0) + 1
    return {a: max(tally, key=lambda n: (tally[n], n)) for a, tally in counts.items()}


def artist_album_ids(db: Session, artist_id: int) -> list[int]:
    """The artist's albums (as album artist) with present tracks, oldest first."""
    return list(
        db.scalars(
            select(Album.id)
            .join(Track, Track.album_id == Album.id)
            .where(Album.artist_id == artist_id, PRESENT)
            .group_by(Album.id)
            .order_by(Album.year.nulls_last(), func.lower(Album.title), Album.id)
        )
    )


def album_list(
    db: Session,
    order: str,
    *,
    size: int,
    offset: int,
    rng: random.Random | None = None,
    from_year: int | None = None,
    to_year: int | None = None,
    genre: str | None = None,
    listener_id: int | None = None,
) -> list[int]:
    """Album ids in one of ALBUM_ORDERS, a page of `size` from `offset`; `starred` (the
    listener's collection), `frequent` and `recent` (their play log) need `listener_id`."""
    if order not in ALBUM_ORDERS:
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            f"album list type {order[:40]!r} is not one of {', '.join(ALBUM_ORDERS)}",
        )
    if order in ("starred", "frequent", "recent"):
        if listener_id is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, f"{order} is a listener's own list")
        return _listener_albums(db, order, listener_id, size, offset)
    if order == "newest":
        return _newest_albums(db, size, offset)
    # albums with a present track; each test is one probe of a partial index (migration 0015),
    # so a page costs its own length, not a pass over every track of the catalogue
    query = select(Album.id).where(_HAS_PRESENT_TRACK)
    if order == "alphabeticalByName":
        # the title's merge key: case, accents and a leading article ignored ("The Wall" under W)
        query = query.order_by(Album.title_key, Album.id)
    elif order == "alphabeticalByArtist":
        query = query.join(Artist, Artist.id == Album.artist_id).order_by(
            func.lower(Artist.sort_name), Album.year, Album.title_key, Album.id
        )
    elif order == "byYear":
        if from_year is None or to_year is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, "byYear needs fromYear and toYear")
        low, high = sorted((from_year, to_year))
        query = query.where(Album.year.between(low, high))
        year = Album.year.desc() if from_year > to_year else Album.year
        query = query.order_by(year, Album.title_key, Album.id)
    elif order == "byGenre":
        if not genre:
            raise ApiError(ErrorCode.INVALID_REQUEST, "byGenre needs genre")
        genre_ids = genre_ids_named(db, genre)
        if not genre_ids:
            return []
        if _walk_albums(db, genre_ids, offset + size):
            # the first pages of a common genre on SQLite: albums in title order, each probed
            # through its tracks' own genre rows (`+ 0`: not the genre's index, which SQLite
            # would otherwise scan for every album)
            tagged = (
                select(Track.id)
                .join(TrackGenre, TrackGenre.track_id == Track.id)
                .where(
                    Track.album_id == Album.id,
                    PRESENT,
                    (TrackGenre.genre_id + literal_column("0")).in_(genre_ids),
                )
                .exists()
            )
            query = select(Album.id).where(tagged)
        else:
            # the albums of the genre's present tracks, from the genre index: bounded by the
            # genre's size, where walking the albums walked all of them for a rare genre
            tagged = select(TrackGenre.track_id).where(TrackGenre.genre_id.in_(genre_ids))
            # (as `IN`: PostgreSQL hashes the genre's tracks, 16 ms at 1M, where looking them up
            # one by one took 108 ms)
            of_genre = select(Track.album_id).where(PRESENT, Track.id.in_(tagged))
            query = select(Album.id).where(Album.id.in_(of_genre))
        query = query.order_by(Album.title_key, Album.id)
    else:  # random
        return _random_albums(db, size, rng or random.Random())
    return list(db.scalars(query.offset(offset).limit(size)))


WALK_PAGES_UP_TO = 200  # albums of a genre: the first this many walked in title order (SQLite)
COMMON_GENRE = 0.01  # ... when the genre holds at least this share of the present tracks


def _walk_albums(db: Session, genre_ids: list[int], up_to: int) -> bool:
    """Whether a page of a genre's albums ending at `up_to` is found sooner by walking the albums
    in title order than from the genre's tracks. Measured on SQLite at 1M tracks, a genre of 2.5%:
    2 ms against 30 ms for the first page, 50 against 30 ms from the 1,000th album on, and for a
    rare genre the walk passes every album. PostgreSQL plans the genre's tracks first (16 ms)."""
    if up_to > WALK_PAGES_UP_TO or db.get_bind().dialect.name != "sqlite":
        return False
    present = sum(genre_track_count(db, g) for g in genre_ids)
    return present >= COMMON_GENRE * track_count(db)


def _random_albums(db: Session, size: int, rng: random.Random) -> list[int]:
    """`size` albums with present tracks drawn at random, without reading every album: ids are
    drawn from the id range (album ids are nearly dense) and only the drawn ones are looked up;
    a catalogue too sparse or too small for that is drawn from its full list instead."""
    low, high = db.execute(bounds(Album.id)).one()
    if low is None:
        return []
    chosen: list[int] = []
    tried: set[int] = set()
    for _ in range(6):
        need = size - len(chosen)
        drawn = [
            i for i in (rng.randint(low, high) for _ in range(need * 2 + 16)) if i not in tried
        ]
        drawn = list(dict.fromkeys(drawn))
        tried.update(drawn)
        if drawn:
            present = set(
                db.scalars(select(Album.id).where(Album.id.in_(drawn), _HAS_PRESENT_TRACK))
            )
            chosen += [i for i in drawn if i in present][:need]
        if len(chosen) >= size or len(tried) > high - low:
            break
    if len(chosen) < size:
        every = list(db.scalars(select(Album.id).where(_HAS_PRESENT_TRACK)))
        return rng.sample(every, min(size, len(every)))
    return chosen


def _newest_albums(db: Session, size: int, offset: int) -> list[int]:
    """Albums by their newest present track, newest first: present tracks walked newest first
    (an index, migration 0015) until the page's albums have all shown up."""
    wanted = offset + size
    seen: dict[int, None] = {}
    walk = (
        select(Track.album_id)
        .where(PRESENT)
        .order_by(Track.added_at.desc(), Track.album_id.desc())
        .execution_options(yield_per=512)
    )
    for album_id in db.scalars(walk):
        if album_id not in seen:
            seen[album_id] = None
            if len(seen) >= wanted:
                break
    return list(seen)[offset:wanted]


def _listener_albums(
    db: Session, order: str, listener_id: int, size: int, offset: int
) -> list[int]:
    present = select(Track.album_id).where(PRESENT)
    if order == "starred":
        query = (
            select(CollectionItem.ref_id)
            .where(
                CollectionItem.listener_id == listener_id,
                CollectionItem.kind == "AL",
                CollectionItem.ref_id.in_(present),
            )
            .order_by(CollectionItem.added_at.desc(), CollectionItem.id.desc())
        )
    else:
        played = or_(Spin.started_at.is_not(None), Spin.outcome.is_not(None))
        key = (
            func.count(Spin.id).desc()
            if order == "frequent"
            else func.max(func.coalesce(Spin.started_at, Spin.issued_at)).desc()
        )
        query = (
            select(Spin.album_id)
            .where(Spin.listener_id == listener_id, played, Spin.album_id.in_(present))
            .group_by(Spin.album_id)
            .order_by(key, Spin.album_id)
        )
    return list(db.scalars(query.offset(offset).limit(size)))


RANDOM_DRAW_CAP = 5_000  # ids drawn and looked up at most in one round of random_track_ids
SPARSE = (
    0.05  # a genre with fewer present tracks than this share of its id range: drawn from its list
)


def random_track_ids(
    db: Session,
    size: int,
    rng: random.Random,
    *,
    genre: str | None = None,
    from_year: int | None = None,
    to_year: int | None = None,
) -> list[int]:
    """Up to `size` present tracks picked at random, optionally of a genre and years.

    Without reading every track (at 1M tracks the full list took 0.76 s on PostgreSQL): ids are
    drawn at random from the candidates' id range, or from a sparse genre's own list in the genre
    index, and only the drawn ones are looked up, more of them in the next round where few
    matched; every matching track is as likely to be drawn as any other. Where rounds find too few
    (a sparse or small catalogue, rare years), the matching tracks' full list is drawn from."""
    wanted = [PRESENT]
    pool: list[int] | None = None  # the candidates' ids, where they are drawn from a list
    if genre:
        genre_ids = genre_ids_named(db, genre)
        if not genre_ids:
            return []
        in_genre = TrackGenre.genre_id.in_(genre_ids)
        wanted.append(Track.id.in_(select(TrackGenre.track_id).where(in_genre)))
        low, high = db.execute(bounds(TrackGenre.track_id, in_genre)).one()
        present = sum(genre_track_count(db, g) for g in genre_ids)  # kept, like every count
        if low is not None and present < SPARSE * (high - low + 1):
            pool = list(dict.fromkeys(db.scalars(select(TrackGenre.track_id).where(in_genre))))
    else:
        low, high = db.execute(bounds(Track.id)).one()
    if low is None:
        return []
    if from_year is not None:
        wanted.append(Track.year >= from_year)
    if to_year is not None:
        wanted.append(Track.year <= to_year)
    # drawn: ids from the range, or positions in the genre's list
    first, last = (0, len(pool) - 1) if pool is not None else (low, high)
    candidates = last - first + 1

    def draw(count: int, tried: set[int]) -> list[int]:
        drawn: dict[int, None] = {}
        while len(drawn) < count:
            i = rng.randint(first, last)
            if i not in tried:
                drawn[i] = None
        return list(drawn)

    chosen: list[int] = []
    tried: set[int] = set()
    share = 1.0  # of the drawn ids that matched so far
    for _ in range(6):
        need = size - len(chosen)
        count = min(int(need * 2 / share) + 16, RANDOM_DRAW_CAP, candidates - len(tried))
        picked = draw(count, tried)
        tried.update(picked)
        drawn = picked if pool is None else [pool[i] for i in picked]
        found = set(db.scalars(select(Track.id).where(among(db, Track.id, drawn), *wanted)))
        chosen += [i for i in drawn if i in found][:need]
        share = max(len(found) / max(len(drawn), 1), 1 / RANDOM_DRAW_CAP)
        if len(chosen) >= size or len(tried) >= candidates:
            break
    if len(chosen) < size and len(tried) < candidates:
        every = list(db.scalars(select(Track.id).where(*wanted)))
        return rng.sample(every, min(size, len(every)))
    rng.shuffle(chosen)  # in an order of chance, not of ids, also when every candidate was tried
    return chosen


# a genre's albums with a present track, every genre at once (the one whole-catalogue statement of
# the genre list: about a second at 1M tracks on PostgreSQL), kept with the list while the
# catalogue stamp holds
_GENRE_ALBUMS = (
    select(TrackGenre.genre_id, func.count(func.distinct(Track.album_id)))
    .join(Track, Track.id == TrackGenre.track_id)
    .where(PRESENT)
    .group_by(TrackGenre.genre_id)
)
_GENRE_NAMES = select(Genre.id, Genre.name)
_GENRES: kept.Kept[None, list[tuple[str, int, int]]] = kept.Kept(limit=1)


def genres(db: Session) -> list[tuple[str, int, int]]:
    """Every genre of present tracks: name, track count, album count; by name."""

    def listed() -> list[tuple[str, int, int]]:
        songs = genre_counts(db)
        albums = dict(db.execute(_GENRE_ALBUMS).all())
        return sorted(
            (
                (name, songs[genre_id], albums.get(genre_id, 0))
                for genre_id, name in db.execute(_GENRE_NAMES)
                if genre_id in songs
            ),
            key=lambda row: (row[0].lower(), row[0]),
        )

    return _GENRES.get(kept.stamp(db), None, listed)


def picture_key(db: Session, ref: ids.Ref) -> str | None:
    """The /art/ key (content hash, or `mosaic/HASH-...`) showing an artist, album or track."""
    if ref.kind == "artist":
        row = db.get(Artist, ref.id)
        if row is None:
            return None
        picture = artist_picture(db, row)
        if picture.artwork is not None:
            return picture.artwork.content_hash
        return "mosaic/" + "-".join(picture.mosaic) if picture.mosaic else None
    album_id = ref.id
    if ref.kind == "track":
        track_row = db.get(Track, ref.id)
        if track_row is None:
            return None
        album_id = track_row.album_id
    elif ref.kind != "album":
        return None
    album_row = db.get(Album, album_id)
    art = art_of(db, album_row.art_id) if album_row is not None else None
    return art.content_hash if art is not None else None


def genre_ids_named(db: Session, name: str) -> list[int]:
    """The genres a name means (case ignored). Statements then name the genres by id: joined
    with the genres by name, PostgreSQL could not tell a rare or unknown genre from a common one
    and walked every track or album probing for it (1.2-1.4 s at 1M tracks)."""
    return list(db.scalars(select(Genre.id).where(func.lower(Genre.name) == name.lower())))


def genre_track_ids(db: Session, genre: str, offset: int, count: int) -> list[int]:
    """Present tracks tagged with a genre (any position, name case-insensitive), by album and
    track order."""
    genre_ids = genre_ids_named(db, genre)
    if not genre_ids:
        return []
    tagged = select(TrackGenre.track_id).where(TrackGenre.genre_id.in_(genre_ids))
    return list(
        db.scalars(
            select(Track.id)
            .where(among_rows(db, Track.id, tagged), PRESENT)
            .order_by(Track.album_id, Track.disc_no, Track.track_no, Track.id)
            .offset(offset)
            .limit(count)
        )
    )


_TRACK_COUNT = select(func.count()).select_from(Track).where(PRESENT)
_TRACK_COUNTS: kept.Kept[None, int] = kept.Kept(limit=1)


def track_count(db: Session) -> int:
    """How many tracks the library holds (present ones); kept while the catalogue stamp holds
    (apps ask for it every second or so during a scan: 0.1 s at 1M tracks on PostgreSQL)."""
    return _TRACK_COUNTS.get(
        kept.stamp(db), None, lambda: int(db.execute(_TRACK_COUNT).scalar() or 0)
    )


def artist_named(db: Session, name: str) -> Artist | None:
    """The artist a name means, matched as scans merge artists (case, accents, "The", featuring
    credits)."""
    key = names.merge_key(names.main_artist(name))[:512]
    return db.scalar(select(Artist).where(Artist.name_key == key)) if key else None


# the whole library, a page at a time (the web player's A-Z browse): kind -> the orders it takes
LIBRARY_ORDERS = {
    "artist": ("ALPHA", "ALBUM_COUNT"),
    "album": ("ALPHA", "ARTIST", "DATE_ADDED", "YEAR"),
    "track": ("ALPHA", "ARTIST", "DATE_ADDED"),
}
LIBRARY_FILTER_MAX = 200


@dataclass(frozen=True)
class LibraryPage:
    total: int  # how many match (every page of them)
    ids: list[int]  # this page's, in order


def library_page(
    db: Session, kind: str, order: str, text: str, offset: int, count: int
) -> LibraryPage:
    """Artists, albums or tracks of the whole library (present tracks only) in one of
    LIBRARY_ORDERS, those whose name (or, for albums and tracks, artist) holds `text` when it is
    not empty, case-insensitively; a page of `count` from `offset` and how many there are."""
    orders = LIBRARY_ORDERS.get(kind)
    if orders is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"can not browse {kind[:40]!r}")
    if order not in orders:
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            f"a {kind} list's order {order[:40]!r} is not one of {', '.join(orders)}",
        )
    needle = text.strip().casefold()[:LIBRARY_FILTER_MAX]
    if kind == "artist":
        every = album_artists(db)
        if needle:
            every = [e for e in every if needle in e.artist.name.casefold()]
        if order == "ALBUM_COUNT":
            every = sorted(every, key=lambda e: -e.album_count)  # stable: A-Z among equals
        return LibraryPage(len(every), [e.artist.id for e in every[offset : offset + count]])
    if kind == "album":
        return _album_page(db, order, needle, offset, count)
    return _track_page(db, order, needle, offset, count)


def _holds(column: object, needle: str) -> object:
    return func.lower(column).contains(needle, autoescape=True)  # type: ignore[arg-type]


_LIBRARY_TOTALS: kept.Kept[tuple[str, str], int] = kept.Kept(limit=512)
_TRACK_ORDERS: kept.Kept[str, array[int]] = kept.Kept(limit=2)  # ALPHA, ARTIST


def _matching(
    db: Session, query: Select, title: object, artist_id: object, needle: str, order: str
) -> tuple[Select, int]:
    """Albums' or tracks' ids whose title or artist's name holds `needle` (all without one),
    joined to their artist where the order needs it; and how many there are."""
    if needle or order == "ARTIST":
        query = query.join(Artist, Artist.id == artist_id)
    if needle:
        query = query.where(or_(_holds(title, needle), _holds(Artist.name, needle)))
    # counted once per catalogue stamp: at 100,000 tracks a count is a pass over all of them,
    # and a list is read a page at a time
    key = (str(title), needle)
    known = _LIBRARY_TOTALS.current(db)
    if known is not None and (total := known.get(key)) is not None:
        return query, total
    total = db.scalar(select(func.count()).select_from(query.subquery())) or 0
    if known is not None:
        known[key] = total
    return query, total


def _album_page(db: Session, order: str, needle: str, offset: int, count: int) -> LibraryPage:
    query, total = _matching(
        db, select(Album.id).where(_HAS_PRESENT_TRACK), Album.title, Album.artist_id, needle, order
    )
    if order == "DATE_ADDED":
        if not needle:
            return LibraryPage(total, _newest_albums(db, count, offset))
        newest = (
            select(Track.album_id, func.max(Track.added_at).label("added"))
            .where(PRESENT)
            .group_by(Track.album_id)
            .subquery()
        )
        query = query.join(newest, newest.c.album_id == Album.id).order_by(
            newest.c.added.desc(), Album.id.desc()
        )
    elif order == "ARTIST":
        query = query.order_by(func.lower(Artist.sort_name), Album.year, Album.title_key, Album.id)
    elif order == "YEAR":
        query = query.order_by(Album.year.desc().nulls_last(), Album.title_key, Album.id)
    else:
        query = query.order_by(Album.title_key, Album.id)
    return LibraryPage(total, list(db.scalars(query.offset(offset).limit(count))))


def _track_page(db: Session, order: str, needle: str, offset: int, count: int) -> LibraryPage:
    query, total = _matching(
        db, select(Track.id).where(PRESENT), Track.title, Track.artist_id, needle, order
    )
    if order == "DATE_ADDED":
        query = query.order_by(Track.added_at.desc(), Track.id.desc())
    elif order == "ARTIST":
        query = query.join(Album, Album.id == Track.album_id).order_by(
            func.lower(Artist.sort_name), Album.title_key, Track.disc_no, Track.track_no, Track.id
        )
    else:
        query = query.order_by(func.lower(Track.title), Track.id)
    if needle or order == "DATE_ADDED":  # (an index walks date added a page at a time)
        return LibraryPage(total, list(db.scalars(query.offset(offset).limit(count))))
    # by name or artist every page sorts every present track: the order is read once per
    # catalogue stamp and paged from memory (8 bytes a track)
    known = _TRACK_ORDERS.current(db)
    ordered = known.get(order) if known is not None else None
    if ordered is None:
        ordered = array("q", db.scalars(query))
        if known is not None:
            known[order] = ordered
    return LibraryPage(total, ordered[offset : offset + count].tolist())
