"""The similarity index: neighbour lists as good as exact search, kept across restarts, and
updated in place when a few tracks come, go or change (only what changed is rewritten)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import insert, select, update

from airwave.core.catalog import similarity_index, space
from airwave.library.analysis import FEATURE_DIM, PROFILE_VERSION
from airwave.store.db import Database
from airwave.store.models import (
    Album,
    Artist,
    Genre,
    Track,
    TrackGenre,
    TrackNeighbors,
    TrackProfile,
)

START = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
K = space.NEIGHBORS
EXACT_LIMIT = 100  # the graph from 100 tracks on: small catalogues test its path quickly


class Clock:
    """A clock a test moves on, like a server's between two scans."""

    def __init__(self) -> None:
        self.at = START

    def now(self) -> datetime:
        return self.at

    def tick(self) -> None:
        self.at += timedelta(minutes=5)


class Library:
    """A catalogue of clustered tracks (artists of a genre share a sound) made with bulk inserts."""

    def __init__(self, database: Database, dim: int = FEATURE_DIM) -> None:
        self.database, self.dim = database, dim
        self.rng = np.random.default_rng(7)
        self.centroids = self.rng.standard_normal((12, dim)).astype(np.float32) * 2
        self.made = 0
        self.artists: set[int] = set()
        with database.write() as db:
            db.execute(
                insert(Genre),
                [
                    {"id": g, "name": f"G{g}", "name_key": f"g{g}", "category": f"C{g % 3}"}
                    for g in range(1, 7)
                ],
            )

    def add(self, count: int, when: datetime = START) -> list[int]:
        first = self.made + 1
        ids = list(range(first, first + count))
        self.made += count
        with self.database.write() as db:
            for t in ids:
                artist = t // 8 + 1
                genre = artist % 6 + 1
                if artist not in self.artists:
                    self.artists.add(artist)
                    db.execute(
                        insert(Artist).values(
                            id=artist,
                            name=f"a{artist}",
                            name_key=f"a{artist}",
                            sort_name=f"a{artist}",
                            created_at=when,
                        )
                    )
                    db.execute(
                        insert(Album).values(
                            id=artist,
                            title=f"b{artist}",
                            title_key=f"b{artist}",
                            artist_id=artist,
                            year=1960 + artist % 50,
                            created_at=when,
                        )
                    )
                feats = (
                    self.centroids[(genre * 2 + artist % 2) % 12]
                    + self.rng.standard_normal(self.dim).astype(np.float32) * 0.5
                )
                db.execute(
                    insert(Track).values(
                        id=t,
                        title=f"t{t}",
                        artist_id=artist,
                        album_id=artist,
                        year=1960 + artist % 50,
                        duration=200.0,
                        codec="flac",
                        fingerprint=hashlib.sha1(b"%d" % t).hexdigest(),
                        path=f"/m/{t}.flac",
                        added_at=when,
                    )
                )
                db.execute(insert(TrackGenre).values(track_id=t, genre_id=genre, position=0))
                db.execute(
                    insert(TrackProfile).values(
                        track_id=t,
                        version=PROFILE_VERSION,
                        fingerprint=hashlib.sha1(b"%d" % t).hexdigest(),
                        profile=None,
                        features=feats.astype("<f4").tobytes(),
                        gain_db=0.0,
                        analyzed_at=when,
                    )
                )
        return ids


def build(
    database: Database, clock: Clock, store: Path | None, **kw
) -> similarity_index.BuildReport:
    clock.tick()
    return similarity_index.build(database, clock.now, store=store, exact_limit=EXACT_LIMIT, **kw)


def lists(database: Database) -> dict[int, np.ndarray]:
    with database.read() as db:
        rows = db.execute(select(TrackNeighbors.track_id, TrackNeighbors.neighbor_ids)).all()
    return {t: np.frombuffer(blob, "<i4").astype(np.int64) for t, blob in rows}


def built_at(database: Database) -> dict[int, datetime]:
    with database.read() as db:
        return dict(db.execute(select(TrackNeighbors.track_id, TrackNeighbors.built_at)).all())


