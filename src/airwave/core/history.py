"""A listener's history: the tracks they heard (started, or reported finished or skipped), newest
first, from the play log, on stations and on demand alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from airwave.core.catalog import catalog
from airwave.core.catalog.catalog import TrackView
from airwave.store.models import Spin, Station, Track

MAX_PAGE = 500


@dataclass(frozen=True)
class HeardTrack:
    """One play: the track, when it began, how it ended (None: unfinished or still playing), on
    demand or on a station (None when since deleted)."""

    spin_id: int
    track: TrackView
    played_at: datetime
    outcome: str | None
    seconds_played: float
    station_id: int | None
    station_name: str | None
    on_demand: bool
    is_available: bool


@dataclass(frozen=True)
class HistoryPage:
    total: int
    items: list[HeardTrack]


def history(db: Session, listener_id: int, start: int, size: int) -> HistoryPage:
    """A page of the listener's plays, newest first (ads are not in it: they are not music)."""
    heard = (Spin.listener_id == listener_id) & or_(
        Spin.started_at.is_not(None), Spin.outcome.is_not(None)
    )
    total = db.scalar(select(func.count()).select_from(Spin).where(heard)) or 0
    size = max(0, min(size, MAX_PAGE))
    if not size or start >= total:
        return HistoryPage(total, [])
    at = func.coalesce(Spin.started_at, Spin.issued_at)
    rows = db.execute(
        select(
            Spin.id,
            Spin.track_id,
            Spin.started_at,
            Spin.issued_at,
            Spin.outcome,
            Spin.seconds_played,
            Spin.station_id,
            Station.name,
            Spin.reason,
            Track.missing_since,
        )
        .join(Track, Track.id == Spin.track_id)
        .outerjoin(Station, Station.id == Spin.station_id)
        .where(heard)
        .order_by(at.desc(), Spin.id.desc())
        .offset(start)
        .limit(size)
    ).all()
    views = {v.track.id: v for v in catalog.track_views(db, list({r[1] for r in rows}))}
    items = [
        HeardTrack(
            spin_id=r[0],
            track=views[r[1]],
            played_at=r[2] or r[3],
            outcome=r[4],
            seconds_played=r[5] or 0.0,
            station_id=r[6],
            station_name=r[7],
            on_demand=r[8] == "OnDemand",
            is_available=r[9] is None,
        )
        for r in rows
        if r[1] in views
    ]
    return HistoryPage(total, items)
