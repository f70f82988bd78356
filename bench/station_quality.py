"""How good stations are: coherence with the seed's sound cluster, and adaptation to thumbs.

A library with known sound clusters is synthesised by the demo generator (genres = clusters, each
genre's artists alternate between two sub-styles), scanned and analysed by a real `airwave serve`,
and listened to over HTTP the way a client does:

- coherence: a station seeded with one artist of cluster X; share of cluster-X tracks in its first
  40 spins (target >= 90%);
- thumbs-down: after 5 thumbs-down on tracks of one sub-style, the next 40 spins hold none of the
  downed tracks and fewer of that sub-style than a control station with the same seed;
- thumbs-up: after 5 thumbs-up on one sub-style, the next 40 spins hold more of it than the control.

Between the two 40-spin phases every spin is moved 4 hours into the past, as if the first phase had
been listened to: the radio rules' 3-hour artist/album windows then start afresh, as they would.

    .venv/bin/python bench/station_quality.py [--demo] [--artists 12] [--seconds 8]

Prints one line per figure; never asserts (tests/api/test_station_quality.py asserts the targets).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.databases import Backend  # noqa: E402  (the shared server harness lives in tests/)
from support.server import Server, wait_indexed  # noqa: E402

SPINS = 40


@dataclass(frozen=True)
class Truth:
    """Cluster (genre) and sub-style of every artist of the generated library."""

    cluster: dict[str, str]  # artist name -> genre
    substyle: dict[str, str]  # artist name -> sub-style


def make_library(
    root: Path, genres: tuple[str, ...], artists: int, seconds: float, demo: bool, albums: int = 2
) -> Truth:
    """Generate (once) a library of known clusters and learn each artist's cluster from the
    generator."""
    from airwave.library import demo as generator
    from airwave.library.containment import Roots
    from airwave.library.tags import read

    if demo:
        summary = generator.generate(root, track_seconds=seconds)
    else:
        summary = generator.generate(
            root,
            genres=genres,
            artists_per_genre=artists,
            albums_per_artist=albums,
            tracks_per_album=6,
            compilation=False,
            formats=("flac",),
            track_seconds=seconds,
        )
    cluster, substyle = {}, {}
    for path, (genre, style) in summary.truth.items():
        tags = read(path, None, Roots([root]))
        artist = getattr(tags, "artist", None)
        if artist:
            cluster[artist], substyle[artist] = genre, style
    return Truth(cluster, substyle)


class Client:
    """Just enough of the protocol: CSRF cookie + header, auth token."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(
            base_url=url,
            timeout=30,
            cookies={"csrftoken": "bench"},
            headers={"X-CsrfToken": "bench"},
        )
        self.token = ""

    def ok(self, path: str, body: dict[str, Any]) -> Any:
        response = self.http.post(f"/api/{path}", json=body, headers={"X-AuthToken": self.token})
        if response.status_code != 200:
            raise RuntimeError(f"{path}: {response.status_code} {response.text}")
        return response.json()


def listener(url: str, name: str) -> Client:
    client = Client(url)
    client.token = client.ok(
        "v1/listener/register", {"username": name, "password": "correct horse battery"}
    )["authToken"]
    return client


def spins(client: Client, station: str, count: int) -> list[dict[str, Any]]:
    played: list[dict[str, Any]] = []
    while len(played) < count:
        tracks = client.ok("v1/playlist/getFragment", {"stationId": station})["tracks"]
        played += tracks
    return played[:count]


def share(tracks: list[dict[str, Any]], of: dict[str, str], value: str) -> float:
    return sum(of.get(t["artistName"]) == value for t in tracks) / max(len(tracks), 1)


def age_history(database: Path | None, pg_execute: Any, hours: int = 4) -> None:
    """Move every spin into the past, as if the listening so far had taken that long."""
    sql = f"UPDATE spins SET issued_at = strftime('%Y-%m-%d %H:%M:%f', issued_at, '-{hours} hours')"
    if pg_execute is not None:
        pg_execute(f"UPDATE spins SET issued_at = issued_at - interval '{hours} hours'")
    else:
        assert database is not None
        with sqlite3.connect(database) as conn:
            conn.execute(sql)


@dataclass
class Figures:
    coherence: float
    down_returned: int
    down_share_before: float
    down_share_after: float
    down_share_control: float
    up_share_after: float
    up_share_control: float
    tracks: int


