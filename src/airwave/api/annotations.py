"""Annotations: the catalogue's objects keyed by pandoraId, as the later API versions answer them
(v3 `sod/search`, and the v4 catalogue and collections built on the same shapes)."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.schemas import ResponseModel, absent_when_none
from airwave.api.v1.objects import ArtImage, art, detail_url, picture_art
from airwave.core import ids, music
from airwave.core.catalog.catalog import TrackView

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
    """One object: a track (TR), album (AL), artist (AR) or genre (GE)."""

    type: str
    pandora_id: str
    music_id: str
    name: str
    sortable_name: str
    icon: Icon
    art: list[ArtImage]
    slug_plus_pandora_id: str | None = absent_when_none("tracks, albums and artists: seoToken")
    shareable_url_path: str | None = absent_when_none("tracks, albums and artists")
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


def _icon(images: list[ArtImage], color: str | None) -> Icon:
    url = next((i.url for i in images if i.size == ICON_SIZE), images[-1].url if images else "")
    return Icon(art_url=url, dominant_color=color or "808080")


def _rights(on_demand: bool) -> RightsInfo:
    return RightsInfo(
        has_interactive=on_demand, has_radio_rights=True, has_offline=False, expiration_time=0
    )


def annotation(call: Call, note: music.Note, on_demand: bool) -> Annotation:
    """An annotation of what core.music.annotate found."""
    if isinstance(note, TrackView):
        t, artist, album = note.track, note.artist, note.album
        seo = ids.seo_token("track", t.id, artist.name, album.title, t.title)
        images = art(call, note.album_art)
        return Annotation(
            type="TR",
            pandora_id=ids.pandora_id("track", t.id),
            music_id=ids.music_id("track", t.id),
            name=t.title,
            sortable_name=t.title.casefold(),
            icon=_icon(images, note.album_art.dominant_color if note.album_art else None),
            art=images,
            slug_plus_pandora_id=seo,
            shareable_url_path=detail_url(call, seo),
            artist_id=ids.pandora_id("artist", artist.id),
            artist_name=artist.name,
            album_id=ids.pandora_id("album", album.id),
            album_name=album.title,
            duration=round(t.duration),
            track_number=t.track_no,
            volume_number=t.disc_no,
            explicitness="EXPLICIT" if t.explicit else "NONE",
            rights_info=_rights(on_demand),
        )
    if isinstance(note, music.AlbumNote):
        album, artist, artwork = note.view.album, note.view.artist, note.view.artwork
        seo = ids.seo_token("album", album.id, artist.name, album.title)
        images = art(call, artwork)
        return Annotation(
            type="AL",
            pandora_id=ids.pandora_id("album", album.id),
            music_id=ids.music_id("album", album.id),
            name=album.title,
            sortable_name=album.title.casefold(),
            icon=_icon(images, artwork.dominant_color if artwork else None),
            art=images,
            slug_plus_pandora_id=seo,
            shareable_url_path=detail_url(call, seo),
            artist_id=ids.pandora_id("artist", artist.id),
            artist_name=artist.name,
            duration=round(note.duration),
            explicitness="EXPLICIT" if note.explicit else "NONE",
            rights_info=_rights(on_demand),
            track_count=len(note.track_ids),
            tracks=[ids.pandora_id("track", t) for t in note.track_ids],
        )
    if isinstance(note, music.ArtistNote):
        artist = note.view.artist
        seo = ids.seo_token("artist", artist.id, artist.name)
        images = picture_art(call, note.view.picture)
        picture = note.view.picture.artwork
        return Annotation(
            type="AR",
            pandora_id=ids.pandora_id("artist", artist.id),
            music_id=ids.music_id("artist", artist.id),
            name=artist.name,
            sortable_name=artist.name.casefold(),
            icon=_icon(images, picture.dominant_color if picture else None),
            art=images,
            slug_plus_pandora_id=seo,
            shareable_url_path=detail_url(call, seo),
            track_count=note.track_count,
            album_count=note.album_count,
            has_radio=note.track_count > 0,
            listener_count=note.view.listener_count,
        )
    genre = note.genre
    cover = note.samples[0].album_art if note.samples else None
    images = art(call, cover)
    return Annotation(
        type="GE",
        pandora_id=ids.pandora_id("genre", genre.id),
        music_id=ids.music_id("genre", genre.id),
        name=genre.name,
        sortable_name=genre.name.casefold(),
        icon=_icon(images, cover.dominant_color if cover else None),
        art=images,
        track_count=note.track_count,
        has_radio=note.track_count > 0,
        listener_count=note.listener_count,
        station_name=f"{genre.name} Radio",
    )
