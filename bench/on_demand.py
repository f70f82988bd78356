"""On-demand browsing latency: v4 collections/getSortedItems and playlists/getTracks over real HTTP
with a 100,000-item collection and a 10,000-entry playlist, on SQLite and on PostgreSQL.

For each backend a fresh instance is set up (not timed against the target): the schema by the
server's own migrations, a synthetic catalogue of ~1.1 x --items present tracks (artists ~N/12,
albums ~N/10, one genre per track) bulk-inserted with SQLAlchemy Core, a premium listener made by
`airwave user add`, and that listener's collection bulk-inserted into `collection_items` (mostly
tracks, some albums and artists; casefolded sort keys, added_at growing with the row id, a third
of the items played since they were added; names from one word pool, so that ALPHA pages mix
kinds). `airwave serve` then runs as a child process through the shared harness (access log on,
as in production); the playlist is made over the API (playlists/create with the first 5,000
tracks, appendItems for the rest; the server's cap is 10,000 entries), and it is the collection's
last item. On PostgreSQL the tables are then VACUUMed and ANALYZEd, as autovacuum would soon do
(statistics, and the visibility map that index-only scans need); SQLite gets no ANALYZE (the
server never runs one). Deep cursors come from walking each sort order page by
page once (--deep-pages, default 500 pages of 100). Albums have no cover art.

Measured: one keep-alive client, one request at a time (latency, not throughput), rounds of one
call of every kind with the anchor among them, the order rotating from round to round:

  getSortedItems  sortOrder DATE_ADDED, ALPHA, ARTIST, RECENT; limit 100; the first page, a deep
                  page (from a cursor of the walk's last pages) and offset --items/2 (the sort
                  order rotating round by round)
  getTracks       the playlist, offset random in 0..playlist-100, limit 100
  anchor          collections/getVersion {} on the same server (authenticated, trivial)

    .venv/bin/python bench/on_demand.py [--backends sqlite,postgresql] [--requests 500]
        [--items 100000] [--playlist 10000] [--keep] [--explain]

Prints p50/p90/p99 of every kind, the anchor's, the ratio p50(kind)/p50(anchor) (the median of
the per-block ratios over --blocks consecutive blocks of rounds, with their range), whether
p99 < 25 ms, and the server's own time per request from its access log. --explain adds a pass
after the measured one (never during it) that runs the same core calls in this process with every
SQL statement timed, and shows the plans of the slowest. Never asserts. Target (issue): p99 under
25 ms with 100,000 collection items and a 10,000-track playlist, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from benchkit import (
    USERNAME,
    ApiError,
    Client,
    CpuWatch,
    batches,
    interrupt,
    pct,
    server_durations,
)
from support.databases import Backend, PostgresSchema, postgres_available  # the shared harness
from support.server import Server

TARGET_P99_MS = 25.0
PAGE = 100
GENRES = 60
ORDERS = ("DATE_ADDED", "ALPHA", "ARTIST", "RECENT")
CORE_ORDER = {"DATE_ADDED": "added", "ALPHA": "name", "ARTIST": "artist", "RECENT": "recent"}
ARTIST_SHARE, ALBUM_SHARE = 0.04, 0.08  # of the collection; the rest are tracks
PLAYED_SHARE = 1 / 3  # items played on demand since they were added (RECENT differs from ADDED)
CHUNK = 5000  # tracks per playlists/create or appendItems call
BACKENDS = ("sqlite", "postgresql")
# names start with one of these, whatever the kind, so that ALPHA pages mix artists, albums and
# tracks as a real collection's do
WORDS = (
    "amber blue cold dawn echo fire glass harbor iron june kite lost moon night ocean paper quiet "
    "river salt tide under velvet winter yellow zero after broken city dream every"
).split()
# tables the measured calls read: VACUUM (ANALYZE) on PostgreSQL once the data is in
PG_TABLES = (
    "artists albums tracks genres track_genres listeners collection_items playlists "
    "playlist_items artwork stations station_seeds"
).split()


# --------------------------------------------------------------------------- the synthetic data


@dataclass
class Shape:
    """Who made what: album -> artist, track -> album (contiguous, as a scan inserts)."""

    tracks: int
    artists: int
    albums: int
    album_artist: list[int]  # 0-based artist of each 0-based album
    track_album: list[int]

    @classmethod
    def make(cls, n: int, rng: random.Random) -> Shape:
        artists = max(4, n // 12)
        albums = max(artists, n // 10)
        album_artist = list(range(artists)) + [
            rng.randrange(artists) for _ in range(albums - artists)
        ]
        rng.shuffle(album_artist)
        track_album = [min(t * albums // n, albums - 1) for t in range(n)]
        return cls(n, artists, albums, album_artist, track_album)

    def track_artist(self, t: int) -> int:
        return self.album_artist[self.track_album[t]]

    @staticmethod
    def name(salt: int, n: int) -> str:
        """A name: two words picked by the object's number, and the number (names are unique)."""
        h = (n * 2654435761 + salt * 40503) % 2**32
        return f"{WORDS[h % len(WORDS)]} {WORDS[(h >> 11) % len(WORDS)]} {n}".title()

    def artist_name(self, a: int) -> str:
        return self.name(1, a)

    def album_title(self, al: int) -> str:
        return self.name(2, al)

    def track_title(self, t: int) -> str:
        return self.name(3, t)


