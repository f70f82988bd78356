"""Station engine latency: v1/playlist/getFragment over real HTTP on catalogues of 10k, 100k and 1M
tracks.

For each size a synthetic catalogue is built once (artists ~N/12, albums ~N/10, 60 genres, 1-2
genres per track, 37 sound features with cluster structure: 200 centroids, one per artist, plus
noise) with SQLAlchemy Core bulk inserts, and its neighbour table by the real code path,
`space.build` (timed step by step; above 40k tracks that is the approximate k-means search). Built
catalogues are cached (default /tmp/airwave-bench-fragment) and copied into a fresh data dir for
every run.

Then `airwave serve` runs as a child process (SQLite, or PostgreSQL with --database: a fresh schema
per server, the catalogue built into it by the same code; strict radio rules, access log on as in
production, the fragment rate limit lifted and its window cut to 1 s), one plus-tier listener
creates the stations from artist, track and genre seeds over the API and thumbs tracks of their
fragments up and down, and one keep-alive client asks for fragments round-robin over the stations,
one request at a time: latency, not throughput. The client's figure is the one that counts; the
server's own time per request (from its access log) is shown beside it. After the rounds, the
listener's whole station list (getStations, all --stations of them) is asked for --station-lists
times: its latency and the server's CPU a call.

    .venv/bin/python bench/fragment.py [--sizes 10000,100000,1000000] [--requests 400] [--rounds 3]
        [--conditions idle,busy] [--database sqlite,postgresql] [--baseline-src DIR] [--profile]
        [--builds N]

Each round measures every condition in turn: `idle`, then `busy` (one process spinning on one core
the whole time: "one core busy running something else"); figures are the medians over the rounds
of each round's percentiles, and the server's CPU time per call (on PostgreSQL also the CPU time of
the database's backends serving that server's connections, per call). --baseline-src serves every
size a second time from another source tree (PYTHONPATH=DIR/src, e.g. `git archive main src | tar
-x -C DIR`), measured in the same rounds, interleaved call by call, and prints after/before
ratios. The similarity build runs in a process of its own (its peak memory is the build's alone);
--builds N then builds each instance's index again N times, codes taking turns, each with its own
code (the baseline's from its tree): medians, the peak and the ratio. Targets: < 60 s, < 1 GB.

--profile samples the server with py-spy in an extra pass after the measured one (never during it)
and the similarity build while it runs (py-spy needs ptrace rights: root, or
kernel.yama.ptrace_scope=0), and prints where the time goes. A catalogue is rebuilt when space.py
changes, and with --rebuild. Prints one line per figure and p50(largest)/p50(smallest) measured in
the same run; never asserts. Targets (issue): p99 < 25 ms at every size and p50(1M)/p50(10k) < 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from benchkit import (
    USERNAME,
    ApiError,
    Client,
    CpuWatch,
    batches,
    databases,
    interpreter,
    interrupt,
    pct,
    postgres_backend_jiffies,
    server_durations,
)
from support.databases import (  # the shared server harness lives in tests/
    POSTGRES_URL,
    Backend,
    PostgresSchema,
)
from support.server import Server

TARGET_P99_MS = 25.0
TARGET_RATIO = 2.0
TARGET_CPU_MS = 5.0
CATALOG_VERSION = 1  # bump when the synthetic catalogue changes: cached copies are then rebuilt
GENRES = 60
CATEGORIES = 12
CENTROIDS = 200
UPS, DOWNS = 10, 5
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "airwave-bench-fragment"


# --------------------------------------------------------------------------- the synthetic
# catalogue


@dataclass
class Shape:
    """Who made what: album -> artist, track -> album (contiguous, as a scan inserts), genres,
    sound clusters."""

    tracks: int
    artists: int
    albums: int
    album_artist: np.ndarray
    album_year: np.ndarray
    track_album: np.ndarray
    artist_genre: np.ndarray  # each artist's main genre
    second_genre: np.ndarray  # per track; -1 = none
    artist_centroid: np.ndarray

    @classmethod
    def make(cls, n: int, rng: np.random.Generator) -> Shape:
        artists = max(4, n // 12)
        albums = max(artists, n // 10)
        album_artist = np.concatenate(
            [np.arange(artists), rng.integers(0, artists, albums - artists)]
        )
        rng.shuffle(album_artist)
        track_album = np.minimum(np.arange(n) * albums // n, albums - 1)
        artist_genre = rng.integers(0, GENRES, artists)
        second = np.where(rng.random(n) < 0.5, rng.integers(0, GENRES, n), -1)
        second[second == artist_genre[album_artist[track_album]]] = -1
        per_genre = (
            CENTROIDS // GENRES + 1
        )  # each genre owns a few sound clusters; an artist sits in one
        artist_centroid = (
            artist_genre * per_genre + rng.integers(0, per_genre, artists)
        ) % CENTROIDS
        return cls(
            n,
            artists,
            albums,
            album_artist,
            rng.integers(1955, 2025, albums),
            track_album,
            artist_genre,
            second,
            artist_centroid,
        )


def insert_catalogue(database: Any, n: int, seed: int, batch: int = 20_000) -> dict[str, float]:
    """Bulk-insert the synthetic catalogue (SQLAlchemy Core executemany); seconds per table
    group."""
    from sqlalchemy import insert

    from airwave.library.analysis import FEATURE_DIM, PROFILE_VERSION
    from airwave.store.models import Album, Artist, Genre, Track, TrackGenre, TrackProfile

    rng = np.random.default_rng(seed)
    shape = Shape.make(n, rng)
    added = datetime(2025, 1, 1, tzinfo=UTC)
    centroids = rng.standard_normal((CENTROIDS, FEATURE_DIM)).astype(np.float32) * 2.0
    artist_offset = rng.standard_normal((shape.artists, FEATURE_DIM)).astype(np.float32) * 0.4
    codecs = ("mp3", "flac", "vorbis")
    seconds: dict[str, float] = {}
    with database.engine.begin() as conn:
        started = time.perf_counter()
        conn.execute(
            insert(Genre),
            [
                {
                    "id": g + 1,
                    "name": f"Genre {g}",
                    "name_key": f"genre {g}",
                    "category": f"Category {g % CATEGORIES}",
                }
                for g in range(GENRES)
            ],
        )
        for lo, hi in batches(shape.artists, batch):
            conn.execute(
                insert(Artist),
                [
                    {
                        "id": a + 1,
                        "name": f"Artist {a}",
                        "name_key": f"artist {a}",
                        "sort_name": f"Artist {a}",
                        "is_composer": False,
                        "created_at": added,
                    }
                    for a in range(lo, hi)
                ],
            )
        for lo, hi in batches(shape.albums, batch):
            conn.execute(
                insert(Album),
                [
                    {
                        "id": al + 1,
                        "title": f"Album {al}",
                        "title_key": f"album {al}",
                        "artist_id": int(shape.album_artist[al]) + 1,
                        "year": int(shape.album_year[al]),
                        "is_compilation": False,
                        "created_at": added,
                    }
                    for al in range(lo, hi)
                ],
            )
        seconds["artists_albums"] = time.perf_counter() - started

        started = time.perf_counter()
        durations = rng.uniform(120, 420, n)
        for lo, hi in batches(n, batch):
            rows = []
            for t in range(lo, hi):
                al = int(shape.track_album[t])
                rows.append(
                    {
                        "id": t + 1,
                        "title": f"Track {t}",
                        "artist_id": int(shape.album_artist[al]) + 1,
                        "album_id": al + 1,
                        "track_no": t % 10 + 1,
                        "disc_no": 1,
                        "year": int(shape.album_year[al]),
                        "duration": float(durations[t]),
                        "bitrate": 320_000,
                        "sample_rate": 44_100,
                        "channels": 2,
                        "codec": codecs[t % 3],
                        "explicit": False,
                        "fingerprint": hashlib.sha1(b"t%d" % t).hexdigest(),
                        "path": f"/music/a{al}/t{t}.mp3",
                        "added_at": added,
                    }
                )
            conn.execute(insert(Track), rows)
        seconds["tracks"] = time.perf_counter() - started

        started = time.perf_counter()
        for lo, hi in batches(n, batch):
            rows = []
            for t in range(lo, hi):
                main = int(shape.artist_genre[shape.album_artist[shape.track_album[t]]])
                rows.append({"track_id": t + 1, "genre_id": main + 1, "position": 0})
                if shape.second_genre[t] >= 0:
                    rows.append(
                        {
                            "track_id": t + 1,
                            "genre_id": int(shape.second_genre[t]) + 1,
                            "position": 1,
                        }
                    )
            conn.execute(insert(TrackGenre), rows)
        seconds["track_genres"] = time.perf_counter() - started

        started = time.perf_counter()
        for lo, hi in batches(n, batch):
            artist = shape.album_artist[shape.track_album[lo:hi]]
            feats = (
                centroids[shape.artist_centroid[artist]]
                + artist_offset[artist]
                + rng.standard_normal((hi - lo, FEATURE_DIM)).astype(np.float32) * 0.6
            ).astype("<f4")
            gains = rng.uniform(-12, 3, hi - lo)
            conn.execute(
                insert(TrackProfile),
                [
                    {
                        "track_id": t + 1,
                        "version": PROFILE_VERSION,
                        "fingerprint": hashlib.sha1(b"t%d" % t).hexdigest(),
                        "profile": None,
                        "features": feats[t - lo].tobytes(),
                        "gain_db": round(float(gains[t - lo]), 2),
                        "error": None,
                        "analyzed_at": added,
                    }
                    for t in range(lo, hi)
                ],
            )
        seconds["track_profiles"] = time.perf_counter() - started
    return seconds


# the functions of space.build timed one by one (build calls them through the module, so wrapping
# works)
# (where, attribute, label): the similarity build's steps, each timed where it is defined
BUILD_STEPS = (
    ("space", "signature", "signature"),
    ("space", "load_catalogue", "load_catalogue"),
    ("space", "input_hashes", "input_hashes"),
    ("space", "vectors", "vectors"),
    ("knn.Exact", "query", "exact"),
    ("knn.Graph", "create", "create"),
    ("knn.Graph", "query", "query"),
    ("similarity_index", "_upsert", "_upsert"),
)


def timed_build(database: Any) -> tuple[float, dict[str, float], Any]:
    """The similarity build (force=True) as a scan runs it, with the seconds of each step."""
    from airwave.core.catalog import knn, similarity_index, space
    from airwave.core.clock import Clock

    places = {
        "space": space,
        "knn.Exact": knn.Exact,
        "knn.Graph": knn.Graph,
        "similarity_index": similarity_index,
    }
    steps: dict[str, float] = {}
    originals = [
        (places[where], name, label, places[where].__dict__[name])
        for where, name, label in BUILD_STEPS
    ]

    def timed(label: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                steps[label] = steps.get(label, 0.0) + time.perf_counter() - started

        return wrapper

    for owner, name, label, fn in originals:
        # a classmethod is timed through the function it wraps, and stays a classmethod
        if isinstance(fn, classmethod):
            setattr(owner, name, classmethod(timed(label, fn.__func__)))
        else:
            setattr(owner, name, timed(label, fn))
    try:
        started = time.perf_counter()
        report = similarity_index.build(database, Clock().now, force=True)
        return time.perf_counter() - started, steps, report
    finally:
        for owner, name, _label, fn in originals:
            setattr(owner, name, fn)


def ensure_catalogue(
    size: int, cache: Path, rebuild: bool, profiler: Profiler | None
) -> tuple[Path, dict]:
    """The cached catalogue of this size (built now when absent), and the figures of its build."""
    from airwave.config import Settings
    from airwave.core.catalog import space
    from airwave.core.services import Services

    # the neighbour table is the build code's output: a change to space.py means a new build
    code = hashlib.sha1(Path(space.__file__).read_bytes()).hexdigest()[:10]
    folder = cache / f"catalog-{size}-v{CATALOG_VERSION}-{code}"
    marker = folder / "catalog.json"
    if marker.is_file() and (folder / "airwave.db").is_file() and not rebuild:
        info = json.loads(marker.read_text())
        info["cached"] = True
        return folder / "airwave.db", info
    for stale in cache.glob(f"catalog-{size}-*"):  # other versions of this size: up to 1.2 GB each
        shutil.rmtree(stale, ignore_errors=True)
    folder.mkdir(parents=True)
    services = Services.open(Settings(data_dir=folder))
    try:
        info = build_catalogue(services, size, profiler, folder / "build.spy")
        with services.database.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        services.close()
    info["db_mb"] = (folder / "airwave.db").stat().st_size / 2**20
    marker.write_text(json.dumps(info))
    return folder / "airwave.db", info


def build_catalogue(services: Any, size: int, profiler: Profiler | None, spy: Path) -> dict:
    """Insert the synthetic catalogue into a migrated database and build its similarity index by
    the real code path; the figures of both. The build runs in a process of its own, as in a
    scan, so that its peak memory is the build's alone (not the insertion's before it)."""
    insert_seconds = insert_catalogue(services.database, size, seed=size)
    settings = {
        "data_dir": str(services.settings.data_dir),
        "database_url": services.settings.database_url,
    }
    return {
        **child_build(settings, None, profiler, spy),
        "insert_s": insert_seconds,
        "cached": False,
    }


def child_build(
    settings: dict[str, Any],
    source: Path | None,
    profiler: Profiler | None = None,
    spy: Path | None = None,
) -> dict[str, Any]:
    """The similarity build (force=True) in a new interpreter running this tree's code, or the
    `source` tree's: its seconds, steps and its own peak resident memory. py-spy, if given,
    samples the build only (from after the imports)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source / "src")
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--build-child", json.dumps(settings)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        lines = iter(proc.stdout.readline, "")  # other lines (a log's) are passed over
        if "ready" not in (line.strip() for line in lines):
            raise RuntimeError("the build process did not start")
        with profiler.record(proc.pid, spy) if profiler and spy else _nothing():
            proc.stdin.write("go\n")
            proc.stdin.flush()
            found = next((line for line in lines if line.startswith("{")), None)
        if found is None:
            raise RuntimeError("the build process failed")
        return json.loads(found)
    finally:
        proc.stdin.close()
        if proc.wait(timeout=60) != 0:
            raise RuntimeError(f"the build process exited with {proc.returncode}")


