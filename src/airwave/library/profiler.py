"""Sound analysis of the whole catalogue: every track without an up-to-date profile, in worker
processes.

Profiles are committed in batches, so an interrupted run keeps its work and the next one continues
where it stopped. A profile is current when it was made by this PROFILE_VERSION from the track's
present file content (its fingerprint).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, delete, insert, or_, select

from airwave.library.workers import ProfileJob, ProfileResult, analyse_all
from airwave.store.db import Database
from airwave.store.models import Track, TrackProfile

BATCH = 100  # results per commit
FLUSH_SECONDS = 3.0  # ... or sooner, so a slow analysis still saves its work often


@dataclass
class ProfileReport:
    analysed: int = 0
    failed: int = 0
    pending: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    interrupted: bool = False

    @property
    def tracks_per_cpu_second(self) -> float:
        return self.analysed / self.cpu_seconds if self.cpu_seconds else 0.0


def pending(database: Database, limit: int | None = None) -> list[ProfileJob]:
    """Present tracks whose profile is missing, stale, or from an older analysis version."""
    from airwave.library.analysis import PROFILE_VERSION

    with database.read() as db:
        query = (
            select(Track.id, Track.path, Track.fingerprint)
            .outerjoin(TrackProfile, TrackProfile.track_id == Track.id)
            .where(
                Track.missing_since.is_(None),
                Track.path.is_not(None),
                or_(
                    TrackProfile.track_id.is_(None),
                    TrackProfile.version != PROFILE_VERSION,
                    and_(TrackProfile.fingerprint != Track.fingerprint),
                ),
            )
            .order_by(Track.id)
        )
        if limit:
            query = query.limit(limit)
        return [ProfileJob(t, p, f) for t, p, f in db.execute(query)]


def run(
    database: Database,
    now: Callable[[], datetime],
    *,
    workers: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ProfileReport:
    """Analyse every pending track; commit every BATCH results."""
    from airwave.library.analysis import PROFILE_VERSION

    started = time.perf_counter()
    jobs = pending(database)
    report = ProfileReport(pending=len(jobs))
    if not jobs:
        return report
    count = max(1, workers or os.cpu_count() or 1)
    batch: list[ProfileResult] = []
    done = 0
    flushed = time.monotonic()
    if progress:
        progress("analysing sound", 0, len(jobs))

    def flush() -> None:
        nonlocal flushed
        flushed = time.monotonic()
        if not batch:
            return
        with database.write() as db:
            db.execute(
                delete(TrackProfile).where(TrackProfile.track_id.in_([r.track_id for r in batch]))
            )
            db.execute(
                insert(TrackProfile),
                [
                    {
                        "track_id": r.track_id,
                        "version": PROFILE_VERSION,
                        "fingerprint": r.fingerprint,
                        "profile": r.profile,
                        "features": r.features,
                        "gain_db": r.gain_db,
                        "error": r.error,
                        "analyzed_at": now(),
                    }
                    for r in batch
                ],
            )
        batch.clear()

    try:
        for result in analyse_all(jobs, count):
            batch.append(result)
            done += 1
            report.cpu_seconds += result.cpu_seconds
            if result.error is None:
                report.analysed += 1
            else:
                report.failed += 1
            if len(batch) >= BATCH or time.monotonic() - flushed > FLUSH_SECONDS:
                flush()
            if progress:
                progress("analysing sound", done, len(jobs))
            if should_stop and should_stop():
                report.interrupted = True
                break
    except KeyboardInterrupt:
        report.interrupted = True
        flush()
        raise
    flush()
    report.pending = len(jobs) - done
    report.seconds = time.perf_counter() - started
    return report
