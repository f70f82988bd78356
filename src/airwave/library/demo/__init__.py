"""Demo library: a small, varied music collection synthesised offline, deterministic for a seed.

The same generator makes larger libraries of known sound clusters for measuring stations: every
genre is a cluster, and its artists alternate between two sub-styles that sound apart.

The parts: `styles` (genres and their sub-styles), `composition` (artists, albums, track plans
and the truth map), `synthesis` (audio), `formats` (encoders), `tagging` (tags and lyrics in
each container's dialect) and `art` (covers). This module writes a whole library with them.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from airwave.library.demo.art import cover_art, write_art
from airwave.library.demo.composition import (
    VARIOUS_ARTISTS,
    VARIOUS_ARTISTS_MBID,
    Album,
    Shape,
    TrackJob,
    plan,
    truth,
)
from airwave.library.demo.formats import ENCODE_COST, FORMAT_CYCLE, FORMATS, AudioFormat, encode
from airwave.library.demo.styles import STYLES, SUBSTYLES, Style, Timbre, style_of, substyle_name
from airwave.library.demo.synthesis import Sound, loudness, synthesize
from airwave.library.demo.tagging import TagValues, write_tags
from airwave.library.workers import start_helper

__all__ = [
    "FORMATS",
    "STYLES",
    "SUBSTYLES",
    "VARIOUS_ARTISTS",
    "VARIOUS_ARTISTS_MBID",
    "AudioFormat",
    "DemoSummary",
    "Sound",
    "Style",
    "TagValues",
    "Timbre",
    "TrackJob",
    "cover_art",
    "encode",
    "generate",
    "loudness",
    "render_track",
    "style_of",
    "substyle_name",
    "synthesize",
    "write_tags",
]


@dataclass(frozen=True)
class DemoSummary:
    """What generate() wrote, and the sound cluster each file was synthesised in.

    `truth` maps every audio file to (genre, sub-style), e.g. ("Jazz", "Jazz/b"): the genre is
    the track's primary genre tag and the style it was synthesised in; the sub-style is "a" for
    the artists in even slots of their genre and "b" for the odd ones (see Style.substyles).
    Compilation tracks carry their artist's cluster.
    """

    root: Path
    artists: int
    albums: int
    tracks: int
    genres: tuple[str, ...]
    files: tuple[Path, ...]  # audio files written
    truth: dict[Path, tuple[str, str]] = field(default_factory=dict, hash=False)


def render_track(job: TrackJob) -> Path:
    """Synthesise, encode and tag one track; the file appears whole or not at all."""
    fmt = FORMATS[job.fmt]
    audio = synthesize(job.sound, job.seconds, fmt.rate)
    gain = None
    if job.replaygain:
        gain = (-18.0 - loudness(audio), float(np.abs(audio).max()))
    partial = job.path.with_name(job.path.name + ".part")
    try:
        encode(audio, fmt.rate, partial, fmt)
        write_tags(partial, job.fmt, job.tags, job.art, job.lyrics, gain)
        os.replace(partial, job.path)
    finally:
        partial.unlink(missing_ok=True)
    return job.path


def _pool_context() -> multiprocessing.context.BaseContext:
    """fork: fastest, needs no importable __main__; forkserver once other threads make it unsafe."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _by_cost(jobs: list[TrackJob]) -> list[TrackJob]:
    """Costliest encodes first, so the pool does not end waiting on one slow straggler."""
    return sorted(jobs, key=lambda job: -ENCODE_COST[job.fmt])


def _write_sidecars(albums: list[Album]) -> None:
    """The .lrc and .txt lyric files that sit beside some tracks."""
    for album in albums:
        for path, text in album.sidecars.items():
            path.write_text(text, encoding="utf-8")


def generate(
    out_dir: Path,
    *,
    seed: int = 7,
    track_seconds: float = 16.0,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    genres: Sequence[str] | None = None,
    artists_per_genre: int = 2,
    albums_per_artist: int = 2,
    tracks_per_album: int = 6,
    compilation: bool = True,
    formats: Sequence[str] | None = None,
) -> DemoSummary:
    """Write the demo library into out_dir (created if needed); deterministic for a seed.

    The defaults make the browsable demo library. The other keywords make libraries of known
    sound clusters for measuring stations: `genres` picks styles by genre name, `formats`
    restricts the format rotation (("flac",) is the quickest to write), and every genre's
    artists alternate between its two sub-styles (DemoSummary.truth).
    """
    if track_seconds <= 0:
        raise ValueError("track_seconds must be positive")
    if min(artists_per_genre, albums_per_artist, tracks_per_album) < 1:
        raise ValueError(
            "artists_per_genre, albums_per_artist and tracks_per_album must be at least 1"
        )
    known = [style.genre for style in STYLES]
    if genres is not None and (unknown := set(genres) - set(known)):
        raise ValueError(f"unknown genres {sorted(unknown)}; the styles are {known}")
    if formats is not None and (unknown := set(formats) - set(FORMATS)):
        raise ValueError(f"unknown formats {sorted(unknown)}; choose from {sorted(FORMATS)}")
    if formats is not None and not formats:
        raise ValueError("formats must name at least one format")
    shape = Shape(
        styles=tuple(s for s, genre in enumerate(known) if genres is None or genre in genres),
        artists=artists_per_genre,
        albums=albums_per_artist,
        tracks=tracks_per_album,
        compilation=compilation,
        # the rotation restricted, keeping its weighting: the cheap encoders come up more often
        formats=FORMAT_CYCLE if formats is None else tuple(f for f in FORMAT_CYCLE if f in formats),
    )
    root = Path(out_dir)
    albums = plan(seed, track_seconds, root, shape)
    for album in albums:
        album.folder.mkdir(parents=True, exist_ok=True)
    total = sum(len(album.jobs) for album in albums)
    count = max(1, min(workers or os.cpu_count() or 1, total))
    if progress:
        progress(0, total)
    _write_sidecars(albums)
    if count == 1:
        write_art(albums)
        for done, job in enumerate((job for album in albums for job in album.jobs), 1):
            render_track(job)
            if progress:
                progress(done, total)
    else:
        with ProcessPoolExecutor(
            max_workers=count, mp_context=_pool_context(), initializer=start_helper
        ) as pool:
            # tracks without embedded art start while this process draws the covers
            plain = [
                job
                for album in albums
                if not album.art_mode.endswith("embedded")
                for job in album.jobs
            ]
            futures: list[Future[Path]] = [
                pool.submit(render_track, job) for job in _by_cost(plain)
            ]
            try:
                write_art(albums)
                pictured = [
                    job
                    for album in albums
                    if album.art_mode.endswith("embedded")
                    for job in album.jobs
                ]
                futures += [pool.submit(render_track, job) for job in _by_cost(pictured)]
                for done, future in enumerate(as_completed(futures), 1):
                    future.result()
                    if progress:
                        progress(done, total)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    jobs = [job for album in albums for job in album.jobs]
    tagged = sorted({genre for job in jobs for genre in job.tags.genres})
    artists = {job.tags.artist for job in jobs}
    return DemoSummary(
        root=root,
        artists=len(artists),
        albums=len(albums),
        tracks=total,
        genres=tuple(tagged),
        files=tuple(job.path for job in jobs),
        truth=truth(jobs),
    )
