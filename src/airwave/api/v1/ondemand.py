"""v1 ondemand/getReplayTrack: a radio track played again on request (tiers with replays)."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel
from airwave.api.v1.playlist import AudioFormat, TrackObject, track_objects
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
        db.expunge_all()
    track = track_objects(call, listener, station, [spin], req.audio_format, allow_skip=True)[0]
    return ReplayResponse(replay_track=track)