def build_child_main(settings: dict[str, Any]) -> None:
    """`--build-child`: open the database, say ready, build when told to, print the figures."""
    from airwave.config import Settings
    from airwave.core.catalog import knn, similarity_index, space  # noqa: F401
    from airwave.core.services import Services

    services = Services.open(Settings(**settings))
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        build_s, steps, report = timed_build(services.database)
    finally:
        services.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {"tracks": report.tracks, "profiled": report.profiled, "build_s": build_s}
    print(json.dumps({**figures, "steps": steps, "peak_rss_mb": peak}), flush=True)


# tables the synthetic catalogue fills with ids of its own: their sequences move past them, as
# after an import, so that rows the server adds later get fresh ids
NUMBERED = ("genres", "artists", "albums", "tracks")


def postgres_catalogue(size: int, run_dir: Path, profiler: Profiler | None) -> tuple[Backend, dict]:
    """A fresh PostgreSQL schema holding the catalogue of this size, built now (inserted, then
    indexed by the real build, as on SQLite; not cached: a schema is the run's own)."""
    from sqlalchemy import text

    from airwave.config import Settings
    from airwave.core.services import Services

    backend = Backend("postgresql", run_dir, PostgresSchema())
    try:
        services = Services.open(Settings(data_dir=run_dir, database_url=backend.pg.url))
        try:
            info = build_catalogue(services, size, profiler, run_dir / "build.spy")
            with services.database.engine.begin() as conn:
                for table in NUMBERED:
                    conn.execute(
                        text(
                            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                            f"(SELECT max(id) FROM {table})) "
                            f"WHERE pg_get_serial_sequence('{table}', 'id') IS NOT NULL"
                        )
                    )
                conn.execute(text("ANALYZE"))
                info["db_mb"] = (
                    conn.scalar(
                        text(
                            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) "
                            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                            "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
                        )
                    )
                    / 2**20
                )
        finally:
            services.close()
    except BaseException:
        backend.pg.drop()
        raise
    return backend, info


