"""v4/v5 pods/*: autoplay after an album, playlist or track, and suggestions for a playlist, over
core.radio.autoplay."""

from __future__ import annotations

import secrets

from pydantic import Field

from airwave.api.annotations import Annotation, annotate
from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import EmptyResponse, ResponseModel
from airwave.api.v4.catalog import ERRORS, PandoraId, V4Request, allowed
from airwave.core import ids
from airwave.core.catalog import catalog
from airwave.core.radio import autoplay
from airwave.errors import ApiError, ErrorCode

POD_ERRORS = [*ERRORS, ErrorCode.USER_NOT_AUTHORIZED]


class AutoplayRequest(V4Request):
    context_id: PandoraId | None = Field(
        None, description="the album, playlist, track or artist that was playing"
    )
    source_id: PandoraId | None = Field(None, description="`contextId` (another spelling)")
    pandora_id: PandoraId | None = Field(None, description="`contextId` (another spelling)")
    num_songs: int | None = Field(None, ge=1, le=autoplay.MAX_SONGS)
    limit: int | None = Field(None, ge=1, le=autoplay.MAX_SONGS, description="`numSongs` too")
    annotation_limit: int | None = Field(None, ge=0, le=autoplay.MAX_SONGS)
    context_tracks: list[PandoraId] = Field(
        default_factory=list, max_length=100, description="tracks just played, newest first"
    )


class SongRecommendation(ResponseModel):
    music_id: str = Field(description="the track's pandoraId (TR:n), as clients read it")
    pandora_id: str
    autoplay_source_id: str = Field(description="the context it follows")
    token: str = Field(description="names this pick for pods/addAutoplayFeedback")
    song_rating: int = Field(description="1 thumbs-up, -1 thumbs-down (in this context), 0")


class Recommendations(ResponseModel):
    request_id: str
    song_recommendations: list[SongRecommendation]
    annotations: dict[str, Annotation]


AUTOPLAY_NOTES = """
Tracks to play after an album, a playlist, a track or an artist (`contextId`; `sourceId` and
`pandoraId` are taken too), chosen by the station engine from what was playing and the tracks
just played (`contextTracks`, newest first), leaning to this context's thumbs-up and never
choosing its thumbs-down. After an album or playlist, nothing of it. `numSongs` (default 1)
tracks; `annotationLimit` of them annotated (default: all). Play them with
`v1/ondemand/getAudioPlaybackInfo`.
"""


def _recommend(
    call: Call, req: AutoplayRequest, *, kinds: tuple[str, ...] | None = None
) -> Recommendations:
    allowed(call)
    token = req.context_id or req.source_id or req.pandora_id
    if token is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, "give contextId: what was playing")
    db, listener = call.reader(), call.require_listener()
    context = autoplay.context_of(db, listener, token)
    if kinds is not None and context.kind not in kinds:
        raise ApiError(
            ErrorCode.INVALID_PANDORA_TYPE, f"{token[:40]!r} is not a {' or '.join(kinds)}"
        )
    played = [catalog.resolve(t, "track").id for t in req.context_tracks]
    count = req.num_songs or req.limit or 1
    found = autoplay.songs(db, call.settings, listener, context, played, count, call.now())
    source = ids.pandora_id(context.kind, context.id)
    limit = len(found) if req.annotation_limit is None else req.annotation_limit
    on_demand = call.settings.tier(listener.tier).on_demand
    refs = [ids.Ref("track", r.track_id) for r in found[:limit]]
    return Recommendations(
        request_id=secrets.token_hex(8),
        song_recommendations=[
            SongRecommendation(
                music_id=ids.pandora_id("track", r.track_id),
                pandora_id=ids.pandora_id("track", r.track_id),
                autoplay_source_id=source,
                token=r.token,
                song_rating=r.rating,
            )
            for r in found
        ],
        annotations=annotate(call, refs, on_demand),
    )


