"""The catalogue pages of music/*: an artist, album or track with what this listener did with it,
genres, lyrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from airwave.core import bookmarks, ids
from airwave.core.catalog import catalog, kept, similar
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Album, Artist, Artwork, Genre, Track
from airwave.store.sql import among


@dataclass(frozen=True)
class AlbumView:
    """An album with its album artist, cover and present track count."""

    album: Album
    artist: Artist
    artwork: Artwork | None
    track_count: int


@dataclass(frozen=True)
class ArtistPage:
    artist: catalog.ArtistView
    genres: list[str]
    track_count: int
    bio: str
    discography: list[AlbumView]
    appears_on: list[AlbumView]
    similar: list[catalog.ArtistView]
    is_bookmarked: bool


@dataclass(frozen=True)
class AlbumPage:
    album: AlbumView
    tracks: list[catalog.TrackView]
    genres: list[str]
    duration: float
    is_bookmarked: bool  # every present track of it is


@dataclass(frozen=True)
class TrackPage:
    track: catalog.TrackView
    similar: list[catalog.TrackView]
    focus_traits: list[str]
    is_bookmarked: bool
    lyrics: catalog.Lyrics | None


@dataclass(frozen=True)
class GenreCategory:
    name: str
    station_count: int
    picture: catalog.Picture
    listener_count: int  # listeners with a station seeded by one of its genres


@dataclass(frozen=True)
class GenreStation:
    """A genre as a station to start: its present tracks, a few samples, and how many listeners
    have a station seeded by it."""

    genre: Genre
    track_count: int
    samples: list[catalog.TrackView]
    listener_count: int


def _bio(artist: Artist, track_count: int, albums: list[AlbumView], genre_names: list[str]) -> str:
    """A line about the artist from what the library holds."""
    years = sorted(a.album.year for a in albums if a.album.year)
    bio = f"{artist.name}: {track_count} track{'s' * (track_count != 1)} in this library"
    if albums:
        bio += f" on {len(albums)} album{'s' * (len(albums) != 1)}"
    if years:
        bio += f" ({years[0]}–{years[-1]})" if years[0] != years[-1] else f" ({years[0]})"
    if genre_names:
        bio += ". " + ", ".join(genre_names)
    return bio + "."


def artist_page(db: Session, listener_id: int, token: str) -> ArtistPage:
    """music/artist: discography, compilations the artist appears on and similar artists."""
    artist = catalog.artist(db, catalog.resolve(token, "artist").id)
    albums = [AlbumView(a, artist, aw, n) for a, aw, n in catalog.discography(db, artist.id)]
    genre_names = [
        catalog.genre(db, g).name for g, _ in catalog.artist_genres(db, artist.id).most_common(5)
    ]
    track_count = catalog.track_count(db, artist.id)
    appears_on = [
        AlbumView(a, db.get(Artist, a.artist_id), catalog.art_of(db, a.art_id), 0)
        for a in catalog.appears_on(db, artist.id)
    ]
    return ArtistPage(
        artist=catalog.artist_view(db, artist),
        genres=genre_names,
        track_count=track_count,
        bio=_bio(artist, track_count, albums, genre_names),
        discography=albums,
        appears_on=appears_on,
        similar=catalog.artist_views(db, [s.id for s in catalog.nearest_artists(db, artist.id)]),
        is_bookmarked=bool(bookmarks.marked(db, listener_id, "AR", [artist.id])),
    )


def album_page(db: Session, listener_id: int, token: str) -> AlbumPage:
    """music/album: an album and its tracks in disc/track order."""
    album = catalog.album(db, catalog.resolve(token, "album").id)
    views = catalog.track_views(db, catalog.album_tracks(db, album.id))
    artist = db.get(Artist, album.artist_id)
    genres: list[str] = []
    for view in views:
        genres += [g for g in view.genres if g not in genres]
    return AlbumPage(
        album=AlbumView(album, artist, catalog.art_of(db, album.art_id), len(views)),
        tracks=views,
        genres=genres,
        duration=sum(v.track.duration for v in views),
        is_bookmarked=bookmarks.album_marked(db, listener_id, album.id),
    )


def track_page(db: Session, listener_id: int, token: str) -> TrackPage:
    """music/track: similar tracks, what characterises the track, and a pointer to its lyrics."""
    track = catalog.track(db, catalog.resolve(token, "track").id)
    view = catalog.track_views(db, [track.id])[0]
    lyrics = catalog.lyrics_of(track)
    traits = similar.focus_traits(
        similar.profile_json(db, track.id),
        view.genres,
        track.year or view.album.year,
        track.composer,
        track.explicit,
    )
    return TrackPage(
        track=view,
        similar=catalog.track_views(db, catalog.nearest_tracks(db, track)),
        focus_traits=traits,
        is_bookmarked=bool(bookmarks.marked(db, listener_id, "TR", [track.id])),
        lyrics=lyrics,
    )


def page_of(db: Session, seo_token: str) -> tuple[str, str] | None:
    """The web player's page an artist, album or track detail URL (its seoToken) shows: an artist
    page, or the album page (of the track); None for what the catalogue has not."""
    try:
        ref = catalog.resolve(seo_token, "artist", "album", "track")
        if ref.kind == "artist":
            return "artist", ids.music_id("artist", catalog.artist(db, ref.id).id)
        album_id = ref.id if ref.kind == "album" else catalog.track(db, ref.id).album_id
        return "album", ids.music_id("album", catalog.album(db, album_id).id)
    except ApiError:
        return None


@dataclass(frozen=True)
class SongNames:
    title: str
    artist: str
    album: str


def song_names(db: Session, token: str) -> SongNames | None:
    """A track's title, artist and album (the tuner's songExplorer document); None for what the
    catalogue has not."""
    try:
        track = catalog.track(db, catalog.resolve(token, "track").id)
    except ApiError:
        return None
    note = _track_notes(db, [track.id]).get(track.id)
    return SongNames(note.title, note.artist_name, note.album_title) if note else None


def genre_categories(db: Session) -> list[GenreCategory]:
    """music/genrecategories: categories with playable genres, each pictured by a track of its
    biggest genre."""
    out = []
    for name in catalog.genre_categories(db):
        genres = catalog.genres_in(db, name)
        sample = (
            catalog.track_views(db, catalog.genre_sample(db, genres[0][0].id, 1)) if genres else []
        )
        out.append(
            GenreCategory(
                name,
                len(genres),
                catalog.Picture(sample[0].album_art if sample else None),
                catalog.listeners_of_any(db, "GE", [g.id for g, _count in genres]),
            )
        )
    return out


def genre_stations(db: Session, token: str) -> tuple[str, list[GenreStation]]:
    """music/genres: the genres of one category, each with a few sample tracks."""
    category = catalog.category_by_token(db, token)
    return category, genre_station_list(db, catalog.genres_in(db, category))


def genre_station(db: Session, genre: Genre, track_count: int, samples: int = 5) -> GenreStation:
    return genre_station_list(db, [(genre, track_count)], samples)[0]


def genre_station_list(
    db: Session, genres: list[tuple[Genre, int]], samples: int = 5
) -> list[GenreStation]:
    """Genres (with their present tracks' count) as stations to start: each genre's sample is
    drawn on its own, then the samples' track objects and the genres' listener counts are read
    for all of them at once (each genre read them alone: some nine statements a genre)."""
    drawn = {genre.id: catalog.genre_sample(db, genre.id, samples) for genre, _ in genres}
    wanted = list(dict.fromkeys(t for sample in drawn.values() for t in sample))
    views = {v.track.id: v for v in catalog.track_views(db, wanted)}
    listeners = catalog.listener_counts(db, "GE", [genre.id for genre, _ in genres])
    return [
        GenreStation(
            genre,
            count,
            [views[t] for t in drawn[genre.id] if t in views],
            listeners.get(genre.id, 0),
        )
        for genre, count in genres
    ]


def full_lyrics(db: Session, track_uid: str) -> catalog.Lyrics:
    """music/fullLyrics: a track's lyrics; NOT_FOUND when it has none."""
    track: Track = catalog.track(db, catalog.resolve(track_uid, "track").id)
    lyrics = catalog.lyrics_of(track)
    if lyrics is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no lyrics for track S{track.id}")
    return lyrics


# ---------------------------------------------------------------- annotations


@dataclass(frozen=True)
class AlbumNote:
    """An album as annotations describe it: with its present tracks in order."""

    view: AlbumView
    track_ids: list[int]
    duration: float
    explicit: bool


@dataclass(frozen=True)
class ArtistNote:
    view: catalog.ArtistView
    album_count: int
    track_count: int


@dataclass(frozen=True)
class Cover:
    """An album cover as annotations name it."""

    content_hash: str
    dominant_color: str | None


@dataclass(frozen=True)
class TrackNote:
    """A track as annotations describe it (present or not: playlists show unavailable ones)."""

    track_id: int
    title: str
    duration: float
    track_no: int | None
    disc_no: int | None
    explicit: bool
    artist_id: int
    artist_name: str
    album_id: int
    album_title: str
    cover: Cover | None


Note = TrackNote | AlbumNote | ArtistNote | GenreStation


# tracks, albums and artists as annotations read them (None: not in the catalogue); how many
# listeners have a station of an artist changes without a scan and is counted every time
_KEPT: kept.Kept[tuple[str, int], Note | None] = kept.Kept(limit=100_000)


def annotate(db: Session, refs: list[ids.Ref]) -> dict[ids.Ref, Note]:
    """What the catalogue holds on each of these objects (tracks, albums, artists, genres);
    objects that are gone or of other kinds are left out. At most a few queries per kind,
    whatever the number of objects (a page of a collection annotates a hundred), and none for
    objects read before while the catalogue is unchanged."""
    notes: dict[ids.Ref, Note] = {}
    wanted: dict[str, list[int]] = {"track": [], "album": [], "artist": [], "genre": []}
    for ref in refs:
        if ref.kind in wanted:
            wanted[ref.kind].append(ref.id)
    known = _KEPT.current(db) if wanted["track"] or wanted["album"] or wanted["artist"] else None
    readers: tuple[tuple[ids.Kind, Callable[[Session, list[int]], Mapping[int, Note]]], ...] = (
        ("track", _track_notes),
        ("album", _album_notes),
        ("artist", _artist_notes),
    )
    for kind, read in readers:
        if not wanted[kind]:
            continue
        if known is None:
            found: Mapping[int, Note | None] = read(db, wanted[kind])
        else:
            missing = [i for i in wanted[kind] if (kind, i) not in known]
            fresh = read(db, missing) if missing else {}
            for object_id in missing:
                known[(kind, object_id)] = fresh.get(object_id)
            found = {i: known.get((kind, i)) for i in wanted[kind]}
        for object_id, note in found.items():
            if note is not None:
                notes[ids.Ref(kind, object_id)] = note
    if wanted["artist"]:
        listeners = catalog.listener_counts(db, "AR", wanted["artist"])
        for artist_id in wanted["artist"]:
            artist_note = notes.get(ids.Ref("artist", artist_id))
            if isinstance(artist_note, ArtistNote):
                view = replace(artist_note.view, listener_count=listeners.get(artist_id, 0))
                notes[ids.Ref("artist", artist_id)] = replace(artist_note, view=view)
    if wanted["genre"]:  # genres not in the catalogue (any more) are left out
        found = {
            g.id: g for g in db.scalars(select(Genre).where(among(db, Genre.id, wanted["genre"])))
        }
        present = [g for g in wanted["genre"] if g in found]
        counts = catalog.genre_track_counts(db, present)
        genres = [(found[g], counts[g]) for g in present]
        for station in genre_station_list(db, genres, 1):
            notes[ids.Ref("genre", station.genre.id)] = station
    return {ref: notes[ref] for ref in refs if ref in notes}


def _track_notes(db: Session, track_ids: list[int]) -> dict[int, TrackNote]:
    """Tracks with their artist, album and cover, as plain columns: a page of a hundred tracks as
    ORM objects cost more than everything else of the page together. The artist and album come
    from scalar subqueries, one primary key lookup each per track: joined, PostgreSQL planned
    hash joins over the whole artist and album tables."""
    if not track_ids:
        return {}
    album = Album.id == Track.album_id
    rows = db.execute(
        select(
            Track.id,
            Track.title,
            Track.duration,
            Track.track_no,
            Track.disc_no,
            Track.explicit,
            Track.artist_id,
            select(Artist.name).where(Artist.id == Track.artist_id).scalar_subquery(),
            Track.album_id,
            select(Album.title).where(album).scalar_subquery(),
            select(Album.art_id).where(album).scalar_subquery(),
        ).where(among(db, Track.id, track_ids))
    ).all()
    art_ids = [r[10] for r in rows if r[10] is not None]
    covers = (
        {
            r[0]: Cover(r[1], r[2])
            for r in db.execute(
                select(Artwork.id, Artwork.content_hash, Artwork.dominant_color).where(
                    among(db, Artwork.id, art_ids)
                )
            )
        }
        if art_ids
        else {}
    )
    return {
        r[0]: TrackNote(
            r[0],
            r[1],
            r[2] or 0.0,
            r[3],
            r[4],
            bool(r[5]),
            r[6],
            r[7],
            r[8],
            r[9],
            covers.get(r[10]) if r[10] is not None else None,
        )
        for r in rows
        if r[7] is not None and r[9] is not None  # its artist and album exist
    }


def _artworks(db: Session, art_ids: list[int]) -> dict[int, Artwork]:
    """Artworks by id (no statement when there are none)."""
    if not art_ids:
        return {}
    return {w.id: w for w in db.scalars(select(Artwork).where(among(db, Artwork.id, art_ids)))}


def _album_notes(db: Session, album_ids: list[int]) -> dict[int, AlbumNote]:
    """Albums with at least one present track, each with its tracks in play order."""
    if not album_ids:
        return {}
    # one indexed lookup per table (joined, PostgreSQL plans hash joins over whole tables)
    found = list(db.scalars(select(Album).where(among(db, Album.id, album_ids))))
    artists = {
        a.id: a
        for a in db.scalars(
            select(Artist).where(among(db, Artist.id, [a.artist_id for a in found]))
        )
    }
    arts = _artworks(db, [a.art_id for a in found if a.art_id])
    albums = [
        (a, artists[a.artist_id], arts.get(a.art_id or -1)) for a in found if a.artist_id in artists
    ]
    tracks: dict[int, list[tuple[int, float, bool]]] = {}
    for track_id, album_id, duration, explicit in db.execute(
        select(Track.id, Track.album_id, Track.duration, Track.explicit)
        .where(among(db, Track.album_id, [album.id for album, _, _ in albums]), catalog.PRESENT)
        .order_by(
            Track.album_id, Track.disc_no.nulls_first(), Track.track_no.nulls_last(), Track.title
        )
    ):
        tracks.setdefault(album_id, []).append((track_id, duration or 0.0, bool(explicit)))
    notes = {}
    for album, artist, artwork in albums:
        present = tracks.get(album.id)
        if not present:
            continue
        notes[album.id] = AlbumNote(
            AlbumView(album, artist, artwork, len(present)),
            [t for t, _, _ in present],
            sum(d for _, d, _ in present),
            any(e for _, _, e in present),
        )
    return notes


def _artist_notes(db: Session, artist_ids: list[int]) -> dict[int, ArtistNote]:
    """Artists with a present track (theirs, or on an album of theirs), with picture, album and
    track counts (scalar subqueries of one statement); the listener count is annotate's (it
    changes without the catalogue)."""
    if not artist_ids:
        return {}
    own = (
        select(func.count(Track.id))
        .where(Track.artist_id == Artist.id, catalog.PRESENT)
        .scalar_subquery()
    )
    albums = (
        select(func.count(func.distinct(Album.id)))
        .join(Track, Track.album_id == Album.id)
        .where(Album.artist_id == Artist.id, catalog.PRESENT)
        .scalar_subquery()
    )
    found = {
        artist.id: (artist, own_count or 0, album_count or 0, 0)
        for artist, own_count, album_count in db.execute(
            select(Artist, own, albums).where(among(db, Artist.id, artist_ids))
        ).all()
        if own_count or album_count
    }
    pictures = _artworks(db, [a.art_id for a, *_ in found.values() if a.art_id])
    covers: dict[int, list[str]] = {}
    bare = [a.id for a, *_ in found.values() if a.art_id not in pictures]
    if bare:
        for artist_id, content_hash in db.execute(
            select(Album.artist_id, Artwork.content_hash)
            .join(Artwork, Artwork.id == Album.art_id)
            .where(among(db, Album.artist_id, bare))
            .order_by(Album.artist_id, Album.year.desc().nulls_last(), Album.id)
        ):
            if len(covers.setdefault(artist_id, [])) < 4:
                covers[artist_id].append(content_hash)
    notes = {}
    for artist_id, (artist, own_count, album_count, listeners) in found.items():
        artwork = pictures.get(artist.art_id or -1)
        picture = (
            catalog.Picture(artwork)
            if artwork is not None
            else catalog.Picture(mosaic=tuple(covers.get(artist_id, [])))
        )
        notes[artist_id] = ArtistNote(
            catalog.ArtistView(artist, picture, listeners), album_count, own_count
        )
    return notes


# ---------------------------------------------------------------- v4 catalogue


TOP_TRACKS = 10
SIMILAR_ARTISTS = 10


@dataclass(frozen=True)
class ArtistDetails:
    """catalog/getDetails of an artist: its most played tracks, its albums, similar artists, and
    the annotations of every object named."""

    artist: ids.Ref
    top_tracks: list[ids.Ref]
    albums: list[ids.Ref]
    similar: list[ids.Ref]
    notes: dict[ids.Ref, Note]


def artist_details(db: Session, artist_id: int) -> ArtistDetails:
    artist = catalog.artist(db, artist_id)
    tracks = [ids.Ref("track", t) for t in catalog.top_tracks(db, artist.id, TOP_TRACKS)]
    albums = [ids.Ref("album", a.id) for a, _art, _n in catalog.discography(db, artist.id)]
    near = [
        ids.Ref("artist", a.id) for a in catalog.nearest_artists(db, artist.id, SIMILAR_ARTISTS)
    ]
    me = ids.Ref("artist", artist.id)
    return ArtistDetails(me, tracks, albums, near, annotate(db, [me, *tracks, *albums, *near]))


def artist_tracks(db: Session, artist_id: int, offset: int, limit: int) -> tuple[int, list[Note]]:
    """catalog/getAllArtistTracks: every present track of the artist, album by album."""
    artist = catalog.artist(db, artist_id)
    every = catalog.artist_track_ids(db, artist.id)
    page = [ids.Ref("track", t) for t in every[offset : offset + limit]]
    notes = annotate(db, page)
    return len(every), [notes[r] for r in page if r in notes]


def artist_albums(db: Session, artist_id: int) -> list[Note]:
    """catalog/getArtistDiscography: the artist's albums, newest first."""
    artist = catalog.artist(db, artist_id)
    refs = [ids.Ref("album", a.id) for a, _art, _n in catalog.discography(db, artist.id)]
    notes = annotate(db, refs)
    return [notes[r] for r in refs if r in notes]
