"""Helpers for the audio delivery tests: music-like sources, decoding, tokens and play-log rows."""

from __future__ import annotations

import io
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from sqlalchemy import select
from support import Backend

RATE = 44100


def music(seconds: float, rate: int = RATE, seed: int = 1) -> np.ndarray:
    """Stereo float32 (2, n) that codecs treat like music: chords, a moving melody and some
    noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    chord = sum(0.12 * np.sin(2 * np.pi * f * t) for f in (220.0, 277.2, 329.6, 440.0))
    melody = 0.15 * np.sin(2 * np.pi * (660 + 220 * np.sin(2 * np.pi * 0.25 * t)) * t)
    noise = rng.normal(0, 0.05, (2, t.size))
    left = chord + melody + noise[0]
    right = chord - 0.5 * melody + noise[1]
    return np.clip(np.stack([left, right]), -1, 1).astype(np.float32)


def write_audio(
    path: Path, samples: np.ndarray, rate: int = RATE, fmt: str = "flac", codec: str = "flac"
) -> Path:
    """Encode (channels, n) float samples (1 or 2 channels) into a real file with PyAV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    layout = "mono" if samples.shape[0] == 1 else "stereo"
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=rate)
        stream.layout = layout
        stream.codec_context.open()
        resampler = av.AudioResampler(
            format=stream.codec_context.format.name,
            layout=layout,
            rate=rate,
            frame_size=stream.codec_context.frame_size or None,
        )
        for start in range(0, samples.shape[1], 4096):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples[:, start : start + 4096]), format="fltp", layout=layout
            )
            frame.sample_rate = rate
            frame.pts = start
            frame.time_base = Fraction(1, rate)
            for chunk in resampler.resample(frame):
                for packet in stream.encode(chunk):
                    out.mux(packet)
        for chunk in resampler.resample(None):
            for packet in stream.encode(chunk):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


@dataclass(frozen=True)
class Decoded:
    codec: str
    container: str
    sample_rate: int
    channels: int
    seconds: float  # from the decoded samples, not from headers
    bitrate: float  # bits per second of the whole body


def decode(body: bytes) -> Decoded:
    """Decode every frame of a response body."""
    with av.open(io.BytesIO(body)) as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(stream))
        rate = stream.codec_context.sample_rate
        seconds = samples / rate
        context = stream.codec_context
        return Decoded(
            context.codec.canonical_name,
            container.format.name,
            rate,
            context.channels,
            seconds,
            len(body) * 8 / seconds,
        )


def database(backend: Backend) -> Any:
    from airwave.store.db import Database

    return Database(
        backend.pg.url if backend.pg else f"sqlite:///{backend.data_dir / 'airwave.db'}"
    )


def signer(backend: Backend) -> Any:
    from airwave.audio.signing import UrlSigner

    return UrlSigner.open(backend.data_dir)


def now() -> datetime:
    return datetime.now(UTC)


def track_ids(backend: Backend) -> dict[str, int]:
    """Track id by file name."""
    from airwave.store.models import Track

    db = database(backend)
    try:
        with db.read() as session:
            return {Path(p).name: i for i, p in session.execute(select(Track.id, Track.path)) if p}
    finally:
        db.dispose()


def listener_id(backend: Backend, username: str) -> int:
    from airwave.store.models import Listener

    db = database(backend)
    try:
        with db.read() as session:
            return session.scalar(select(Listener.id).where(Listener.username == username))
    finally:
        db.dispose()


def add_spin(
    backend: Backend,
    listener: int,
    track: int,
    *,
    started_ago: float | None = 10.0,
    station_name: str | None = "Test Radio",
) -> int:
    """A spin as getFragment writes it (plus trackStarted when started_ago is given); returns its
    id."""
    from airwave.store.models import Spin, Station, Track

    db = database(backend)
    try:
        with db.write() as session:
            row = session.get(Track, track)
            station_id = None
            if station_name:
                station = Station(listener_id=listener, name=station_name, created_at=now())
                session.add(station)
                session.flush()
                station_id = station.id
            issued = now() - timedelta(seconds=(started_ago or 0) + 1)
            spin = Spin(
                token=secrets.token_hex(16),
                listener_id=listener,
                station_id=station_id,
                track_id=track,
                artist_id=row.artist_id,
                album_id=row.album_id,
                reason="Normal",
                audio_encoding="mp3",
                issued_at=issued,
                seconds_played=0.0,
                started_at=now() - timedelta(seconds=started_ago)
                if started_ago is not None
                else None,
            )
            session.add(spin)
            session.flush()
            return spin.id
    finally:
        db.dispose()


def clone_track(backend: Backend, track: int, path: Path, codec: str = "mp3") -> int:
    """A new catalogue track like `track` whose file is `path` (files the scanner would not
    accept)."""
    from airwave.store.models import Track

    db = database(backend)
    try:
        with db.write() as session:
            base = session.get(Track, track)
            copy = Track(
                title=f"clone of {base.title}",
                artist_id=base.artist_id,
                album_id=base.album_id,
                duration=base.duration,
                codec=codec,
                fingerprint=secrets.token_hex(20),
                path=str(path),
                added_at=now(),
            )
            session.add(copy)
            session.flush()
            return copy.id
    finally:
        db.dispose()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def cache_files(data_dir: Path) -> list[Path]:
    root = data_dir / "cache" / "audio"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def file_bytes(path: Path, start: int = 0, length: int | None = None) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(start)
        return handle.read(-1 if length is None else length)
