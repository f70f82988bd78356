"""v1 station/*: stations, their seeds and feedback, shuffle and Thumbprint Radio (spec §6.2,
§7)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import (
    Empty,
    EmptyResponse,
    RequestModel,
    ResponseModel,
    Timestamp,
    absent_when_none,
)
from airwave.api.v1.objects import ArtImage, art, detail_url, picture_art
from airwave.core import ids
from airwave.core.radio import player, playlist, stations
from airwave.core.radio.stations import FeedbackView, SeedView, StationView
from airwave.errors import ApiError, ErrorCode


class SeedArtist(ResponseModel):
    artist_name: str
    is_composer: bool
    is_comedy: bool
    artist_detail_url: str


class SeedSong(ResponseModel):
    song_title: str
    artist_summary: str
    album_title: str
    song_detail_url: str
    art: list[ArtImage]


class SeedGenre(ResponseModel):
    station_name: str
    is_redirect: bool
    is_comedy: bool


class SeedObject(ResponseModel):
    """A station seed (spec §6.2): exactly one of artist, song or genre."""

    music_id: str
    pandora_id: str
    listener_count: int
    art: list[ArtImage]
    artist: SeedArtist | None = absent_when_none("artist seeds")
    song: SeedSong | None = absent_when_none("track seeds")
    genre: SeedGenre | None = absent_when_none("genre seeds")
    seo_token: str | None = absent_when_none("artist and track seeds")


class StationObject(ResponseModel):
    """A station (spec §6.2)."""

    station_id: str
    station_factory_pandora_id: str
    pandora_id: str
    name: str
    description: str
    art: list[ArtImage]
    date_created: Timestamp
    last_played: Timestamp | None = absent_when_none("absent if never played")
    total_play_time: int
    is_new: bool
    allow_delete: bool
    allow_rename: bool
    allow_edit_description: bool
    allow_add_seed: bool
    is_shared: bool
    is_transform_allowed: bool
    is_on_demand_editorial_station: bool
    is_advertiser_station: bool
    can_shuffle_station: bool
    can_autoshare: bool
    advertising_key: str
    is_artist_messages_enabled: bool
    is_thumbprint: bool
    is_shuffle: bool
    shuffle_station_ids: list[str] | None = absent_when_none("shuffle stations only")
    genre: list[str]
    genre_sponsorship: str
    ad_genre: str
    anti_target: bool
    initial_seed: SeedObject | None = absent_when_none("absent for shuffle and Thumbprint Radio")
    adkv: dict[str, str]
    creator_webname: str
    art_id: str
    dominant_color: str


STATION_ERRORS = [ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.USER_NOT_AUTHORIZED]
TOKEN_ERRORS = [ErrorCode.NOT_FOUND, ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.CONTENT_HAS_EXPIRED]


def seed_object(call: Call, seed: SeedView) -> SeedObject:
    """A seed as spec §6.2 shows it."""
    kind_name = stations.KIND_NAMES[seed.kind]
    base = {
        "music_id": ids.music_id(kind_name, seed.ref_id),
        "pandora_id": ids.pandora_id(kind_name, seed.ref_id),
        "listener_count": seed.listener_count,
        "art": picture_art(call, seed.picture),
    }
    if seed.artist is not None:
        artist = seed.artist
        seo = ids.seo_token("artist", artist.id, artist.name)
        return SeedObject(
            **base,
            seo_token=seo,
            artist=SeedArtist(
                artist_name=artist.name,
                is_composer=artist.is_composer,
                is_comedy=False,
                artist_detail_url=f"{call.base_url}/music/{seo}",
            ),
        )
    if seed.track is not None:
        view = seed.track
        seo = ids.seo_token(
            "track", seed.ref_id, view.artist.name, view.album.title, view.track.title
        )
        return SeedObject(
            **base,
            seo_token=seo,
            song=SeedSong(
                song_title=view.track.title,
                artist_summary=view.artist.name,
                album_title=view.album.title,
                song_detail_url=f"{call.base_url}/music/{seo}",
                art=base["art"],
            ),
        )
    genre = seed.genre
    assert genre is not None
    return SeedObject(
        **base,
        genre=SeedGenre(
            station_name=f"{genre.name} Radio",
            is_redirect=False,
            is_comedy=genre.category.startswith("Comedy"),
        ),
    )


def station_object(call: Call, view: StationView, creator_webname: str) -> StationObject:
    station, genres, artwork = view.station, view.genres, view.artwork
    plain = not (station.is_shuffle or station.is_thumbprint)
    return StationObject(
        station_id=str(station.id),
        station_factory_pandora_id=ids.pandora_id("station", station.id),
        pandora_id=ids.pandora_id("station", station.id),
        name=station.name,
        description=station.description,
        art=picture_art(call, view.picture),
        date_created=station.created_at,
        last_played=station.last_played_at,
        total_play_time=station.total_play_time,
        is_new=station.last_played_at is None,
        allow_delete=True,
        allow_rename=not station.is_shuffle,
        allow_edit_description=not station.is_shuffle,
        allow_add_seed=plain,
        is_shared=False,
        is_transform_allowed=plain,
        is_on_demand_editorial_station=False,
        is_advertiser_station=False,
        can_shuffle_station=not station.is_shuffle,
        can_autoshare=False,
        advertising_key="",
        is_artist_messages_enabled=False,
        is_thumbprint=station.is_thumbprint,
        is_shuffle=station.is_shuffle,
        shuffle_station_ids=[str(i) for i in view.shuffle_ids]
        if view.shuffle_ids is not None
        else None,
        genre=genres,
        genre_sponsorship="",
        ad_genre=genres[0] if genres else "",
        anti_target=False,
        initial_seed=seed_object(call, view.initial_seed)
        if view.initial_seed is not None
        else None,
        adkv={"genre": genres[0]} if genres else {},
        creator_webname=creator_webname,
        art_id=artwork.content_hash if artwork else "",
        dominant_color=artwork.dominant_color if artwork else "5c6bc0",
    )


class GetStationsRequest(RequestModel):
    page_size: int = Field(250, ge=1, le=1000)
    start_index: int = Field(0, ge=0, le=2**31 - 1)


class StationList(ResponseModel):
    total_stations: int
    sorted_by: str
    index: int
    stations: list[StationObject]


@registry.endpoint(
    "station/getStations",
    request=GetStationsRequest,
    response=StationList,
    quick=True,
    notes="""
    Most recently played first, then never-played stations by creation time, newest first
    (`sortedBy: "lastPlayedTime"`). `index` echoes `startIndex`. The shuffle station is not
    listed (nor counted in `totalStations`): `station/shuffle` names it.
    """,
)
def get_stations(call: Call, req: GetStationsRequest) -> StationList:
    """The listener's stations, one page at a time."""
    listener = call.require_listener()
    total, views = stations.station_page(call.reader(), listener.id, req.start_index, req.page_size)
    return StationList(
        total_stations=total,
        sorted_by="lastPlayedTime",
        index=req.start_index,
        stations=[station_object(call, v, listener.webname) for v in views],
    )