def exact_lists(database: Database) -> dict[int, set[int]]:
    """The true 80 nearest of every present track in the space as a full build would make it."""
    with database.read() as db:
        cat = space.load_catalogue(db, FEATURE_DIM)
    x = space.vectors(cat)
    sims = x @ x.T
    np.fill_diagonal(sims, -np.inf)
    top = np.argsort(-sims, axis=1)[:, : min(K, len(x) - 1)]
    return {int(t): set(cat.ids[top[i]].tolist()) for i, t in enumerate(cat.ids)}


def overlap(got: dict[int, np.ndarray], truth: dict[int, set[int]]) -> float:
    found = sum(len(truth[t] & set(got.get(t, np.zeros(0)).tolist())) for t in truth)
    return found / sum(len(v) for v in truth.values())


@pytest.fixture
def library(database: Database) -> Library:
    return Library(database)


def test_the_graph_finds_what_exact_search_finds(
    database: Database, library: Library, tmp_path: Path
) -> None:
    library.add(400)
    report = build(database, Clock(), tmp_path / "index")
    assert (report.mode, report.tracks, report.rows) == ("full", 400, 400)
    got = lists(database)
    assert len(got) == 400 and all(len(v) == K and t not in v for t, v in got.items())
    assert overlap(got, exact_lists(database)) >= 0.97