def measure(
    url: str, truth: Truth, database: Path | None = None, pg_execute: Any = None, prefix: str = "q"
) -> Figures:
    """The coherence and adaptation figures of the module docstring, over HTTP."""
    seed_artist = sorted(a for a, g in truth.cluster.items() if truth.substyle[a].endswith("/a"))[0]
    cluster = truth.cluster[seed_artist]
    probe = listener(url, f"{prefix}-probe-{os.getpid()}")
    artist_id = next(
        i
        for i in probe.ok("v1/search/fullSearch", {"query": seed_artist, "types": ["AR"]})["items"]
        if i["name"] == seed_artist
    )["musicId"]
    stations = {}
    for role in ("control", "down", "up"):
        client = listener(url, f"{prefix}-{role}-{os.getpid()}-{time.time_ns()}")
        sid = client.ok("v1/station/createStation", {"musicId": artist_id})["stationId"]
        stations[role] = (client, sid, spins(client, sid, SPINS))
    first = [t for _, _, played in stations.values() for t in played]
    coherence = share(first, truth.cluster, cluster)
    # the sub-style of the cluster that did not seed the station gets the thumbs
    other = f"{cluster}/b" if truth.substyle[seed_artist].endswith("/a") else f"{cluster}/a"
    client, sid, played = stations["down"]
    down_share_before = share(played, truth.substyle, other)
    downed = [t for t in played if truth.substyle.get(t["artistName"]) == other][:5]
    for t in downed:
        client.ok("v1/station/addFeedback", {"trackToken": t["trackToken"], "isPositive": False})
    client, sid, played = stations["up"]
    for t in [t for t in played if truth.substyle.get(t["artistName"]) == other][:5]:
        client.ok("v1/station/addFeedback", {"trackToken": t["trackToken"], "isPositive": True})
    age_history(database, pg_execute)
    after = {role: spins(client, sid, SPINS) for role, (client, sid, _) in stations.items()}
    downed_ids = {t["musicId"] for t in downed}
    return Figures(
        coherence=coherence,
        down_returned=sum(t["musicId"] in downed_ids for t in after["down"]),
        down_share_before=down_share_before,
        down_share_after=share(after["down"], truth.substyle, other),
        down_share_control=share(after["control"], truth.substyle, other),
        up_share_after=share(after["up"], truth.substyle, other),
        up_share_control=share(after["control"], truth.substyle, other),
        tracks=len(truth.cluster),
    )


def serve(data_dir: Path, library: Path, rules: str) -> Server:
    """`airwave serve` on the library through the shared test harness, once it is scanned and
    analysed."""
    env = {
        "AIRWAVE_FRAGMENT_LIMIT": "100000",
        "AIRWAVE_ACCESS_LOG": "false",
        "AIRWAVE_RADIO_RULES": rules,
    }
    server = Server(
        Backend("sqlite", data_dir),
        ["--open-registration", "--library", str(library)],
        env,
        log_file=data_dir.parent / "server.log",
    )
    server.start(timeout=120)
    try:
        wait_indexed(server, timeout=24 * 3600)  # as long as analysis takes: the bench waits for it
    except BaseException:
        server.stop()
        raise
    return server


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--demo", action="store_true", help="the demo library instead of a generated one"
    )
    parser.add_argument("--artists", type=int, default=24, help="artists per cluster")
    parser.add_argument("--genres", default="Jazz,Rock,Electronic,Classical")
    parser.add_argument("--albums", type=int, default=1, help="albums per artist (6 tracks each)")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each generated track")
    parser.add_argument("--repeats", type=int, default=3, help="independent listeners per figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        library = Path(tmp) / "library"
        started = time.perf_counter()
        truth = make_library(
            library,
            tuple(args.genres.split(",")),
            args.artists,
            args.seconds,
            args.demo,
            args.albums,
        )
        made = time.perf_counter() - started
        # the demo library (2 artists per genre) is what `serve --demo` plays with relaxed rules
        server = serve(Path(tmp) / "data", library, "relaxed" if args.demo else "strict")
        url = server.url
        try:
            print(
                f"library tracks={sum(1 for _ in library.rglob('*.flac')) or 'demo'} "
                f"artists={len(truth.cluster)} "
                f"generated_s={made:.1f}"
            )
            runs = [
                measure(url, truth, Path(tmp) / "data" / "airwave.db", prefix=f"r{i}")
                for i in range(args.repeats)
            ]
        finally:
            server.stop()
    label = (
        "demo(relaxed_rules)"
        if args.demo
        else f"clusters={args.genres.count(',') + 1}x{args.artists}artists"
    )
    print(
        f"coherence {label} first_{SPINS}_spins_in_seed_cluster="
        f"{statistics.mean(r.coherence for r in runs):.0%} (target >= 90%)"
    )
    print(
        f"thumbs_down {label} downed_tracks_returned={sum(r.down_returned for r in runs)} "
        f"substyle_share_before={statistics.mean(r.down_share_before for r in runs):.0%} "
        f"after={statistics.mean(r.down_share_after for r in runs):.0%} "
        f"control={statistics.mean(r.down_share_control for r in runs):.0%}"
    )
    print(
        f"thumbs_up {label} "
        f"substyle_share_after={statistics.mean(r.up_share_after for r in runs):.0%} "
        f"control={statistics.mean(r.up_share_control for r in runs):.0%}"
    )


if __name__ == "__main__":
    main()
