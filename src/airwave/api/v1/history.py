"""v1 listener/getPlayHistory: what the listener heard, on stations and on demand (an extension:
the web player's History)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel, Timestamp, absent_when_none
from airwave.api.v1.objects import TrackSummary, track_summary
from airwave.core import history
from airwave.core.history import HeardTrack


class HistoryRequest(RequestModel):
    page_size: int = Field(100, ge=1, le=history.MAX_PAGE)
    start_index: int = Field(0, ge=0, le=2**31 - 1)


class HeardItem(ResponseModel):
    """One play of a track."""

    played_at: Timestamp = Field(description="when it began playing")
    outcome: Literal["completed", "skipped", "unfinished"] = Field(
        description="played to its end, skipped, or not (yet) reported either way"
    )
    seconds_played: int = Field(description="whole seconds, as its receipt reported")
    station_id: str | None = absent_when_none("the station it played on; absent on demand")
    station_name: str | None = absent_when_none("that station's name")
    on_demand: bool = Field(description="played from the library on demand, not on a station")
    is_available: bool = Field(description="false when the track's file has gone from the library")
    track: TrackSummary


class HistoryResponse(ResponseModel):
    total: int
    items: list[HeardItem]


def heard_item(call: Call, heard: HeardTrack) -> HeardItem:
    outcome = heard.outcome if heard.outcome in ("completed", "skipped") else "unfinished"
    return HeardItem(
        played_at=heard.played_at,
        outcome=outcome,  # type: ignore[arg-type]
        seconds_played=round(heard.seconds_played),
        station_id=str(heard.station_id) if heard.station_id is not None else None,
        station_name=heard.station_name,
        on_demand=heard.on_demand,
        is_available=heard.is_available,
        track=track_summary(call, heard.track),
    )


@registry.endpoint(
    "listener/getPlayHistory",
    request=HistoryRequest,
    response=HistoryResponse,
    notes="""
    Extension. The tracks the listener heard (began playing, or reported finished or skipped), on
    their stations and on demand, newest first; served tracks that never began are not in it, nor
    are ads. `total` counts them all; `pageSize` and `startIndex` page through them.
    """,
)
def get_play_history(call: Call, req: HistoryRequest) -> HistoryResponse:
    """What the listener heard, newest first."""
    page = history.history(
        call.reader(), call.require_listener().id, req.start_index, req.page_size
    )
    return HistoryResponse(total=page.total, items=[heard_item(call, h) for h in page.items])
