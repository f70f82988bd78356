"""Browsing at scale: the read calls whose answer spans the whole catalogue (genres and their
counts, the scan status's track count, random songs, album lists, songs of a genre, the song page
of apps that sync the whole library, the artist index), over real HTTP on catalogues of 100k and
1M tracks, on SQLite and on PostgreSQL.

The catalogue is bench/fragment.py's synthetic one (artists ~N/12, albums ~N/10, 60 genres in 12
categories, 1-2 genres a track, years 1955-2024): on SQLite its cached copy (built once), on
PostgreSQL a fresh schema built now (about 4 minutes at 1M tracks). One track in 500 is then
marked missing, as a rescan leaves files that went away. `airwave serve` runs as a child process
(one worker, so that what one call keeps is what the next call finds; access log on, as in
production); with --baseline-src a second server runs another source tree on the same data (its
own copy of the SQLite file; the same PostgreSQL schema). One listener calls the main API (v1,
v3) and the Subsonic API (`p=` with the account password).

Calls, one of each kind per server per round, the order rotating from round to round:

  genrecategories   v1 music/genrecategories (every category with a sample track)
  genres            v1 music/genres, the first category's genres with their track counts
  genreSearch       v3 sod/search for a genre (its track count in the annotation)
  getGenres         Subsonic getGenres (song and album count of every genre)
  getScanStatus     Subsonic getScanStatus (the library's track count; apps poll it)
  randomSongs       Subsonic getRandomSongs size 50; and with genre=, and with fromYear/toYear
  albumsNewest      Subsonic getAlbumList2 newest, size 50
  albumsByGenre     Subsonic getAlbumList2 byGenre, size 50
  songsByGenre      Subsonic getSongsByGenre, count 50, offset random in 0..1000
  songsByUnknownGenre, albumsByUnknownGenre
                    the same two for a genre no track has (a name an app kept from elsewhere)
  syncSongs         Subsonic search3 query "" (all songs, as syncing apps page), songCount 500,
                    songOffset random in 0..10,000
  artists           Subsonic getArtists (every artist)

Warm: what each call costs while the catalogue does not change (what a server keeps under the
catalogue stamp is then valid). Cold: every --cold-every rounds the stamp is changed, as every
scan's commit changes it, and the next call of each kind on each server is counted apart.

    .venv/bin/python bench/browse.py [--sizes 100000,1000000] [--database sqlite,postgresql]
        [--rounds 30] [--cold-every 5] [--baseline-src DIR] [--kinds genres,getGenres,...]

Prints one line per kind, size, database and code: warm p50/p90/p99, cold median; with
--baseline-src the ratios this/baseline of both. Never asserts. Target (issue 17, the request
path): a call's p99 under 25 ms whatever the catalogue's size; answers the size of the whole
catalogue (getArtists, the song pages of a sync) are shown for what they cost.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from benchkit import USERNAME, Client, compile_bytecode, databases, interrupt, pct  # noqa: E402
from fragment import (  # noqa: E402
    DEFAULT_CACHE,
    add_listener,
    ensure_catalogue,
    postgres_catalogue,
    tail,
)
from support.databases import Backend  # noqa: E402
from support.server import Server  # noqa: E402

MISSING_EVERY = 500  # one track in this many is marked missing
KEY_FILES = ("url-signing-keys.json", "app-password-key", "device-cookie-key")
TARGET_P99_MS = 25.0


@dataclass
class Served:
    """One source tree's server on one catalogue, and what its calls took."""

    code: str  # "this" or "baseline"
    backend: Backend
    server: Server
    client: Client
    password: str
    warm: dict[str, list[float]] = field(default_factory=dict)
    cold: dict[str, list[float]] = field(default_factory=dict)

    def subsonic(self, method: str, **params: Any) -> float:
        query = {"u": USERNAME, "p": self.password, "v": "1.16.1", "c": "bench", "f": "json"}
        started = time.perf_counter()
        response = self.client.http.get(f"/rest/{method}", params={**query, **params})
        body = response.read()
        elapsed = time.perf_counter() - started
        if response.status_code != 200 or b'"status":"ok"' not in body[:200]:
            raise RuntimeError(f"{method}: HTTP {response.status_code} {body[:300]!r}")
        return elapsed

    def api(self, path: str, body: dict) -> float:
        status, data, elapsed = self.client.call(path, body)
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status} {data}")
        return elapsed


