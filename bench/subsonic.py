"""Subsonic API latency beside supysonic: getAlbumList2 (three list types), search3 and
getSimilarSongs2 over real HTTP on a catalogue of N tagged files, Airwave and supysonic (Debian's
Python Subsonic server, `apt-get install supysonic python3-waitress`) serving the same files in
the same run.

The library is bench/scan.py's generator (MP3, FLAC and Ogg Vorbis files of half a second,
`Artist/Album (Year)/NN Title.ext`, realistic tags; ~N/40 artists of 4 albums of 10 tracks),
written once under ~/.cache/airwave-bench/library-N and reused (scan.py takes it with
--library). Each server scans it once into a data folder of its own beside it (`airwave scan`,
without sound analysis unless --analyze; `supysonic-cli folder scan --foreground`, SQLite), kept
for the next run (--rescan starts both afresh). Then `airwave serve` (uvicorn, SQLite, access log
on as in production) and `supysonic-server --server waitress` run side by side, each with a user
`bench` signing in with `p=` (Airwave's an app password; both then check a password per request).

Measured: one keep-alive client per server, one request at a time (latency, not throughput), in
rounds of one call of every kind on both servers, the order rotating from round to round, so
that load from elsewhere on the machine falls on both alike:

  ping                              the anchor: authenticated and trivial, on each server
  getAlbumList2 newest              size 50, the first page
  getAlbumList2 alphabeticalByName  size 50, offset random over all albums
  getAlbumList2 random              size 50
  search3                           one word of the library's title pool; 20 artists, albums, songs
  getSimilarSongs2                  a random artist (the same one on both), count 50

    .venv/bin/python bench/subsonic.py [--tracks 100000] [--requests 300] [--warmup 20]
        [--blocks 5] [--analyze] [--rescan] [--cache DIR]

Prints, per kind and server, p50/p90/p99 and the ratio to that server's own anchor, then the
ratio Airwave/supysonic of p50 and p99 (and the median of per-block p50 ratios, with its range),
and a table. A kind a server does not offer (a Subsonic error) is reported with its error code
and message instead of figures. Never asserts. Target (issue 16): ahead of supysonic on each,
p99 < 50 ms at 100,000 tracks.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from benchkit import CpuWatch, interrupt, pct
from scan import _WORDS, ensure_library, warm_cache
from support.databases import Backend  # the shared server harness lives in tests/
from support.server import Server, wait_indexed

ROOT = Path(__file__).resolve().parent.parent
AIRWAVE = Path(sys.executable).parent / "airwave"  # the venv running this bench
TARGET_P99_MS = 50.0
USER = "bench"
PAGE = 50
SCANNED = ".scanned"  # written last into a data folder: its scan finished


@dataclass
class Kind:
    label: str
    method: str
    params: Any  # (rng, Peer) -> dict of the call's parameters


@dataclass
class Peer:
    """One server as the client sees it: where, how to sign in, what it measured."""

    name: str
    url: str
    password: str
    http: httpx.Client = field(init=False)
    artist_ids: dict[str, str] = field(default_factory=dict)  # casefolded name -> its id
    albums: int = 0
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rounds: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    pid: int = 0

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.url, timeout=120)

    def call(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
        query = {"u": USER, "p": self.password, "v": "1.16.1", "c": "bench", "f": "json", **params}
        started = time.perf_counter()
        response = self.http.get(f"/rest/{method}.view", params=query)
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        try:
            answer = httpx.Response(200, content=body).json()["subsonic-response"]
        except (ValueError, KeyError):
            answer = {"status": "failed", "error": {"code": -1, "message": f"HTTP {response}"}}
        return answer, elapsed

    def ok(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer, _ = self.call(method, params)
        if answer.get("status") != "ok":
            raise RuntimeError(f"{self.name} {method}: {answer.get('error')}")
        return answer


KINDS = [
    Kind("ping", "ping", lambda rng, peer: {}),
    Kind(
        "getAlbumList2 newest", "getAlbumList2", lambda rng, peer: {"type": "newest", "size": PAGE}
    ),
    Kind(
        "getAlbumList2 alphabeticalByName",
        "getAlbumList2",
        lambda rng, peer: {
            "type": "alphabeticalByName",
            "size": PAGE,
            "offset": rng.randrange(max(1, peer.albums - PAGE)),
        },
    ),
    Kind(
        "getAlbumList2 random", "getAlbumList2", lambda rng, peer: {"type": "random", "size": PAGE}
    ),
    Kind(
        "search3",
        "search3",
        lambda rng, peer: {
            "query": rng.choice(_WORDS),
            "artistCount": 20,
            "albumCount": 20,
            "songCount": 20,
        },
    ),
    Kind(
        "getSimilarSongs2",
        "getSimilarSongs2",
        lambda rng, peer: {"id": peer.artist_ids[rng.choice(SHARED_ARTISTS)], "count": 50},
    ),
]
SHARED_ARTISTS: list[str] = []  # artists both servers know, by casefolded name


# --------------------------------------------------------------------------- the two servers


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def airwave_env(analyze: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRWAVE_")}
    env["AIRWAVE_ANALYZE_AUDIO"] = "true" if analyze else "false"
    return env


def scan_airwave(library: Path, data: Path, analyze: bool) -> float:
    """`airwave scan` into `data` unless an earlier run finished one there; seconds it took."""
    if (data / SCANNED).exists():
        return 0.0
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    started = time.perf_counter()
    subprocess.run(
        [str(AIRWAVE), "scan", "--library", str(library), "--data-dir", str(data)],
        env=airwave_env(analyze),
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=6 * 3600,
    )
    (data / SCANNED).write_text("airwave scan finished\n")
    return time.perf_counter() - started


def start_airwave(library: Path, data: Path, analyze: bool) -> tuple[Server, str]:
    """The server on the scanned data (its start-up rescan finds nothing changed), a user
    `bench` (made once) and a fresh app password."""
    env = {"AIRWAVE_ANALYZE_AUDIO": "true" if analyze else "false"}
    server = Server(
        Backend("sqlite", data, None),
        ["--library", str(library)],
        env=env,
        log_file=data / "server.log",
        clean_env=True,
    ).start(timeout=120)
    wait_indexed(server, timeout=3600)
    server.cli("user", "add", USER, "--password-stdin", "--tier", "premium", input="bench pw")
    made = server.cli("user", "app-password", USER, "--label", "bench")
    if made.returncode != 0:
        server.stop()
        raise RuntimeError(f"airwave user app-password: {made.stderr}")
    return server, made.stdout.strip().splitlines()[-1]


SUPYSONIC_CONF = """\
[base]
database_uri = sqlite:///{folder}/supysonic.db
[webapp]
cache_dir = {folder}/cache
log_level = WARNING
[daemon]
socket = {folder}/daemon.sock
"""


def supysonic_env(folder: Path) -> dict[str, str]:
    """Its config is found as ./supysonic.conf; HOME keeps a ~/.supysonic of the caller out."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder), "LANG": "C.UTF-8"}


