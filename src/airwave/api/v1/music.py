"""v1 music/*: artists, albums, tracks, genres and lyrics of the catalogue."""

from __future__ import annotations

from pydantic import Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, RequestModel, ResponseModel
from airwave.api.v1.objects import (
    AlbumSummary,
    ArtImage,
    ArtistSummary,
    TrackSummary,
    album_summary,
    art,
    artist_summary,
    mosaic_art,
    track_summary,
)
from airwave.core import bookmarks, catalog, ids, stations
from airwave.core.engine import similar
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Artist, Track

CATALOG_ERRORS = [ErrorCode.NOT_FOUND, ErrorCode.INVALID_PANDORA_TYPE]


class TokenRequest(RequestModel):
    token: str = Field(min_length=1, max_length=1024, description="musicId, pandoraId or seoToken")


def artist_art(call: Call, artist: Artist) -> list[ArtImage]:
    """The artist's own picture, else a mosaic of their album covers."""
    own = catalog.art_of(call.reader(), artist.art_id)
    return art(call, own) if own else mosaic_art(call, catalog.cover_hashes(call.reader(), artist.id))


class ArtistDetails(ArtistSummary):
    genre: list[str]
    track_count: int
    discography: list[AlbumSummary]
    appears_on: list[AlbumSummary]
    similar: list[ArtistSummary]
    listener_count: int = Field(description="listeners with a station seeded by this artist")
    is_bookmarked: bool
    bio: str


@registry.endpoint("music/artist", request=TokenRequest, response=ArtistDetails, errors=CATALOG_ERRORS)
def music_artist(call: Call, req: TokenRequest) -> ArtistDetails:
    """An artist with discography, compilations they appear on and similar artists."""
    db = call.reader()
    artist = catalog.artist(db, catalog.resolve(req.token, "artist").id)
    albums = catalog.discography(db, artist.id)
    genre_counts = catalog.artist_genres(db, artist.id)
    genre_names = [catalog.genre(db, g).name for g, _ in genre_counts.most_common(5)]
    track_count = catalog.track_count(db, artist.id)
    years = sorted(a.year for a, _, _ in albums if a.year)
    bio = f"{artist.name}: {track_count} track{'s' * (track_count != 1)} in this library"
    if albums:
        bio += f" on {len(albums)} album{'s' * (len(albums) != 1)}"
    if years:
        bio += f" ({years[0]}–{years[-1]})" if years[0] != years[-1] else f" ({years[0]})"
    if genre_names:
        bio += ". " + ", ".join(genre_names)
    summary = artist_summary(call, artist, artist_art(call, artist))
    return ArtistDetails(
        **summary.model_dump(),
        genre=genre_names,
        track_count=track_count,
        discography=[album_summary(call, a, artist, aw, n) for a, aw, n in albums],
        appears_on=[
            album_summary(call, a, db.get(Artist, a.artist_id), catalog.art_of(db, a.art_id), 0)
            for a in catalog.appears_on(db, artist.id)
        ],
        similar=[artist_summary(call, s, artist_art(call, s)) for s in nearest_artists(db, artist.id)],
        listener_count=stations.listener_count(db, "AR", artist.id),
        is_bookmarked=bool(bookmarks.marked(db, call.require_listener().id, "AR", [artist.id])),
        bio=bio + ".",
    )


class AlbumDetails(AlbumSummary):
    artist_pandora_id: str
    duration: int
    genre: list[str]
    tracks: list[TrackSummary]
    is_bookmarked: bool = Field(description="true when every track of the album is bookmarked")


@registry.endpoint("music/album", request=TokenRequest, response=AlbumDetails, errors=CATALOG_ERRORS)
def music_album(call: Call, req: TokenRequest) -> AlbumDetails:
    """An album and its tracks in disc/track order."""
    db = call.reader()
    album = catalog.album(db, catalog.resolve(req.token, "album").id)
    views = catalog.track_views(db, catalog.album_tracks(db, album.id))
    artist = db.get(Artist, album.artist_id)
    genres: list[str] = []
    for view in views:
        genres += [g for g in view.genres if g not in genres]
    summary = album_summary(call, album, artist, catalog.art_of(db, album.art_id), len(views))
    return AlbumDetails(
        **summary.model_dump(),
        artist_pandora_id=ids.pandora_id("artist", artist.id),
        duration=round(sum(v.track.duration for v in views)),
        genre=genres,
        tracks=[track_summary(call, v) for v in views],
        is_bookmarked=bookmarks.album_marked(db, call.require_listener().id, album.id),
    )


def nearest_tracks(db: Session, track: Track, limit: int = 10) -> list[int]:
    """Neighbours in the similarity space; shared genres while the space is not built yet."""
    return similar.similar_tracks(db, track.id, limit) or catalog.similar_tracks(db, track, limit)


def nearest_artists(db: Session, artist_id: int, limit: int = 10) -> list[Artist]:
    found = similar.similar_artists(db, artist_id, limit)
    if not found:
        return catalog.similar_artists(db, artist_id, limit)
    rows = {a.id: a for a in db.scalars(select(Artist).where(Artist.id.in_(found)))}
    return [rows[a] for a in found if a in rows]


