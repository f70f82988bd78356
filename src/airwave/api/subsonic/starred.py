"""star, unstar, getStarred, getStarred2: the listener's on-demand collection (the same one the
web player and REST v4 keep)."""

from __future__ import annotations

from datetime import datetime

from airwave.api.subsonic.browse import (
    album_directory,
    album_payload,
    artist_payload,
    song_payload,
)
from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.core import collection, ids
from airwave.core.catalog import browse, catalog
from airwave.core.clock import iso_timestamp
from airwave.core.radio import apps, delivery

_KINDS = {"id": ("track", "album", "artist"), "albumId": ("album",), "artistId": ("artist",)}


def _refs(s: SubsonicCall) -> list[ids.Ref]:
    return [
        catalog.resolve(value, *kinds) for name, kinds in _KINDS.items() for value in s.texts(name)
    ]


@method("star", writes=True)
def star(s: SubsonicCall) -> Payload:
    """Into the collection; a song a station played lately is also a thumbs-up there."""
    listener, refs = s.call.require_listener(), _refs(s)
    with s.call.write() as db:
        apps.star(db, s.call.settings, listener, refs, s.call.now())
    return {}


@method("unstar", writes=True)
def unstar(s: SubsonicCall) -> Payload:
    """Out of the collection; a thumbs-up a star gave on a station is taken back."""
    listener, refs = s.call.require_listener(), _refs(s)
    with s.call.write() as db:
        apps.unstar(db, s.call.settings, listener, refs, s.call.now())
    return {}


def _starred(s: SubsonicCall) -> dict[str, dict[int, datetime]]:
    """What the listener collected, by kind: id -> when, newest first."""
    listener = s.call.require_listener()
    delivery.require_on_demand(s.call.settings, listener)
    found: dict[str, dict[int, datetime]] = {"artist": {}, "album": {}, "track": {}}
    cursor = None
    while True:
        page = collection.page(
            s.call.reader(),
            listener.id,
            kinds=["AR", "AL", "TR"],
            order="added",
            limit=1000,
            cursor=cursor,
        )
        for item in page.items:
            found[item.ref.kind][item.ref.id] = item.added_at
        cursor = page.cursor
        if cursor is None:
            return found


def _when(moment: datetime) -> str:
    return iso_timestamp(moment)


def _starred_views(
    s: SubsonicCall,
) -> tuple[
    dict[str, dict[int, datetime]],
    list[browse.ArtistEntry],
    list[browse.AlbumEntry],
    list[catalog.TrackView],
]:
    """When each item was starred, and the starred artists, albums and songs to show."""
    db, kept = s.call.reader(), _starred(s)
    artists = browse.album_artists(db, list(kept["artist"]))
    albums = browse.albums(db, list(kept["album"]))
    return kept, artists, albums, catalog.track_views(db, list(kept["track"]))


@method("getStarred2")
def get_starred2(s: SubsonicCall) -> Payload:
    kept, artists, albums, tracks = _starred_views(s)
    return {
        "starred2": {
            "artist": [
                {**artist_payload(a), "starred": _when(kept["artist"][a.artist.id])}
                for a in artists
            ],
            "album": [
                {**album_payload(a), "starred": _when(kept["album"][a.album.id])} for a in albums
            ],
            "song": [
                {**song_payload(t), "starred": _when(kept["track"][t.track.id])} for t in tracks
            ],
        }
    }


@method("getStarred")
def get_starred(s: SubsonicCall) -> Payload:
    kept, artists, albums, tracks = _starred_views(s)
    return {
        "starred": {
            "artist": [
                {
                    "id": ids.music_id("artist", a.artist.id),
                    "name": a.artist.name,
                    "starred": _when(kept["artist"][a.artist.id]),
                }
                for a in artists
            ],
            "album": [
                {**album_directory(a), "starred": _when(kept["album"][a.album.id])} for a in albums
            ],
            "song": [
                {**song_payload(t), "starred": _when(kept["track"][t.track.id])} for t in tracks
            ],
        }
    }
