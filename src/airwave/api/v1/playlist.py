"""v1 playlist/getFragment and the track object of spec §6.3 (also used by ondemand/getReplayTrack)."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field
from sqlalchemy import select

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel, absent_when_none
from airwave.api.v1.objects import ArtImage, art
from airwave.audio.formats import negotiate
from airwave.core import bookmarks, catalog, ids, listening, playlist, stations
from airwave.errors import ErrorCode
from airwave.store.models import Listener, Spin, Station, TrackProfile

AudioFormat = Literal["aacplus", "mp3", "mp3-hifi", "opus", "original"]


class LyricSnippet(ResponseModel):
    lyric_id: str
    checksum: str


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
    rating: int = Field(description="1 = thumbs-up on this station; thumbs-down tracks are never served")
    station_id: str
    file_gain: str = Field(description="dB: ReplayGain when tagged, else measured EBU R128 loudness")
    audio_url: str = Field(alias="audioURL")
    audio_encoding: str = Field(description="what audioURL really delivers")
    audio_receipt_url: str = Field(alias="audioReceiptURL")
    audio_skip_url: str
    genre: list[str]
    user_seed: str | None = Field(description="musicId of the seed or thumbs-up that led here")
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
    listening_timestamp: int = Field(description="epoch milliseconds when the track was issued")
    lyric_snippet: LyricSnippet | None = absent_when_none("present when the track has lyrics")
    ad_token: str | None = absent_when_none("ads only (`trackType: \"Ad\"`): the token for ad/registerImpression "
                                            "and ad/brokenAd (the same value as trackToken)")
    click_through_url: str | None = absent_when_none("ads only: the advertiser's page")


def high_quality_for(call: Call, listener: Listener) -> bool:
    return call.settings.tier(listener.tier).high_quality and listener.high_quality_streaming


def track_objects(call: Call, listener: Listener, station: Station, spins: list[Spin], audio_format: str | None,
                  allow_skip: bool) -> list[TrackObject]:
    """Track objects for freshly written spins, with signed audio, receipt and skip URLs."""
    from airwave.api.v1.music import artist_art
    from airwave.audio.formats import negotiate
    from airwave.audio.urls import audio_url, receipt_url, skip_url

    db = call.reader()
    views = {v.track.id: v for v in catalog.track_views(db, [s.track_id for s in spins])}
    gains = dict(db.execute(select(TrackProfile.track_id, TrackProfile.gain_db)
                            .where(TrackProfile.track_id.in_([s.track_id for s in spins]))).all())
    rated = playlist.ratings(db, spins)
    saved = bookmarks.marked(db, listener.id, "TR", {s.track_id for s in spins})
    seeds = {(s.kind, s.ref_id) for s in stations.seeds_of(db, station.id)}
    policy = call.settings.tier(listener.tier)
    high_quality = high_quality_for(call, listener)
    signer = call.services.signer
    lifetime = timedelta(seconds=call.settings.audio_url_lifetime)
    now = call.now()
    out = []
    for spin in spins:
        view = views[spin.track_id]
        t, artist, album = view.track, view.artist, view.album
        encoding = negotiate(audio_format, high_quality=high_quality, source_codec=t.codec)
        token = signer.audio_token(listener_id=listener.id, track_id=t.id, encoding=encoding,
                                   expires_at=now + lifetime, spin_id=spin.id)
        receipt = signer.receipt_token(listener_id=listener.id, spin_id=spin.id, expires_at=now + lifetime)
        gain = t.rg_track_gain if t.rg_track_gain is not None else gains.get(t.id)
        lyrics = catalog.lyrics_of(t)
        track_seo = ids.seo_token("track", t.id, artist.name, album.title, t.title)
        artist_seo = ids.seo_token("artist", artist.id, artist.name)
        album_seo = ids.seo_token("album", album.id, view.album_artist.name, album.title)
        rights = ["radio"] + (["skip"] if allow_skip else []) + (["replay"] if policy.replays else [])
        out.append(TrackObject(
            track_token=spin.token, music_id=ids.music_id("track", t.id), pandora_id=ids.pandora_id("track", t.id),
            track_type="Track", song_title=t.title, artist_name=artist.name,
            artist_music_id=ids.music_id("artist", artist.id), album_title=album.title,
            album_art=art(call, view.album_art), artist_art=artist_art(call, artist),
            track_length=round(t.duration), rating=rated.get(spin.id, 0), station_id=str(station.id),
            file_gain=f"{gain if gain is not None else 0.0:.2f}",
            audio_url=audio_url(call.base_url, token), audio_encoding=encoding,
            audio_receipt_url=receipt_url(call.base_url, receipt), audio_skip_url=skip_url(call.base_url, receipt),
            genre=view.genres, user_seed=spin.seed_music_id,
            is_seed=("TR", t.id) in seeds or ("AR", artist.id) in seeds, is_bookmarked=t.id in saved, is_featured=False,
            is_compilation=album.is_compilation, composer_name=t.composer or "", allow_skip=allow_skip,
            allow_feedback=not station.is_shuffle, allow_tired_of_track=True, allow_start_station_from_track=True,
            allow_share_track=False, allow_buy_track=False, rights=rights,
            identity=f"{ids.pandora_id('track', t.id)}:{spin.id}",
            track_key=TrackKey(track_id=ids.music_id("track", t.id), track_type="Track", spin_id=str(spin.id)),
            song_detail_url=f"{call.base_url}/music/{track_seo}",
            artist_detail_url=f"{call.base_url}/music/{artist_seo}",
            album_detail_url=f"{call.base_url}/music/{album_seo}",
            track_seo_token=track_seo, artist_seo_token=artist_seo, album_seo_token=album_seo,
            listening_timestamp=int(spin.issued_at.timestamp() * 1000),
            lyric_snippet=LyricSnippet(lyric_id=lyrics.lyric_id, checksum=lyrics.checksum) if lyrics else None,
        ))
    return out


class FragmentRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    is_station_start: bool | None = None
    fragment_request_reason: Literal["Normal", "Skip", "ThumbsDown", "Tired"] = "Normal"
    audio_format: AudioFormat = "aacplus"
    starting_at_track_id: str | None = Field(None, max_length=64)
    last_played_track_token: str | None = Field(None, max_length=64)


class FragmentResponse(ResponseModel):
    tracks: list[TrackObject]
    listener_qualifies_for_upsell: bool
    is_binge_skipping: bool
    skips_remaining: int | None = absent_when_none(
        "extension: skips the listener may still spend on this station now (the smaller of the hourly and "
        "daily allowance); absent when the tier has no skip limit")


@registry.endpoint(
    "playlist/getFragment", request=FragmentRequest, response=FragmentResponse, writes=True,
    errors=[ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.PLAYLIST_END,
            ErrorCode.PLAYLIST_EXCEEDED, ErrorCode.STATION_LIMIT_REACHED, ErrorCode.STREAM_VIOLATION,
            ErrorCode.UNPLAYABLE_SHUFFLE_STATION, ErrorCode.LISTENER_NOT_AUTHORIZED],
    notes="""
    Up to 4 tracks chosen by the station engine under the radio rules of spec §6.4.
    `fragmentRequestReason: "Skip"` spends one skip (free tier: `stationSkipLimit` per station per hour and
    `dailySkipLimit` per day; beyond that `STATION_LIMIT_REACHED`). Marks this session as the account's
    active player (§6.5). More than `fragment_limit` calls per `fragment_window` seconds: `PLAYLIST_EXCEEDED`.
    When the tier has a `monthlyListeningCapHours` and the tracks the listener started this month (UTC) reach
    it: `LISTENER_NOT_AUTHORIZED`, with `Retry-After` the seconds until the first of next month.

    Ads (tiers with ads, i.e. free, and only while the operator has an active campaign): an ad item follows
    the track at which the music issued to the listener since their last fragment ad reaches
    `ad_interval_minutes` (the count runs across fragments and stations and restarts at each ad, so two ads
    are never adjacent; music owed from before opens the fragment with an ad). An ad item is a full track
    object with ad values: `trackType: "Ad"`, `trackToken` = `adToken`, `pandoraId` `AD:{campaign}`,
    `musicId`/`artistMusicId`/seo tokens/`albumTitle`/`composerName` empty, `songTitle` = the ad's title,
    `artistName` "Advertisement", `albumArt` = the ad's art, `genre`/`rights`/`artistArt` empty,
    `rating` 0, `fileGain` "0.00", every `allow*` false, `songDetailURL` = `clickThroughUrl`, `audioURL`
    through the audio module in the negotiated `audioFormat` like tracks; its `audioReceiptURL` counts the
    impression (like ad/registerImpression) and its `audioSkipUrl` records nothing. Ads are not spins: they
    do not count for the radio rules, skips or `PLAYLIST_EXCEEDED`. An `adToken` given to trackStarted,
    addFeedback, deleteFeedback or addTiredSong answers `CALL_NOT_ALLOWED`.
    """,
)
def get_fragment(call: Call, req: FragmentRequest) -> FragmentResponse:
    """The next tracks of a station."""
    listener = call.require_listener()
    assert call.session is not None
    with call.write() as db:
        station = stations.lock_station(db, listener.id, req.station_id)
        listening.check_cap(db, call.settings, listener, call.now())
        result = playlist.fragment(db, call.settings, listener, call.session, station,
                                   req.fragment_request_reason, call.now())
        delivered = negotiate(req.audio_format, high_quality=high_quality_for(call, listener), source_codec="")
        for spin in result.spins:  # the play log says what was delivered
            spin.audio_encoding = delivered
        db.flush()
        db.expunge_all()
    tracks = track_objects(call, listener, result.station, result.spins, req.audio_format, result.allow_skip)
    if result.ad_breaks:
        from airwave.api.v1.ad import ad_track_object

        for brk in reversed(result.ad_breaks):  # positions count music tracks: insert from the back
            tracks.insert(brk.position, ad_track_object(call, listener, result.station, brk, req.audio_format))
    policy = call.settings.tier(listener.tier)
    return FragmentResponse(
        tracks=tracks,
        listener_qualifies_for_upsell=not policy.replays,
        is_binge_skipping=result.skips_left is not None and result.skips_left == 0,
        skips_remaining=result.skips_left,
    )
