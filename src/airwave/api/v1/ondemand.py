"""v1 ondemand/*: a radio track played again (tiers with replays) and any track on demand (Premium)."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel
from airwave.api.v1.playlist import AudioFormat, TrackObject, high_quality_for, track_objects
from airwave.audio.formats import negotiate
from airwave.core import playlist, stations
from airwave.errors import ErrorCode


class ReplayRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    track_token: str = Field(min_length=1, max_length=64)
    last_played_track_token: str | None = Field(None, max_length=64)
    audio_format: AudioFormat = "aacplus"


class ReplayResponse(ResponseModel):
    replay_track: TrackObject


@registry.endpoint(
    "ondemand/getReplayTrack", request=ReplayRequest, response=ReplayResponse, writes=True,
    errors=[ErrorCode.LISTENER_NOT_AUTHORIZED, ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.USER_NOT_AUTHORIZED,
            ErrorCode.NOT_FOUND, ErrorCode.CONTENT_HAS_EXPIRED, ErrorCode.CALL_NOT_ALLOWED],
    notes="""
    Only for tiers with `replaysEnabled` (else `LISTENER_NOT_AUTHORIZED`). The track must have been played
    on `stationId`; a track with a thumbs-down cannot be replayed (`CALL_NOT_ALLOWED`). The replay gets
    its own trackToken; replays do not count against the radio rules.
    """,
)
def replay_track(call: Call, req: ReplayRequest) -> ReplayResponse:
    """Play a track of this station again."""
    listener = call.require_listener()
    with call.write() as db:
        station = stations.get_station(db, listener.id, req.station_id)
        spin = playlist.replay(db, call.settings, listener, station, req.track_token, call.now())
        spin.audio_encoding = negotiate(req.audio_format, high_quality=high_quality_for(call, listener), source_codec="")
        db.flush()
        db.expunge_all()
    track = track_objects(call, listener, station, [spin], req.audio_format, allow_skip=True)[0]
    return ReplayResponse(replay_track=track)


class PlaybackInfoRequest(RequestModel):
    pandora_id: str = Field(min_length=1, max_length=1024, description="a track: pandoraId, musicId or seoToken")
    audio_format: AudioFormat = "aacplus"


class PlaybackInfo(ResponseModel):
    audio_url: str = Field(alias="audioURL")
    audio_encoding: str
    file_gain: str = Field(description="dB: ReplayGain when tagged, else measured EBU R128 loudness")
    track_length: int
    track_token: str = Field(description="extension: names this play (bookmark/add, station/trackStarted)")
    audio_receipt_url: str = Field(alias="audioReceiptURL", description="extension: POST when played to the end")
    audio_skip_url: str = Field(description="extension: POST when skipped")


@registry.endpoint(
    "ondemand/getAudioPlaybackInfo", request=PlaybackInfoRequest, response=PlaybackInfo, writes=True,
    errors=[ErrorCode.LISTENER_NOT_AUTHORIZED, ErrorCode.NOT_FOUND, ErrorCode.INVALID_PANDORA_TYPE],
    notes="""
    Premium only (the tier's `onDemand` flag; else `LISTENER_NOT_AUTHORIZED`). Any present track of the
    library, in the negotiated encoding (`mp3-hifi` needs high quality, as on stations). Each call is a play
    in the operator's play log, with its own receipt and skip URLs.
    """,
)
def audio_playback_info(call: Call, req: PlaybackInfoRequest) -> PlaybackInfo:
    """The audio URL of one track, on demand."""
    from datetime import timedelta

    from airwave.audio.urls import audio_url, receipt_url, skip_url
    from airwave.core import catalog
    from airwave.store.models import TrackProfile

    listener = call.require_listener()
    ref = catalog.resolve(req.pandora_id, "track")
    with call.write() as db:
        track = catalog.track(db, ref.id)
        encoding = negotiate(req.audio_format, high_quality=high_quality_for(call, listener),
                             source_codec=track.codec)
        spin = playlist.on_demand(db, call.settings, listener, ref.id, encoding, call.now())
        measured = db.get(TrackProfile, track.id)
        gain = track.rg_track_gain if track.rg_track_gain is not None else (measured.gain_db if measured else None)
        duration, spin_id, spin_token = track.duration, spin.id, spin.token
    expires = call.now() + timedelta(seconds=call.settings.audio_url_lifetime)
    signer = call.services.signer
    token = signer.audio_token(listener_id=listener.id, track_id=ref.id, encoding=encoding, expires_at=expires,
                               spin_id=spin_id)
    receipt = signer.receipt_token(listener_id=listener.id, spin_id=spin_id, expires_at=expires)
    return PlaybackInfo(
        audio_url=audio_url(call.base_url, token), audio_encoding=encoding,
        file_gain=f"{gain if gain is not None else 0.0:.2f}", track_length=round(duration),
        track_token=spin_token, audio_receipt_url=receipt_url(call.base_url, receipt),
        audio_skip_url=skip_url(call.base_url, receipt),
    )
