"""The tier's monthly listening cap (spec §6.6
`monthlyListeningCapHours`)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Listener, Spin, Track


def month_start(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(now: datetime) -> datetime:
    start = month_start(now)
    return (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )


def seconds_this_month(db: Session, listener_id: int, now: datetime) -> float:
    """Length of the tracks the listener started since the first of this month (UTC)."""
    total = db.scalar(
        select(func.sum(Track.duration))
        .join(Spin, Spin.track_id == Track.id)
        .where(
            Spin.listener_id == listener_id,
            Spin.issued_at >= month_start(now),
            Spin.started_at.is_not(None),
        )
    )
    return float(total or 0.0)


def check_cap(db: Session, settings: Settings, listener: Listener, now: datetime) -> None:
    """LISTENER_NOT_AUTHORIZED once this month's listening reaches the tier's cap (0 = no cap)."""
    cap = settings.tier(listener.tier).monthly_listening_cap_hours
    if cap and seconds_this_month(db, listener.id, now) >= cap * 3600:
        resume = next_month(now)
        raise ApiError(
            ErrorCode.LISTENER_NOT_AUTHORIZED,
            f"your plan's {cap} hours of listening this month are used up; listening resumes on "
            f"{resume:%Y-%m-%d} (UTC)",
            retry_after=int((resume - now).total_seconds()),
        )