def kinds(size: int, category: str, rng: random.Random) -> dict[str, Callable[[Served], float]]:
    """Every kind of call, as a function of the server it is sent to."""
    genre = f"Genre {rng.randint(0, 59)}"  # the catalogue's genres: Genre 0 .. Genre 59
    unknown = "No Such Genre"  # asked for by name, as apps do, and in no track's tags
    return {
        "genrecategories": lambda s: s.api("v1/music/genrecategories", {}),
        "genres": lambda s: s.api("v1/music/genres", {"token": category}),
        "genreSearch": lambda s: s.api("v3/sod/search", {"query": genre, "types": ["SF"]}),
        "getGenres": lambda s: s.subsonic("getGenres"),
        "getScanStatus": lambda s: s.subsonic("getScanStatus"),
        "randomSongs": lambda s: s.subsonic("getRandomSongs", size=50),
        "randomSongsGenre": lambda s: s.subsonic("getRandomSongs", size=50, genre=genre),
        "randomSongsYears": lambda s: s.subsonic(
            "getRandomSongs", size=50, fromYear=1990, toYear=1999
        ),
        "albumsNewest": lambda s: s.subsonic("getAlbumList2", type="newest", size=50),
        "albumsByGenre": lambda s: s.subsonic(
            "getAlbumList2", type="byGenre", genre=genre, size=50
        ),
        "songsByGenre": lambda s: s.subsonic(
            "getSongsByGenre", genre=genre, count=50, offset=rng.randint(0, 1000)
        ),
        "songsByUnknownGenre": lambda s: s.subsonic("getSongsByGenre", genre=unknown, count=50),
        "albumsByUnknownGenre": lambda s: s.subsonic(
            "getAlbumList2", type="byGenre", genre=unknown, size=50
        ),
        "syncSongs": lambda s: s.subsonic(
            "search3",
            query="",
            artistCount=0,
            albumCount=0,
            songCount=500,
            songOffset=rng.randint(0, min(10_000, size // 2)),
        ),
        "artists": lambda s: s.subsonic("getArtists"),
    }


def mark_missing(backend: Backend) -> None:
    """One track in MISSING_EVERY gone from the library, with a new catalogue stamp (what a
    rescan commits)."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")  # recent: not yet purged
    backend.execute(f"UPDATE tracks SET missing_since = '{now}' WHERE id % {MISSING_EVERY} = 7")
    bump(backend)


def bump(backend: Backend) -> None:
    """A new catalogue stamp: what every transaction that changes the catalogue writes."""
    backend.execute(f"UPDATE catalog_stamp SET stamp = {secrets.randbits(62) + 1} WHERE id = 1")


def prepare(
    size: int, db: str, work: Path, cache: Path, sources: dict[str, Path | None]
) -> list[Served]:
    """The catalogue of this size on this database, and one server per source tree on it."""
    first = work / f"run-{size}-{db}-this"
    first.mkdir(parents=True)
    if db == "postgresql":
        built_at = time.perf_counter()
        backend, _info = postgres_catalogue(size, first, None)
        print(f"catalog size={size} db={db} built_s={time.perf_counter() - built_at:.0f}")
    else:
        db_file, _info = ensure_catalogue(size, cache, False, None)
        shutil.copyfile(db_file, first / "airwave.db")
        backend = Backend("sqlite", first)
        print(f"catalog size={size} db={db} (cached copy)")
    served: list[Served] = []
    try:
        mark_missing(backend)
        password = secrets.token_urlsafe(12)
        add_listener(backend, password)
        data_dirs = {"this": backend}
        for code in sources:
            if code != "this":  # SQLite: a copy of the file, made before any server writes it
                data = work / f"run-{size}-{db}-{code}"
                shutil.copytree(first, data)
                data_dirs[code] = Backend(db, data, backend.pg)  # PostgreSQL: the same schema
        for code, source in sorted(sources.items(), key=lambda item: item[0] != "this"):
            mine = data_dirs[code]
            if code != "this" and db == "postgresql":
                # one database, one set of keys: the first server's, made as it started
                for key in KEY_FILES:
                    shutil.copyfile(first / key, mine.data_dir / key)
            log = mine.data_dir / "server.log"
            server = start_server_one_worker(mine, log, source)
            client = Client(server.url)
            served.append(Served(code, mine, server, client, password))
            try:
                client.login(password)
            except Exception:
                raise RuntimeError(tail(log)) from None
    except BaseException:
        close(served, keep=False)
        if backend.pg is not None:
            backend.pg.drop()
        raise
    return served


def start_server_one_worker(backend: Backend, log: Path, source: Path | None) -> Server:
    """`airwave serve` with one worker, from the source tree `source` (its src/ first on
    PYTHONPATH) when given."""
    env = {
        "AIRWAVE_WORKERS": "1",
        "AIRWAVE_ANALYZE_AUDIO": "false",
        "PYTHONPATH": str(source / "src") if source is not None else "",
    }
    return Server(backend, env=env, log_file=log, clean_env=True).start(timeout=60)


def measure(served: list[Served], size: int, rounds: int, cold_every: int, chosen: set[str]):
    rng = random.Random(size)
    category = first_category(served[0])
    calls = {k: f for k, f in kinds(size, category, rng).items() if not chosen or k in chosen}
    names = list(calls)
    for warmup in names:  # each kind once: connections, statements prepared, bytecode warm
        for s in served:
            calls[warmup](s)
    for n in range(rounds):
        cold = cold_every > 0 and n % cold_every == 0
        if cold:
            for backend in {id(s.backend.pg or s.backend): s.backend for s in served}.values():
                bump(backend)
        shift = n % len(names)
        order = names[shift:] + names[:shift]
        for kind in order:
            for s in served if n % 2 == 0 else reversed(served):
                took = calls[kind](s) * 1000
                (s.cold if cold else s.warm).setdefault(kind, []).append(took)


def first_category(s: Served) -> str:
    _, data, _ = s.client.call("v1/music/genrecategories", {})
    return data["categories"][0]["token"]


def report(served: list[Served], size: int, db: str) -> None:
    by_code = {s.code: s for s in served}
    for kind in dict.fromkeys([*served[0].warm, *served[0].cold]):
        for s in served:
            warm, cold = s.warm.get(kind, []), s.cold.get(kind, [])
            p99 = pct(warm, 99)
            met = "met" if p99 < TARGET_P99_MS else "not met"
            cold_text = f"cold_median_ms={statistics.median(cold):.1f} " if cold else ""
            print(
                f"browse kind={kind} size={size} db={db} code={s.code} "
                f"warm_p50_ms={pct(warm, 50):.1f} p90_ms={pct(warm, 90):.1f} p99_ms={p99:.1f} "
                f"{cold_text}calls={len(warm)}+{len(cold)} (warm p99<{TARGET_P99_MS:.0f}: {met})",
                flush=True,
            )
        if "baseline" in by_code:
            this, base = by_code["this"], by_code["baseline"]
            ratio = pct(this.warm.get(kind, []), 50) / pct(base.warm.get(kind, []), 50)
            cold_ratio = (
                statistics.median(this.cold[kind]) / statistics.median(base.cold[kind])
                if this.cold.get(kind) and base.cold.get(kind)
                else float("nan")
            )
            print(
                f"  ratio kind={kind} size={size} db={db} this/baseline warm_p50={ratio:.3f} "
                f"cold_median={cold_ratio:.3f}",
                flush=True,
            )


def close(served: list[Served], keep: bool) -> None:
    for s in served:
        s.client.close()
        s.server.stop()
    pgs = {id(s.backend.pg): s.backend.pg for s in served if s.backend.pg is not None}
    if not keep:
        for pg in pgs.values():
            pg.drop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--database", default="sqlite,postgresql")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cold-every", type=int, default=5, help="0: no cold calls")
    parser.add_argument("--kinds", default="", help="comma-separated: only these kinds")
    parser.add_argument("--baseline-src", type=Path, help="another source tree, measured too")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--keep", action="store_true", help="keep the data dirs and schemas")
    args = parser.parse_args()
    chosen_dbs = databases(parser, args.database)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    chosen = {k for k in args.kinds.split(",") if k}
    signal.signal(signal.SIGTERM, interrupt)
    sources: dict[str, Path | None] = {"this": None}
    if args.baseline_src is not None:
        compile_bytecode(args.baseline_src / "src")
        sources["baseline"] = args.baseline_src
    compile_bytecode(BENCH.parent / "src")
    print(
        f"config sizes={args.sizes} database={args.database} rounds={args.rounds} "
        f"cold_every={args.cold_every} baseline={args.baseline_src} cpus={os.cpu_count()} "
        f"loadavg_1m={os.getloadavg()[0]:.2f}",
        flush=True,
    )
    work = Path(tempfile.mkdtemp(prefix="airwave-bench-browse-"))
    served: list[Served] = []
    try:
        for db in chosen_dbs:
            for size in sizes:
                served = prepare(size, db, work, args.cache, sources)
                measure(served, size, args.rounds, args.cold_every, chosen)
                report(served, size, db)
                close(served, args.keep)
                served = []
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    finally:
        close(served, args.keep)
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"machine after: loadavg_1m={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
