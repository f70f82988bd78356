"""Soak: many simulated listeners on one server for minutes; errors, p99s, server memory.

Each listener logs in, creates a station, then loops as a player does: getFragment, trackStarted,
fetches each track's audio at real-time pace (the response is read at the track's bitrate, sleeping
between chunks), posts the receipt at the end or, now and then, skips half-way (audioSkipUrl with
secondsPlayed), thumbs some tracks up or down, and logs in again every few fragments. The library is
a small demo library (one album per genre) of short MP3 tracks, generated once; listeners are
plus tier (no ads, no skip limits).

`airwave serve` runs as a child process per backend, started by the server harness the tests use
(tests/support): SQLite in a fresh data dir, PostgreSQL in a throw-away schema of
$AIRWAVE_TEST_POSTGRES_URL (default: the local `test` database). Its RSS (/proc/<pid>/status
VmRSS) is read when the load starts, half-way and at the end.

    .venv/bin/python bench/soak.py [--duration 600] [--listeners 64] \
        [--backend sqlite|postgresql|both]

Prints one line per figure; never asserts. Targets: errors=0, RSS flat within 10% (end vs start).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.databases import Backend, PostgresSchema  # the shared server harness  # noqa: E402
from support.server import Server  # noqa: E402

CSRF = "lol"
PASSWORD = "soak listener password"
TARGET_RSS_GROWTH_PCT = 10.0
SKIP_SHARE, THUMB_SHARE = 0.15, 0.2
RELOGIN_EVERY = 5  # fragments
CHUNK = 16 * 1024


# --------------------------------------------------------------------------- server


def rss_mb(server: Server) -> float:
    """VmRSS of the server process in MiB (0 when it is gone)."""
    try:
        status = Path(f"/proc/{server.process.pid}/status").read_text()  # type: ignore[union-attr]
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_server(data_dir: Path, library: Path, schema: PostgresSchema | None) -> Server:
    """`airwave serve` on the shared harness; returns once the library is scanned and indexed."""
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "AIRWAVE_FRAGMENT_LIMIT": str(10**9),
        "AIRWAVE_RADIO_RULES": "relaxed",
        "AIRWAVE_DEFAULT_TIER": "plus",
    }
    backend = Backend("postgresql" if schema else "sqlite", data_dir, schema)
    server = Server(
        backend,
        ["--open-registration", "--library", str(library)],
        env=env,
        log_file=data_dir / "server.log",
        clean_env=True,
    ).start(timeout=120)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # healthy, and the library scanned and indexed
        try:
            status = httpx.get(f"{server.url}/healthz", timeout=2).json().get("library", {})
            if status.get("indexed", 0) >= 1 and status.get("state") == "idle":
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"library never indexed; log:\n{server.log_tail()}")


# --------------------------------------------------------------------------- listeners


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter = field(default_factory=Counter)
    tracks: int = 0
    audio_bytes: int = 0

    def record(
        self,
        endpoint: str,
        started: float,
        response: httpx.Response | None,
        expected: tuple[int, ...] = (200,),
    ) -> bool:
        self.latencies[endpoint].append((time.perf_counter() - started) * 1000)
        if response is None or response.status_code not in expected:
            detail = "transport" if response is None else str(response.status_code)
            self.errors[f"{endpoint}:{detail}"] += 1
            return False
        return True


class Listener:
    """One simulated player on its own keep-alive connection."""

    def __init__(
        self, base: str, username: str, music_ids: list[str], stats: Stats, rng: random.Random
    ) -> None:
        self.http = httpx.AsyncClient(base_url=base, timeout=60, cookies={"csrftoken": CSRF})
        self.username, self.music_ids, self.stats, self.rng = username, music_ids, stats, rng
        self.headers = {"Content-Type": "application/json", "X-CsrfToken": CSRF}

    async def call(self, path: str, body: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            response: httpx.Response | None = await self.http.post(
                f"/api/v1/{path}", content=json.dumps(body), headers=self.headers
            )
        except httpx.HTTPError:
            response = None
        if not self.stats.record(path, started, response):
            return None
        assert response is not None
        return response.json()

    async def login(self) -> bool:
        data = await self.call("auth/login", {"username": self.username, "password": PASSWORD})
        if data is None:
            return False
        self.headers["X-AuthToken"] = data["authToken"]
        # A new session: take over as this account's active player, as a player does on Play
        # (otherwise the old session's claim answers STREAM_VIOLATION for 10 minutes).
        return await self.call("station/playbackResumed", {"forceActive": True}) is not None

    async def play(self, track: dict[str, Any], deadline: float) -> None:
        """Fetch the audio at real-time pace; at the end post the receipt, or skip half-way."""
        length = max(1.0, float(track.get("trackLength") or 1))
        skip_at = length * 0.5 if self.rng.random() < SKIP_SHARE else None
        started = time.perf_counter()
        received, began = 0, None
        try:
            async with self.http.stream("GET", track["audioURL"]) as response:
                if not self.stats.record("audio", started, response):
                    return
                total = int(response.headers.get("content-length") or 0)
                rate = total / length if total else 32_000.0
                began = time.monotonic()
                async for chunk in response.aiter_bytes(CHUNK):
                    received += len(chunk)
                    played = received / rate
                    if skip_at is not None and played >= skip_at or time.monotonic() > deadline:
                        break
                    pause = began + played - time.monotonic()
                    if pause > 0:
                        await asyncio.sleep(pause)
        except httpx.HTTPError:
            self.stats.errors["audio:transport"] += 1
            return
        self.stats.tracks += 1
        self.stats.audio_bytes += received
        if self.rng.random() < THUMB_SHARE:
            await self.call(
                "station/addFeedback",
                {"trackToken": track["trackToken"], "isPositive": self.rng.random() < 0.7},
            )
        elapsed = time.monotonic() - (began or time.monotonic())
        if skip_at is not None:
            await self.receipt("skip", track["audioSkipUrl"], {"secondsPlayed": round(elapsed, 2)})
        else:
            await self.receipt("receipt", track["audioReceiptURL"], None)

    async def receipt(self, kind: str, url: str, body: dict[str, Any] | None) -> None:
        started = time.perf_counter()
        try:
            response: httpx.Response | None = (
                await self.http.post(url, json=body) if body else await self.http.post(url)
            )
        except httpx.HTTPError:
            response = None
        self.stats.record(kind, started, response)

    async def run(self, deadline: float) -> None:
        await asyncio.sleep(self.rng.random() * 5)  # not all at once
        try:
            if not await self.login():
                return
            created = await self.call(
                "station/createStation", {"musicId": self.rng.choice(self.music_ids)}
            )
            if created is None:
                return
            station, fragments = created["stationId"], 0
            while time.monotonic() < deadline:
                if fragments and fragments % RELOGIN_EVERY == 0 and not await self.login():
                    await asyncio.sleep(1)
                fragments += 1
                data = await self.call(
                    "playlist/getFragment", {"stationId": station, "audioFormat": "mp3"}
                )
                if not data:
                    await asyncio.sleep(1)
                    continue
                for track in data["tracks"]:
                    if time.monotonic() >= deadline:
                        break
                    if track.get("trackType", "Track") != "Track":
                        continue
                    await self.call("station/trackStarted", {"trackToken": track["trackToken"]})
                    await self.play(track, deadline)
        finally:
            await self.http.aclose()


# --------------------------------------------------------------------------- one backend


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else 0.0
    )


def set_up(base: str, count: int) -> tuple[list[str], list[str]]:
    """Register the listeners and find tracks to seed stations with, over the API."""
    headers = {"Content-Type": "application/json", "X-CsrfToken": CSRF}
    names: list[str] = []
    with httpx.Client(base_url=base, timeout=60, cookies={"csrftoken": CSRF}) as http:
        for i in range(count):
            name = f"soak{i:03d}"
            reply = http.post(
                "/api/v1/listener/register",
                headers=headers,
                json={"username": name, "password": PASSWORD},
            )
            if reply.status_code != 200:
                raise RuntimeError(f"listener/register: HTTP {reply.status_code} {reply.text}")
            names.append(name)
        token = http.post(
            "/api/v1/auth/login", headers=headers, json={"username": names[0], "password": PASSWORD}
        ).json()["authToken"]
        items = (
            http.post(
                "/api/v1/search/fullSearch",
                headers={**headers, "X-AuthToken": token},
                json={"query": "a", "types": ["TR"]},
            )
            .json()
            .get("items", [])
        )
    music_ids = [i["musicId"] for i in items]
    if not music_ids:
        raise RuntimeError("the library has no tracks to seed stations with")
    return names, music_ids


async def load(
    server: Server, names: list[str], music_ids: list[str], duration: float, rss: dict[str, float]
) -> Stats:
    stats = Stats()
    deadline = time.monotonic() + duration
    rng = random.Random(7)
    listeners = [
        Listener(server.url, n, music_ids, stats, random.Random(rng.random())) for n in names
    ]

    async def sample() -> None:
        rss["start"] = rss_mb(server)
        await asyncio.sleep(duration / 2)
        rss["middle"] = rss_mb(server)

    sampler = asyncio.create_task(sample())
    await asyncio.gather(*(listener.run(deadline) for listener in listeners))
    rss["end"] = rss_mb(server)
    await sampler
    return stats


def soak(kind: str, args: argparse.Namespace, library: Path, work: Path) -> None:
    schema = PostgresSchema() if kind == "postgresql" else None
    server = None
    try:
        server = start_server(work / kind, library, schema)
        names, music_ids = set_up(server.url, args.listeners)
        rss: dict[str, float] = {}
        started = time.monotonic()
        stats = asyncio.run(load(server, names, music_ids, args.duration, rss))
        wall = time.monotonic() - started
        requests = sum(len(v) for v in stats.latencies.values())
        errors = sum(stats.errors.values())
        detail = (
            " " + ",".join(f"{k}={v}" for k, v in sorted(stats.errors.items())) if errors else ""
        )
        print(
            f"soak backend={kind} listeners={args.listeners} duration_s={wall:.0f} "
            f"requests={requests} "
            f"tracks_played={stats.tracks} audio_mb={stats.audio_bytes / 2**20:.1f} "
            f"errors={errors}{detail} "
            f"target_errors=0",
            flush=True,
        )
        for endpoint, values in sorted(stats.latencies.items()):
            print(
                f"latency backend={kind} endpoint={endpoint} p50_ms={pct(values, 50):.1f} "
                f"p99_ms={pct(values, 99):.1f} max_ms={max(values):.1f} requests={len(values)}"
                + (" (time to response headers)" if endpoint == "audio" else ""),
                flush=True,
            )
        growth = (
            (rss["end"] - rss["start"]) / rss["start"] * 100 if rss.get("start") else float("nan")
        )
        print(
            f"rss backend={kind} start_mb={rss.get('start', 0):.1f} "
            f"middle_mb={rss.get('middle', 0):.1f} "
            f"end_mb={rss.get('end', 0):.1f} growth_pct={growth:+.1f} "
            f"target_abs<{TARGET_RSS_GROWTH_PCT:g}",
            flush=True,
        )
    finally:
        if server is not None:
            server.stop()
        if schema is not None:
            schema.drop()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Many listeners for minutes: errors, p99 per endpoint, server RSS."
    )
    parser.add_argument(
        "--duration", type=float, default=600, help="seconds of load per backend (default 600)"
    )
    parser.add_argument(
        "--listeners", type=int, default=64, help="simulated listeners (default 64)"
    )
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument(
        "--track-seconds", type=float, default=8.0, help="length of the demo tracks (default 8)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work dir (server logs, library)"
    )
    args = parser.parse_args()
    if args.duration < 5 or not 1 <= args.listeners <= 1000 or not 1 <= args.track_seconds <= 60:
        parser.error("--duration >= 5, --listeners in [1, 1000], --track-seconds in [1, 60]")
    return args


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    work = Path(tempfile.mkdtemp(prefix="airwave-bench-soak-"))
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    print(
        f"config listeners={args.listeners} duration_s={args.duration:g} "
        f"backends={','.join(backends)} "
        f"track_seconds={args.track_seconds:g} audio=mp3 at real-time pace skip_share={SKIP_SHARE} "
        f"thumb_share={THUMB_SHARE} cpus={os.cpu_count()} loadavg_1m={os.getloadavg()[0]:.2f}",
        flush=True,
    )
    try:
        from airwave.library import demo

        library = work / "library"
        started = time.monotonic()
        summary = demo.generate(
            library,
            track_seconds=args.track_seconds,
            formats=("mp3",),
            artists_per_genre=1,
            albums_per_artist=1,
        )
        print(
            f"library tracks={summary.tracks} track_seconds={args.track_seconds:g} "
            f"generated_s={time.monotonic() - started:.1f}",
            flush=True,
        )
        for kind in backends:
            soak(kind, args, library, work)
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    except (RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
