"""Where a listener left off, as apps keep it: the play queue saved to resume on another device
(Subsonic savePlayQueue) and position bookmarks in tracks (Subsonic bookmarks; REST bookmarks,
core.bookmarks, mark liked artists and songs and have no position)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from airwave.core.catalog import catalog
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import PlayQueue, PositionBookmark, Track

MAX_QUEUE = 5000
MAX_BOOKMARKS = 5000
MAX_COMMENT = 2000


@dataclass(frozen=True)
class SavedQueue:
    track_ids: list[int]  # tracks gone from the library left out
    current_track_id: int | None
    position_ms: int
    changed_at: datetime
    changed_by: str


def _present(db: Session, track_ids: list[int]) -> set[int]:
    found: set[int] = set()
    for start in range(0, len(track_ids), 900):
        chunk = track_ids[start : start + 900]
        found |= set(
            db.scalars(select(Track.id).where(Track.id.in_(chunk), Track.missing_since.is_(None)))
        )
    return found


def save_queue(
    db: Session,
    listener_id: int,
    track_ids: list[int],
    current: int | None,
    position_ms: int,
    client: str,
    now: datetime,
) -> None:
    """Replace the listener's saved queue (an empty list clears it); NOT_FOUND for a track that is
    not in the library, INVALID_REQUEST for a current track outside the queue."""
    if len(track_ids) > MAX_QUEUE:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"a play queue holds at most {MAX_QUEUE} tracks")
    missing = set(track_ids) - _present(db, track_ids)
    if missing:
        raise ApiError(ErrorCode.NOT_FOUND, f"no track S{min(missing)}")
    if current is not None and current not in track_ids:
        raise ApiError(ErrorCode.INVALID_REQUEST, "the current track is not in the queue")
    row = db.get(PlayQueue, listener_id)
    if not track_ids:
        if row is not None:
            db.delete(row)
        return
    if row is None:
        row = PlayQueue(listener_id=listener_id)
        db.add(row)
    row.track_ids = ",".join(str(t) for t in track_ids)
    row.current_track_id = current
    row.position_ms = max(0, position_ms)
    row.changed_at = now
    row.changed_by = client[:64]
    db.flush()


def saved_queue(db: Session, listener_id: int) -> SavedQueue | None:
    """The listener's saved queue, or None when none is saved."""
    row = db.get(PlayQueue, listener_id)
    if row is None:
        return None
    ids = [int(t) for t in row.track_ids.split(",") if t]
    kept = _present(db, ids)
    return SavedQueue(
        [t for t in ids if t in kept],
        row.current_track_id if row.current_track_id in kept else None,
        row.position_ms,
        row.changed_at,
        row.changed_by,
    )


def set_bookmark(
    db: Session, listener_id: int, track_id: int, position_ms: int, comment: str, now: datetime
) -> None:
    """Where the listener stopped in a track; a second bookmark of the track moves the first."""
    catalog.track(db, track_id)
    if len(comment) > MAX_COMMENT:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"a comment has at most {MAX_COMMENT} characters")
    row = db.scalar(
        select(PositionBookmark).where(
            PositionBookmark.listener_id == listener_id, PositionBookmark.track_id == track_id
        )
    )
    if row is None:
        count = len(
            db.scalars(
                select(PositionBookmark.id)
                .where(PositionBookmark.listener_id == listener_id)
                .limit(MAX_BOOKMARKS)
            ).all()
        )
        if count >= MAX_BOOKMARKS:
            raise ApiError(ErrorCode.INVALID_REQUEST, f"at most {MAX_BOOKMARKS} bookmarks")
        row = PositionBookmark(listener_id=listener_id, track_id=track_id, created_at=now)
        db.add(row)
    row.position_ms, row.comment, row.changed_at = max(0, position_ms), comment, now
    db.flush()


def delete_bookmark(db: Session, listener_id: int, track_id: int) -> None:
    """NOT_FOUND when the track has no bookmark of the listener's."""
    gone = db.execute(
        delete(PositionBookmark).where(
            PositionBookmark.listener_id == listener_id, PositionBookmark.track_id == track_id
        )
    )
    if not gone.rowcount:
        raise ApiError(ErrorCode.NOT_FOUND, f"no bookmark on S{track_id}")


@dataclass(frozen=True)
class PositionMark:
    track_id: int
    position_ms: int
    comment: str
    created_at: datetime
    changed_at: datetime


def bookmarks_of(db: Session, listener_id: int) -> list[PositionMark]:
    """The listener's position bookmarks on tracks still in the library, newest change first."""
    rows = db.scalars(
        select(PositionBookmark)
        .join(Track, Track.id == PositionBookmark.track_id)
        .where(PositionBookmark.listener_id == listener_id, Track.missing_since.is_(None))
        .order_by(PositionBookmark.changed_at.desc(), PositionBookmark.id.desc())
    )
    return [
        PositionMark(r.track_id, r.position_ms, r.comment, r.created_at, r.changed_at) for r in rows
    ]