def insert_catalogue(engine: Any, shape: Shape, rng: random.Random, batch: int = 20_000) -> None:
    """Artists, albums, present tracks and one genre per track (SQLAlchemy Core executemany)."""
    from sqlalchemy import insert

    from airwave.store.models import Album, Artist, Genre, Track, TrackGenre

    added = datetime(2024, 1, 1, tzinfo=UTC)
    codecs = ("mp3", "flac", "vorbis")
    with engine.begin() as conn:
        conn.execute(
            insert(Genre),
            [
                {"id": g + 1, "name": f"Genre {g}", "name_key": f"genre {g}", "category": "Bench"}
                for g in range(GENRES)
            ],
        )
        for lo, hi in batches(shape.artists, batch):
            conn.execute(
                insert(Artist),
                [
                    {
                        "id": a + 1,
                        "name": shape.artist_name(a),
                        "name_key": shape.artist_name(a).casefold(),
                        "sort_name": shape.artist_name(a),
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
                        "title": shape.album_title(al),
                        "title_key": shape.album_title(al).casefold(),
                        "artist_id": shape.album_artist[al] + 1,
                        "year": 1960 + al % 65,
                        "is_compilation": False,
                        "created_at": added,
                    }
                    for al in range(lo, hi)
                ],
            )
        for lo, hi in batches(shape.tracks, batch):
            conn.execute(
                insert(Track),
                [
                    {
                        "id": t + 1,
                        "title": shape.track_title(t),
                        "artist_id": shape.track_artist(t) + 1,
                        "album_id": shape.track_album[t] + 1,
                        "track_no": t % 10 + 1,
                        "disc_no": 1,
                        "year": 1960 + shape.track_album[t] % 65,
                        "duration": rng.uniform(120, 420),
                        "bitrate": 320_000,
                        "sample_rate": 44_100,
                        "channels": 2,
                        "codec": codecs[t % 3],
                        "explicit": False,
                        "fingerprint": hashlib.sha1(b"t%d" % t).hexdigest(),
                        "path": f"/music/a{shape.track_album[t]}/t{t}.mp3",
                        "added_at": added,
                    }
                    for t in range(lo, hi)
                ],
            )
            conn.execute(
                insert(TrackGenre),
                [
                    {
                        "track_id": t + 1,
                        "genre_id": shape.track_artist(t) % GENRES + 1,
                        "position": 0,
                    }
                    for t in range(lo, hi)
                ],
            )


