"""Stations of a listener: listing in the order the API promises."""

from __future__ import annotations

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from airwave.store.models import Station


_COUNT = select(func.count(Station.id)).where(Station.listener_id == bindparam("listener_id"))


def count_stations(db: Session, listener_id: int) -> int:
    return db.scalar(_COUNT, {"listener_id": listener_id}) or 0


def list_stations(db: Session, listener_id: int, start: int, size: int) -> tuple[int, list[Station]]:
    """Most recently played first, then never-played ones by creation time, newest first."""
    total = count_stations(db, listener_id)
    if total == 0 or start >= total:
        return total, []
    rows = db.scalars(
        select(Station)
        .where(Station.listener_id == listener_id)
        .order_by(
            Station.last_played_at.is_(None),
            Station.last_played_at.desc(),
            Station.created_at.desc(),
            Station.id.desc(),
        )
        .offset(start)
        .limit(size)
    )
    return total, list(rows)