class CreateStationRequest(RequestModel):
    station_code: str | None = Field(
        None,
        max_length=64,
        description="'mi' or 'mc' + musicId; 'sh' + the shuffle station's stationId",
    )
    pandora_id: str | None = Field(None, max_length=64)
    music_id: str | None = Field(None, max_length=64)
    station_name: str | None = Field(
        None, max_length=256, description="at most 64 characters after trimming"
    )
    search_query: str | None = Field(
        None, max_length=1024, description="recorded for context; not used"
    )
    creation_source: str | None = Field(None, max_length=64)


@registry.endpoint(
    "station/createStation",
    request=CreateStationRequest,
    response=StationObject,
    writes=True,
    errors=[ErrorCode.STATION_CODE_INVALID, ErrorCode.MAX_STATIONS_REACHED],
    notes="""
    Give exactly one of `stationCode`, `pandoraId` or `musicId`, naming an artist, track or genre
    (or, with `stationCode` "sh" + its stationId, the shuffle station, which answers as it is).
    A seed the listener already has a station for returns that station. Default names:
    "{artist} Radio", "{song} Radio", "{genre} Radio".
    """,
)
def create_station(call: Call, req: CreateStationRequest) -> StationObject:
    """A new station grown from one artist, track or genre."""
    listener = call.require_listener()
    with call.write() as db:
        view = stations.create(
            db,
            call.settings,
            listener,
            req.station_code,
            req.pandora_id,
            req.music_id,
            req.station_name,
            call.now(),
        )
    return station_object(call, view, listener.webname)


class StationIdRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)


@registry.endpoint(
    "station/removeStation",
    request=StationIdRequest,
    response=EmptyResponse,
    writes=True,
    errors=STATION_ERRORS,
)
def remove_station(call: Call, req: StationIdRequest) -> EmptyResponse:
    """Delete a station with its seeds and feedback (its plays stay in the operator's play log)."""
    listener = call.require_listener()
    with call.write() as db:
        stations.remove(db, listener.id, req.station_id)
    return EmptyResponse()


class UpdateStationRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    name: str | None = Field(
        None, max_length=256, description="at most 64 characters after trimming"
    )
    description: str | None = Field(None, max_length=4000)


@registry.endpoint(
    "station/updateStation",
    request=UpdateStationRequest,
    response=StationObject,
    writes=True,
    errors=[*STATION_ERRORS, ErrorCode.CALL_NOT_ALLOWED],
)
def update_station(call: Call, req: UpdateStationRequest) -> StationObject:
    """Rename a station or change its description."""
    listener = call.require_listener()
    with call.write() as db:
        view = stations.update(db, listener.id, req.station_id, req.name, req.description)
    return station_object(call, view, listener.webname)


class DetailsRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    is_current_station: bool | None = None


class StationDetails(StationObject):
    seeds: list[SeedObject]
    positive_feedback_count: int
    negative_feedback_count: int


@registry.endpoint(
    "station/getStationDetails",
    request=DetailsRequest,
    response=StationDetails,
    errors=STATION_ERRORS,
)
def station_details(call: Call, req: DetailsRequest) -> StationDetails:
    """A station with its seeds and how many thumbs it has."""
    listener = call.require_listener()
    found = stations.details(call.reader(), listener.id, req.station_id)
    return StationDetails(
        **station_object(call, found.view, listener.webname).__dict__,
        seeds=[seed_object(call, s) for s in found.seeds],
        positive_feedback_count=found.positive_feedback_count,
        negative_feedback_count=found.negative_feedback_count,
    )


class SeedRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    music_id: str | None = Field(None, max_length=64)
    pandora_id: str | None = Field(None, max_length=64)


@registry.endpoint(
    "station/addSeed",
    request=SeedRequest,
    response=SeedObject,
    writes=True,
    errors=[*STATION_ERRORS, ErrorCode.STATION_CODE_INVALID, ErrorCode.CALL_NOT_ALLOWED],
)
def add_seed(call: Call, req: SeedRequest) -> SeedObject:
    """Grow a station from one more artist, track or genre (adding a seed twice is harmless)."""
    listener = call.require_listener()
    with call.write() as db:
        seed = stations.add_station_seed(
            db, listener.id, req.station_id, req.pandora_id, req.music_id, call.now()
        )
    return seed_object(call, seed)


@registry.endpoint(
    "station/deleteSeed",
    request=SeedRequest,
    response=EmptyResponse,
    writes=True,
    errors=[
        *STATION_ERRORS,
        ErrorCode.STATION_CODE_INVALID,
        ErrorCode.CALL_NOT_ALLOWED,
        ErrorCode.NOT_FOUND,
    ],
    notes="The last seed of a station cannot be deleted (`CALL_NOT_ALLOWED`).",
)
def delete_seed(call: Call, req: SeedRequest) -> EmptyResponse:
    """Stop growing a station from one of its seeds."""
    listener = call.require_listener()
    with call.write() as db:
        stations.delete_station_seed(db, listener.id, req.station_id, req.pandora_id, req.music_id)
    return EmptyResponse()