def insert_collection(
    engine: Any, listener_id: int, shape: Shape, count: int, rng: random.Random
) -> Counter[str]:
    """`count` items in the listener's collection, as collection.add would have stored them:
    casefolded name and artist name, ids growing with added_at; sets collection_version."""
    from sqlalchemy import insert, update

    from airwave.store.models import CollectionItem, Listener

    n_ar = min(shape.artists, round(count * ARTIST_SHARE))
    n_al = min(shape.albums, round(count * ALBUM_SHARE))
    n_tr = min(shape.tracks, count - n_ar - n_al)
    items = (
        [("AR", a) for a in rng.sample(range(shape.artists), n_ar)]
        + [("AL", al) for al in rng.sample(range(shape.albums), n_al)]
        + [("TR", t) for t in rng.sample(range(shape.tracks), n_tr)]
    )
    rng.shuffle(items)
    end = datetime.now(UTC) - timedelta(days=1)
    start = end - timedelta(days=3 * 365)
    step = (end - start) / max(1, len(items))
    rows = []
    for i, (kind, n) in enumerate(items):
        if kind == "AR":
            name = artist = shape.artist_name(n)
        elif kind == "AL":
            name, artist = shape.album_title(n), shape.artist_name(shape.album_artist[n])
        else:
            name, artist = shape.track_title(n), shape.artist_name(shape.track_artist(n))
        added = start + step * i
        touched = added + (end - added) * rng.random() if rng.random() < PLAYED_SHARE else added
        rows.append(
            {
                "listener_id": listener_id,
                "kind": kind,
                "ref_id": n + 1,
                "sort_name": name.casefold()[:255],
                "sort_artist": artist.casefold()[:255],
                "added_at": added,
                "touched_at": touched,
            }
        )
    with engine.begin() as conn:
        for lo, hi in batches(len(rows), 20_000):
            conn.execute(insert(CollectionItem), rows[lo:hi])
        conn.execute(
            update(Listener)
            .where(Listener.id == listener_id)
            .values(collection_version=Listener.collection_version + len(rows))
        )
    return Counter(kind for kind, _ in items)


