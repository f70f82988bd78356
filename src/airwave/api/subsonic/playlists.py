"""Playlists: the listener's own, the same ones the web player and REST v4 edit (core.playlists).
Ids are pandoraIds (PL:n)."""

from __future__ import annotations

from airwave.api.subsonic.browse import songs
from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.api.subsonic.envelope import GENERIC, SubsonicError
from airwave.core import ids, playlists
from airwave.core.clock import iso_timestamp
from airwave.core.radio import delivery


def _allowed(s: SubsonicCall) -> int:
    """The caller's id, for a tier that has the library on demand."""
    listener = s.call.require_listener()
    delivery.require_on_demand(s.call.settings, listener)
    return listener.id


def _summary(s: SubsonicCall, playlist) -> Payload:  # noqa: ANN001
    return {
        "id": ids.pandora_id("playlist", playlist.id),
        "name": playlist.name,
        "comment": playlist.description or None,
        "owner": s.call.require_listener().username,
        "public": False,
        "songCount": playlist.total_tracks,
        "duration": round(playlist.duration),
        "created": iso_timestamp(playlist.created_at),
        "changed": iso_timestamp(playlist.updated_at),
    }


def _full(s: SubsonicCall, playlist) -> Payload:  # noqa: ANN001
    entries = playlists.entries(s.call.reader(), playlist, 0, playlists.MAX_TRACKS)
    tracks = songs(s, [e.track_id for e in entries if e.available])
    return {"playlist": {**_summary(s, playlist), "entry": tracks}}


def _indexes(s: SubsonicCall, name: str) -> list[int]:
    try:
        return [int(v) for v in s.texts(name)]
    except ValueError:
        raise SubsonicError(GENERIC, f"{name} must be whole numbers") from None


@method("getPlaylists")
def get_playlists(s: SubsonicCall) -> Payload:
    listener_id = _allowed(s)
    owned = playlists.of_listener(s.call.reader(), listener_id)
    return {"playlists": {"playlist": [_summary(s, p) for p in owned]}}


@method("getPlaylist")
def get_playlist(s: SubsonicCall) -> Payload:
    listener_id = _allowed(s)
    return _full(s, playlists.owned(s.call.reader(), listener_id, s.required("id")))


@method("createPlaylist", writes=True)
def create_playlist(s: SubsonicCall) -> Payload:
    """A new playlist (`name`), or (`playlistId`) an existing one's songs replaced."""
    listener_id = _allowed(s)
    existing = s.text("playlistId")
    name = None if existing else s.required("name")
    with s.call.write() as db:
        tracks = playlists.track_ids(db, s.texts("songId"))
        if existing:
            playlist = playlists.owned(db, listener_id, existing)
            playlists.replace_tracks(db, playlist, playlist.version, tracks, s.call.now())
        else:
            playlist = playlists.create(db, listener_id, name or "", "", tracks, s.call.now())
        made = playlist.id
    return _full(s, playlists.owned(s.call.reader(), listener_id, ids.pandora_id("playlist", made)))


@method("updatePlaylist", writes=True)
def update_playlist(s: SubsonicCall) -> Payload:
    """Rename, describe, remove entries by index and append songs."""
    listener_id = _allowed(s)
    token = s.required("playlistId")
    removing = _indexes(s, "songIndexToRemove")
    now = s.call.now()
    with s.call.write() as db:
        playlist = playlists.owned(db, listener_id, token)
        name, comment = s.text("name"), s.text("comment")
        if name is not None or comment is not None:
            playlists.set_details(db, playlist, now, name=name, description=comment)
        adding = playlists.track_ids(db, s.texts("songIdToAdd"))
        if removing or adding:
            deletes = playlists.item_ids_at(db, playlist, removing)
            size = playlist.total_tracks - len(deletes)
            inserts = [(track_id, size + i) for i, track_id in enumerate(adding)]
            playlists.edit(db, playlist, playlist.version, now, deletes=deletes, inserts=inserts)
    return {}


@method("deletePlaylist", writes=True)
def delete_playlist(s: SubsonicCall) -> Payload:
    listener_id = _allowed(s)
    with s.call.write() as db:
        playlist = playlists.owned(db, listener_id, s.required("id"))
        playlists.delete_playlist(db, playlist, s.call.now())
    return {}
