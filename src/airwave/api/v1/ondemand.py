"""v1 ondemand/*: a radio track played again (tiers with replays) and any track on demand
(Premium)."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel, absent_when_none
from airwave.api.v1.objects import AudioFormat, TrackObject, track_object
from airwave.core.radio import playlist
from airwave.errors import ErrorCode


class ReplayRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    track_token: str = Field(min_length=1, max_length=64)
    last_played_track_token: str | None = Field(None, max_length=64)
    audio_format: AudioFormat = "aacplus"


class ReplayResponse(ResponseModel):
    replay_track: TrackObject


@registry.endpoint(
    "ondemand/getReplayTrack",
    request=ReplayRequest,
    response=ReplayResponse,
    writes=True,
    errors=[
        ErrorCode.LISTENER_NOT_AUTHORIZED,
        ErrorCode.STATION_DOES_NOT_EXIST,
        ErrorCode.USER_NOT_AUTHORIZED,
        ErrorCode.NOT_FOUND,
        ErrorCode.CONTENT_HAS_EXPIRED,
        ErrorCode.CALL_NOT_ALLOWED,
    ],
    notes="""
    Only for tiers with `replaysEnabled` (else `LISTENER_NOT_AUTHORIZED`). The track must have been
    played on `stationId`; a track with a thumbs-down cannot be replayed (`CALL_NOT_ALLOWED`). The
    replay gets its own trackToken; replays do not count against the radio rules.
    """,
)
def replay_track(call: Call, req: ReplayRequest) -> ReplayResponse:
    """Play a track of this station again."""
    listener = call.require_listener()
    with call.write() as db:
        item = playlist.replay_item(
            db,
            call.services,
            call.base_url,
            listener,
            req.station_id,
            req.track_token,
            req.audio_format,
            call.now(),
        )
    return ReplayResponse(replay_track=track_object(call, item))


class PlaybackInfoRequest(RequestModel):
    pandora_id: str = Field(
        min_length=1, max_length=1024, description="a track: pandoraId, musicId or seoToken"
    )
    audio_format: AudioFormat = "aacplus"
    source_pandora_id: str | None = Field(
        None, max_length=64, description="the album or playlist it is played from, if any"
    )


class PlaybackInfo(ResponseModel):
    audio_url: str = Field(alias="audioURL")
    audio_encoding: str
    file_gain: str = Field(
        description="dB: ReplayGain when tagged, else measured EBU R128 loudness"
    )
    album_gain: str | None = absent_when_none(
        "extension: dB, the album's ReplayGain (album mode); absent when untagged"
    )
    track_peak: str | None = absent_when_none(
        "extension: the track's ReplayGain peak (1.0 = full scale): a player keeps the gain under "
        "1/peak so it never clips; absent when untagged"
    )
    album_peak: str | None = absent_when_none(
        "extension: the album's peak (the highest of its tracks'), for album mode; absent when "
        "the album has no gain or a track of it has no peak"
    )
    track_length: int
    track_token: str = Field(
        description="extension: names this play (bookmark/add, station/trackStarted)"
    )
    audio_receipt_url: str = Field(
        alias="audioReceiptURL", description="extension: POST when played to the end"
    )
    audio_skip_url: str = Field(description="extension: POST when skipped")


@registry.endpoint(
    "ondemand/getAudioPlaybackInfo",
    request=PlaybackInfoRequest,
    response=PlaybackInfo,
    writes=True,
    errors=[
        ErrorCode.LISTENER_NOT_AUTHORIZED,
        ErrorCode.NOT_FOUND,
        ErrorCode.INVALID_PANDORA_TYPE,
        ErrorCode.STREAM_VIOLATION,
    ],
    notes="""
    Premium only (the tier's `onDemand` flag; else `LISTENER_NOT_AUTHORIZED`). Any present track of
    the library, in the negotiated encoding (`mp3-hifi` needs high quality, as on stations). Each
    call is a play in the operator's play log, with its own receipt and skip URLs. The device
    becomes the account's active player, as with stations: while another device plays,
    `STREAM_VIOLATION`. `sourcePandoraId` (the album or playlist it is played from) counts as
    played in the listener's collection.
    """,
)
def audio_playback_info(call: Call, req: PlaybackInfoRequest) -> PlaybackInfo:
    """The audio URL of one track, on demand."""
    listener = call.require_listener()
    assert call.session is not None
    with call.write() as db:
        play = playlist.play_on_demand(
            db,
            call.services,
            call.base_url,
            listener,
            call.session,
            req.pandora_id,
            req.audio_format,
            call.now(),
            req.source_pandora_id,
        )
    links = play.links
    return PlaybackInfo(
        audio_url=links.audio_url,
        audio_encoding=links.encoding,
        file_gain=f"{play.gain if play.gain is not None else 0.0:.2f}",
        album_gain=f"{play.album_gain:.2f}" if play.album_gain is not None else None,
        track_peak=f"{play.track_peak:.6f}" if play.track_peak is not None else None,
        album_peak=f"{play.album_peak:.6f}" if play.album_peak is not None else None,
        track_length=round(play.duration),
        track_token=play.token,
        audio_receipt_url=links.receipt_url,
        audio_skip_url=links.skip_url,
    )