def add_listener(backend: Backend, password: str) -> None:
    """`airwave user add --tier premium`: on-demand listening; the CLI is the operator's way."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRWAVE_")}
    env.update(backend.env)
    done = subprocess.run(
        [sys.executable, "-m", "airwave", "user", "add", USERNAME, "--tier", "premium"]
        + ["--password-stdin"],
        input=password + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"airwave user add failed: {done.stdout}{done.stderr}")


def database_url(backend: Backend) -> str:
    return (
        backend.pg.url if backend.pg is not None else f"sqlite:///{backend.data_dir / 'airwave.db'}"
    )


# --------------------------------------------------------------------------- the client


# --------------------------------------------------------------------------- one backend


@dataclass
class Kind:
    """One measured kind of call: a label, the endpoint, and how to make the next body."""

    label: str
    path: str
    body: Callable[[int], dict]  # round number -> request body
    latencies_ms: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    request_ids: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


@dataclass
class Instance:
    name: str
    backend: Backend
    server: Server | None = None
    client: Client | None = None
    listener_id: int = 0
    playlist: str = ""  # its pandoraId
    playlist_size: int = 0
    deep_cursors: dict[str, list[str]] = field(default_factory=dict)  # sort order -> cursors
    deep_pages: int = 0
    kinds: list[Kind] = field(default_factory=list)
    cpu_s: float = 0.0

    def close(self, keep: bool) -> None:
        if self.client is not None:
            self.client.close()
        if self.server is not None and self.server.process is not None:
            self.server.stop(timeout=20)
        if not keep:
            if self.backend.pg is not None:
                self.backend.pg.drop()
            shutil.rmtree(self.backend.data_dir, ignore_errors=True)


def make_backend(name: str, work: Path) -> Backend:
    data_dir = work / name
    data_dir.mkdir(parents=True)
    if name == "postgresql":
        if not postgres_available():
            raise RuntimeError("PostgreSQL is not reachable (AIRWAVE_TEST_POSTGRES_URL)")
        return Backend(name, data_dir, PostgresSchema())
    return Backend(name, data_dir)


def prepare(name: str, args: argparse.Namespace, work: Path) -> Instance:
    """Schema, catalogue, listener, collection, server, playlist, deep cursors."""
    from sqlalchemy import select

    from airwave.store.db import Database
    from airwave.store.models import Listener

    inst = Instance(name, make_backend(name, work))
    try:
        rng = random.Random(args.seed)
        started = time.perf_counter()
        database = Database(database_url(inst.backend))
        try:
            database.migrate()
            migrated = time.perf_counter()
            shape = Shape.make(args.tracks, rng)
            insert_catalogue(database.engine, shape, rng)
            catalogued = time.perf_counter()
            password = secrets.token_urlsafe(12)
            add_listener(inst.backend, password)
            with database.engine.connect() as conn:
                inst.listener_id = conn.scalar(
                    select(Listener.id).where(Listener.username_key == USERNAME)
                )
            collected = insert_collection(
                database.engine, inst.listener_id, shape, args.items - 1, rng
            )
            loaded = time.perf_counter()
        finally:
            database.dispose()
        print(
            f"setup backend={name} tracks={shape.tracks} artists={shape.artists} "
            f"albums={shape.albums} collection_bulk={sum(collected.values())} "
            + " ".join(f"{k}={v}" for k, v in sorted(collected.items()))
            + f" migrate_s={migrated - started:.1f} catalogue_s={catalogued - migrated:.1f} "
            f"listener_and_collection_s={loaded - catalogued:.1f}"
            + (f" pg_schema={inst.backend.pg.name}" if inst.backend.pg is not None else "")
            + " (bench set-up, not timed against the target)",
            flush=True,
        )

        inst.server = Server(
            inst.backend,
            env={"AIRWAVE_ANALYZE_AUDIO": "false"},
            log_file=inst.backend.data_dir / "server.log",
            clean_env=True,
        ).start(timeout=60)
        inst.client = Client(inst.server.url)
        inst.client.login(password)
        make_playlist(inst, args.playlist)
        total = inst.client.ok("v4/collections/countItems", {})["total"]
        if inst.backend.pg is not None:  # what autovacuum does soon after such inserts
            inst.backend.execute("VACUUM (ANALYZE) " + ", ".join(PG_TABLES))
        walk_cursors(inst, args)
        print(
            f"setup backend={name} playlist={inst.playlist} entries={inst.playlist_size} "
            f"collection_items={total} deep_pages={inst.deep_pages} "
            f"analyzed={'vacuum+analyze' if inst.backend.pg is not None else 'no (SQLite: never)'} "
            f"seconds={time.perf_counter() - started:.1f}",
            flush=True,
        )
        inst.kinds = kinds_of(inst, args)
        return inst
    except BaseException:
        inst.close(args.keep)
        raise


def make_playlist(inst: Instance, size: int) -> None:
    """playlists/create with the first CHUNK tracks, appendItems with the rest."""
    assert inst.client is not None
    tokens = [f"TR:{t}" for t in range(1, size + 1)]
    started = time.perf_counter()
    made = inst.client.ok(
        "v4/playlists/create", {"name": "Bench playlist", "tracks": tokens[:CHUNK]}
    )
    create_s = time.perf_counter() - started
    inst.playlist, version = made["pandoraId"], made["version"]
    appended = []
    for lo in range(CHUNK, size, CHUNK):
        started = time.perf_counter()
        made = inst.client.ok(
            "v4/playlists/appendItems",
            {"pandoraId": inst.playlist, "version": version, "pandoraIds": tokens[lo : lo + CHUNK]},
        )
        appended.append(time.perf_counter() - started)
        version = made["version"]
    inst.playlist_size = made["totalTracks"]
    if inst.playlist_size != size:
        raise RuntimeError(f"the playlist holds {inst.playlist_size} entries, not {size}")
    print(
        f"setup backend={inst.name} playlists/create_ms={create_s * 1000:.0f} "
        + " ".join(f"appendItems_ms={s * 1000:.0f}" for s in appended)
        + f" (entries per call <= {CHUNK}; not timed against the target)",
        flush=True,
    )


def walk_cursors(inst: Instance, args: argparse.Namespace) -> None:
    """Page through each sort order from the first page, keeping the cursors of the last pages
    (where the deep pages start); the walk's own latencies are shown (not interleaved)."""
    assert inst.client is not None
    inst.deep_pages = max(1, min(args.deep_pages, args.items // PAGE - 1))
    keep = max(1, min(50, inst.deep_pages // 2))
    for order in ORDERS:
        cursor: str | None = None
        cursors: list[str] = []
        walk_ms: list[float] = []
        for n in range(inst.deep_pages):
            body: dict[str, Any] = {"sortOrder": order, "limit": PAGE}
            if cursor:
                body["cursor"] = cursor
            status, data, seconds = inst.client.call("v4/collections/getSortedItems", body)
            if status != 200:
                raise ApiError(f"getSortedItems during the walk: HTTP {status} {data}")
            walk_ms.append(seconds * 1000)
            cursor = data.get("cursor")
            if cursor is None:
                raise RuntimeError(f"{order}: the collection ended after {n + 1} pages")
            if n >= inst.deep_pages - keep:
                cursors.append(cursor)
        inst.deep_cursors[order] = cursors
        print(
            f"walk backend={inst.name} sortOrder={order} pages={inst.deep_pages} "
            f"p50_ms={pct(walk_ms, 50):.2f} p99_ms={pct(walk_ms, 99):.2f} "
            f"first_ms={walk_ms[0]:.2f} last_ms={walk_ms[-1]:.2f} "
            f"deep_cursors={len(cursors)} (set-up: page after page, no anchor)",
            flush=True,
        )


def kinds_of(inst: Instance, args: argparse.Namespace) -> list[Kind]:
    """The anchor first, then every measured kind."""
    rng = random.Random(args.seed + 1)
    offset = args.items // 2
    max_offset = max(0, inst.playlist_size - PAGE)
    kinds = [Kind("anchor.getVersion", "v4/collections/getVersion", lambda r: {})]
    for order in ORDERS:
        cursors = inst.deep_cursors[order]
        kinds.append(
            Kind(
                f"getSortedItems.{order}.first",
                "v4/collections/getSortedItems",
                lambda r, o=order: {"sortOrder": o, "limit": PAGE},
            )
        )
        kinds.append(
            Kind(
                f"getSortedItems.{order}.deep",
                "v4/collections/getSortedItems",
                lambda r, o=order, c=cursors: {
                    "sortOrder": o,
                    "limit": PAGE,
                    "cursor": c[r % len(c)],
                },
            )
        )
    kinds.append(
        Kind(
            f"getSortedItems.offset{offset}",
            "v4/collections/getSortedItems",
            lambda r: {"sortOrder": ORDERS[r % len(ORDERS)], "limit": PAGE, "offset": offset},
        )
    )
    kinds.append(
        Kind(
            "getTracks",
            "v4/playlists/getTracks",
            lambda r: {
                "pandoraId": inst.playlist,
                "offset": rng.randint(0, max_offset),
                "limit": PAGE,
            },
        )
    )
    return kinds


def call_kind(inst: Instance, kind: Kind, r: int, tag: str, measured: bool) -> None:
    assert inst.client is not None
    request_id = f"{tag}{r}.{kind.label}"[:64]
    status, data, seconds = inst.client.call(kind.path, kind.body(r), request_id)
    if not measured:
        if status != 200:
            raise ApiError(f"{kind.label} during the warm-up: HTTP {status} {data}")
        return
    kind.latencies_ms.append(seconds * 1000)
    kind.rounds.append(r)
    kind.request_ids.append(request_id)
    if status != 200:
        kind.errors[
            data.get("errorString", str(status)) if isinstance(data, dict) else str(status)
        ] += 1


def measure(inst: Instance, args: argparse.Namespace) -> None:
    """Warm-up rounds, then the measured ones: one call of every kind (the anchor among them) per
    round, the order rotating."""
    kinds = inst.kinds
    for r in range(args.warmup):
        for kind in kinds:
            call_kind(inst, kind, r, "w", measured=False)
    assert inst.server is not None and inst.server.process is not None
    cpu = CpuWatch([inst.server.process.pid])
    for r in range(args.requests):
        for k in range(len(kinds)):
            call_kind(inst, kinds[(r + k) % len(kinds)], r, "m", measured=True)
    summary, per_server = cpu.stop()
    inst.cpu_s = sum(per_server)
    print(f"machine backend={inst.name} while measuring: {summary}", flush=True)


# --------------------------------------------------------------------------- figures


def block_ratios(kind: Kind, anchor: Kind, blocks: int, rounds: int) -> list[float]:
    """p50(kind)/p50(anchor) in each block of consecutive rounds."""
    size = max(1, -(-rounds // blocks))
    mine: dict[int, list[float]] = defaultdict(list)
    theirs: dict[int, list[float]] = defaultdict(list)
    for r, ms in zip(kind.rounds, kind.latencies_ms):
        mine[r // size].append(ms)
    for r, ms in zip(anchor.rounds, anchor.latencies_ms):
        theirs[r // size].append(ms)
    return [
        float(np.median(mine[b])) / float(np.median(theirs[b]))
        for b in sorted(mine)
        if theirs.get(b)
    ]


def report(inst: Instance, args: argparse.Namespace) -> list[str]:
    """One line per kind; the labels of kinds over the target."""
    anchor, measured = inst.kinds[0], inst.kinds[1:]
    assert inst.server is not None and inst.server.log_file is not None
    own = server_durations(
        inst.server.log_file, {rid for kind in inst.kinds for rid in kind.request_ids}
    )
    a50 = pct(anchor.latencies_ms, 50)
    print(
        f"anchor backend={inst.name} call=collections/getVersion p50_ms={a50:.2f} "
        f"p90_ms={pct(anchor.latencies_ms, 90):.2f} p99_ms={pct(anchor.latencies_ms, 99):.2f} "
        f"max_ms={max(anchor.latencies_ms):.2f} requests={len(anchor.latencies_ms)}"
        + _errors(anchor),
        flush=True,
    )
    over = []
    for kind in measured:
        lat = kind.latencies_ms
        p99 = pct(lat, 99)
        ratios = block_ratios(kind, anchor, args.blocks, args.requests)
        under = p99 < TARGET_P99_MS
        if not under:
            over.append(kind.label)
        print(
            f"{kind.label} backend={inst.name} p50_ms={pct(lat, 50):.2f} p90_ms={pct(lat, 90):.2f} "
            f"p99_ms={p99:.2f} max_ms={max(lat):.2f} requests={len(lat)} "
            f"ratio_p50_to_anchor={float(np.median(ratios)):.2f} "
            f"(blocks={len(ratios)} range={min(ratios):.2f}..{max(ratios):.2f}) "
            f"p99_under_{TARGET_P99_MS:g}ms={'yes' if under else 'NO'}" + _errors(kind),
            flush=True,
        )
    for kind in inst.kinds:
        values = [own[rid] for rid in kind.request_ids if rid in own]
        if values:
            print(
                f"  server {kind.label} backend={inst.name} p50_ms={pct(values, 50):.2f} "
                f"p99_ms={pct(values, 99):.2f} max_ms={max(values):.2f} requests={len(values)} "
                "(access-log duration_ms: no client or socket time)",
                flush=True,
            )
    calls = sum(len(kind.latencies_ms) for kind in inst.kinds)
    print(
        f"server_cpu backend={inst.name} "
        f"cpu_ms_per_request={inst.cpu_s * 1000 / max(1, calls):.2f} "
        "(the server process over the measured calls, every kind together; PostgreSQL's own "
        "processes are not in it)",
        flush=True,
    )
    return over


def _errors(kind: Kind) -> str:
    if not kind.errors:
        return ""
    return " errors=" + ",".join(f"{k}:{v}" for k, v in kind.errors.items())


# --------------------------------------------------------------------------- CPU accounting


# --------------------------------------------------------------------------- --explain


EXPLAIN_RUNS = 15


def explain(inst: Instance, args: argparse.Namespace) -> None:
    """The core calls behind the measured kinds, run in this process on the same database: the
    wall time of each call, then every SELECT it issued run again by itself on a raw driver
    connection (execute and fetch every row, no ORM) and timed, so wall - sql is the Python side
    (ORM loading, statement building, the core's own work; the API's answer building is not in
    it); then the plans of the slowest statements."""
    from sqlalchemy import event

    from airwave.core import collection, ids, music, playlists
    from airwave.store.db import Database

    database = Database(database_url(inst.backend))
    issued: list[tuple[str, Any]] = []

    @event.listens_for(database.engine, "before_cursor_execute")
    def _seen(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        issued.append((statement, params))

    listener = inst.listener_id
    playlist_id = int(inst.playlist.split(":")[1])
    rng = random.Random(args.seed + 2)

    def page_refs(order: str) -> list[ids.Ref]:
        with database.read() as db:
            found = collection.page(db, listener, order=CORE_ORDER[order], limit=PAGE)
        return [item.ref for item in found.items]

    def annotate(refs: list[ids.Ref]) -> None:
        with database.read() as db:
            music.annotate(db, refs)
            playlists.notes(db, listener, [r.id for r in refs if r.kind == "playlist"])

    def cursor_of(order: str) -> str:
        return inst.deep_cursors[order][0]

    def entries() -> None:
        with database.read() as db:
            playlist = playlists.owned(db, listener, inst.playlist)
            found = playlists.entries(
                db, playlist, rng.randint(0, max(0, inst.playlist_size - PAGE)), PAGE
            )
            music.annotate(db, [ids.Ref("track", e.track_id) for e in found])

    cases: list[tuple[str, Callable[[], None]]] = []
    for order in ORDERS:
        core = CORE_ORDER[order]

        def first(core: str = core) -> None:
            with database.read() as db:
                collection.page(db, listener, order=core, limit=PAGE)

        def deep(core: str = core, order: str = order) -> None:
            with database.read() as db:
                collection.page(db, listener, order=core, limit=PAGE, cursor=cursor_of(order))

        def offset(core: str = core) -> None:
            with database.read() as db:
                collection.page(db, listener, order=core, limit=PAGE, offset=args.items // 2)

        refs = page_refs(order)
        cases += [
            (f"collection.page {order} first", first),
            (f"collection.page {order} deep(cursor)", deep),
            (f"collection.page {order} offset={args.items // 2}", offset),
            (
                f"annotate {order} first page ({dict(Counter(r.kind for r in refs))})",
                lambda refs=refs: annotate(refs),
            ),
        ]
    cases.append((f"playlists.entries+annotate PL:{playlist_id} (random offset)", entries))
    print(
        f"explain backend={inst.name} runs={EXPLAIN_RUNS} (in this process, after the measured "
        "pass; ms are medians per call)",
        flush=True,
    )
    # (ms of one execution, case, normalised statement, a statement as run, its parameters)
    slowest: list[tuple[float, str, str, str, Any]] = []
    raw = database.engine.raw_connection()
    try:
        for label, run in cases:
            run()  # warm
            walls: list[float] = []
            for _ in range(EXPLAIN_RUNS):
                issued.clear()
                started = time.perf_counter()
                run()
                walls.append((time.perf_counter() - started) * 1000)
            per_key: dict[str, float] = defaultdict(float)  # ms per call, all executions
            runs_of: Counter[str] = Counter()  # executions per call
            worst: dict[str, tuple[float, str, Any]] = {}  # the slowest execution of each
            for statement, params in issued:
                if not statement.lstrip().upper().startswith(("SELECT", "WITH")):
                    continue
                key = _short(statement, 10_000)
                ms = _raw_ms(raw, statement, params)
                per_key[key] += ms
                runs_of[key] += 1
                if key not in worst or ms > worst[key][0]:
                    worst[key] = (ms, statement, params)
            print(
                f"  {label}: wall_ms={float(np.median(walls)):.2f} "
                f"sql_ms={sum(per_key.values()):.2f} selects={sum(runs_of.values())}",
                flush=True,
            )
            for key, ms in sorted(per_key.items(), key=lambda kv: -kv[1])[:3]:
                print(f"      {ms:7.2f} ms  x{runs_of[key]:<4d} {_short(key)}", flush=True)
                one, statement, params = worst[key]
                slowest.append((one, label, key, statement, params))
        seen: set[str] = set()
        for ms, label, key, statement, params in sorted(slowest, key=lambda s: -s[0]):
            if ms < 1.0 or key in seen or len(seen) >= 6:
                continue
            seen.add(key)
            print(
                f"  plan ({ms:.2f} ms, its slowest run in {label}): {_short(key, 400)}", flush=True
            )
            for line in _plan(database, statement, params):
                print(f"      {line}", flush=True)
    finally:
        raw.close()
        database.dispose()


def _raw_ms(raw: Any, statement: str, params: Any, reps: int = 3) -> float:
    """Median ms of executing a statement and fetching all its rows on a raw driver connection."""
    cursor = raw.cursor()
    times = []
    try:
        for _ in range(reps):
            started = time.perf_counter()
            cursor.execute(statement, params)
            cursor.fetchall()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        cursor.close()
        raw.rollback()
    return float(np.median(times))


def _short(statement: str, width: int = 160) -> str:
    """One line; IN lists and long column lists shortened."""
    text = " ".join(statement.split())
    text = re.sub(r"(\?, ){2,}\?", "?, ...", text)
    text = re.sub(r"(%\(\w+\)s(::\w+)?, ){2,}%\(\w+\)s(::\w+)?", "%(...)s, ...", text)
    text = re.sub(r"^SELECT (.{60,}?) FROM ", "SELECT <columns> FROM ", text)
    return text if len(text) <= width else text[: width - 3] + "..."


def _plan(database: Any, statement: str, params: Any) -> list[str]:
    """EXPLAIN ANALYZE (PostgreSQL) or EXPLAIN QUERY PLAN (SQLite) of one statement as it ran."""
    raw = database.engine.raw_connection()
    try:
        cursor = raw.cursor()
        if database.is_sqlite:
            cursor.execute("EXPLAIN QUERY PLAN " + statement, params)
            rows = cursor.fetchall()
            return ["  " * _depth(rows, row) + row[3] for row in rows]
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, params)
        return [row[0] for row in cursor.fetchall()]
    except Exception as exc:  # a plan is a hint; never fail the run over one
        return [f"(no plan: {type(exc).__name__}: {str(exc)[:200]})"]
    finally:
        raw.rollback()
        raw.close()


def _depth(rows: list[tuple], row: tuple) -> int:
    parents = {r[0]: r[1] for r in rows}
    depth, parent = 0, row[1]
    while parent in parents:
        depth, parent = depth + 1, parents[parent]
    return depth


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="collections/getSortedItems and playlists/getTracks latency over HTTP with a "
        "large collection and a long playlist, on SQLite and PostgreSQL, against an anchor "
        "(collections/getVersion) measured in the same rounds. Target: p99 < 25 ms."
    )
    parser.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help="comma-separated: sqlite, postgresql (default both)",
    )
    parser.add_argument(
        "--requests", type=int, default=500, help="measured calls per kind (default 500)"
    )
    parser.add_argument(
        "--items", type=int, default=100_000, help="collection items (default 100000)"
    )
    parser.add_argument(
        "--playlist", type=int, default=10_000, help="playlist entries (default 10000, the cap)"
    )
    parser.add_argument(
        "--tracks",
        type=int,
        default=None,
        help="catalogue tracks (default 1.1 x --items, at least --playlist)",
    )
    parser.add_argument(
        "--deep-pages",
        type=int,
        default=500,
        help="pages walked by cursor before the deep pages (default 500)",
    )
    parser.add_argument(
        "--warmup", type=int, default=10, help="unmeasured rounds first (default 10)"
    )
    parser.add_argument(
        "--blocks", type=int, default=5, help="blocks of rounds for the ratio's median (default 5)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the data dirs (server logs) and PostgreSQL schemas",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="after measuring: time every SQL statement of the same core calls, show plans",
    )
    args = parser.parse_args()
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not args.backends or any(b not in BACKENDS for b in args.backends):
        parser.error("--backends takes sqlite and/or postgresql")
    if not 1000 <= args.items <= 1_000_000 or not PAGE <= args.playlist <= 10_000:
        parser.error("--items in [1000, 1000000], --playlist in [100, 10000]")
    if not 1 <= args.requests <= 100_000 or not 0 <= args.warmup <= 1000:
        parser.error("--requests in [1, 100000], --warmup in [0, 1000]")
    if not 1 <= args.blocks <= args.requests or args.deep_pages < 1:
        parser.error("--blocks in [1, --requests], --deep-pages at least 1")
    if args.tracks is None:
        args.tracks = max(args.playlist, round(args.items * 1.1))
    if args.tracks < args.playlist:
        parser.error("--tracks must be at least --playlist")
    return args


def code_version() -> str:
    """The commit of the Airwave code under test (+dirty when src/ has changes), else its path:
    figures from different code are not comparable."""
    import airwave

    root = Path(airwave.__file__).resolve().parents[2]
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = dirty = ""
    return f"{rev}{'+dirty' if dirty else ''}" if rev else str(root)


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, interrupt)
    for name in [
        k for k in os.environ if k.startswith("AIRWAVE_") and k != "AIRWAVE_TEST_POSTGRES_URL"
    ]:
        del os.environ[name]
    work = Path(tempfile.mkdtemp(prefix="airwave-bench-on-demand-"))
    print(
        f"config backends={','.join(args.backends)} items={args.items} tracks={args.tracks} "
        f"playlist={args.playlist} requests={args.requests} warmup_rounds={args.warmup} "
        f"blocks={args.blocks} page={PAGE} client=httpx keep-alive, one request at a time "
        f"server=`airwave serve` subprocess per backend (access log on) cpus={os.cpu_count()} "
        f"loadavg_1m={os.getloadavg()[0]:.2f} work={work} code={code_version()}",
        flush=True,
    )
    over: dict[str, list[str]] = {}
    inst: Instance | None = None
    try:
        for name in args.backends:
            inst = prepare(name, args, work)
            measure(inst, args)
            over[name] = report(inst, args)
            if args.explain:
                explain(inst, args)
            inst.close(args.keep)
            inst = None
        for name, labels in over.items():
            print(
                f"summary backend={name} over_target={len(labels)} "
                + (",".join(labels) if labels else "(none)")
                + f" target_p99_ms<{TARGET_P99_MS:g}",
                flush=True,
            )
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    except (RuntimeError, OSError, sqlite3.Error) as exc:
        log = inst.server.log_tail() if inst is not None and inst.server is not None else ""
        print(f"error: {exc}\n{log}", file=sys.stderr)
        sys.exit(1)
    finally:
        if inst is not None:
            inst.close(args.keep)
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