@registry.endpoint(
    "pods/getAutoplaySongs",
    versions=(4, 5),
    request=AutoplayRequest,
    response=Recommendations,
    errors=POD_ERRORS,
    notes=AUTOPLAY_NOTES,
)
def get_autoplay_songs(call: Call, req: AutoplayRequest) -> Recommendations:
    """What to play when an album, playlist or track ends."""
    return _recommend(call, req)


@registry.endpoint(
    "pods/getPlaylistAutoplaySongs",
    versions=(4, 5),
    request=AutoplayRequest,
    response=Recommendations,
    errors=POD_ERRORS,
    notes="Autoplay after one of the listener's playlists (`contextId` or `pandoraId`)."
    + AUTOPLAY_NOTES,
)
def get_playlist_autoplay_songs(call: Call, req: AutoplayRequest) -> Recommendations:
    """What to play when a playlist ends."""
    return _recommend(call, req, kinds=("playlist",))


@registry.endpoint(
    "pods/getPlaylistAutofillSongs",
    versions=(5,),
    request=AutoplayRequest,
    response=Recommendations,
    errors=POD_ERRORS,
    notes="Tracks to add to one of the listener's playlists: like its tracks, none of them "
    "already in it (`numSongs`, default 1).",
)
def get_playlist_autofill_songs(call: Call, req: AutoplayRequest) -> Recommendations:
    """Suggestions to fill a playlist."""
    return _recommend(call, req, kinds=("playlist",))


@registry.endpoint(
    "pods/getPlaylistSearchRecommendations",
    versions=(5,),
    request=AutoplayRequest,
    response=Recommendations,
    errors=POD_ERRORS,
    notes='What a playlist\'s "add songs" search shows before anything is typed: tracks like '
    "the playlist's, none already in it (`numSongs`, default 10).",
)
def get_playlist_search_recommendations(call: Call, req: AutoplayRequest) -> Recommendations:
    """Suggestions shown when searching for songs to add to a playlist."""
    if req.num_songs is None and req.limit is None:
        req = req.model_copy(update={"num_songs": 10})
    return _recommend(call, req, kinds=("playlist",))


class FeedbackRequest(V4Request):
    token: str | None = Field(None, max_length=200, description="a recommendation's token")
    context_id: PandoraId | None = None
    source_id: PandoraId | None = Field(None, description="`contextId` (another spelling)")
    track_pandora_id: PandoraId | None = None
    pandora_id: PandoraId | None = Field(None, description="`trackPandoraId` (another spelling)")
    is_positive: bool


@registry.endpoint(
    "pods/addAutoplayFeedback",
    versions=(4, 5),
    request=FeedbackRequest,
    response=EmptyResponse,
    writes=True,
    errors=POD_ERRORS,
    notes="""
    Thumbs up or down (`isPositive`) a track autoplay chose: by the recommendation's `token`, or
    by `contextId` and `trackPandoraId`. Later autoplay after that context leans to the
    thumbs-up and never chooses a thumbs-down. The last thumb counts.
    """,
)
def add_autoplay_feedback(call: Call, req: FeedbackRequest) -> EmptyResponse:
    """Thumb an autoplay pick."""
    allowed(call)
    listener = call.require_listener()
    with call.write() as db:
        if req.token is not None:
            context, track_id = autoplay.parse_token(req.token)
            autoplay.context_of(db, listener, ids.pandora_id(context.kind, context.id))
        else:
            token = req.context_id or req.source_id
            track = req.track_pandora_id or req.pandora_id
            if token is None or track is None:
                raise ApiError(
                    ErrorCode.INVALID_REQUEST, "give the token, or contextId and trackPandoraId"
                )
            context = autoplay.context_of(db, listener, token)
            track_id = catalog.resolve(track, "track").id
        autoplay.feedback(db, listener, context, track_id, req.is_positive, call.now())
    return EmptyResponse()
