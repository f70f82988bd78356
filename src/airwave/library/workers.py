"""What runs inside the library's helper processes: reading one file's tags, analysing one track's
sound; and the pools that run them.

This module is preloaded by the forkserver (airwave.processes), so it imports no database or web
code: a helper must cost a fork, not an import of SQLAlchemy.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass

from airwave import processes
from airwave.library import containment
from airwave.library.tags import ReadError, TrackTags, describe_image, read

_live: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
_live_lock = threading.Lock()
_stoppers: list[threading.Thread] = []  # threads shutting pools down (cancel_all)
ANALYSIS_NICENESS = 10  # sound analysis yields the CPU to serving and to tag reading


def start_helper(niceness: int = 0) -> None:
    """A pool's initializer: the worker ends with the process that started it, even by SIGKILL,
    and `niceness` lowers its CPU priority."""
    processes.release_forkserver()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a helper ends on SIGTERM, whatever its parent
    containment.die_with_parent()
    if niceness:
        os.nice(niceness)


def pool(workers: int, niceness: int = 0) -> ProcessPoolExecutor:
    """A process pool whose workers end when this process dies, even by SIGKILL; `niceness` lowers
    their CPU priority."""
    context = processes.pool_context()
    executor = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=start_helper,
        initargs=(niceness,),
    )
    if context.get_start_method() == "fork":
        # A fork pool starts all its workers at its first task: here, while no fork-safe
        # thread is in the middle of its work.
        with processes.fork_guard:
            executor.submit(int).result()
    with _live_lock:
        _live.add(executor)
    return executor


def cancel_all() -> None:
    """Drop the queued work of every pool (a stopping server must not wait for a whole scan);
    the jobs already running finish, and their callers see their futures cancelled. Each pool is
    shut down by a thread of its own, which shutdown_all() waits for."""
    with _live_lock:
        pools = list(_live)
        _stoppers[:] = [s for s in _stoppers if s.is_alive()]
    for executor in pools:
        stopper = threading.Thread(
            target=executor.shutdown,
            kwargs={"wait": True, "cancel_futures": True},
            name="pool-shutdown",
            daemon=True,
        )
        stopper.start()
        with _live_lock:
            _stoppers.append(stopper)


def shutdown_all(timeout: float) -> bool:
    """Shut every pool down and wait (up to `timeout` seconds) until it has: queued work dropped,
    running jobs finished, worker processes joined, queues released. For a process about to end
    by os._exit (a worker of `serve`), which skips the finalizers that release the pools'
    semaphores otherwise (the resource tracker then warns that they leaked). False: a pool did
    not end in time."""
    cancel_all()
    deadline = time.monotonic() + timeout
    with _live_lock:
        stoppers = list(_stoppers)
    for stopper in stoppers:
        stopper.join(max(0.0, deadline - time.monotonic()))
    gc.collect()  # a pool's queues live in reference cycles: their semaphores are released now
    return not any(stopper.is_alive() for stopper in stoppers)


# ------------------------------------------------------------------------------- tag reading

# audio path, lyrics sidecar, folder cover to describe, where files may really live
TagJob = tuple[str, "str | None", "str | None", containment.Roots]
WINDOW = 4096  # jobs in flight: bounds memory when reading outpaces writing


def read_tags(job: TagJob) -> TrackTags | ReadError:
    result = read(job[0], job[1], job[3])
    if job[2] and isinstance(result, TrackTags):
        result.folder_cover = describe_image(job[2], job[3])
    return result


def read_all(jobs: Sequence[TagJob], workers: int) -> Iterator[TrackTags | ReadError]:
    """Tag reading in worker processes (in-process for small jobs or workers=1), in job order."""
    if workers <= 1 or len(jobs) < 200:
        for job in jobs:
            yield read_tags(job)
        return
    with pool(workers) as executor:
        try:
            pending = executor.map(read_tags, jobs[:WINDOW], chunksize=64)
            for start in range(WINDOW, len(jobs) + WINDOW, WINDOW):
                following = (
                    executor.map(read_tags, jobs[start : start + WINDOW], chunksize=64)
                    if start < len(jobs)
                    else None
                )
                yield from pending
                pending = following
        except BaseException:
            executor.shutdown(wait=False, cancel_futures=True)
            raise


# ---------------------------------------------------------------------------- sound analysis


@dataclass(frozen=True)
class ProfileJob:
    track_id: int
    path: str
    fingerprint: str


@dataclass(frozen=True)
class ProfileResult:
    track_id: int
    fingerprint: str
    profile: str | None
    features: bytes | None
    gain_db: float | None
    error: str | None
    cpu_seconds: float


def analyse(job: ProfileJob) -> ProfileResult:
    """One track's profile, or the reason it has none."""
    from airwave.library.analysis import AnalysisError, analyze

    started = time.process_time()

    def failed(reason: str) -> ProfileResult:
        cpu = time.process_time() - started
        return ProfileResult(job.track_id, job.fingerprint, None, None, None, reason[:500], cpu)

    try:
        _regular(job.path)
        profile = analyze(job.path)
    except (AnalysisError, containment.Refused) as exc:
        return failed(str(exc))
    except Exception as exc:  # a decoder crash on one odd file must not stop the run
        return failed(f"{type(exc).__name__}: {exc}")
    return ProfileResult(
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


def analyse_all(jobs: list[ProfileJob], workers: int) -> Iterator[ProfileResult]:
    """Results as they come (not in job order), from worker processes unless there is little to
    do."""
    if workers <= 1 or len(jobs) < 8:
        for job in jobs:
            yield analyse(job)
        return
    with pool(workers, ANALYSIS_NICENESS) as executor:
        queue = iter(jobs)
        running: set[Future[ProfileResult]] = set()
        for job in queue:
            running.add(executor.submit(analyse, job))
            if len(running) >= workers * 4:
                break
        try:
            while running:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    if future.cancelled():
                        return
                    yield future.result()
                    nxt = next(queue, None)
                    if nxt is not None:
                        running.add(executor.submit(analyse, nxt))
        finally:
            for future in running:
                future.cancel()