class FeedbackObject(ResponseModel):
    feedback_id: str
    is_positive: bool
    station_id: str
    station_name: str
    music_id: str
    pandora_id: str
    song_title: str
    album_title: str
    artist_name: str
    artist_seo_token: str
    track_seo_token: str
    album_seo_token: str
    track_length: int
    track_num: int | None
    disc_num: int | None
    album_art: list[ArtImage]
    date_created: Timestamp
    artist_detail_url: str = Field(description="the artist's page in the web player")
    track_detail_url: str = Field(description="the track's page in the web player")
    amazon_url: str = Field(description="always empty: Airwave sells nothing")


def feedback_object(call: Call, found: FeedbackView) -> FeedbackObject:
    row, view = found.feedback, found.track
    t, artist, album = view.track, view.artist, view.album
    artist_seo = ids.seo_token("artist", artist.id, artist.name)
    track_seo = ids.seo_token("track", t.id, artist.name, album.title, t.title)
    return FeedbackObject(
        feedback_id=str(row.id),
        is_positive=row.is_positive,
        station_id=str(row.station_id),
        station_name=found.station_name,
        music_id=ids.music_id("track", t.id),
        pandora_id=ids.pandora_id("track", t.id),
        song_title=t.title,
        album_title=album.title,
        artist_name=artist.name,
        artist_seo_token=artist_seo,
        track_seo_token=track_seo,
        album_seo_token=ids.seo_token("album", album.id, view.album_artist.name, album.title),
        track_length=round(t.duration),
        track_num=t.track_no,
        disc_num=t.disc_no,
        album_art=art(call, view.album_art),
        date_created=row.created_at,
        artist_detail_url=detail_url(call, artist_seo),
        track_detail_url=detail_url(call, track_seo),
        amazon_url="",
    )


class AddFeedbackRequest(RequestModel):
    track_token: str = Field(min_length=1, max_length=64)
    is_positive: bool


@registry.endpoint(
    "station/addFeedback",
    request=AddFeedbackRequest,
    response=FeedbackObject,
    writes=True,
    errors=[*TOKEN_ERRORS, ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.CALL_NOT_ALLOWED],
    notes="""
    Thumbs up or down for the track a `trackToken` names, on the station that played it. A
    thumbs-down track never plays on that station again. A thumb on a track shuffle played goes to
    the station shuffle took it from; a track shuffle drew from the whole library (a new
    listener's, before any station) has none: `CALL_NOT_ALLOWED` (its `allowFeedback` is false).
    """,
)
def add_feedback(call: Call, req: AddFeedbackRequest) -> FeedbackObject:
    """Thumb a track up or down."""
    listener = call.require_listener()
    with call.write() as db:
        found = playlist.thumb(
            db, listener.id, call.session.id, req.track_token, req.is_positive, call.now()
        )
    return feedback_object(call, found)


class DeleteFeedbackRequest(RequestModel):
    feedback_id: str | None = Field(None, max_length=64)
    track_token: str | None = Field(None, max_length=64)


class DeletedFeedback(ResponseModel):
    feedback_id: str = Field(description="the thumb taken back (clients read it to update lists)")


@registry.endpoint(
    "station/deleteFeedback",
    request=DeleteFeedbackRequest,
    response=DeletedFeedback,
    writes=True,
    errors=[*TOKEN_ERRORS, ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.CALL_NOT_ALLOWED],
)
def delete_feedback(call: Call, req: DeleteFeedbackRequest) -> DeletedFeedback:
    """Take back a thumb, named by its feedbackId or by the trackToken it was given on."""
    listener = call.require_listener()
    if (req.feedback_id is None) == (req.track_token is None):
        raise ApiError(ErrorCode.INVALID_REQUEST, "give exactly one of feedbackId or trackToken")
    with call.write() as db:
        number = playlist.unthumb(db, listener.id, req.feedback_id, req.track_token, call.now())
    return DeletedFeedback(feedback_id=str(number))


class StationFeedbackRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    positive: bool
    page_size: int = Field(100, ge=1, le=1000)
    start_index: int = Field(0, ge=0, le=2**31 - 1)


class FeedbackPage(ResponseModel):
    total: int
    feedback: list[FeedbackObject]


@registry.endpoint(
    "station/getStationFeedback",
    request=StationFeedbackRequest,
    response=FeedbackPage,
    errors=STATION_ERRORS,
    notes="Newest first.",
)
def station_feedback(call: Call, req: StationFeedbackRequest) -> FeedbackPage:
    """A station's thumbs-up or thumbs-down, a page at a time."""
    listener = call.require_listener()
    total, found = stations.feedback_page(
        call.reader(), listener.id, req.station_id, req.positive, req.start_index, req.page_size
    )
    return FeedbackPage(total=total, feedback=[feedback_object(call, f) for f in found])


class FeedbackRequest(RequestModel):
    page_size: int = Field(100, ge=1, le=1000)
    start_index: int = Field(0, ge=0, le=2**31 - 1)
    positive: bool | None = Field(None, description="only thumbs-up (true) or thumbs-down (false)")


@registry.endpoint(
    "station/getFeedback",
    request=FeedbackRequest,
    response=FeedbackPage,
    notes="All of the listener's feedback across stations, newest first.",
)
def all_feedback(call: Call, req: FeedbackRequest) -> FeedbackPage:
    """Every thumb the listener has given, a page at a time."""
    listener = call.require_listener()
    total, found = stations.feedback_page(
        call.reader(), listener.id, None, req.positive, req.start_index, req.page_size
    )
    return FeedbackPage(total=total, feedback=[feedback_object(call, f) for f in found])


class ShuffleRequest(RequestModel):
    station_ids: list[Annotated[str, Field(max_length=64)]] = Field(max_length=1000)


class ShuffleStationRequest(RequestModel):
    station_ids: list[Annotated[str, Field(max_length=64)]] | None = Field(
        None,
        max_length=1000,
        description="when given, the stations shuffle mixes from now on "
        "(as station/updateShuffleStation)",
    )
    shuffle_type: str | None = Field(None, max_length=32, description='clients send "my"; ignored')


@registry.endpoint(
    "station/shuffle",
    request=ShuffleStationRequest,
    response=StationObject,
    writes=True,
    errors=STATION_ERRORS,
    notes="""
    Created on first use, mixing all of the listener's stations; a listener with no station yet
    gets the whole library (its tracks cannot be rated). The shuffle station is not in
    `station/getStations`; `station/createStation` with `stationCode` "sh" + its `stationId`
    answers it too.
    """,
)
def shuffle(call: Call, req: ShuffleStationRequest) -> StationObject:
    """The listener's shuffle station."""
    listener = call.require_listener()
    with call.write() as db:
        view = stations.shuffle_view(db, listener.id, call.now(), req.station_ids)
    return station_object(call, view, listener.webname)


@registry.endpoint(
    "station/updateShuffleStation",
    request=ShuffleRequest,
    response=StationObject,
    writes=True,
    errors=[*STATION_ERRORS, ErrorCode.CALL_NOT_ALLOWED],
    notes="An empty list is allowed; fragments then answer `UNPLAYABLE_SHUFFLE_STATION`.",
)
def update_shuffle(call: Call, req: ShuffleRequest) -> StationObject:
    """Choose the stations shuffle mixes."""
    listener = call.require_listener()
    with call.write() as db:
        view = stations.update_shuffle(db, listener.id, req.station_ids, call.now())
    return station_object(call, view, listener.webname)


