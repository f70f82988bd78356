"""Stations of a listener: listing in the order the API promises."""

from __future__ import annotations

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.errors import ApiError, ErrorCode
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


def get_station(db: Session, listener_id: int, station_id: str) -> Station:
    """The listener's station; STATION_DOES_NOT_EXIST or USER_NOT_AUTHORIZED otherwise."""
    ref = ids.parse(station_id) if station_id.startswith("ST:") else None
    number = ref.id if ref and ref.kind == "station" else ids.parse_number(station_id)
    station = db.get(Station, number) if number is not None else None
    if station is None:
        raise ApiError(ErrorCode.STATION_DOES_NOT_EXIST, f"no station {station_id[:40]!r}")
    if station.listener_id != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, f"station {station_id[:40]!r} belongs to another listener")
    return station


def find_by_name(db: Session, listener_id: int, key_words: list[str], limit: int) -> list[Station]:
    """The listener's stations whose name contains every word (a listener has at most a few hundred)."""
    from airwave.library.names import search_key

    rows = db.scalars(select(Station).where(Station.listener_id == listener_id))
    return [s for s in rows if all(f" {w}" in f" {search_key(s.name)}" for w in key_words)][:limit]
