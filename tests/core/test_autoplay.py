"""Autoplay's rules: it goes on from what was playing, never replays the album it follows, and a
thumbs-down given in one context is never chosen there again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core import ids
from airwave.core.clock import FixedClock
from airwave.core.radio import autoplay
from airwave.store.models import Track, TrackNeighbors

from .conftest import Rows


def _neighbours(db: Session, rows: Rows, track: int, near: list[tuple[int, float]]) -> None:
    db.add(
        TrackNeighbors(
            track_id=track,
            built_at=rows.now,
            neighbor_ids=np.array([t for t, _ in near], "<i4").tobytes(),
            similarities=np.array([s for _, s in near], "<f2").tobytes(),
        )
    )


def test_autoplay_follows_the_album_without_replaying_it_and_keeps_its_thumbs(
    db: Session, rows: Rows, clock: FixedClock, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, engine_seed=3)
    me = rows.listener("premium")
    first, second = rows.track(), rows.track()
    second.album_id = first.album_id  # one album of two tracks
    near, nearer, far = rows.track(), rows.track(), rows.track()
    for track in (first, second):
        _neighbours(
            db,
            rows,
            track.id,
            [(other.id, 0.95) for other in (first, second) if other is not track]
            + [(nearer.id, 0.9), (near.id, 0.8), (far.id, 0.1)],
        )
    for track in (near, nearer, far):
        _neighbours(db, rows, track.id, [(first.id, 0.8)])
    db.flush()
    album = ids.Ref("album", first.album_id)

    picks = autoplay.songs(db, settings, me, album, [second.id], 3, clock.now())
    chosen = [p.track_id for p in picks]
    assert set(chosen[:2]) == {nearer.id, near.id}  # the nearest first, in a sampled order
    assert not {first.id, second.id} & set(chosen)  # the album itself is over
    assert all(p.rating == 0 for p in picks)
    assert autoplay.parse_token(picks[0].token) == (album, picks[0].track_id)

    autoplay.feedback(db, me, album, nearer.id, False, clock.now())
    autoplay.feedback(db, me, album, near.id, True, clock.now())
    again = autoplay.songs(db, settings, me, album, [second.id], 3, clock.now())
    assert nearer.id not in [p.track_id for p in again]
    assert {p.track_id: p.rating for p in again}.get(near.id) == 1
    # the thumbs belong to their context: after the single track, the down is not a ban
    single = autoplay.songs(db, settings, me, ids.Ref("track", first.id), [], 4, clock.now())
    assert nearer.id in [p.track_id for p in single]
    assert db.get(Track, nearer.id) is not None
