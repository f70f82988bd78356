"""Random songs (Subsonic getRandomSongs) drawn without reading the whole catalogue: only present
tracks that match the filters, never one twice, every match as likely as any other, and all of
them when fewer match than asked for; on the id range and on a sparse genre's own list."""

from __future__ import annotations

import random
from collections import Counter

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from airwave.core.catalog import browse
from airwave.store.models import Genre, Track, TrackGenre

from .conftest import Rows

TRACKS = 400
RARE = range(3, TRACKS, 80)  # five tracks of a rare genre, far apart: drawn from its list
MISSING = {42, 163}  # gone from the library: never drawn (163 is Rare and Common)


def _catalogue(db: Session, rows: Rows) -> list[int]:
    ids = [rows.track().id for _ in range(TRACKS)]
    common = Genre(name="Common", name_key="common", category="Other")
    rare = Genre(name="Rare", name_key="rare", category="Other")
    db.add_all([common, rare])
    db.flush()
    for n, track_id in enumerate(ids):
        if n % 2 == 1:
            db.add(TrackGenre(track_id=track_id, genre_id=common.id))
        if n in RARE:
            db.add(TrackGenre(track_id=track_id, genre_id=rare.id))
        year = 1960 + n % 40
        db.execute(update(Track).where(Track.id == track_id).values(year=year))
    missing = [ids[n] for n in MISSING]
    db.execute(update(Track).where(Track.id.in_(missing)).values(missing_since=rows.now))
    db.flush()
    return ids


def test_draws_only_matching_present_tracks_each_once(db: Session, rows: Rows) -> None:
    ids = _catalogue(db, rows)
    present = set(ids) - {ids[n] for n in MISSING}
    rng = random.Random(7)
    for _ in range(20):
        some = browse.random_track_ids(db, 50, rng)
        assert len(some) == 50 == len(set(some)) and set(some) <= present
        common = browse.random_track_ids(db, 30, rng, genre="COMMON")
        assert len(common) == 30 == len(set(common))
        assert all(ids.index(t) % 2 == 1 and t in present for t in common)
        sixties = browse.random_track_ids(db, 10, rng, from_year=1960, to_year=1969)
        assert all(1960 <= 1960 + ids.index(t) % 40 <= 1969 for t in sixties)
        assert len(sixties) == 10 and set(sixties) <= present
    # fewer match than asked for: every one of them (the rare genre's list, less a missing track)
    rare = {ids[n] for n in RARE} - {ids[n] for n in MISSING}
    assert set(browse.random_track_ids(db, 50, rng, genre="rare")) == rare
    assert len(browse.random_track_ids(db, 50, rng, genre="rare")) == len(rare) == 4
    assert browse.random_track_ids(db, 5, rng, genre="rare", from_year=1999, to_year=2001) == []
    assert browse.random_track_ids(db, 5, rng, genre="no such genre") == []
    assert len(browse.random_track_ids(db, 1000, rng)) == len(present)


def test_every_match_as_likely(db: Session, rows: Rows) -> None:
    ids = _catalogue(db, rows)
    rng = random.Random(11)
    drawn: Counter[int] = Counter()
    rare: Counter[int] = Counter()
    for _ in range(400):
        drawn.update(browse.random_track_ids(db, 20, rng))
        rare.update(browse.random_track_ids(db, 1, rng, genre="Rare"))
    present = [t for n, t in enumerate(ids) if n not in MISSING]
    # 8,000 draws over 398 tracks, about 20 each: as spread as a fair draw's counts (Pearson's
    # statistic has 397 degrees of freedom: mean 397, deviation 28; a draw that favoured the
    # tracks after a gap, or the first of the range, lands far above)
    assert set(drawn) == set(present)
    mean = 8000 / len(present)
    assert sum((drawn[t] - mean) ** 2 / mean for t in present) < 397 + 5 * 28
    assert len(rare) == 4 and min(rare.values()) > 400 / 4 / 2


def test_albums_of_a_genre_the_same_whichever_way_they_are_found(db: Session, rows: Rows) -> None:
    """The first pages of a common genre's albums walk the albums (SQLite), later pages and rare
    genres start from the genre's tracks: the list is one and the same."""
    from airwave.store.models import Album

    ids = _catalogue(db, rows)
    missing = {ids[n] for n in MISSING}
    albums = dict(db.execute(select(Track.id, Track.album_id)).all())
    keys = dict(db.execute(select(Album.id, Album.title_key)).all())

    def expected(numbers: range | list[int]) -> list[int]:
        found = {albums[ids[n]] for n in numbers if ids[n] not in missing}
        return sorted(found, key=lambda a: (keys[a], a))

    common = expected([n for n in range(TRACKS) if n % 2 == 1])
    pages = [browse.album_list(db, "byGenre", size=50, offset=o, genre="common") for o in (0, 150)]
    assert pages == [common[:50], common[150:200]]  # walked
    later = browse.album_list(db, "byGenre", size=50, offset=151, genre="Common")
    assert later == common[151:201]  # from the genre's tracks
    assert browse.album_list(db, "byGenre", size=50, offset=0, genre="rare") == expected(RARE)
    assert browse.album_list(db, "byGenre", size=50, offset=0, genre="none of them") == []
