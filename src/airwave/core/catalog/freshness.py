"""Whether the similarity space's neighbour table is current, without numpy: what a rescan that
changed nothing asks before anything heavier (core/catalog/space.py builds the table)."""

from __future__ import annotations

import hashlib

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from airwave.store.db import Database
from airwave.store.models import SimilarityIndex, Track, TrackGenre, TrackProfile

PRESENT = Track.missing_since.is_(None)


def signature(db: Session) -> tuple[str, int]:
    """What the neighbour table depends on: present tracks, their tags and their profiles."""
    tracks = db.execute(
        select(
            func.count(Track.id), func.coalesce(func.sum(Track.id), 0), func.max(Track.added_at)
        ).where(PRESENT)
    ).one()
    profiles = db.execute(
        select(func.count(TrackProfile.track_id), func.max(TrackProfile.analyzed_at))
    ).one()
    tags = db.execute(
        select(
            func.count(), func.coalesce(func.sum(TrackGenre.genre_id * 7 + TrackGenre.track_id), 0)
        ).select_from(TrackGenre)
    ).one()
    text = repr((tuple(tracks), tuple(profiles), tuple(tags)))
    return hashlib.sha256(text.encode()).hexdigest(), int(tracks[0])


def is_current(database: Database) -> bool:
    """The neighbour table was built from the catalogue and profiles as they are now."""
    with database.read() as db:
        built = db.scalar(select(SimilarityIndex.signature).where(SimilarityIndex.id == 1))
        return built is not None and built == signature(db)[0]
