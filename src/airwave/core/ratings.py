"""Star ratings a listener gives tracks in apps (Subsonic setRating): kept per listener, shown
back as OpenSubsonic userRating. Thumbs on stations are core.radio's; apps.rate does both."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from airwave.errors import ApiError, ErrorCode
from airwave.store.models import TrackRating
from airwave.store.sql import among

HIGHEST = 5


def set_rating(db: Session, listener_id: int, track_id: int, rating: int, now: datetime) -> None:
    """1-5 stars, or 0 to clear."""
    if not 0 <= rating <= HIGHEST:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"a rating is 0 (none) to {HIGHEST}")
    row = db.get(TrackRating, (listener_id, track_id))
    if rating == 0:
        if row is not None:
            db.execute(
                delete(TrackRating).where(
                    TrackRating.listener_id == listener_id, TrackRating.track_id == track_id
                )
            )
        return
    if row is None:
        db.add(TrackRating(listener_id=listener_id, track_id=track_id, rating=rating, rated_at=now))
    else:
        row.rating, row.rated_at = rating, now
    db.flush()


def ratings_of(db: Session, listener_id: int, track_ids: list[int]) -> dict[int, int]:
    """The listener's ratings of these tracks (unrated ones are absent)."""
    if not track_ids:
        return {}
    rows = db.execute(
        select(TrackRating.track_id, TrackRating.rating).where(
            TrackRating.listener_id == listener_id, among(db, TrackRating.track_id, track_ids)
        )
    )
    return {track_id: rating for track_id, rating in rows}