def supysonic_cli(folder: Path, *args: str, timeout: float = 600) -> str:
    done = subprocess.run(
        ["supysonic-cli", *args],
        cwd=folder,
        env=supysonic_env(folder),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"supysonic-cli {' '.join(args)}: {done.stderr[-2000:]}")
    return done.stdout


def scan_supysonic(library: Path, folder: Path) -> float:
    """Its user, its music folder and a foreground scan, unless an earlier run finished them."""
    if (folder / SCANNED).exists():
        return 0.0
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "cache").mkdir(parents=True)
    (folder / "supysonic.conf").write_text(SUPYSONIC_CONF.format(folder=folder))
    (folder / "password").write_text(password := f"pw-{random.randrange(1 << 30)}")
    supysonic_cli(folder, "user", "add", USER, "--password", password)
    supysonic_cli(folder, "folder", "add", "library", str(library))
    started = time.perf_counter()
    supysonic_cli(folder, "folder", "scan", "--foreground", "library", timeout=6 * 3600)
    (folder / SCANNED).write_text("supysonic scan finished\n")
    return time.perf_counter() - started


def start_supysonic(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(
        ["supysonic-server", "--server", "waitress", "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder,
        env=supysonic_env(folder),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/rest/ping.view", timeout=2)
            return process, url
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop(process)
                raise RuntimeError(
                    f"supysonic-server did not start: {(folder / 'server.log').read_text()[-2000:]}"
                ) from None
            time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# --------------------------------------------------------------------------- measuring


def learn(peer: Peer) -> None:
    """What the random parameters draw from: its artists' ids by name, how many albums."""
    indexes = peer.ok("getArtists", {})["artists"].get("index", [])
    for index in indexes:
        for artist in index.get("artist", []):
            peer.artist_ids[artist["name"].casefold()] = artist["id"]
    peer.albums = sum(1 for _ in _albums(peer))


def _albums(peer: Peer) -> Any:  # noqa: ANN401
    offset = 0
    while True:
        page = peer.ok("getAlbumList2", {"type": "alphabeticalByName", "size": 500,
                                         "offset": offset})  # fmt: skip
        albums = page.get("albumList2", {}).get("album", [])
        yield from albums
        if len(albums) < 500:
            return
        offset += 500


def run_rounds(peers: list[Peer], kinds: list[Kind], count: int, seed: int, record: bool) -> None:
    """`count` rounds of one call per (kind, server), the order rotating; both servers draw the
    same parameters in a round (the same artist, word, offset share)."""
    pairs = [(kind, peer) for kind in kinds for peer in peers]
    for r in range(count):
        drawn = {}
        for kind in kinds:
            state = random.Random(f"{seed}-{r}-{kind.label}")
            drawn[kind.label] = {peer.name: kind.params(random.Random(state.random()), peer)
                                 for peer in peers}  # fmt: skip
        for k in range(len(pairs)):
            kind, peer = pairs[(r + k) % len(pairs)]
            answer, ms = peer.call(kind.method, drawn[kind.label][peer.name])
            if not record:
                continue
            if answer.get("status") == "ok":
                peer.latencies[kind.label].append(ms)
                peer.rounds[kind.label].append(r)
            else:
                error = answer.get("error") or {}
                peer.errors[kind.label].append(f"error {error.get('code')}: {error.get('message')}")


def block_ratios(a: Peer, b: Peer, label: str, blocks: int, rounds: int) -> list[float]:
    """p50(a)/p50(b) of one kind in each block of consecutive rounds."""
    size = max(1, -(-rounds // blocks))
    mine: dict[int, list[float]] = defaultdict(list)
    theirs: dict[int, list[float]] = defaultdict(list)
    for r, ms in zip(a.rounds[label], a.latencies[label]):
        mine[r // size].append(ms)
    for r, ms in zip(b.rounds[label], b.latencies[label]):
        theirs[r // size].append(ms)
    return [
        float(np.median(mine[k])) / float(np.median(theirs[k])) for k in sorted(mine) if theirs[k]
    ]


def report(peers: list[Peer], args: argparse.Namespace) -> None:
    airwave, supysonic = peers
    rows = []
    for kind in KINDS:
        cells = []
        for peer in peers:
            lat = peer.latencies[kind.label]
            errors = peer.errors[kind.label]
            if errors and not lat:
                print(f"{kind.label} server={peer.name} not offered: {errors[0]} "
                      f"(every one of {len(errors)} calls)", flush=True)  # fmt: skip
                cells.append("—")
                continue
            anchor = pct(peer.latencies["ping"], 50)
            print(
                f"{kind.label} server={peer.name} p50_ms={pct(lat, 50):.2f} "
                f"p90_ms={pct(lat, 90):.2f} p99_ms={pct(lat, 99):.2f} max_ms={max(lat):.2f} "
                f"requests={len(lat)} ratio_p50_to_ping={pct(lat, 50) / anchor:.2f}"
                + (f" errors={len(errors)} ({errors[0]})" if errors else ""),
                flush=True,
            )
            cells.append(f"{pct(lat, 50):.1f} / {pct(lat, 99):.1f}")
        both = [peer.latencies[kind.label] for peer in peers]
        ratio = "—"
        if all(both):
            p50 = pct(both[0], 50) / pct(both[1], 50)
            p99 = pct(both[0], 99) / pct(both[1], 99)
            blocks = block_ratios(airwave, supysonic, kind.label, args.blocks, args.requests)
            ahead = p50 < 1 and p99 < 1
            print(
                f"{kind.label} ratio airwave/supysonic p50={p50:.2f} p99={p99:.2f} "
                f"block_p50_median={float(np.median(blocks)):.2f} "
                f"(blocks={len(blocks)} range={min(blocks):.2f}..{max(blocks):.2f}) "
                f"ahead={'yes' if ahead else 'NO'}"
                + (
                    f" airwave_p99_under_{TARGET_P99_MS:g}ms="
                    f"{'yes' if pct(both[0], 99) < TARGET_P99_MS else 'NO'}"
                    if kind.label != "ping"
                    else ""
                ),
                flush=True,
            )
            ratio = f"{p50:.2f} / {p99:.2f}"
        rows.append((kind.label, *cells, ratio))
    head = ("call", "airwave p50 / p99 ms", "supysonic p50 / p99 ms", "ratio p50 / p99")
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    print(flush=True)
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip(), flush=True)


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="getAlbumList2, search3 and getSimilarSongs2 p50/p99 on Airwave and "
        "supysonic serving the same generated library, in the same run.",
    )
    parser.add_argument("--tracks", type=int, default=100_000, help="library size (100000)")
    parser.add_argument("--requests", type=int, default=300, help="measured rounds (300)")
    parser.add_argument("--warmup", type=int, default=20, help="rounds not measured (20)")
    parser.add_argument("--blocks", type=int, default=5, help="blocks for the ratio's median")
    parser.add_argument("--seed", type=int, default=1, help="seed of the drawn parameters")
    parser.add_argument(
        "--analyze", action="store_true", help="let Airwave's scan compute sound profiles"
    )
    parser.add_argument(
        "--rescan", action="store_true", help="scan afresh (the kept data folders are dropped)"
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "airwave-bench",
        help="where the library and the servers' data folders are kept",
    )
    args = parser.parse_args()
    if not 1_000 <= args.tracks <= 1_000_000:
        parser.error("--tracks must be between 1000 and 1000000")
    if not 1 <= args.blocks <= args.requests:
        parser.error("--blocks in [1, --requests]")
    return args


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, interrupt)
    if not (shutil.which("supysonic-cli") and shutil.which("supysonic-server")):
        sys.exit("supysonic is not installed: apt-get install supysonic python3-waitress")
    library = args.cache / f"library-{args.tracks}"
    folders = args.cache / f"subsonic-{args.tracks}{'-analyzed' if args.analyze else ''}"
    if args.rescan:
        shutil.rmtree(folders, ignore_errors=True)
    folders.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="airwave-bench-subsonic-"))
    server: Server | None = None
    process: subprocess.Popen[bytes] | None = None
    try:
        generated, gen_s = ensure_library(library, args.tracks, scratch)
        air_s = scan_airwave(library, folders / "airwave", args.analyze)
        supy_s = scan_supysonic(library, folders / "supysonic")
        files, size = warm_cache(library)
        made = f"generated in {gen_s:.0f} s" if generated else "reused"
        print(
            f"config tracks={args.tracks} library={library} files={files} bytes={size} ({made}) "
            f"airwave_scan={f'{air_s:.0f} s' if air_s else 'kept'} "
            f"supysonic_scan={f'{supy_s:.0f} s' if supy_s else 'kept'} (scans are not figures) "
            f"analyze={'yes' if args.analyze else 'no'} requests={args.requests} "
            f"warmup={args.warmup} cpus={os.cpu_count()} client=httpx keep-alive, one at a time",
            flush=True,
        )
        server, secret = start_airwave(library, folders / "airwave", args.analyze)
        process, supy_url = start_supysonic(folders / "supysonic")
        assert server.process is not None
        peers = [
            Peer("airwave", server.url, secret, pid=server.process.pid),
            Peer(
                "supysonic",
                supy_url,
                (folders / "supysonic" / "password").read_text(),
                pid=process.pid,
            ),
        ]
        for peer in peers:
            learn(peer)
        SHARED_ARTISTS.extend(sorted(set(peers[0].artist_ids).intersection(peers[1].artist_ids)))
        print(
            f"catalogue airwave_artists={len(peers[0].artist_ids)} "
            f"airwave_albums={peers[0].albums} supysonic_artists={len(peers[1].artist_ids)} "
            f"supysonic_albums={peers[1].albums} shared_artists={len(SHARED_ARTISTS)}",
            flush=True,
        )
        if not SHARED_ARTISTS:
            raise RuntimeError("the two servers share no artist name")
        run_rounds(peers, KINDS, args.warmup, args.seed + 1, record=False)
        cpu = CpuWatch([peer.pid for peer in peers])
        run_rounds(peers, KINDS, args.requests, args.seed, record=True)
        summary, per_server = cpu.stop()
        print(
            f"machine while measuring: {summary} airwave_cpu_s={per_server[0]:.1f} "
            f"supysonic_cpu_s={per_server[1]:.1f}",
            flush=True,
        )
        report(peers, args)
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    except (RuntimeError, OSError, subprocess.SubprocessError, httpx.HTTPError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    finally:
        if server is not None:
            server.stop()
        if process is not None:
            stop(process)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
