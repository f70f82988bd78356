"""Annotations: the catalogue's objects keyed by pandoraId, as the later API versions answer them
(v3 `sod/search`, and the v4 catalogue and collections built on the same shapes)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.schemas import ResponseModel, absent_when_none
from airwave.api.v1.objects import ArtImage, art, picture_art
from airwave.core import ids, music, playlists
from airwave.core.entities import Artwork

ICON_SIZE = 500


class Icon(ResponseModel):
    art_url: str = Field(description=f'the {ICON_SIZE} px picture; "" when there is none')
    dominant_color: str = Field(description="6 hex digits")


class RightsInfo(ResponseModel):
    has_interactive: bool = Field(description="the listener may play it on demand")
    has_radio_rights: bool
    has_offline: bool
    expiration_time: int = Field(description="0: never")


class Annotation(ResponseModel):
    """One object: a track (TR), album (AL), artist (AR), genre (GE) or playlist (PL)."""

    type: str
    pandora_id: str
    music_id: str
    name: str
    sortable_name: str
    icon: Icon
    art: list[ArtImage]
    slug_plus_pandora_id: str | None = absent_when_none("tracks, albums and artists: seoToken")
    shareable_url_path: str | None = absent_when_none(
        "tracks, albums and artists: the page's path on this site, /music/ + seoToken"
    )
    artist_id: str | None = absent_when_none("tracks and albums: the artist's pandoraId")
    artist_name: str | None = absent_when_none("tracks and albums")
    album_id: str | None = absent_when_none("tracks: the album's pandoraId")
    album_name: str | None = absent_when_none("tracks")
    duration: int | None = absent_when_none("tracks and albums: whole seconds")
    track_number: int | None = absent_when_none("tracks, when tagged")
    volume_number: int | None = absent_when_none("tracks, when tagged")
    explicitness: str | None = absent_when_none('tracks and albums: "EXPLICIT" or "NONE"')
    rights_info: RightsInfo | None = absent_when_none("tracks and albums")
    track_count: int | None = absent_when_none("albums, artists and genres: present tracks")
    album_count: int | None = absent_when_none("artists")
    tracks: list[str] | None = absent_when_none("albums: their tracks' pandoraIds in order")
    has_radio: bool | None = absent_when_none("artists and genres: a station can grow from it")
    listener_count: int | None = absent_when_none(
        "artists and genres: listeners with a station seeded by it"
    )
    station_name: str | None = absent_when_none("genres")
    total_tracks: int | None = absent_when_none("playlists: entries, available or not")
    version: int | None = absent_when_none("playlists: the version edits must name")
    description: str | None = absent_when_none("playlists")
    time_created: int | None = absent_when_none("playlists: ms since the epoch")
    time_last_updated: int | None = absent_when_none("playlists: ms since the epoch")
    owner_name: str | None = absent_when_none("playlists: the listener who made it")


def _icon(images: list[ArtImage], color: str | None) -> Icon:
    url = next((i.url for i in images if i.size == ICON_SIZE), images[-1].url if images else "")
    return Icon(art_url=url, dominant_color=color or "808080")


_RIGHTS = {
    on_demand: RightsInfo(
        has_interactive=on_demand, has_radio_rights=True, has_offline=False, expiration_time=0
    )
    for on_demand in (False, True)
}


def _rights(on_demand: bool) -> RightsInfo:
    return _RIGHTS[on_demand]


def _named(
    call: Call,
    code: str,
    kind: ids.Kind,
    ref_id: int,
    name: str,
    images: list[ArtImage],
    color: str | None,
    seo: str | None,
) -> dict[str, object]:
    """The fields every annotation has."""
    return {
        "type": code,
        "pandora_id": ids.pandora_id(kind, ref_id),
        # playlists have no musicId of their own: their pandoraId stands in
        "music_id": ids.pandora_id(kind, ref_id)
        if kind == "playlist"
        else ids.music_id(kind, ref_id),
        "name": name,
        "sortable_name": name.casefold(),
        "icon": _icon(images, color),
        "art": images,
        "slug_plus_pandora_id": seo,
        # a path on this site, as clients split it: "/music/" + the seoToken
        "shareable_url_path": f"/music/{seo}" if seo else None,
    }


def annotation(call: Call, note: music.Note, on_demand: bool) -> Annotation:
    """An annotation of what core.music.annotate found."""
    if isinstance(note, music.TrackNote):
        seo = ids.seo_token("track", note.track_id, note.artist_name, note.album_title, note.title)
        images = art(call, note.cover)
        return Annotation(
            **_named(
                call, "TR", "track", note.track_id, note.title, images, _color(note.cover), seo
            ),
            artist_id=ids.pandora_id("artist", note.artist_id),
            artist_name=note.artist_name,
            album_id=ids.pandora_id("album", note.album_id),
            album_name=note.album_title,
            duration=round(note.duration),
            track_number=note.track_no,
            volume_number=note.disc_no,
            explicitness="EXPLICIT" if note.explicit else "NONE",
            rights_info=_rights(on_demand),
        )
    if isinstance(note, music.AlbumNote):
        album, artist, cover = note.view.album, note.view.artist, note.view.artwork
        seo = ids.seo_token("album", album.id, artist.name, album.title)
        return Annotation(
            **_named(
                call, "AL", "album", album.id, album.title, art(call, cover), _color(cover), seo
            ),
            artist_id=ids.pandora_id("artist", artist.id),
            artist_name=artist.name,
            duration=round(note.duration),
            explicitness="EXPLICIT" if note.explicit else "NONE",
            rights_info=_rights(on_demand),
            track_count=len(note.track_ids),
            tracks=[ids.pandora_id("track", t) for t in note.track_ids],
        )
    if isinstance(note, music.ArtistNote):
        artist, picture = note.view.artist, note.view.picture
        seo = ids.seo_token("artist", artist.id, artist.name)
        images = picture_art(call, picture)
        return Annotation(
            **_named(
                call, "AR", "artist", artist.id, artist.name, images, _color(picture.artwork), seo
            ),
            track_count=note.track_count,
            album_count=note.album_count,
            has_radio=note.track_count > 0,
            listener_count=note.view.listener_count,
        )
    genre = note.genre
    cover = note.samples[0].album_art if note.samples else None
    return Annotation(
        **_named(call, "GE", "genre", genre.id, genre.name, art(call, cover), _color(cover), None),
        track_count=note.track_count,
        has_radio=note.track_count > 0,
        listener_count=note.listener_count,
        station_name=f"{genre.name} Radio",
    )


def playlist_annotation(call: Call, note: playlists.PlaylistNote) -> Annotation:
    """An annotation of one of the listener's playlists."""
    p = note.playlist
    images = picture_art(call, note.picture)
    return Annotation(
        **_named(call, "PL", "playlist", p.id, p.name, images, _color(note.picture.artwork), None),
        duration=round(p.duration),
        total_tracks=p.total_tracks,
        version=p.version,
        description=p.description,
        time_created=_ms(p.created_at),
        time_last_updated=_ms(p.updated_at),
        owner_name=note.owner_name,
    )


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def annotate(call: Call, refs: list[ids.Ref], on_demand: bool) -> dict[str, Annotation]:
    """Annotations of catalogue objects and of the listener's own playlists among `refs`,
    keyed by pandoraId; other and unknown ids are left out."""
    db, listener = call.reader(), call.require_listener()
    found = {
        ids.pandora_id(ref.kind, ref.id): annotation(call, note, on_demand)
        for ref, note in music.annotate(db, refs).items()
    }
    wanted = [r.id for r in refs if r.kind == "playlist"]
    for playlist_id, note in playlists.notes(db, listener.id, wanted).items():
        found[ids.pandora_id("playlist", playlist_id)] = playlist_annotation(call, note)
    return found


def _color(artwork: Artwork | music.Cover | None) -> str | None:
    return artwork.dominant_color if artwork is not None else None