class LyricSnippet(ResponseModel):
    lyric_id: str
    checksum: str


class TrackDetails(TrackSummary):
    similar: list[TrackSummary]
    focus_traits: list[str]
    is_bookmarked: bool
    lyric_snippet: LyricSnippet | None = Field(None, description="present when the track has lyrics")


def focus_traits(call: Call, view: catalog.TrackView) -> list[str]:
    """Plain-language reasons from the track's sound profile and tags."""
    t = view.track
    return similar.focus_traits(similar.profile_json(call.reader(), t.id), view.genres, t.year or view.album.year,
                                t.composer, t.explicit)


@registry.endpoint("music/track", request=TokenRequest, response=TrackDetails, errors=CATALOG_ERRORS)
def music_track(call: Call, req: TokenRequest) -> TrackDetails:
    """A track with similar tracks, what characterises it, and a pointer to its lyrics."""
    db = call.reader()
    track = catalog.track(db, catalog.resolve(req.token, "track").id)
    view = catalog.track_views(db, [track.id])[0]
    lyrics = catalog.lyrics_of(track)
    return TrackDetails(
        **track_summary(call, view).model_dump(),
        similar=[track_summary(call, v) for v in catalog.track_views(db, nearest_tracks(db, track))],
        focus_traits=focus_traits(call, view),
        is_bookmarked=bool(bookmarks.marked(db, call.require_listener().id, "TR", [track.id])),
        lyric_snippet=LyricSnippet(lyric_id=lyrics.lyric_id, checksum=lyrics.checksum) if lyrics else None,
    )


class GenreCategory(ResponseModel):
    name: str
    token: str
    art: list[ArtImage]
    station_count: int


class GenreCategories(ResponseModel):
    categories: list[GenreCategory]


@registry.endpoint("music/genrecategories", request=Empty, response=GenreCategories)
def music_genre_categories(call: Call, req: Empty) -> GenreCategories:
    """Browsing categories (Rock, Jazz, ...) that have playable genres in this library."""
    db = call.reader()
    out = []
    for name, _tracks in catalog.genre_categories(db):
        genres = catalog.genres_in(db, name)
        sample = catalog.track_views(db, catalog.genre_sample(db, genres[0][0].id, 1)) if genres else []
        out.append(GenreCategory(name=name, token=ids.slug(name), station_count=len(genres),
                                 art=art(call, sample[0].album_art) if sample else []))
    return GenreCategories(categories=out)


class GenreStation(ResponseModel):
    music_id: str
    pandora_id: str
    name: str
    station_name: str
    track_count: int
    art: list[ArtImage]
    sample_tracks: list[TrackSummary]
    is_redirect: bool = False
    is_comedy: bool


class GenreStations(ResponseModel):
    category: str
    stations: list[GenreStation]


@registry.endpoint(
    "music/genres", request=TokenRequest, response=GenreStations, errors=[ErrorCode.NOT_FOUND],
    notes="`token` is a category token from `music/genrecategories`.",
)
def music_genres(call: Call, req: TokenRequest) -> GenreStations:
    """The genre stations of one category, each with a few sample tracks."""
    db = call.reader()
    category = catalog.category_by_token(db, req.token)
    stations = []
    for genre, count in catalog.genres_in(db, category):
        samples = catalog.track_views(db, catalog.genre_sample(db, genre.id))
        stations.append(GenreStation(
            music_id=ids.music_id("genre", genre.id), pandora_id=ids.pandora_id("genre", genre.id), name=genre.name,
            station_name=f"{genre.name} Radio", track_count=count,
            art=art(call, samples[0].album_art) if samples else [],
            sample_tracks=[track_summary(call, v) for v in samples], is_comedy=category.startswith("Comedy"),
        ))
    return GenreStations(category=category, stations=stations)


class LyricsRequest(RequestModel):
    track_uid: str = Field(min_length=1, max_length=1024, description="the track's musicId or pandoraId")
    lyric_id: str | None = Field(None, max_length=64)
    checksum: str | None = Field(None, max_length=64)


class TimedLine(ResponseModel):
    time: float = Field(description="seconds from the start")
    text: str


class FullLyrics(ResponseModel):
    lyric_id: str
    checksum: str
    lines: list[str]
    synced_lines: list[TimedLine] = Field(description="from .lrc timestamps; empty when not timed")
    credits: str


@registry.endpoint("music/fullLyrics", request=LyricsRequest, response=FullLyrics, errors=CATALOG_ERRORS)
def music_full_lyrics(call: Call, req: LyricsRequest) -> FullLyrics:
    """A track's lyrics from its tags or a .lrc/.txt file beside it."""
    track = catalog.track(call.reader(), catalog.resolve(req.track_uid, "track").id)
    lyrics = catalog.lyrics_of(track)
    if lyrics is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no lyrics for track S{track.id}")
    return FullLyrics(
        lyric_id=lyrics.lyric_id, checksum=lyrics.checksum, lines=lyrics.lines,
        synced_lines=[TimedLine(time=t, text=line) for t, line in lyrics.timed], credits=lyrics.credits,
    )
