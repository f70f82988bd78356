"""Sound analysis of the whole catalogue: every track without an up-to-date profile, in worker
processes.

Profiles are committed in batches, so an interrupted run keeps its work and the next one continues
where it stopped. A profile is current when it was made by this PROFILE_VERSION from the track's
present file content (its fingerprint).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, delete, insert, or_, select

from airwave.library import containment
from airwave.library.scanner import worker_pool
from airwave.store.db import Database
from airwave.store.models import Track, TrackProfile

BATCH = 100  # results per commit
FLUSH_SECONDS = 3.0  # ... or sooner, so a slow analysis still saves its work often


@dataclass(frozen=True)
class Job:
    track_id: int
    path: str
    fingerprint: str


@dataclass(frozen=True)
class Result:
    track_id: int
    fingerprint: str
    profile: str | None
    features: bytes | None
    gain_db: float | None
    error: str | None
    cpu_seconds: float


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


def analyse(job: Job) -> Result:
    """Worker side: one track's profile, or the reason it has none."""
    from airwave.library.analysis import AnalysisError, analyze

    started = time.process_time()
    try:
        _regular(job.path)
        profile = analyze(job.path)
    except (AnalysisError, containment.Refused) as exc:
        return Result(
            job.track_id,
            job.fingerprint,
            None,
            None,
            None,
            str(exc)[:500],
            time.process_time() - started,
        )
    except Exception as exc:  # a decoder crash on one odd file must not stop the run
        return Result(
            job.track_id,
            job.fingerprint,
            None,
            None,
            None,
            f"{type(exc).__name__}: {exc}"[:500],
            time.process_time() - started,
        )
    return Result(
        job.track_id,
        job.fingerprint,
        profile.to_json(),
        profile.features().astype("<f4").tobytes(),
        profile.gain_db,
        None,
        time.process_time() - started,
    )


def _regular(path: str) -> None:
    """Refuse a track file that is no longer a regular file (decoding a FIFO would hang)."""
    try:
        containment.check(path, containment.Roots(()), containment.AUDIO_MAX_BYTES)
    except containment.Refused:
        raise
    except OSError:
        pass  # missing or unreadable: the decoder says so in its own words


def pending(database: Database, limit: int | None = None) -> list[Job]:
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
        return [Job(t, p, f) for t, p, f in db.execute(query)]


def _results(jobs: list[Job], workers: int) -> Iterator[Result]:
    if workers <= 1 or len(jobs) < 8:
        for job in jobs:
            yield analyse(job)
        return
    with worker_pool(workers) as pool:
        queue = iter(jobs)
        running: set[Future[Result]] = set()
        for job in queue:
            running.add(pool.submit(analyse, job))
            if len(running) >= workers * 4:
                break
        try:
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
                    nxt = next(queue, None)
                    if nxt is not None:
                        running.add(pool.submit(analyse, nxt))
        finally:
            for future in running:
                future.cancel()


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
    batch: list[Result] = []
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
        for result in _results(jobs, count):
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
