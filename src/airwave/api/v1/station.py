"""v1 station/*: the station object of spec §6.2 and the station list."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel, Timestamp
from airwave.api.v1.objects import ArtImage
from airwave.core import stations
from airwave.store.models import Station


class StationObject(ResponseModel):
    """A station (spec §6.2)."""

    station_id: str
    station_factory_pandora_id: str
    pandora_id: str
    name: str
    description: str
    art: list[ArtImage]
    date_created: Timestamp
    last_played: Timestamp | None = Field(None, description="absent if never played")
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
    shuffle_station_ids: list[str] | None = Field(None, description="shuffle stations only")
    genre: list[str]
    genre_sponsorship: str
    ad_genre: str
    anti_target: bool
    initial_seed: dict[str, Any] | None = None
    adkv: dict[str, str]
    creator_webname: str
    art_id: str
    dominant_color: str


def station_object(station: Station, creator_webname: str) -> StationObject:
    station_id = str(station.id)
    plain = not (station.is_shuffle or station.is_thumbprint)
    return StationObject(
        station_id=station_id,
        station_factory_pandora_id=f"ST:0:{station_id}",
        pandora_id=f"ST:0:{station_id}",
        name=station.name,
        description=station.description,
        art=[],
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
        shuffle_station_ids=[] if station.is_shuffle else None,
        genre=[],
        genre_sponsorship="",
        ad_genre="",
        anti_target=False,
        initial_seed=None,
        adkv={},
        creator_webname=creator_webname,
        art_id="",
        dominant_color="5c6bc0",
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
    notes="""
    Most recently played first, then never-played stations by creation time, newest first
    (`sortedBy: "lastPlayedTime"`). `index` echoes `startIndex`.
    """,
)
def get_stations(call: Call, req: GetStationsRequest) -> StationList:
    """The listener's stations, one page at a time."""
    listener = call.require_listener()
    total, rows = stations.list_stations(call.reader(), listener.id, req.start_index, req.page_size)
    return StationList(
        total_stations=total,
        sorted_by="lastPlayedTime",
        index=req.start_index,
        stations=[station_object(s, listener.webname) for s in rows],
    )
