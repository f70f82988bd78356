"""v1 bookmark/*: tracks and artists the listener saved (spec §7)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import (
    EmptyResponse,
    RequestModel,
    ResponseModel,
    Timestamp,
    absent_when_none,
)
from airwave.api.v1.objects import ArtImage, art, picture_art
from airwave.core import bookmarks, ids
from airwave.core.bookmarks import BookmarkView
from airwave.errors import ApiError, ErrorCode


class BookmarkObject(ResponseModel):
    """A bookmark with the names and art a client lists it with."""

    bookmark_id: str
    music_id: str
    pandora_id: str
    type: Literal["artist", "track"]
    date_created: Timestamp
    name: str = Field(description="the track's title or the artist's name")
    artist_name: str
    art: list[ArtImage] = Field(
        description="album cover for tracks; the artist's picture or a cover mosaic for artists"
    )
    seo_token: str
    song_title: str | None = absent_when_none("tracks only")
    album_title: str | None = absent_when_none("tracks only")
    artist_music_id: str | None = absent_when_none("tracks only")
    album_music_id: str | None = absent_when_none("tracks only")
    track_length: int | None = absent_when_none("tracks only, whole seconds")
    is_available: bool = Field(description="false when the track's file has gone from the library")


def bookmark_object(call: Call, found: BookmarkView) -> BookmarkObject:
    row = found.bookmark
    if found.track is not None:
        view = found.track
        t, artist, album = view.track, view.artist, view.album
        return BookmarkObject(
            bookmark_id=str(row.id),
            music_id=ids.music_id("track", t.id),
            pandora_id=ids.pandora_id("track", t.id),
            type="track",
            date_created=row.created_at,
            name=t.title,
            artist_name=artist.name,
            art=art(call, view.album_art),
            seo_token=ids.seo_token("track", t.id, artist.name, album.title, t.title),
            song_title=t.title,
            album_title=album.title,
            artist_music_id=ids.music_id("artist", artist.id),
            album_music_id=ids.music_id("album", album.id),
            track_length=round(t.duration),
            is_available=found.is_available,
        )
    assert found.artist is not None
    a = found.artist.artist
    return BookmarkObject(
        bookmark_id=str(row.id),
        music_id=ids.music_id("artist", a.id),
        pandora_id=ids.pandora_id("artist", a.id),
        type="artist",
        date_created=row.created_at,
        name=a.name,
        artist_name=a.name,
        art=picture_art(call, found.artist.picture),
        seo_token=ids.seo_token("artist", a.id, a.name),
        is_available=found.is_available,
    )


class AddRequest(RequestModel):
    music_id: str | None = Field(None, max_length=64)
    pandora_id: str | None = Field(None, max_length=64)
    track_token: str | None = Field(None, max_length=64)
    type: Literal["artist", "track"] | None = Field(
        None,
        description="with trackToken: bookmark the track (default) or its artist; with an id: must "
        "match it",
    )


@registry.endpoint(
    "bookmark/add",
    request=AddRequest,
    response=BookmarkObject,
    writes=True,
    errors=[
        ErrorCode.NOT_FOUND,
        ErrorCode.INVALID_PANDORA_TYPE,
        ErrorCode.USER_NOT_AUTHORIZED,
        ErrorCode.CONTENT_HAS_EXPIRED,
        ErrorCode.CALL_NOT_ALLOWED,
    ],
    notes="""
    Give exactly one of `musicId`, `pandoraId` (an artist or a track; anything else is
    `INVALID_PANDORA_TYPE`) or `trackToken` (a track the listener was served; with `type: "artist"`
    its artist; an ad's token is `CALL_NOT_ALLOWED`). Adding an object that is already bookmarked
    returns the existing bookmark unchanged.
    """,
)
def add(call: Call, req: AddRequest) -> BookmarkObject:
    """Bookmark a track or an artist."""
    listener = call.require_listener()
    given = [v for v in (req.music_id, req.pandora_id, req.track_token) if v is not None]
    if len(given) != 1:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, "give exactly one of musicId, pandoraId or trackToken"
        )
    with call.write() as db:
        found = bookmarks.add_bookmark(
            db, listener.id, req.music_id, req.pandora_id, req.track_token, req.type, call.now()
        )
    return bookmark_object(call, found)


class DeleteRequest(RequestModel):
    bookmark_id: str | None = Field(None, max_length=64)
    music_id: str | None = Field(None, max_length=64)
    pandora_id: str | None = Field(None, max_length=64)


@registry.endpoint(
    "bookmark/delete",
    request=DeleteRequest,
    response=EmptyResponse,
    writes=True,
    errors=[ErrorCode.NOT_FOUND, ErrorCode.INVALID_PANDORA_TYPE, ErrorCode.USER_NOT_AUTHORIZED],
    notes="""
    Give exactly one of `bookmarkId`, `musicId` or `pandoraId`. Another listener's bookmarkId:
    `USER_NOT_AUTHORIZED`; an object that is not bookmarked: `NOT_FOUND`.
    """,
)
def delete(call: Call, req: DeleteRequest) -> EmptyResponse:
    """Remove a bookmark."""
    listener = call.require_listener()
    given = [v for v in (req.bookmark_id, req.music_id, req.pandora_id) if v is not None]
    if len(given) != 1:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, "give exactly one of bookmarkId, musicId or pandoraId"
        )
    with call.write() as db:
        bookmarks.delete_bookmark(db, listener.id, req.bookmark_id, req.music_id, req.pandora_id)
    return EmptyResponse()


class ListRequest(RequestModel):
    type: Literal["artist", "track"] | None = Field(
        None, description="only this kind; both when absent"
    )
    page_size: int = Field(100, ge=1, le=1000)
    start_index: int = Field(0, ge=0, le=2**31 - 1)


class BookmarkList(ResponseModel):
    artists: list[BookmarkObject]
    tracks: list[BookmarkObject]
    total_artists: int
    total_tracks: int


@registry.endpoint(
    "bookmark/getBookmarks",
    request=ListRequest,
    response=BookmarkList,
    notes="""
    Newest first. `pageSize` and `startIndex` page each list separately; a kind left out by `type`
    comes back as an empty list, its total still counted.
    """,
)
def get_bookmarks(call: Call, req: ListRequest) -> BookmarkList:
    """The listener's bookmarked artists and tracks."""
    found = bookmarks.lists(
        call.reader(), call.require_listener().id, req.type, req.start_index, req.page_size
    )
    artists, tracks = found["AR"], found["TR"]
    return BookmarkList(
        artists=[bookmark_object(call, b) for b in artists.items],
        tracks=[bookmark_object(call, b) for b in tracks.items],
        total_artists=artists.total,
        total_tracks=tracks.total,
    )