@contextmanager
def _nothing() -> Iterator[None]:
    yield


# --------------------------------------------------------------------------- py-spy


class Profiler:
    """py-spy sampling a process into a raw (collapsed stacks) file."""

    RATE = 250

    def __init__(self, exe: str) -> None:
        self.exe = exe
        self.last: Path | None = None

    @contextmanager
    def record(self, pid: int, out: Path) -> Iterator[None]:
        proc = subprocess.Popen(
            [
                self.exe,
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "-o",
                str(out),
                "--rate",
                str(self.RATE),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(0.5)  # attached
        try:
            yield
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.last = out


def read_stacks(path: Path) -> list[tuple[list[str], int]]:
    stacks = []
    for line in path.read_text(errors="replace").splitlines():
        head, _, count = line.rpartition(" ")
        if head and count.isdigit():
            stacks.append((head.split(";"), int(count)))
    return stacks


def _frame_matches(frame: str, pattern: str) -> bool:
    """'file.py:Class.function' (or several joined by '|') matches the py-spy frame
    'Class.function (file.py:line)'."""
    for one in pattern.split("|"):
        file_part, _, func = one.rpartition(":")
        if frame.startswith(func + " (") and (not file_part or f"{file_part}:" in frame):
            return True
    return False


def inclusive(stacks: list[tuple[list[str], int]], pattern: str, within: str | None = None) -> int:
    total = 0
    for frames, count in stacks:
        if within is not None and not any(_frame_matches(f, within) for f in frames):
            continue
        if any(_frame_matches(f, pattern) for f in frames):
            total += count
    return total


def top_self(
    stacks: list[tuple[list[str], int]], within: str | None, limit: int
) -> list[tuple[str, int]]:
    counter: Counter[str] = Counter()
    for frames, count in stacks:
        if within is not None and not any(_frame_matches(f, within) for f in frames):
            continue
        counter[re.sub(r":\d+\)$", ")", frames[-1])] += count
    return counter.most_common(limit)


# where a fragment's time goes: (label, frame pattern), inclusive, within the request handler
FRAGMENT_PARTS = (
    ("handler", "playlist.py:get_fragment"),
    ("lock_station", "stations.py:lock_station"),
    ("plan_fragment", "radio/playlist.py:plan_fragment"),
    ("write_fragment", "radio/playlist.py:write_fragment"),
    ("choose_tracks", "radio/playlist.py:_choose"),
    ("fragment_items", "radio/playlist.py:fragment_items"),
    ("fragment", "radio/playlist.py:fragment"),
    ("claim_player", "playlist.py:claim_player"),
    ("check_rate", "playlist.py:_check_rate"),
    ("history", "playlist.py:_history"),
    ("steering_for", "playlist.py:steering_for"),
    ("picker_init", "picker.py:Picker.__init__"),
    ("seed_anchors", "picker.py:_seed_anchors"),
    ("genre_sample", "picker.py:_genre_sample"),
    ("neighbors_of", "space.py:neighbors_of"),
    ("spread", "picker.py:_spread"),
    ("score", "picker.py:Picker._score"),
    ("pick", "picker.py:Picker.pick"),
    ("choose", "picker.py:Picker._choose"),
    ("load_meta", "picker.py:Picker._load_meta"),
    ("adjusted", "picker.py:Picker._adjusted"),
    ("eligible", "picker.py:Picker._eligible"),
    ("widen", "picker.py:Picker._widen"),
    ("random_tracks", "picker.py:Picker._random_tracks"),
    ("flush", "session.py:Session.flush"),
    ("commit", "session.py:SessionTransaction.commit|session.py:Session.commit"),
    ("track_items", "radio/playlist.py:track_items"),
    ("known_shown", "known.py:Known.shown"),
    ("known_meta", "known.py:Known.meta"),
    ("core_sql", "base.py:Connection.execute"),
    (
        "sql",
        "session.py:Session._execute_internal|session.py:Session._flush|default.py:DefaultDialect.do_commit",
    ),
)


# --------------------------------------------------------------------------- the server and its
# client


def start_server(backend: Backend, log: Path, rules: str, source: Path | None = None) -> Server:
    """`airwave serve` on the run's data dir (and PostgreSQL schema), through the shared test
    harness; its log in `log`; from the source tree `source` (its src/ first on PYTHONPATH) when
    given."""
    env = {
        # the rate limit lifted, and its window cut to a second: at the default limit the rate
        # check counts at most 161 of a listener's spins, where one listener asking for 100
        # fragments a second over the default 10-minute window would have it count tens of
        # thousands, a cost no real listener causes
        "AIRWAVE_FRAGMENT_LIMIT": str(10**9),
        "AIRWAVE_FRAGMENT_WINDOW": "1",
        "AIRWAVE_ANALYZE_AUDIO": "false",
        "AIRWAVE_RADIO_RULES": rules,
        "PYTHONPATH": str(source / "src") if source is not None else "",
    }
    return Server(backend, env=env, log_file=log, clean_env=True).start(timeout=60)


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def add_listener(backend: Backend, password: str) -> None:
    """`airwave user add --tier plus`: unlimited skips, no ads; the CLI is the operator's way."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRWAVE_")}
    env.update(backend.env)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "airwave",
            "user",
            "add",
            USERNAME,
            "--tier",
            "plus",
            "--password-stdin",
        ],
        input=password + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"airwave user add failed: {done.stdout}{done.stderr}")


def station_seeds(size: int, count: int, rng: random.Random) -> list[str]:
    """musicIds: a third artists, a third tracks, a third genres, all distinct."""
    artists = max(4, size // 12)
    kinds = ["R", "S", "G"]
    seeds: list[str] = []
    pools = {
        "R": rng.sample(range(1, artists + 1), min(artists, count)),
        "S": rng.sample(range(1, size + 1), min(size, count)),
        "G": rng.sample(range(1, GENRES + 1), min(GENRES, count)),
    }
    i = 0
    while len(seeds) < count:
        kind = kinds[i % 3]
        if pools[kind]:
            seeds.append(f"{kind}{pools[kind].pop()}")
        elif not any(pools.values()):
            break
        i += 1
    return seeds


def set_up_stations(client: Client, seeds: list[str]) -> tuple[list[str], dict[str, float]]:
    """Create one station per seed and thumb UPS tracks up and DOWNS down on each, from its own
    fragments."""
    figures: dict[str, list[float]] = {
        "createStation": [],
        "addFeedback": [],
        "setup_getFragment": [],
    }
    station_ids = []
    for music_id in seeds:
        started = time.perf_counter()
        station_ids.append(
            client.ok("v1/station/createStation", {"musicId": music_id})["stationId"]
        )
        figures["createStation"].append(time.perf_counter() - started)
    for station_id in station_ids:
        tokens: list[str] = []
        for _ in range(8):
            if len(tokens) >= UPS + DOWNS:
                break
            status, data, seconds = client.call(
                "v1/playlist/getFragment", {"stationId": station_id}
            )
            if status != 200:
                raise ApiError(f"getFragment during set-up: HTTP {status} {data}")
            figures["setup_getFragment"].append(seconds)
            tokens += [t["trackToken"] for t in data["tracks"]]
        for n, token in enumerate(tokens[: UPS + DOWNS]):
            started = time.perf_counter()
            client.ok("v1/station/addFeedback", {"trackToken": token, "isPositive": n < UPS})
            figures["addFeedback"].append(time.perf_counter() - started)
    return station_ids, {k: float(np.median(v)) * 1000 for k, v in figures.items() if v}


@dataclass
class Run:
    latencies_ms: list[float] = field(default_factory=list)
    request_ids: list[str] = field(default_factory=list)
    stations: list[int] = field(default_factory=list)  # index of the station asked, per request
    errors: Counter[str] = field(default_factory=Counter)
    tracks: int = 0


@dataclass
class Instance:
    """One catalogue size served by one source tree: its server, a logged-in client and the
    stations, and what was measured (per condition and round)."""

    size: int
    code: str  # "this" (the tree the bench runs from) or "baseline" (--baseline-src)
    server: Server
    client: Client
    run_dir: Path
    backend: Backend
    source: Path | None = None  # the tree serving it (--baseline-src), or None: this one
    seeds: list[str] = field(default_factory=list)
    station_ids: list[str] = field(default_factory=list)
    asked: int = 0  # getFragment calls so far (round-robin position over the stations)
    runs: dict[tuple[str, int], Run] = field(default_factory=dict)
    cpu_s: dict[tuple[str, int], float] = field(default_factory=dict)  # server CPU per phase
    # PostgreSQL's backends' CPU per phase, for this server's connections
    db_cpu_s: dict[tuple[str, int], float] = field(default_factory=dict)

    @property
    def db(self) -> str:
        return self.backend.kind

    @property
    def label(self) -> str:
        return f"code={self.code} db={self.db} catalog={self.size}"

    def fragment(self, tag: str, run: Run | None = None) -> None:
        """One getFragment on the next station in turn."""
        n = self.asked % len(self.station_ids)
        request_id = f"{tag}-{self.asked}"
        self.asked += 1
        status, data, seconds = self.client.call(
            "v1/playlist/getFragment", {"stationId": self.station_ids[n]}, request_id
        )
        if run is None:
            return
        run.latencies_ms.append(seconds * 1000)
        run.request_ids.append(request_id)
        run.stations.append(n)
        if status == 200:
            run.tracks += len(data["tracks"])
        else:
            run.errors[
                data.get("errorString", str(status)) if isinstance(data, dict) else str(status)
            ] += 1

    def close(self, keep: bool) -> None:
        self.client.close()
        self.server.stop(timeout=20)
        if not keep:
            if self.backend.pg is not None:
                self.backend.pg.drop()
            shutil.rmtree(self.run_dir, ignore_errors=True)


# --------------------------------------------------------------------------- one size: catalogue,
# server, stations


def prepare(
    size: int,
    args: argparse.Namespace,
    work: Path,
    profiler: Profiler | None,
    source: Path | None = None,
    db: str = "sqlite",
) -> Instance:
    code = "baseline" if source is not None else "this"
    run_dir = work / f"run-{size}-{db}-{code}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    if db == "postgresql":  # built into the run's own schema (each instance its own)
        backend, info = postgres_catalogue(size, run_dir, profiler if source is None else None)
    else:
        db_file, info = ensure_catalogue(size, args.cache, args.rebuild, profiler)
        shutil.copyfile(db_file, run_dir / "airwave.db")
        backend = Backend("sqlite", run_dir)
    if source is None:  # the catalogue's figures once per size and database
        steps = info["steps"]
        how = (
            "cached build; its figures are from when it was built"
            if info["cached"]
            else "built now"
        )
        inserted = info["insert_s"]
        print(
            f"catalog size={size} db={db} tracks={info['tracks']} profiled={info['profiled']} "
            f"artists={max(4, size // 12)} "
            f"albums={max(4, size // 12, size // 10)} genres={GENRES} db_mb={info['db_mb']:.0f} "
            f"({how})",
            flush=True,
        )
        print(
            f"insert catalog={size} db={db} seconds={sum(inserted.values()):.1f} "
            + " ".join(f"{k}_s={v:.1f}" for k, v in inserted.items())
            + " (bench set-up, not Airwave code)",
            flush=True,
        )
        step_text = " ".join(
            f"{k.lstrip('_')}_s={steps[k]:.2f}" for _w, _n, k in BUILD_STEPS if k in steps
        )
        print(
            f"similarity_build catalog={size} db={db} seconds={info['build_s']:.1f} {step_text} "
            f"peak_rss_mb={info['peak_rss_mb']:.0f} (space.build force=True; nested steps are "
            "inside their callers)",
            flush=True,
        )
        if profiler and not info["cached"] and profiler.last is not None:
            print_build_profile(profiler.last, size)

    password = secrets.token_urlsafe(12)
    try:
        add_listener(backend, password)
        server = start_server(backend, run_dir / "server.log", args.rules, source)
    except BaseException:
        if backend.pg is not None and not args.keep:
            backend.pg.drop()
        raise
    inst = Instance(size, code, server, Client(server.url), run_dir, backend, source)
    try:
        inst.client.login(password)
        inst.seeds = station_seeds(size, args.stations, random.Random(size))
        started = time.perf_counter()
        try:
            inst.station_ids, setup = set_up_stations(inst.client, inst.seeds)
        except ApiError as exc:
            raise RuntimeError(f"{exc}\n{tail(server.log_file)}") from None
        print(
            f"setup {inst.label} stations={len(inst.station_ids)} seeds=AR/TR/GE thumbs_up={UPS} "
            f"thumbs_down={DOWNS} per_station seconds={time.perf_counter() - started:.1f} "
            + " ".join(f"{k}_p50_ms={v:.1f}" for k, v in setup.items()),
            flush=True,
        )
        return inst
    except BaseException:
        inst.close(args.keep)
        raise


def rebuilds(instances: list[Instance], rounds: int) -> None:
    """The full similarity build again on each instance's own database, by its own code, each in
    a new process: codes take turns (the first alternating by round); medians, peak memory and
    the ratio to the baseline."""
    groups: dict[tuple[str, int], list[Instance]] = {}
    for inst in instances:
        groups.setdefault((inst.db, inst.size), []).append(inst)
    for (db, size), group in groups.items():
        seconds: dict[str, list[float]] = {i.code: [] for i in group}
        peaks: dict[str, list[float]] = {i.code: [] for i in group}
        steps: dict[str, list[dict[str, float]]] = {i.code: [] for i in group}
        for number in range(rounds):
            for inst in group if number % 2 == 0 else group[::-1]:
                settings = {
                    "data_dir": str(inst.run_dir),
                    "database_url": inst.backend.pg.url if inst.backend.pg else None,
                }
                built = child_build(settings, inst.source)
                seconds[inst.code].append(built["build_s"])
                peaks[inst.code].append(built["peak_rss_mb"])
                steps[inst.code].append(built["steps"])
                print(
                    f"rebuild round={number + 1} code={inst.code} db={db} catalog={size} "
                    f"seconds={built['build_s']:.1f} peak_rss_mb={built['peak_rss_mb']:.0f}",
                    flush=True,
                )
        for code in seconds:
            labels = [k for _w, _n, k in BUILD_STEPS if any(k in r for r in steps[code])]
            step_text = " ".join(
                f"{k.lstrip('_')}_s={median([r.get(k, 0.0) for r in steps[code]]):.2f}"
                for k in labels
            )
            print(
                f"similarity_rebuild code={code} db={db} catalog={size} "
                f"median_seconds={median(seconds[code]):.1f} {step_text} "
                f"peak_rss_mb={max(peaks[code]):.0f} rounds={len(seconds[code])} "
                "target<60 s, <1024 MB",
                flush=True,
            )
        if "baseline" in seconds and "this" in seconds:
            print(
                f"similarity_rebuild this_vs_baseline db={db} catalog={size} "
                f"seconds={median(seconds['this']):.1f}/{median(seconds['baseline']):.1f}="
                f"{median(seconds['this']) / median(seconds['baseline']):.3f}",
                flush=True,
            )


def print_build_profile(path: Path, size: int) -> None:
    """Where space.build spends its time: the innermost space.py line of each sample."""
    stacks = read_stacks(path)
    total = sum(c for _, c in stacks) or 1
    where: Counter[str] = Counter()
    for frames, count in stacks:
        own = [f for f in frames if "(space.py:" in f or "/space.py:" in f]
        where[own[-1] if own else "outside space.py: " + frames[-1]] += count
    for frame, count in where.most_common(10):
        print(
            f"  build_profile catalog={size} seconds={count / Profiler.RATE:.1f} "
            f"pct={100 * count / total:.1f} "
            f"at={frame}",
            flush=True,
        )


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else float("nan")


@dataclass
class Figures:
    """One instance under one condition: medians over the rounds of each round's figures."""

    p50: float
    p90: float
    p99: float
    max_ms: float
    server_p50: float
    server_p99: float
    cpu_ms: float  # the server's CPU time per call
    db_cpu_ms: float  # PostgreSQL's CPU time per call (its backends for this server); NaN: SQLite
    rounds_p99: list[float]
    tracks_per_fragment: float
    errors: Counter[str]


def figures(inst: Instance, condition: str, rounds: int, own: dict[str, float]) -> Figures:
    p50s, p90s, p99s, maxes, s50, s99, cpus, tracks, calls = [], [], [], [], [], [], [], 0, 0
    db_cpus: list[float] = []
    errors: Counter[str] = Counter()
    for r in range(rounds):
        run = inst.runs[(condition, r)]
        lat = run.latencies_ms
        p50s.append(pct(lat, 50))
        p90s.append(pct(lat, 90))
        p99s.append(pct(lat, 99))
        maxes.append(max(lat))
        server = [own[i] for i in run.request_ids if i in own]
        if server:
            s50.append(pct(server, 50))
            s99.append(pct(server, 99))
        cpus.append(inst.cpu_s[(condition, r)] * 1000 / max(1, len(lat)))
        if (condition, r) in inst.db_cpu_s:
            db_cpus.append(inst.db_cpu_s[(condition, r)] * 1000 / max(1, len(lat)))
        errors += run.errors
        tracks += run.tracks
        calls += len(lat) - sum(run.errors.values())
    return Figures(
        _median(p50s),
        _median(p90s),
        _median(p99s),
        _median(maxes),
        _median(s50),
        _median(s99),
        _median(cpus),
        _median(db_cpus),
        p99s,
        tracks / max(1, calls),
        errors,
    )


def report(instances: list[Instance], args: argparse.Namespace) -> None:
    """One line per instance and condition, the seed kinds, the size ratio and the targets."""
    table: dict[tuple[str, str, int, str], Figures] = {}
    for inst in instances:
        own = server_durations(
            inst.server.log_file,
            {i for run in inst.runs.values() for i in run.request_ids},
        )
        for condition in args.conditions:
            f = figures(inst, condition, args.rounds, own)
            table[(inst.code, inst.db, inst.size, condition)] = f
            errors = (
                " errors=" + ",".join(f"{k}:{v}" for k, v in f.errors.items()) if f.errors else ""
            )
            print(
                f"getFragment {inst.label} condition={condition} p50_ms={f.p50:.2f} "
                f"p90_ms={f.p90:.2f} p99_ms={f.p99:.2f} max_ms={f.max_ms:.2f} "
                f"server_cpu_ms_per_call={f.cpu_ms:.2f} "
                + ("" if inst.db == "sqlite" else f"postgresql_cpu_ms_per_call={f.db_cpu_ms:.2f} ")
                + f"server_p50_ms={f.server_p50:.2f} "
                f"server_p99_ms={f.server_p99:.2f} "
                f"rounds_p99_ms={'/'.join(f'{v:.1f}' for v in f.rounds_p99)} "
                f"requests_per_round={args.requests} stations={len(inst.station_ids)} "
                f"tracks_per_fragment={f.tracks_per_fragment:.2f}{errors} "
                f"(medians over {args.rounds} rounds; server_* from the access log's duration_ms "
                "and /proc CPU time)",
                flush=True,
            )
        kinds: dict[str, list[float]] = {}
        for (condition, _), run in inst.runs.items():
            if condition != args.conditions[0]:
                continue
            for n, ms in zip(run.stations, run.latencies_ms):
                kinds.setdefault(inst.seeds[n][0], []).append(ms)
        for kind, values in sorted(kinds.items()):
            name = {"R": "artist", "S": "track", "G": "genre"}[kind]
            print(
                f"  getFragment_by_seed {inst.label} condition={args.conditions[0]} seed={name} "
                f"p50_ms={pct(values, 50):.2f} p90_ms={pct(values, 90):.2f} "
                f"p99_ms={pct(values, 99):.2f} requests={len(values)} (all rounds pooled)",
                flush=True,
            )
    codes = list(dict.fromkeys(inst.code for inst in instances))
    dbs = list(dict.fromkeys(inst.db for inst in instances))
    sizes = sorted({inst.size for inst in instances})
    small, large = sizes[0], sizes[-1]
    for code in codes:
        for db in dbs:
            for condition in args.conditions:
                if len(sizes) >= 2:
                    ratio = (
                        table[(code, db, large, condition)].p50
                        / table[(code, db, small, condition)].p50
                    )
                    print(
                        f"ratio code={code} db={db} condition={condition} "
                        f"p50({large})/p50({small})={ratio:.3f} target<{TARGET_RATIO:g}"
                        + (
                            ""
                            if (small, large) == (10_000, 1_000_000)
                            else " (the target is stated for 1M/10k)"
                        ),
                        flush=True,
                    )
                for size in sizes:
                    f = table[(code, db, size, condition)]
                    print(
                        f"target code={code} db={db} condition={condition} catalog={size} "
                        f"p99_ms={f.p99:.2f} (<{TARGET_P99_MS:g}: "
                        f"{'met' if f.p99 < TARGET_P99_MS else 'not met'}) "
                        f"server_cpu_ms_per_call={f.cpu_ms:.2f} (<={TARGET_CPU_MS:g}: "
                        f"{'met' if f.cpu_ms <= TARGET_CPU_MS else 'not met'})",
                        flush=True,
                    )
    if "baseline" in codes:
        for db in dbs:
            for condition in args.conditions:
                for size in sizes:
                    now = table[("this", db, size, condition)]
                    before = table[("baseline", db, size, condition)]
                    print(
                        f"this_vs_baseline db={db} condition={condition} catalog={size} "
                        f"p50_ms={now.p50:.2f}/{before.p50:.2f}={now.p50 / before.p50:.3f} "
                        f"p99_ms={now.p99:.2f}/{before.p99:.2f}={now.p99 / before.p99:.3f} "
                        f"server_cpu_ms_per_call={now.cpu_ms:.2f}/{before.cpu_ms:.2f}="
                        f"{now.cpu_ms / before.cpu_ms:.3f} "
                        + (
                            ""
                            if db == "sqlite"
                            else f"postgresql_cpu_ms_per_call={now.db_cpu_ms:.2f}/"
                            f"{before.db_cpu_ms:.2f}={now.db_cpu_ms / before.db_cpu_ms:.3f} "
                        )
                        + "(same run, interleaved call by call)",
                        flush=True,
                    )


def profile_pass(inst: Instance, args: argparse.Namespace, profiler: Profiler) -> None:
    """A further pass under py-spy (never the measured one): ms per fragment in each part of the
    handler."""
    requests = args.profile_requests
    out = inst.run_dir / "fragment.spy"
    run = Run()
    with profiler.record(inst.server.process.pid, out):
        for _ in range(requests):
            inst.fragment("p", run)
    stacks = read_stacks(out)
    per_ms = 1000.0 / Profiler.RATE / requests
    all_ms = sum(c for _, c in stacks) * per_ms
    parts = " ".join(
        f"{label}={inclusive(stacks, pattern, 'playlist.py:get_fragment') * per_ms:.2f}"
        for label, pattern in FRAGMENT_PARTS
    )
    print(
        f"fragment_profile {inst.label} requests={requests} "
        f"sampled_ms_per_request={all_ms:.2f} "
        f"client_p50_ms={pct(run.latencies_ms, 50):.2f} ms_per_request(inclusive): {parts}",
        flush=True,
    )
    for func, count in top_self(stacks, "playlist.py:get_fragment", 12):
        print(
            f"  fragment_self {inst.label} ms_per_request={count * per_ms:.3f} frame={func}",
            flush=True,
        )


@contextmanager
def busy_core(on: bool) -> Iterator[None]:
    """One process spinning on a core for as long as the block runs: "one core busy running
    something else"."""
    if not on:
        yield
        return
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
    time.sleep(0.3)  # running
    try:
        yield
    finally:
        burner.kill()
        burner.wait()


def database_jiffies(instances: list[Instance]) -> dict[int, dict[int, int]]:
    """For each PostgreSQL instance (by index), the CPU time so far of each PostgreSQL backend
    serving its server's connections: the database's own work for the calls, which the server's
    CPU time leaves out."""
    return {
        n: postgres_backend_jiffies(inst.server.process.pid, POSTGRES_URL)
        for n, inst in enumerate(instances)
        if inst.db == "postgresql"
    }


def measure(instances: list[Instance], args: argparse.Namespace) -> None:
    """Warm-up, then rounds; in each round every condition in turn, and within it one call to each
    instance in turn (the order rotating), so whatever else the machine is doing weighs on every
    size and code alike."""
    for inst in instances:
        for _ in range(args.warmup):
            inst.fragment("warm")
    for r in range(args.rounds):
        for condition in args.conditions:
            for inst in instances:
                inst.runs[(condition, r)] = Run()
            with busy_core(condition == "busy"):
                cpu = CpuWatch([inst.server.process.pid for inst in instances])
                db_before = database_jiffies(instances)
                for i in range(args.requests):
                    for k in range(len(instances)):
                        inst = instances[(i + k) % len(instances)]
                        inst.fragment(f"m{r}{condition}", inst.runs[(condition, r)])
                summary, per_server = cpu.stop()
                db_after = database_jiffies(instances)
            for inst, seconds in zip(instances, per_server):
                inst.cpu_s[(condition, r)] = seconds
            tick = os.sysconf("SC_CLK_TCK")
            for n, after in db_after.items():
                before = db_before.get(n, {})
                # a backend the pool opened meanwhile counts from 0; one it closed is lost
                used = sum(j - before.get(pid, 0) for pid, j in after.items())
                instances[n].db_cpu_s[(condition, r)] = used / tick
            print(
                f"machine round={r + 1} condition={condition}: {summary} "
                f"instances_interleaved={len(instances)}",
                flush=True,
            )


def measure_station_lists(instances: list[Instance], calls: int) -> None:
    """station/getStations of the listener's whole list (the run's stations, played by the rounds):
    one call first (what the list's seeds show is read then), then `calls` calls, one to each
    instance in turn; the median latency and the server's CPU time a call, with the ratio to the
    baseline when there is one."""
    first: dict[int, float] = {}
    times: dict[int, list[float]] = {id(inst): [] for inst in instances}

    def listed(inst: Instance) -> float:
        started = time.perf_counter()
        got = inst.client.ok("v1/station/getStations", {"pageSize": 1000})
        if len(got["stations"]) != len(inst.station_ids):
            raise RuntimeError(f"getStations listed {len(got['stations'])} stations")
        return (time.perf_counter() - started) * 1000

    for inst in instances:
        first[id(inst)] = listed(inst)
    cpu = CpuWatch([inst.server.process.pid for inst in instances])
    for n in range(calls):
        for k in range(len(instances)):
            inst = instances[(n + k) % len(instances)]
            times[id(inst)].append(listed(inst))
    _summary, per_server = cpu.stop()
    p50s: dict[tuple[str, int], float] = {}
    for inst, seconds in zip(instances, per_server):
        p50 = pct(times[id(inst)], 50)
        p50s[(inst.db, inst.size, inst.code)] = p50
        print(
            f"getStations {inst.label} stations={len(inst.station_ids)} "
            f"first_ms={first[id(inst)]:.2f} p50_ms={p50:.2f} "
            f"p90_ms={pct(times[id(inst)], 90):.2f} "
            f"server_cpu_ms_per_call={seconds / calls * 1000:.2f} calls={calls}",
            flush=True,
        )
    for (db, size, code), p50 in p50s.items():
        if code == "this" and (db, size, "baseline") in p50s:
            print(
                f"ratio getStations db={db} catalog={size} "
                f"p50 this/baseline={p50 / p50s[(db, size, 'baseline')]:.3f}",
                flush=True,
            )


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="getFragment latency over HTTP on synthetic catalogues of "
        "several sizes, idle and with one core busy, with the similarity build time of each."
    )
    parser.add_argument(
        "--sizes",
        default="10000,100000,1000000",
        help="catalogue sizes (default 10000,100000,1000000)",
    )
    parser.add_argument(
        "--requests",
        type=int,
        default=400,
        help="measured getFragment calls per size, condition and round (default 400)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument(
        "--database",
        default="sqlite",
        help="comma-separated: sqlite, postgresql (AIRWAVE_TEST_POSTGRES_URL or the local test "
        "database; a fresh schema per server) or both (default sqlite)",
    )
    parser.add_argument(
        "--conditions",
        default="idle,busy",
        help="idle, busy (one core spinning meanwhile) or both (default idle,busy)",
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="also serve every size from this source tree (its src/ on PYTHONPATH), interleaved",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=100,
        help="unmeasured calls first (default 100: one per station)",
    )
    parser.add_argument("--stations", type=int, default=100, help="stations (default 100)")
    parser.add_argument(
        "--station-lists",
        type=int,
        default=20,
        help="getStations calls of the whole list after the rounds (default 20; 0: none)",
    )
    parser.add_argument(
        "--rules",
        choices=["strict", "relaxed"],
        default="strict",
        help="radio rules (default strict)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"built catalogues (default {DEFAULT_CACHE})",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild cached catalogues")
    parser.add_argument(
        "--keep", action="store_true", help="keep the run data dirs (with server logs)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="py-spy: where a fragment's (and a build's) time goes",
    )
    parser.add_argument(
        "--py-spy",
        default=None,
        help="py-spy executable (default: on PATH, else beside this Python)",
    )
    parser.add_argument(
        "--profile-requests", type=int, default=300, help="calls in the profiled pass (default 300)"
    )
    parser.add_argument(
        "--builds",
        type=int,
        default=0,
        help="then the similarity build again this many rounds on each instance's database, "
        "each code in a process of its own, codes taking turns (default 0)",
    )
    parser.add_argument("--build-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_child is not None:
        return args
    try:
        args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error("--sizes takes integers such as 10000,100000")
    if not args.sizes or min(args.sizes) < 1000 or max(args.sizes) > 5_000_000:
        parser.error("sizes must be between 1000 and 5000000")
    args.conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    if not args.conditions or not set(args.conditions) <= {"idle", "busy"}:
        parser.error("--conditions takes idle, busy or idle,busy")
    if (
        not 1 <= args.requests <= 100_000
        or not 1 <= args.rounds <= 20
        or not 0 <= args.warmup <= 10_000
        or not 3 <= args.stations <= 250
    ):
        parser.error(
            "--requests in [1, 100000], --rounds in [1, 20], --warmup in [0, 10000], "
            "--stations in [3, 250]"
        )
    args.database = databases(parser, args.database)
    if args.baseline_src is not None and not (args.baseline_src / "src" / "airwave").is_dir():
        parser.error("--baseline-src DIR needs DIR/src/airwave")
    return args


def main() -> None:
    args = parse_args()
    if args.build_child is not None:  # the build's own process (child_build)
        build_child_main(json.loads(args.build_child))
        return
    signal.signal(signal.SIGTERM, interrupt)
    for name in [k for k in os.environ if k.startswith("AIRWAVE_")]:
        del os.environ[name]
    profiler = None
    if args.profile:
        beside = Path(sys.executable).with_name("py-spy")  # the venv's, without activating it
        exe = args.py_spy or shutil.which("py-spy") or (str(beside) if beside.exists() else None)
        if exe is None:
            sys.exit("--profile needs py-spy (make's venv has it, or --py-spy PATH)")
        profiler = Profiler(exe)
    args.cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="airwave-bench-fragment-run-"))
    print(
        f"config sizes={','.join(map(str, args.sizes))} requests={args.requests} "
        f"rounds={args.rounds} conditions={','.join(args.conditions)} warmup={args.warmup} "
        f"stations={args.stations} rules={args.rules} db={','.join(args.database)} "
        "client=httpx keep-alive, "
        "one request at a time "
        f"server=`airwave serve` subprocess per size (access log on) cpus={os.cpu_count()} "
        f"baseline={args.baseline_src} loadavg_1m={os.getloadavg()[0]:.2f} cache={args.cache} "
        f"{interpreter()}",
        flush=True,
    )
    instances: list[Instance] = []
    try:
        for db in args.database:
            for size in args.sizes:
                instances.append(prepare(size, args, work, profiler, db=db))
                if args.baseline_src is not None:
                    instances.append(prepare(size, args, work, None, args.baseline_src, db=db))
        measure(instances, args)
        report(instances, args)
        if args.station_lists:
            measure_station_lists(instances, args.station_lists)
        if args.builds:
            rebuilds(instances, args.builds)
        print(f"machine after: loadavg_1m={os.getloadavg()[0]:.2f}", flush=True)
        if profiler is not None:
            for inst in instances:
                profile_pass(inst, args, profiler)
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    except (RuntimeError, OSError, sqlite3.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    finally:
        for inst in instances:
            inst.close(args.keep)
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
