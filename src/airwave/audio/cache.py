"""The transcode cache: each (source file, encoding) is transcoded once into a size-bounded
directory.

Layout under data_dir/cache/audio/ab/: `<key>.<ext>` complete entries, `<key>.lock` held (flock) by
the one process transcoding that key, `<key>.<random>.part` the file being written. A part becomes
an entry by fsync and atomic rename, so a crash, a kill or a disconnect never leaves a partial
entry; the next writer of the key, the cache's start-up and eviction, and `airwave cache clear`
delete stale parts (those whose lock nobody holds). The transcode itself runs in a child process
(airwave.audio.workers), at most `workers` at once. Readers follow a part while it grows: through an
in-memory Job in the process that owns the transcode, by polling the files in other processes.

A transcode runs to completion while anyone listens; when its last listener has been gone for
ABANDON_AFTER seconds it is stopped and its part deleted (the next request starts afresh), so
clients that skip through tracks do not queue new transcodes behind ones nobody hears. Eviction is
least-recently-used by access time, which serving a hit refreshes (at most once a minute).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airwave import metrics
from airwave.audio.formats import PROFILES, Profile
from airwave.audio.transcode import TranscodeError
from airwave.audio.workers import Outcome, Worker, warm_up
from airwave.config import Settings

log = logging.getLogger("airwave.audio")

VERSION = 1  # part of every key: bump when profiles change so old entries are never served
TOUCH_EVERY = 60.0  # seconds between access-time refreshes of one entry
LOW_WATER = 0.9  # eviction frees space down to this share of the limit
POLL = 0.05  # seconds between looks at another process's transcode
STALL = 60.0  # seconds without growth after which another process's transcode counts as dead
ABANDON_AFTER = 2.0  # seconds without listeners after which a transcode is stopped
_EXTENSIONS = {"." + p.extension for p in PROFILES.values()}
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class CacheFull(TranscodeError):
    """The cache's file system has no room for the transcode (retry once space is freed)."""


def _no_space(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _NO_SPACE


@dataclass(frozen=True)
class CacheStats:
    root: Path
    entries: int
    bytes: int
    limit: int
    in_progress: int  # parts a live transcode holds the lock of
    leftovers: int  # parts nobody writes any more (a killed server's): sweep() deletes them


class Job:
    """One transcode that readers follow while it is written: by this process, or by another one."""

    def __init__(self, key: str, final: Path, lock: Path) -> None:
        self.key = key
        self.final = final
        self.lock = lock
        self.part: Path | None = None
        self.remote = False
        self.state = "starting"  # starting -> running -> done | failed
        self.error = ""
        self.no_space = False  # failed for want of disk space: CacheFull rather than TranscodeError
        self.version = 0
        self._changed = asyncio.Event()
        self._part_ino: int | None = None
        self._last_growth = time.monotonic()
        self._size = 0
        self.readers = 0
        self.abandoned = False
        self.worker: Worker | None = None
        self._abandon: asyncio.TimerHandle | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def poke(self) -> None:
        """Wake the readers (called in the event loop)."""
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self, seen: int) -> None:
        """Return once something happened after version `seen`: the part grew, or the job started
        or ended."""
        if self.finished or self.version != seen:
            return
        if not self.remote:
            await self._changed.wait()
            return
        await asyncio.sleep(POLL)
        self._refresh_remote()

    async def open_part(self) -> int | None:
        """A read descriptor on the part being written, or None when the job already finished
        (use `final`)."""
        deadline = time.monotonic() + STALL
        while True:
            seen = self.version
            if self.remote:
                self._refresh_remote()
                if self.part is None:
                    self.part = _part_named_in(self.lock)
            if self.finished:
                return None
            if self.part is not None:
                try:
                    fd = os.open(self.part, os.O_RDONLY | os.O_CLOEXEC)
                except FileNotFoundError:
                    if self.remote:
                        self.part = (
                            None  # renamed into place, or a new writer took over: look again
                        )
                else:
                    self._part_ino = os.fstat(fd).st_ino
                    return fd
            if time.monotonic() > deadline:
                self._fail("the transcode did not start in time")
                return None
            await self.changed(seen)

    async def wait(self) -> Path:
        """The complete entry, once the job is done; TranscodeError when it failed."""
        if self.remote and self._part_ino is None:
            fd = (
                await self.open_part()
            )  # learns the part's inode, by which completion is recognised
            if fd is not None:
                os.close(fd)
        while not self.finished:
            await self.changed(self.version)
        if self.state == "failed":
            raise CacheFull(self.error) if self.no_space else TranscodeError(self.error)
        return self.final

    def _refresh_remote(self) -> None:
        """Another process writes this job: done when the entry is our part renamed, failed when
        it went away."""
        if self.finished:
            return
        if self._part_ino is None and self.part is None and self.final.exists():
            self._done()
            return
        if self._is_our_final():
            self._done()
            return
        if self.part is not None:
            try:
                size = os.stat(self.part).st_size
            except FileNotFoundError:
                size = self._size
            if size != self._size:
                self._size, self._last_growth = size, time.monotonic()
        if _lock_is_free(self.lock):
            if self._is_our_final() or (self._part_ino is None and self.final.exists()):
                self._done()
            else:
                self._fail("the process transcoding this track stopped")
        elif time.monotonic() - self._last_growth > STALL:
            self._fail("the transcode in another process stalled")

    def _is_our_final(self) -> bool:
        try:
            return self._part_ino is not None and os.stat(self.final).st_ino == self._part_ino
        except FileNotFoundError:
            return False

    def _done(self) -> None:
        self.state = "done"
        self.poke()

    def _fail(self, message: str, no_space: bool = False) -> None:
        self.state, self.error, self.no_space = "failed", message, no_space
        self.poke()