@registry.endpoint(
    "station/createThumbprintStation",
    request=Empty,
    response=StationObject,
    writes=True,
    errors=[ErrorCode.THUMBPRINT_RADIO_NOT_ELIGIBLE, ErrorCode.MAX_STATIONS_REACHED],
    notes=f"Needs {stations.THUMBPRINT_MINIMUM} thumbs-up (distinct tracks) across the listener's "
    "stations.",
)
def thumbprint(call: Call, req: Empty) -> StationObject:
    """A station grown from every track the listener gave a thumbs-up."""
    listener = call.require_listener()
    with call.write() as db:
        view = stations.thumbprint(db, call.settings, listener, call.now())
    return station_object(call, view, listener.webname)


class TrackTokenRequest(RequestModel):
    track_token: str = Field(min_length=1, max_length=64)


class TrackStarted(ResponseModel):
    update_facebook_info: bool


@registry.endpoint(
    "station/trackStarted",
    request=TrackTokenRequest,
    response=TrackStarted,
    writes=True,
    errors=[*TOKEN_ERRORS, ErrorCode.CALL_NOT_ALLOWED],
    notes='An ad\'s token (`trackType: "Ad"`) answers `CALL_NOT_ALLOWED`: report ads with '
    "ad/registerImpression.",
)
def track_started(call: Call, req: TrackTokenRequest) -> TrackStarted:
    """Record that a track began playing (station lastPlayed, play time, the radio history)."""
    listener = call.require_listener()
    assert call.session is not None
    with call.write() as db:
        playlist.track_started(db, listener, call.session, req.track_token, call.now())
    return TrackStarted(update_facebook_info=False)


class PausedRequest(RequestModel):
    sync: bool | None = None


@registry.endpoint(
    "station/playbackPaused",
    request=PausedRequest,
    response=EmptyResponse,
    writes=True,
    notes="Releases this session's claim to be the account's active player (spec §6.5).",
)
def playback_paused(call: Call, req: PausedRequest) -> EmptyResponse:
    """Playback paused on this device."""
    listener = call.require_listener()
    assert call.session is not None
    with call.write() as db:
        player.release_player(db, listener, call.session)
    return EmptyResponse()


@registry.endpoint(
    "station/checkActivePlayer",
    request=Empty,
    response=EmptyResponse,
    errors=[ErrorCode.STREAM_VIOLATION],
    notes="""
    Extension: answers `{}` while this session may go on playing, and `STREAM_VIOLATION` as soon
    as another device of the account took the player over (`station/playbackResumed` with
    `forceActive`). A player asks every couple of seconds while it plays, so a taken-over device
    stops within seconds instead of at the end of the tracks it was handed. Reads only.
    """,
)
def check_active_player(call: Call, req: Empty) -> EmptyResponse:
    """Is this session still the account's player?"""
    assert call.session is not None
    player.check_player(call.reader(), call.require_listener().id, call.session.id, call.now())
    return EmptyResponse()


class ResumedRequest(RequestModel):
    force_active: bool | None = None


@registry.endpoint(
    "station/playbackResumed",
    request=ResumedRequest,
    response=EmptyResponse,
    writes=True,
    errors=[ErrorCode.STREAM_VIOLATION],
    notes="""
    Claims the account's active player for this session. While another session holds the claim
    this answers `STREAM_VIOLATION`, unless `forceActive` is true, which takes over (the other
    device's next fragment request then gets `STREAM_VIOLATION`). A claim holds while the music
    its player was handed (the fragment's tracks, the track it started) would still be playing,
    plus 2 minutes; a logged-out, deleted or expired session holds none, and
    `station/playbackPaused` gives it up.
    """,
)
def playback_resumed(call: Call, req: ResumedRequest) -> EmptyResponse:
    """Playback resumed on this device."""
    listener = call.require_listener()
    assert call.session is not None
    with call.write() as db:
        player.claim_player(db, listener, call.session, call.now(), force=bool(req.force_active))
    return EmptyResponse()
