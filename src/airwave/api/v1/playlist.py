"""v1 playlist/getFragment: the next tracks of a station, with the ads placed between them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel, absent_when_none
from airwave.api.v1.objects import AudioFormat, TrackObject, ad_track_object, track_object
from airwave.core.radio import playlist
from airwave.core.radio.narrative import explain
from airwave.errors import ErrorCode


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
        "extension: skips the listener may still spend on this station now (the smaller of "
        "the hourly and "
        "daily allowance); absent when the tier has no skip limit"
    )


@registry.endpoint(
    "playlist/getFragment",
    request=FragmentRequest,
    response=FragmentResponse,
    writes=True,
    errors=[
        ErrorCode.STATION_DOES_NOT_EXIST,
        ErrorCode.USER_NOT_AUTHORIZED,
        ErrorCode.PLAYLIST_END,
        ErrorCode.PLAYLIST_EXCEEDED,
        ErrorCode.STATION_LIMIT_REACHED,
        ErrorCode.STREAM_VIOLATION,
        ErrorCode.UNPLAYABLE_SHUFFLE_STATION,
        ErrorCode.LISTENER_NOT_AUTHORIZED,
    ],
    notes="""
    Up to 4 tracks chosen by the station engine under the radio rules of spec §6.4.
    `fragmentRequestReason: "Skip"` spends one skip (free tier: `stationSkipLimit` per station per
    hour and `dailySkipLimit` per day; beyond that `STATION_LIMIT_REACHED`). Marks this session as
    the account's active player (§6.5) until the fragment's tracks would have ended plus 2 minutes
    (another session then gets `STREAM_VIOLATION`; see `station/playbackResumed`). More than
    `fragment_limit` calls per `fragment_window` seconds: `PLAYLIST_EXCEEDED`. When the tier has a
    `monthlyListeningCapHours` and the tracks the listener started this month (UTC) reach it:
    `LISTENER_NOT_AUTHORIZED`, with `Retry-After` the seconds until the first of next month.

    Ads (tiers with ads, i.e. free, and only while the operator has an active campaign): an ad item
    follows the track at which the music issued to the listener since their last fragment ad reaches
    `ad_interval_minutes` (the count runs across fragments and stations and restarts at each ad, so
    two ads are never adjacent; music owed from before opens the fragment with an ad). An ad item is
    a full track object with ad values: `trackType: "Ad"`, `trackToken` = `adToken`, `pandoraId`
    `AD:{campaign}`, `musicId`/`artistMusicId`/seo tokens/`albumTitle`/`composerName` empty,
    `songTitle` = the ad's title, `artistName` "Advertisement", `albumArt` = the ad's art,
    `genre`/`rights`/`artistArt` empty, `rating` 0, `fileGain` "0.00", every `allow*` false,
    `songDetailURL` = `clickThroughUrl`, `audioURL` through the audio module in the negotiated
    `audioFormat` like tracks; its `audioReceiptURL` counts the impression (like
    ad/registerImpression) and its `audioSkipUrl` records nothing. Ads are not spins: they do not
    count for the radio rules, skips or `PLAYLIST_EXCEEDED`. An `adToken` given to trackStarted,
    addFeedback, deleteFeedback or addTiredSong answers `CALL_NOT_ALLOWED`.
    """,
)
def get_fragment(call: Call, req: FragmentRequest) -> FragmentResponse:
    """The next tracks of a station."""
    listener = call.require_listener()
    assert call.session is not None
    result = playlist.serve_fragment(
        call.reader(),
        call.write,
        call.services,
        call.base_url,
        listener,
        call.session,
        req.station_id,
        req.fragment_request_reason,
        req.audio_format,
        call.now(),
    )
    return FragmentResponse(
        tracks=[
            track_object(call, item)
            if isinstance(item, playlist.TrackItem)
            else ad_track_object(call, item, result.station_id)
            for item in result.items
        ],
        listener_qualifies_for_upsell=result.qualifies_for_upsell,
        is_binge_skipping=result.skips_left is not None and result.skips_left == 0,
        skips_remaining=result.skips_left,
    )


class NarrativeRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    music_id: str = Field(
        min_length=1, max_length=1024, description="the track's musicId (or pandoraId)"
    )


class NarrativeResponse(ResponseModel):
    intro: str
    focus_traits: list[str] = Field(description="what the track sounds like, plain phrases")
    paragraph: str = Field(description="the intro, the traits and what ties it to the station")


@registry.endpoint(
    "playlist/narrative",
    request=NarrativeRequest,
    response=NarrativeResponse,
    errors=[
        ErrorCode.STATION_DOES_NOT_EXIST,
        ErrorCode.USER_NOT_AUTHORIZED,
        ErrorCode.NOT_FOUND,
        ErrorCode.INVALID_PANDORA_TYPE,
    ],
    notes="""
    "Why this track?": what the track sounds like (its sound profile, then its tags) and what
    ties it to the station (it is a seed, its artist is, it is close to the seed that led to it,
    the listener's thumbs-up). On shuffle, the station shuffle took it from explains it.
    """,
)
def narrative(call: Call, req: NarrativeRequest) -> NarrativeResponse:
    """Why a station plays a track."""
    told = explain(call.reader(), call.require_listener().id, req.station_id, req.music_id)
    return NarrativeResponse(
        intro=told.intro, focus_traits=told.focus_traits, paragraph=told.paragraph
    )
