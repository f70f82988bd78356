"""Shapes shared by many endpoints: art lists, artist/album/track summaries, and the track object a
fragment,
an ad item and an on-demand answer carry (spec §6)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.schemas import ResponseModel, absent_when_none
from airwave.core import ids
from airwave.core.catalog.catalog import ArtistView, Lyrics, Picture, TrackView
from airwave.core.music import AlbumView
from airwave.core.music import GenreStation as GenreStation_
from airwave.core.radio.ads import ARTIST_NAME, AdItem
from airwave.core.radio.playlist import TrackItem
from airwave.library.artwork import SIZES

AudioFormat = Literal["aacplus", "mp3", "mp3-hifi", "opus", "original"]


class ArtImage(ResponseModel):
    url: str
    size: int


def art(call: Call, artwork: Any) -> list[ArtImage]:
    """Every size of one stored artwork, as absolute URLs (an empty list when there is none)."""
    if artwork is None:
        return []
    return [
        ArtImage(url=f"{call.base_url}/art/{artwork.content_hash}/{size}.jpg", size=size)
        for size in SIZES
    ]


def mosaic_art(call: Call, hashes: list[str] | tuple[str, ...]) -> list[ArtImage]:
    if not hashes:
        return []
    key = "-".join(hashes[:4])
    return [
        ArtImage(url=f"{call.base_url}/art/mosaic/{key}/{size}.jpg", size=size) for size in SIZES
    ]


def picture_art(call: Call, picture: Picture) -> list[ArtImage]:
    """A picture as art: its artwork in every size, else the mosaic of its covers (empty when
    neither)."""
    return (
        art(call, picture.artwork)
        if picture.artwork is not None
        else mosaic_art(call, picture.mosaic)
    )


class ArtistSummary(ResponseModel):
    music_id: str
    pandora_id: str
    name: str
    artist_name: str
    seo_token: str
    detail_url: str = Field(description="the artist's page in the web player")
    listener_count: int = Field(description="listeners with a station seeded by this artist")
    art: list[ArtImage]


def artist_summary(call: Call, view: ArtistView) -> ArtistSummary:
    artist = view.artist
    seo = ids.seo_token("artist", artist.id, artist.name)
    return ArtistSummary(
        music_id=ids.music_id("artist", artist.id),
        pandora_id=ids.pandora_id("artist", artist.id),
        name=artist.name,
        artist_name=artist.name,
        seo_token=seo,
        detail_url=detail_url(call, seo),
        listener_count=view.listener_count,
        art=picture_art(call, view.picture),
    )


def detail_url(call: Call, seo_token: str) -> str:
    """The web player's page of an artist, album or track (spec §6.3 `songDetailURL` and
    friends)."""
    return f"{call.base_url}/music/{seo_token}"


class AlbumSummary(ResponseModel):
    music_id: str
    pandora_id: str
    name: str
    album_title: str
    artist_name: str
    artist_music_id: str
    year: str = Field(description='the release year as a string ("2016"); "" when unknown')
    is_compilation: bool
    track_count: int
    seo_token: str
    artist_seo_token: str
    amazon_url: str = Field(description="always empty: Airwave sells nothing")
    art: list[ArtImage]
    dominant_color: str


def album_summary(call: Call, view: AlbumView) -> AlbumSummary:
    album, artist, artwork, track_count = view.album, view.artist, view.artwork, view.track_count
    return AlbumSummary(
        music_id=ids.music_id("album", album.id),
        pandora_id=ids.pandora_id("album", album.id),
        name=album.title,
        album_title=album.title,
        artist_name=artist.name,
        artist_music_id=ids.music_id("artist", artist.id),
        year=str(album.year) if album.year else "",
        is_compilation=album.is_compilation,
        track_count=track_count,
        seo_token=ids.seo_token("album", album.id, artist.name, album.title),
        artist_seo_token=ids.seo_token("artist", artist.id, artist.name),
        amazon_url="",
        art=art(call, artwork),
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
    track_seo_token: str = Field(description="the same as seoToken")
    artist_seo_token: str
    album_seo_token: str
    amazon_url: str = Field(description="always empty: Airwave sells nothing")


def track_summary(call: Call, view: TrackView) -> TrackSummary:
    t, artist, album, album_artist = view.track, view.artist, view.album, view.album_artist
    track_seo = ids.seo_token("track", t.id, artist.name, album.title, t.title)
    return TrackSummary(
        music_id=ids.music_id("track", t.id),
        pandora_id=ids.pandora_id("track", t.id),
        name=t.title,
        song_title=t.title,
        artist_name=artist.name,
        artist_music_id=ids.music_id("artist", artist.id),
        album_title=album.title,
        album_music_id=ids.music_id("album", album.id),
        album_artist_name=album_artist.name,
        track_num=t.track_no,
        disc_num=t.disc_no,
        track_length=round(t.duration),
        year=t.year or album.year,
        genre=view.genres,
        explicit=t.explicit,
        is_compilation=album.is_compilation,
        composer_name=t.composer or "",
        file_gain=f"{t.rg_track_gain if t.rg_track_gain is not None else 0.0:.2f}",
        album_art=art(call, view.album_art),
        has_lyrics=bool(t.lyrics),
        seo_token=track_seo,
        track_seo_token=track_seo,
        artist_seo_token=ids.seo_token("artist", artist.id, artist.name),
        album_seo_token=ids.seo_token("album", album.id, album_artist.name, album.title),
        amazon_url="",
    )


class LyricSnippet(ResponseModel):
    lyric_id: str
    checksum: str
    lines: list[str] = Field(description="the first lines of the lyrics")


SNIPPET_LINES = 4


def lyric_snippet(lyrics: Lyrics | None) -> LyricSnippet | None:
    if lyrics is None:
        return None
    return LyricSnippet(
        lyric_id=lyrics.lyric_id,
        checksum=lyrics.checksum,
        lines=[line for line in lyrics.lines if line][:SNIPPET_LINES],
    )


class GenreStation(ResponseModel):
    """A genre as a station to start (music/genres, search/getStationRecommendations)."""

    music_id: str
    pandora_id: str
    token: str = Field(description="the genre's name as a slug")
    name: str
    station_name: str
    track_count: int
    listener_count: int = Field(description="listeners with a station seeded by this genre")
    art: list[ArtImage]
    sample_tracks: list[TrackSummary]
    is_redirect: bool = False
    is_comedy: bool


def genre_station(call: Call, g: GenreStation_) -> GenreStation:
    return GenreStation(
        music_id=ids.music_id("genre", g.genre.id),
        pandora_id=ids.pandora_id("genre", g.genre.id),
        token=ids.slug(g.genre.name),
        name=g.genre.name,
        station_name=f"{g.genre.name} Radio",
        track_count=g.track_count,
        listener_count=g.listener_count,
        art=art(call, g.samples[0].album_art) if g.samples else [],
        sample_tracks=[track_summary(call, v) for v in g.samples],
        is_comedy=g.genre.category.startswith("Comedy"),
    )


class TrackKey(ResponseModel):
    track_id: str
    track_type: str
    spin_id: str


class TrackObject(ResponseModel):
    """A track served by a station (spec §6.3)."""

    track_token: str
    music_id: str
    pandora_id: str
    track_type: str
    song_title: str
    artist_name: str
    artist_music_id: str
    album_title: str
    album_art: list[ArtImage]
    artist_art: list[ArtImage]
    track_length: int
    rating: int = Field(
        description="1 = thumbs-up on this station; thumbs-down tracks are never served"
    )
    station_id: str
    file_gain: str = Field(
        description="dB: ReplayGain when tagged, else measured EBU R128 loudness"
    )
    track_peak: str | None = absent_when_none(
        "extension: the track's ReplayGain peak (1.0 = full scale): a player keeps the gain under "
        "1/peak so it never clips; absent when untagged"
    )
    audio_url: str = Field(alias="audioURL")
    audio_encoding: str = Field(description="what audioURL really delivers")
    audio_receipt_url: str = Field(alias="audioReceiptURL")
    audio_skip_url: str
    genre: list[str]
    user_seed: str = Field(
        description='musicId of the seed or thumbs-up that led here; "" when none (ads, replays)'
    )
    is_seed: bool
    is_bookmarked: bool
    is_featured: bool
    is_compilation: bool
    composer_name: str
    allow_skip: bool
    allow_feedback: bool
    allow_tired_of_track: bool
    allow_start_station_from_track: bool
    allow_share_track: bool
    allow_buy_track: bool
    rights: list[str]
    identity: str
    track_key: TrackKey
    song_detail_url: str = Field(alias="songDetailURL")
    artist_detail_url: str = Field(alias="artistDetailURL")
    album_detail_url: str = Field(alias="albumDetailURL")
    track_seo_token: str
    artist_seo_token: str
    album_seo_token: str
    listening_timestamp: str = Field(
        description="epoch milliseconds when the track was issued, as a string (as the REST "
        'record shows it: "1512414066099")'
    )
    lyric_snippet: LyricSnippet | None = absent_when_none("present when the track has lyrics")
    amazon_url: str = Field(description="always empty: Airwave sells nothing")
    itunes_url: str = Field(description="always empty")
    ad_token: str | None = absent_when_none(
        'ads only (`trackType: "Ad"`): the token for ad/registerImpression '
        "and ad/brokenAd (the same value as trackToken)"
    )
    click_through_url: str | None = absent_when_none("ads only: the advertiser's page")


def track_object(call: Call, item: TrackItem) -> TrackObject:
    """A spin as a track object, with its signed audio, receipt and skip URLs."""
    spin, view, links = item.spin, item.view, item.links
    t, artist, album = view.track, view.artist, view.album
    track_seo = ids.seo_token("track", t.id, artist.name, album.title, t.title)
    artist_seo = ids.seo_token("artist", artist.id, artist.name)
    album_seo = ids.seo_token("album", album.id, view.album_artist.name, album.title)
    lyrics = item.lyrics
    return TrackObject(
        track_token=spin.token,
        music_id=ids.music_id("track", t.id),
        pandora_id=ids.pandora_id("track", t.id),
        track_type="Track",
        song_title=t.title,
        artist_name=artist.name,
        artist_music_id=ids.music_id("artist", artist.id),
        album_title=album.title,
        album_art=art(call, view.album_art),
        artist_art=picture_art(call, item.artist_picture),
        track_length=round(t.duration),
        rating=item.rating,
        station_id=str(item.station_id),
        file_gain=f"{item.gain if item.gain is not None else 0.0:.2f}",
        track_peak=f"{t.rg_track_peak:.6f}" if t.rg_track_peak is not None else None,
        audio_url=links.audio_url,
        audio_encoding=links.encoding,
        audio_receipt_url=links.receipt_url,
        audio_skip_url=links.skip_url,
        genre=view.genres,
        user_seed=spin.seed_music_id or "",
        is_seed=item.is_seed,
        is_bookmarked=item.is_bookmarked,
        is_featured=False,
        is_compilation=album.is_compilation,
        composer_name=t.composer or "",
        allow_skip=item.allow_skip,
        allow_feedback=item.allow_feedback,
        allow_tired_of_track=True,
        allow_start_station_from_track=True,
        allow_share_track=False,
        allow_buy_track=False,
        rights=item.rights,
        identity=f"{ids.pandora_id('track', t.id)}:{spin.id}",
        track_key=TrackKey(
            track_id=ids.music_id("track", t.id), track_type="Track", spin_id=str(spin.id)
        ),
        song_detail_url=f"{call.base_url}/music/{track_seo}",
        artist_detail_url=f"{call.base_url}/music/{artist_seo}",
        album_detail_url=f"{call.base_url}/music/{album_seo}",
        track_seo_token=track_seo,
        artist_seo_token=artist_seo,
        album_seo_token=album_seo,
        listening_timestamp=str(int(spin.issued_at.timestamp() * 1000)),
        lyric_snippet=lyric_snippet(lyrics),
        amazon_url="",
        itunes_url="",
    )


def ad_track_object(call: Call, item: AdItem, station_id: int) -> TrackObject:
    """The track object of an ad placed in a fragment (the shape is documented on
    playlist/getFragment)."""
    spin, campaign, links = item.spin, item.campaign, item.links
    pandora = ids.pandora_id("ad", campaign.id)
    return TrackObject(
        track_token=spin.token,
        music_id="",
        pandora_id=pandora,
        track_type="Ad",
        song_title=campaign.title,
        artist_name=ARTIST_NAME,
        artist_music_id="",
        album_title="",
        album_art=art(call, item.art),
        artist_art=[],
        track_length=round(campaign.duration),
        rating=0,
        station_id=str(station_id),
        file_gain="0.00",
        audio_url=links.audio_url,
        audio_encoding=links.encoding,
        audio_receipt_url=links.receipt_url,
        audio_skip_url=links.skip_url,
        genre=[],
        user_seed="",
        is_seed=False,
        is_bookmarked=False,
        is_featured=False,
        is_compilation=False,
        composer_name="",
        allow_skip=False,
        allow_feedback=False,
        allow_tired_of_track=False,
        allow_start_station_from_track=False,
        allow_share_track=False,
        allow_buy_track=False,
        rights=[],
        identity=f"{pandora}:{spin.id}",
        track_key=TrackKey(track_id=pandora, track_type="Ad", spin_id=str(spin.id)),
        song_detail_url=campaign.click_url,
        artist_detail_url="",
        album_detail_url="",
        track_seo_token="",
        artist_seo_token="",
        album_seo_token="",
        listening_timestamp=str(int(spin.issued_at.timestamp() * 1000)),
        amazon_url="",
        itunes_url="",
        ad_token=spin.token,
        click_through_url=campaign.click_url,
    )
