"""Playlists: the listener's own, the same ones the web player and REST v4 edit (core.playlists),
ids PL:n; and the listener's Airwave stations, ids ST:0:n, named "Radio: ..." and read-only,
whose entries are the station's next fragment each time an app opens one (core.radio.apps): its
tracks and, for tiers with ads, its ads where getFragment places them, as songs `AD:<adToken>`
that `stream` plays (media)."""

from __future__ import annotations

from pathlib import PurePath

from airwave.api.subsonic.browse import songs
from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.api.subsonic.envelope import GENERIC, SubsonicError
from airwave.audio.formats import original_content_type
from airwave.core import ids, playlists
from airwave.core.clock import iso_timestamp
from airwave.core.radio import apps, delivery
from airwave.core.radio.ads import ARTIST_NAME, AdItem
from airwave.core.radio.playlist import FRAGMENT_SIZE

RADIO_PREFIX = "Radio: "
RADIO_COMMENT = (
    "Airwave station: each time it is opened it holds the station's next tracks; rate them "
    "(1 or 5 stars) or star them to thumb them down or up on the station"
)


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


def _is_station(token: str) -> bool:
    ref = ids.parse(token)
    return ref is not None and ref.kind == "station"


def _station_summary(s: SubsonicCall, station) -> Payload:  # noqa: ANN001
    return {
        "id": ids.pandora_id("station", station.id),
        "name": RADIO_PREFIX + station.name,
        "comment": RADIO_COMMENT,
        "owner": s.call.require_listener().username,
        "public": False,
        "readonly": True,
        "songCount": FRAGMENT_SIZE,
        "duration": 0,
        "created": iso_timestamp(station.created_at),
        "changed": iso_timestamp(station.last_played_at or station.created_at),
    }


def _ad_song(ad: AdItem) -> Payload:
    """A Child element for an ad of a station's fragment: a song apps play with `stream`."""
    campaign, id_ = ad.campaign, ids.ad_token_id(ad.spin.token)
    return {
        "id": id_,
        "isDir": False,
        "title": campaign.title,
        "artist": ARTIST_NAME,
        "coverArt": id_ if ad.art is not None else None,
        "contentType": original_content_type(campaign.path, campaign.codec),
        "suffix": PurePath(campaign.path).suffix.lstrip(".").lower() or campaign.codec,
        "duration": round(campaign.duration),
        "type": "music",
        "isVideo": False,
    }


def _station_entries(s: SubsonicCall, played: apps.StationPlay) -> list[Payload]:
    """The fragment's tracks as songs and its ads as ad songs, in the fragment's order."""
    tracks = [e for e in played.entries if isinstance(e, int)]
    found = {e["id"]: e for e in songs(s, tracks)}
    entries = []
    for entry in played.entries:
        if isinstance(entry, int):
            song = found.get(ids.music_id("track", entry))
            if song is not None:
                entries.append(song)
        else:
            entries.append(_ad_song(entry))
    return entries


def _refuse_station_edit(s: SubsonicCall, token: str) -> None:
    """Stations are edited in the web player; as playlists they are read-only (error 50)."""
    apps.refuse_station_edit(s.call.reader(), s.call.require_listener().id, token)


@method("getPlaylists")
def get_playlists(s: SubsonicCall) -> Payload:
    listed = apps.app_playlists(s.call.reader(), s.call.settings, s.call.require_listener())
    return {
        "playlists": {
            "playlist": [_summary(s, p) for p in listed.playlists]
            + [_station_summary(s, st) for st in listed.stations]
        }
    }


@method("getPlaylist")
def get_playlist(s: SubsonicCall) -> Payload:
    """A playlist; a station's: its next fragment with its ads (the same call as REST
    getFragment)."""
    token = s.required("id")
    if _is_station(token):
        listener = s.call.require_listener()
        with s.call.write() as db:
            played = apps.play_station(
                db, s.call.services, s.call.base_url, listener, token, s.call.now()
            )
        entries = _station_entries(s, played)
        return {
            "playlist": {
                **_station_summary(s, played.station),
                "songCount": len(entries),
                "duration": sum(e["duration"] for e in entries),
                "entry": entries,
            }
        }
    listener_id = _allowed(s)
    return _full(s, playlists.owned(s.call.reader(), listener_id, token))


@method("createPlaylist", writes=True)
def create_playlist(s: SubsonicCall) -> Payload:
    """A new playlist (`name`), or (`playlistId`) an existing one's songs replaced."""
    existing = s.text("playlistId")
    if existing and _is_station(existing):
        _refuse_station_edit(s, existing)
    listener_id = _allowed(s)
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
    token = s.required("playlistId")
    if _is_station(token):
        _refuse_station_edit(s, token)
    listener_id = _allowed(s)
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
    token = s.required("id")
    if _is_station(token):
        _refuse_station_edit(s, token)
    listener_id = _allowed(s)
    with s.call.write() as db:
        playlist = playlists.owned(db, listener_id, token)
        playlists.delete_playlist(db, playlist, s.call.now())
    return {}
