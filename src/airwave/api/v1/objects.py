"""Shapes shared by many endpoints: art lists, artist/album/track summaries (spec §6)."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.schemas import ResponseModel
from airwave.core import ids
from airwave.core.catalog import TrackView
from airwave.library.artwork import SIZES
from airwave.store.models import Album, Artist, Artwork


class ArtImage(ResponseModel):
    url: str
    size: int


def art(call: Call, artwork: Artwork | None) -> list[ArtImage]:
    """Every size of one picture, as absolute URLs (an empty list when there is none)."""
    if artwork is None:
        return []
    return [ArtImage(url=f"{call.base_url}/art/{artwork.content_hash}/{size}.jpg", size=size) for size in SIZES]


def mosaic_art(call: Call, hashes: list[str]) -> list[ArtImage]:
    if not hashes:
        return []
    key = "-".join(hashes[:4])
    return [ArtImage(url=f"{call.base_url}/art/mosaic/{key}/{size}.jpg", size=size) for size in SIZES]


class ArtistSummary(ResponseModel):
    music_id: str
    pandora_id: str
    name: str
    artist_name: str
    seo_token: str
    art: list[ArtImage]


def artist_summary(call: Call, artist: Artist, artist_art: list[ArtImage]) -> ArtistSummary:
    return ArtistSummary(
        music_id=ids.music_id("artist", artist.id), pandora_id=ids.pandora_id("artist", artist.id),
        name=artist.name, artist_name=artist.name, seo_token=ids.seo_token("artist", artist.id, artist.name),
        art=artist_art,
    )


class AlbumSummary(ResponseModel):
    music_id: str
    pandora_id: str
    name: str
    album_title: str
    artist_name: str
    artist_music_id: str
    year: int | None
    is_compilation: bool
    track_count: int
    seo_token: str
    art: list[ArtImage]
    dominant_color: str


def album_summary(call: Call, album: Album, artist: Artist, artwork: Artwork | None, track_count: int) -> AlbumSummary:
    return AlbumSummary(
        music_id=ids.music_id("album", album.id), pandora_id=ids.pandora_id("album", album.id), name=album.title,
        album_title=album.title, artist_name=artist.name, artist_music_id=ids.music_id("artist", artist.id),
        year=album.year, is_compilation=album.is_compilation, track_count=track_count,
        seo_token=ids.seo_token("album", album.id, artist.name, album.title), art=art(call, artwork),
        dominant_color=artwork.dominant_color if artwork else "808080",
    )


class TrackSummary(ResponseModel):
    music_id: str
    pandora_id: str
    name: str
    song_title: str
    artist_name: str
    artist_music_id: str
    album_title: str
    album_music_id: str
    album_artist_name: str
    track_num: int | None
    disc_num: int | None
    track_length: int = Field(description="whole seconds")
    year: int | None
    genre: list[str]
    explicit: bool
    is_compilation: bool
    composer_name: str
    file_gain: str = Field(description="dB, from ReplayGain; '0.00' when unknown")
    album_art: list[ArtImage]
    has_lyrics: bool
    seo_token: str
    artist_seo_token: str
    album_seo_token: str


def track_summary(call: Call, view: TrackView) -> TrackSummary:
    t, artist, album, album_artist = view.track, view.artist, view.album, view.album_artist
    return TrackSummary(
        music_id=ids.music_id("track", t.id), pandora_id=ids.pandora_id("track", t.id), name=t.title,
        song_title=t.title, artist_name=artist.name, artist_music_id=ids.music_id("artist", artist.id),
        album_title=album.title, album_music_id=ids.music_id("album", album.id), album_artist_name=album_artist.name,
        track_num=t.track_no, disc_num=t.disc_no, track_length=round(t.duration), year=t.year or album.year,
        genre=view.genres, explicit=t.explicit, is_compilation=album.is_compilation, composer_name=t.composer or "",
        file_gain=f"{t.rg_track_gain if t.rg_track_gain is not None else 0.0:.2f}", album_art=art(call, view.album_art),
        has_lyrics=bool(t.lyrics),
        seo_token=ids.seo_token("track", t.id, artist.name, album.title, t.title),
        artist_seo_token=ids.seo_token("artist", artist.id, artist.name),
        album_seo_token=ids.seo_token("album", album.id, album_artist.name, album.title),
    )
