"""v1 music/*: artists, albums, tracks, genres and lyrics of the catalogue."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, RequestModel, ResponseModel, absent_when_none
from airwave.api.v1.objects import (
    AlbumSummary,
    ArtImage,
    ArtistSummary,
    GenreStation,
    LyricSnippet,
    TrackSummary,
    album_summary,
    artist_summary,
    genre_station,
    lyric_snippet,
    picture_art,
    track_summary,
)
from airwave.core import ids, music
from airwave.errors import ApiError, ErrorCode

CATALOG_ERRORS = [ErrorCode.NOT_FOUND, ErrorCode.INVALID_PANDORA_TYPE]


class TokenRequest(RequestModel):
    token: str = Field(min_length=1, max_length=1024, description="musicId, pandoraId or seoToken")


class ArtistDetails(ArtistSummary):
    genre: list[str]
    track_count: int
    discography: list[AlbumSummary]
    appears_on: list[AlbumSummary]
    similar: list[ArtistSummary]
    is_bookmarked: bool
    bio: str


@registry.endpoint(
    "music/artist", request=TokenRequest, response=ArtistDetails, errors=CATALOG_ERRORS
)
def music_artist(call: Call, req: TokenRequest) -> ArtistDetails:
    """An artist with discography, compilations they appear on and similar artists."""
    page = music.artist_page(call.reader(), call.require_listener().id, req.token)
    return ArtistDetails(
        **artist_summary(call, page.artist).model_dump(),
        genre=page.genres,
        track_count=page.track_count,
        discography=[album_summary(call, a) for a in page.discography],
        appears_on=[album_summary(call, a) for a in page.appears_on],
        similar=[artist_summary(call, s) for s in page.similar],
        is_bookmarked=page.is_bookmarked,
        bio=page.bio,
    )


class AlbumDetails(AlbumSummary):
    artist_pandora_id: str
    duration: int
    genre: list[str]
    tracks: list[TrackSummary]
    is_bookmarked: bool = Field(description="true when every track of the album is bookmarked")


@registry.endpoint(
    "music/album", request=TokenRequest, response=AlbumDetails, errors=CATALOG_ERRORS
)
def music_album(call: Call, req: TokenRequest) -> AlbumDetails:
    """An album and its tracks in disc/track order."""
    page = music.album_page(call.reader(), call.require_listener().id, req.token)
    artist = page.album.artist
    return AlbumDetails(
        **album_summary(call, page.album).model_dump(),
        artist_pandora_id=ids.pandora_id("artist", artist.id),
        duration=round(page.duration),
        genre=page.genres,
        tracks=[track_summary(call, v) for v in page.tracks],
        is_bookmarked=page.is_bookmarked,
    )


class TrackDetails(TrackSummary):
    similar: list[TrackSummary]
    focus_traits: list[str]
    is_bookmarked: bool
    lyric_snippet: LyricSnippet | None = absent_when_none("present when the track has lyrics")


@registry.endpoint(
    "music/track", request=TokenRequest, response=TrackDetails, errors=CATALOG_ERRORS
)
def music_track(call: Call, req: TokenRequest) -> TrackDetails:
    """A track with similar tracks, what characterises it, and a pointer to its lyrics."""
    page = music.track_page(call.reader(), call.require_listener().id, req.token)
    lyrics = page.lyrics
    return TrackDetails(
        **track_summary(call, page.track).model_dump(),
        similar=[track_summary(call, v) for v in page.similar],
        focus_traits=page.focus_traits,
        is_bookmarked=page.is_bookmarked,
        lyric_snippet=lyric_snippet(lyrics),
    )


class GenreCategory(ResponseModel):
    name: str
    token: str
    art: list[ArtImage]
    station_count: int
    listener_count: int = Field(
        description="listeners with a station seeded by one of the category's genres"
    )


class GenreCategories(ResponseModel):
    categories: list[GenreCategory]


@registry.endpoint("music/genrecategories", request=Empty, response=GenreCategories)
def music_genre_categories(call: Call, req: Empty) -> GenreCategories:
    """Browsing categories (Rock, Jazz, ...) that have playable genres in this library."""
    return GenreCategories(
        categories=[
            GenreCategory(
                name=c.name,
                token=ids.slug(c.name),
                station_count=c.station_count,
                listener_count=c.listener_count,
                art=picture_art(call, c.picture),
            )
            for c in music.genre_categories(call.reader())
        ]
    )


class GenreStations(ResponseModel):
    category: str
    stations: list[GenreStation]
    genres: list[GenreStation] = Field(
        description="the same list as `stations` (clients read this)"
    )


class GenresRequest(RequestModel):
    token: str | None = Field(None, min_length=1, max_length=1024)
    category_token: str | None = Field(
        None, min_length=1, max_length=1024, description="the same as `token` (clients send this)"
    )


@registry.endpoint(
    "music/genres",
    request=GenresRequest,
    response=GenreStations,
    errors=[ErrorCode.NOT_FOUND],
    notes="`token` (or `categoryToken`) is a category token from `music/genrecategories`.",
)
def music_genres(call: Call, req: GenresRequest) -> GenreStations:
    """The genre stations of one category, each with a few sample tracks."""
    token = req.token or req.category_token
    if token is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, "token: field required")
    category, found = music.genre_stations(call.reader(), token)
    listed = [genre_station(call, g) for g in found]
    return GenreStations(category=category, stations=listed, genres=listed)


class LyricsRequest(RequestModel):
    track_uid: str = Field(
        min_length=1, max_length=1024, description="the track's musicId or pandoraId"
    )
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


@registry.endpoint(
    "music/fullLyrics", request=LyricsRequest, response=FullLyrics, errors=CATALOG_ERRORS
)
def music_full_lyrics(call: Call, req: LyricsRequest) -> FullLyrics:
    """A track's lyrics from its tags or a .lrc/.txt file beside it."""
    lyrics = music.full_lyrics(call.reader(), req.track_uid)
    return FullLyrics(
        lyric_id=lyrics.lyric_id,
        checksum=lyrics.checksum,
        lines=lyrics.lines,
        synced_lines=[TimedLine(time=t, text=line) for t, line in lyrics.timed],
        credits=lyrics.credits,
    )