@dataclass
class _Claim:
    """The key's lock, held by this process, and the part it will write."""

    lock: Path
    lock_fd: int
    part: Path

    def release(self, keep_part: bool = False) -> None:
        """Delete the part (unless published) and the lock file, then let the lock go;
        idempotent."""
        if not keep_part:
            self.part.unlink(missing_ok=True)
        if self.lock_fd >= 0:
            self.lock.unlink(missing_ok=True)
            os.close(self.lock_fd)
            self.lock_fd = -1


class TranscodeCache:
    """Transcodes on demand into data_dir/cache/audio, at most `workers` at a time, bounded to
    `limit` bytes."""

    def __init__(
        self, root: Path, *, limit: int, workers: int = 0, system_lame: bool = True
    ) -> None:
        self.root = root
        self.limit = limit
        self.system_lame = system_lame
        # more than one per core: a new listener's first bytes should not queue behind whole
        # transcodes
        self.workers = workers or 2 * (os.cpu_count() or 1)
        self._slots: asyncio.Semaphore | None = None
        self._jobs: dict[str, Job] = {}
        self._claims: dict[str, _Claim] = {}
        self._bytes: int | None = None  # running estimate of the entries' size; None until measured
        self._evicting = False
        self._closing = False
        self._swept = False
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks

    def start(self) -> None:
        """Delete what killed transcodes left, start the forkserver (blocking: run in a thread)."""
        try:
            self.sweep()
        except OSError as exc:  # an unreadable cache must not keep the server from starting
            log.warning("transcode cache sweep failed", extra={"error": str(exc)})
        warm_up()

    # ------------------------------------------------------------------ lookups

    def key(self, source: str, size: int, mtime_ns: int, profile: Profile) -> str:
        """Names one transcode: profile, source path and the source file's size and modification
        time."""
        text = f"{VERSION}|{profile.encoding}|{profile.bitrate}|{source}|{size}|{mtime_ns}"
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:40]

    def entry_path(self, key: str, profile: Profile) -> Path:
        return self.root / key[:2] / f"{key}.{profile.extension}"

    async def get(self, source: str, profile: Profile) -> Path | Job:
        """The complete entry if cached, else the (possibly shared) job producing it.
        FileNotFoundError: no source.

        Whoever waits for or reads a returned job does so inside `listening(job)`.
        """
        loop = asyncio.get_running_loop()
        key, final = await loop.run_in_executor(None, self._locate, source, profile)
        if final is not None:
            metrics.TRANSCODE_CACHE.labels("hit").inc()
            return final
        job = self._jobs.get(key)
        if job is not None:
            metrics.TRANSCODE_CACHE.labels("joined").inc()
            return job
        final_path = self.entry_path(key, profile)
        job = Job(key, final_path, final_path.with_suffix(".lock"))
        self._jobs[key] = job
        try:
            claim = await loop.run_in_executor(None, self._claim, job)
        except BaseException as exc:
            self._jobs.pop(key, None)
            job._fail("could not start the transcode", no_space=isinstance(exc, CacheFull))
            raise
        if claim == "done":
            self._jobs.pop(key, None)
            job._done()
            return final_path
        if claim == "busy":
            metrics.TRANSCODE_CACHE.labels("joined").inc()
            job.remote, job.state = True, "running"
            self._spawn(self._follow_remote(job))
            return job
        assert isinstance(claim, _Claim)
        metrics.TRANSCODE_CACHE.labels("miss").inc()
        metrics.TRANSCODES.labels(profile.encoding).inc()
        self._claims[key] = claim
        job.part, job.state = claim.part, "running"
        job.poke()
        self._spawn(self._drive(job, claim, source, profile))
        if not self._swept:
            self._swept = True
            loop.run_in_executor(None, self.sweep)
        return job

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @contextmanager
    def listening(self, job: Job) -> Iterator[Job]:
        """Count a listener of the job; the last one to leave starts the abandon timer."""
        job.readers += 1
        if job._abandon is not None:
            job._abandon.cancel()
            job._abandon = None
        try:
            yield job
        finally:
            job.readers -= 1
            if job.readers == 0 and not job.finished and not job.remote:
                job._abandon = asyncio.get_running_loop().call_later(
                    ABANDON_AFTER, self._abandon, job
                )

    def _abandon(self, job: Job) -> None:
        job._abandon = None
        if job.readers == 0 and not job.finished:
            job.abandoned = True
            if job.worker is not None:
                job.worker.stop()

    def _locate(self, source: str, profile: Profile) -> tuple[str, Path | None]:
        st = os.stat(source)
        key = self.key(source, st.st_size, st.st_mtime_ns, profile)
        final = self.entry_path(key, profile)
        try:
            entry = os.stat(final)
        except FileNotFoundError:
            return key, None
        now = time.time()
        if now - entry.st_atime > TOUCH_EVERY:
            try:
                os.utime(
                    final, (now, entry.st_mtime)
                )  # access time drives eviction; mtime (the ETag) stays
            except OSError:
                pass
        return key, final

    # ------------------------------------------------------------------ writing

    def _claim(self, job: Job) -> _Claim | str:
        """Take the key's lock: "done" if the entry appeared meanwhile, "busy" if another holds it.

        CacheFull when the disk has no room; on any failure the lock is let go, so the next request
        starts afresh.
        """
        try:
            job.final.parent.mkdir(parents=True, exist_ok=True)
            while True:
                lock_fd = os.open(job.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    os.close(lock_fd)
                    if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                        return "busy"
                    raise
                if _same_file(lock_fd, job.lock):
                    break
                os.close(lock_fd)  # a sweep deleted the file between our open and flock: again
            part = job.final.parent / f"{job.key}.{secrets.token_hex(4)}.part"
            claim = _Claim(job.lock, lock_fd, part)
            try:
                return self._prepare(job, claim)
            except BaseException:
                claim.release()
                raise
        except OSError as exc:
            if _no_space(exc):
                raise CacheFull(f"no space left for the transcode cache in {self.root}") from exc
            raise

    @staticmethod
    def _prepare(job: Job, claim: _Claim) -> _Claim | str:
        """With the lock held: "done" (lock let go) if the entry exists, else the claim."""
        if job.final.exists():
            claim.release()
            return "done"
        for stale in job.final.parent.glob(f"{job.key}.*.part"):
            stale.unlink(
                missing_ok=True
            )  # left by a writer that died: we hold the lock, nobody writes them
        os.close(os.open(claim.part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
        os.ftruncate(claim.lock_fd, 0)
        os.pwrite(claim.lock_fd, claim.part.name.encode(), 0)  # what other processes follow
        return claim

    async def _drive(self, job: Job, claim: _Claim, source: str, profile: Profile) -> None:
        """Run the job's child process when a slot is free, then publish the part as the entry."""
        loop = asyncio.get_running_loop()
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.workers)
        started = time.perf_counter()
        outcome = Outcome(False, "abandoned: nobody was listening")
        size = 0
        try:
            async with self._slots:
                if not job.abandoned and not self._closing:
                    job.worker = await loop.run_in_executor(
                        None, Worker.start, source, str(claim.part), profile, self.system_lame
                    )
                    if job.abandoned or self._closing:
                        job.worker.stop()
                    outcome = await job.worker.finished(job.poke)
            if outcome.ok:
                size = await loop.run_in_executor(None, _publish, claim.part, job.final)
        except Exception as exc:  # noqa: BLE001  (the job fails; the server goes on)
            outcome = Outcome(False, f"{type(exc).__name__}: {exc}", no_space=_no_space(exc))
        finally:
            claim.release(keep_part=outcome.ok)
            self._claims.pop(job.key, None)
            self._jobs.pop(job.key, None)
        if outcome.ok:
            job._done()
            log.info(
                "transcoded",
                extra={
                    "encoding": profile.encoding,
                    "bytes": size,
                    "source": source,
                    "seconds": round(time.perf_counter() - started, 3),
                },
            )
            if self._bytes is not None:
                self._bytes += size
            self._maybe_evict()
        else:
            quiet = job.abandoned or self._closing
            job._fail(
                "abandoned: nobody was listening" if job.abandoned else outcome.error,
                outcome.no_space,
            )
            if not quiet:
                log.warning(
                    "transcode failed",
                    extra={"encoding": profile.encoding, "source": source, "error": outcome.error},
                )

    async def _follow_remote(self, job: Job) -> None:
        """Keep another process's job in the table until it ends (readers refresh its state as
        they poll)."""
        try:
            await job.wait()
        except TranscodeError:
            pass
        finally:
            self._jobs.pop(job.key, None)

    # ------------------------------------------------------------------ size bound

    def _maybe_evict(self) -> None:
        if (
            self._evicting
            or self._closing
            or (self._bytes is not None and self._bytes <= self.limit)
        ):
            return
        self._evicting = True
        future = asyncio.get_running_loop().run_in_executor(None, self.evict)
        future.add_done_callback(lambda _f: setattr(self, "_evicting", False))

    def evict(self) -> int:
        """Delete least recently used entries until the cache is within its bound; returns bytes
        freed."""
        self.sweep()  # parts left by killed transcodes take space too
        entries = sorted(self._entries(), key=lambda e: e[0])
        total = sum(size for _, size, _ in entries)
        freed = 0
        if total > self.limit:
            target = int(self.limit * LOW_WATER)
            for _, size, path in entries:
                if total - freed <= target:
                    break
                try:
                    path.unlink()
                    freed += size
                except FileNotFoundError:
                    pass
        self._bytes = total - freed
        if freed:
            log.info("transcode cache evicted", extra={"bytes": freed, "kept": self._bytes})
        return freed

    def _entries(self) -> list[tuple[float, int, Path]]:
        """(access time, size, path) of every complete entry."""
        out: list[tuple[float, int, Path]] = []
        if not self.root.is_dir():
            return out
        for sub in os.scandir(self.root):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for item in os.scandir(sub.path):
                if os.path.splitext(item.name)[1] in _EXTENSIONS:
                    try:
                        st = item.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    out.append((st.st_atime, st.st_size, Path(item.path)))
        return out

    # ------------------------------------------------------------------ operator's view

    def stats(self) -> CacheStats:
        """Entries and their size; parts told apart by whether a live transcode holds their lock."""
        entries = self._entries()
        live = dead = 0
        for part in self.root.glob("*/*.part") if self.root.is_dir() else ():
            key = part.name.split(".", 1)[0]
            if key in self._jobs or not _lock_is_free(part.with_name(f"{key}.lock")):
                live += 1
            else:
                dead += 1
        total = sum(size for _, size, _ in entries)
        return CacheStats(self.root, len(entries), total, self.limit, live, dead)

    def clear(self) -> tuple[int, int]:
        """Delete every complete entry and every abandoned part; returns (entries, bytes)
        deleted."""
        entries = self._entries()
        for _, _, path in entries:
            path.unlink(missing_ok=True)
        self.sweep()
        self._bytes = 0
        return len(entries), sum(size for _, size, _ in entries)

    def sweep(self) -> int:
        """Delete parts and lock files that no live transcode holds (left by a crash); returns
        parts deleted."""
        removed = 0
        if not self.root.is_dir():
            return 0
        for lock in self.root.glob("*/*.lock"):
            key = lock.name.removesuffix(".lock")
            if key in self._jobs:
                continue
            fd = _try_lock(lock)
            if fd is None:
                continue
            try:
                for part in lock.parent.glob(f"{key}.*.part"):
                    part.unlink(missing_ok=True)
                    removed += 1
                lock.unlink(missing_ok=True)
            finally:
                os.close(fd)
        for part in self.root.glob("*/*.part"):  # parts whose lock file is gone entirely
            key = part.name.split(".", 1)[0]
            if key not in self._jobs and not part.with_name(f"{key}.lock").exists():
                part.unlink(missing_ok=True)
                removed += 1
        return removed

    def close(self) -> None:
        """Stop running transcodes now: their processes end, their parts and locks are deleted."""
        self._closing = True
        for key, claim in list(self._claims.items()):
            job = self._jobs.get(key)
            if job is not None and job.worker is not None:
                job.worker.stop()
            claim.release()


def _publish(part: Path, final: Path) -> int:
    """Make a complete (already fsynced) part the entry: atomic rename, then make the rename
    durable."""
    size = part.stat().st_size
    os.rename(part, final)
    _fsync_dir(final.parent)
    return size


def _part_named_in(lock: Path) -> Path | None:
    try:
        name = lock.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return lock.parent / name if name.endswith(".part") and "/" not in name else None


def _same_file(fd: int, path: Path) -> bool:
    """Whether the descriptor is still the file at path (not one deleted and recreated since)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (opened.st_dev, opened.st_ino)


def _try_lock(path: Path) -> int | None:
    """A descriptor holding the file's lock, or None when someone else holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:  # gone, or not ours to open: either way we hold nothing
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _lock_is_free(path: Path) -> bool:
    fd = _try_lock(path)
    if fd is None:
        return not path.exists()
    os.close(fd)
    return True


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def for_settings(settings: Settings) -> TranscodeCache:
    """The instance's cache: data_dir/cache/audio, bounded by transcode_cache_mb."""
    return TranscodeCache(
        settings.data_dir / "cache" / "audio",
        limit=settings.transcode_cache_mb * 1024 * 1024,
        workers=settings.transcode_workers,
        system_lame=settings.system_lame,
    )