def test_a_failed_write_stops_the_build_and_the_next_build_completes(
    database: Database, library: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lists are written by a thread of their own while the next are searched: a write that
    fails (a full disk) ends the build with that error, leaves no writer behind and no record
    of a finished build, and the next build makes every list."""
    import sqlite3
    import threading

    library.add(400)
    monkeypatch.setattr(similarity_index, "WRITE_CHUNK", 100)
    real, calls = similarity_index._upsert, []

    def failing(*args: object) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        real(*args)

    monkeypatch.setattr(similarity_index, "_upsert", failing)
    clock = Clock()
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        build(database, clock, tmp_path / "index")
    assert not [t for t in threading.enumerate() if t.name == "similarity-writer"]
    assert len(calls) == 2  # the chunks queued behind the failed one are not written
    assert len(lists(database)) < 400
    monkeypatch.setattr(similarity_index, "_upsert", real)
    report = build(database, clock, tmp_path / "index")
    assert (report.mode, report.rows) == ("full", 400)
    assert len(lists(database)) == 400


def test_small_catalogues_are_exact_and_keep_no_graph(
    database: Database, library: Library, tmp_path: Path
) -> None:
    library.add(60)
    store = tmp_path / "index"
    report = build(database, Clock(), store)
    assert report.mode == "full"
    assert overlap(lists(database), exact_lists(database)) == 1.0
    assert not list(store.glob("graph-*"))


def test_an_unchanged_catalogue_is_not_rebuilt_after_a_restart(
    database: Database, library: Library, tmp_path: Path, migrated: Path
) -> None:
    library.add(300)
    store, clock = tmp_path / "index", Clock()
    assert build(database, clock, store).mode == "full"
    before = built_at(database)
    # another process on the same database and data dir (a restart): nothing to do
    again = Database(str(database.engine.url))
    try:
        report = build(again, clock, store)
    finally:
        again.dispose()
    assert (report.rebuilt, report.mode) == (False, "unchanged")
    assert built_at(database) == before


def test_added_tracks_rewrite_only_the_lists_that_change(
    database: Database, library: Library, tmp_path: Path
) -> None:
    library.add(600)
    store, clock = tmp_path / "index", Clock()
    build(database, clock, store)
    before = lists(database)
    new = library.add(30, START + timedelta(days=1))
    report = build(database, clock, store)
    assert report.mode == "incremental" and report.tracks == 630
    after = lists(database)
    rewritten = {t for t in after if t not in before or not np.array_equal(after[t], before[t])}
    assert set(new) <= rewritten and len(rewritten) == report.rows < 630
    truth = exact_lists(database)
    assert overlap(after, truth) >= 0.97
    # an old list that should now hold a newcomer does
    should = [t for t in before if truth[t] & set(new)]
    assert should
    holds = [t for t in should if set(after[t].tolist()) & set(new)]
    assert len(holds) >= 0.95 * len(should)
    # and the result is what a full build makes, but for search noise
    full = build(database, clock, store, force=True)
    assert full.mode == "full"
    rebuilt = lists(database)
    same = sum(len(set(after[t].tolist()) & set(rebuilt[t].tolist())) for t in rebuilt)
    assert same >= 0.97 * K * len(rebuilt)


def test_removed_and_changed_tracks_leave_the_lists(
    database: Database, library: Library, tmp_path: Path
) -> None:
    library.add(600)
    store, clock = tmp_path / "index", Clock()
    build(database, clock, store)
    removed, retagged = [5, 77, 300], [12, 13, 410]
    held = [t for t, v in lists(database).items() if set(removed) & set(v.tolist())]
    with database.write() as db:
        db.execute(update(Track).where(Track.id.in_(removed)).values(missing_since=START))
        db.execute(update(TrackGenre).where(TrackGenre.track_id.in_(retagged)).values(genre_id=6))
        db.execute(update(Track).where(Track.id.in_(retagged)).values(year=2024))
    report = build(database, clock, store)
    assert report.mode == "incremental"
    after = lists(database)
    assert not set(removed) & set(after)
    # the lists near a removed track are searched again (readers skip missing tracks anyway)
    still = [t for t, v in after.items() if set(removed) & set(v.tolist())]
    assert len(still) <= 0.05 * len(held)
    truth = exact_lists(database)
    assert overlap({t: after[t] for t in retagged}, {t: truth[t] for t in retagged}) >= 0.97
    assert overlap(after, truth) >= 0.97


def test_a_table_built_elsewhere_since_means_a_full_build(
    database: Database, library: Library, tmp_path: Path
) -> None:
    """Two hosts, one database: a host's saved graph is built upon only while the table is the
    one it wrote."""
    library.add(500)
    clock = Clock()
    here, there = tmp_path / "here", tmp_path / "there"
    build(database, clock, here)
    library.add(10, START + timedelta(days=1))
    assert build(database, clock, there).mode == "full"  # the lease moved: nothing saved there
    library.add(10, START + timedelta(days=2))
    assert build(database, clock, there).mode == "incremental"
    library.add(10, START + timedelta(days=3))
    report = build(database, clock, here)  # the lease came back: its graph is out of date
    assert report.mode == "full"
    assert overlap(lists(database), exact_lists(database)) >= 0.97


def test_many_changes_mean_a_full_build(
    database: Database, library: Library, tmp_path: Path
) -> None:
    library.add(300)
    store, clock = tmp_path / "index", Clock()
    build(database, clock, store)
    library.add(100, START + timedelta(days=1))  # a third more: the sound model is refitted
    assert build(database, clock, store).mode == "full"
    assert overlap(lists(database), exact_lists(database)) >= 0.97


def test_a_damaged_saved_graph_means_a_full_build(
    database: Database, library: Library, tmp_path: Path
) -> None:
    library.add(300)
    store, clock = tmp_path / "index", Clock()
    build(database, clock, store)
    for graph in store.glob("graph-*"):
        graph.write_bytes(b"not a graph")
    library.add(5, START + timedelta(days=1))
    assert build(database, clock, store).mode == "full"
    assert len(lists(database)) == 305


def test_the_feature_dimension_is_a_parameter(migrated: Path, tmp_path: Path) -> None:
    """The sound analysis may describe a track with more or fewer numbers: the space follows."""
    import shutil

    shutil.copyfile(migrated, tmp_path / "other.db")
    database = Database(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        Library(database, dim=9).add(300)
        clock = Clock()
        report = similarity_index.build(
            database, clock.now, feature_dim=9, store=tmp_path / "index", exact_limit=EXACT_LIMIT
        )
        assert (report.mode, report.profiled) == ("full", 300)
        assert len(lists(database)) == 300
    finally:
        database.dispose()


def test_the_index_does_not_load_the_decoder() -> None:
    """A scan without analysis (and a server) builds the index from the feature layout alone:
    the audio decoder, a large native library, stays unloaded until a file is analysed."""
    code = (
        "import sys\n"
        "from airwave.core import library\n"
        "from airwave.core.catalog import similarity_index\n"
        "from airwave.library import analysis, profiler\n"
        "assert analysis.FEATURE_DIM and similarity_index.STORE and profiler\n"
        "print('av' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
