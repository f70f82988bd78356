"""What the API's lists cost: statements and time of each list a client asks for, beside an older
tree.

One listener with a history, on bench/fragment.py's synthetic catalogue (cached the same way): 30
stations grown from artists, songs and genres, 160 tracks of their fragments, 80 of them thumbed,
60 bookmarked with 20 of their artists, 100 started, 100 in the collection and 150 in a playlist.
Then every list below is asked for through the app itself (`create_app`, raw ASGI in this
process, SQLite): the statements one call runs (SQLAlchemy's cursor events) and the median
time of --calls calls. A list whose statements grow with its length reads something once per
item; the figures say which.

With --baseline-src DIR another tree (`git archive REV src | tar -x -C DIR`) is measured the same
way in a child process of its own, the trees taking turns for --rounds rounds; medians and the
ratios are printed.

    .venv/bin/python bench/lists.py [--size 10000] [--calls 20] [--rounds 2] [--baseline-src DIR]

Prints one line per figure; never asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CSRF = "a" * 32
PASSWORD = "benchpassword1"

# (name, path, body); "{P}" in a body is the list's length (5, then 100), and an id list is its
# first 5 ids, then all of them
LISTS: list[tuple[str, str, dict[str, Any]]] = [
    ("getStations", "/api/v1/station/getStations", {"pageSize": "{P}"}),
    ("getStationRecommendations", "/api/v1/search/getStationRecommendations", {}),
    ("getBookmarks", "/api/v1/bookmark/getBookmarks", {"pageSize": "{P}"}),
    ("getFeedback", "/api/v1/station/getFeedback", {"pageSize": "{P}"}),
    ("getPlayHistory", "/api/v1/listener/getPlayHistory", {"pageSize": "{P}"}),
    ("collections/getItems", "/api/v4/collections/getItems", {"limit": "{P}"}),
    ("playlists/getTracks", "/api/v4/playlists/getTracks", {"pandoraId": "PL:1", "limit": "{P}"}),
    ("annotateObjects genres", "/api/v4/catalog/annotateObjects", {"pandoraIds": "GENRES"}),
    ("annotateObjects artists", "/api/v4/catalog/annotateObjects", {"pandoraIds": "ARTISTS"}),
    ("annotateObjects tracks", "/api/v4/catalog/annotateObjects", {"pandoraIds": "TRACKS"}),
]
SIZES = (5, 100)


def child(size: int, calls: int, cache: Path) -> None:
    """Measure every list with this process's airwave (the tree on PYTHONPATH), print JSON."""
    sys.path.insert(0, str(ROOT / "bench"))
    from fragment import ensure_catalogue
    from sqlalchemy import event

    from airwave import logs
    from airwave.api.app import create_app
    from airwave.config import Settings
    from airwave.core.accounts import accounts
    from airwave.core.services import Services

    source, _info = ensure_catalogue(size, cache, False, None)
    data = Path(tempfile.mkdtemp(prefix="airwave-bench-lists-"))
    try:
        shutil.copyfile(source, data / "airwave.db")
        settings = Settings(
            data_dir=data,
            host="127.0.0.1",
            port=0,
            access_log=False,
            fragment_limit=10**9,
            fragment_window=1,
            analyze_audio=False,
        )
        logs.configure("warning", settings.log_format)
        services = Services.open(settings)
        now = services.clock.now()
        with services.database.write() as db:
            accounts.create_listener(
                db,
                now,
                accounts.check_new_listener(
                    settings,
                    now,
                    accounts.NewListener("bench", PASSWORD, tier="premium"),
                    enforce_strength=False,
                ),
            )
        app = create_app(services, None)
        statements = [0]

        def count(*_args: object) -> None:
            statements[0] += 1

        event.listen(services.database.engine, "before_cursor_execute", count)
        results = asyncio.run(_measure(app, statements, size, calls))
        print(json.dumps(results), flush=True)
        services.close()
    finally:
        shutil.rmtree(data, ignore_errors=True)


async def _call(app: Any, path: str, body: dict[str, Any], token: str | None) -> tuple[int, Any]:
    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"x-csrftoken", CSRF.encode()),
        (b"cookie", f"csrftoken={CSRF}".encode()),
    ]
    if token:
        headers.append((b"x-authtoken", token.encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    messages = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    raw = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(raw or b"null")


async def _measure(app: Any, statements: list[int], size: int, calls: int) -> dict[str, Any]:
    startup: list[dict[str, Any]] = [{"type": "lifespan.startup"}]

    async def lifespan_receive() -> dict[str, Any]:
        if startup:
            return startup.pop(0)
        await asyncio.sleep(3600)
        return {"type": "lifespan.shutdown"}

    async def lifespan_send(_message: dict[str, Any]) -> None:
        pass

    lifespan = asyncio.create_task(
        app(
            {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
            lifespan_receive,
            lifespan_send,
        )
    )
    await asyncio.sleep(0.1)

    async def ok(path: str, body: dict[str, Any], token: str | None = None) -> Any:
        status, answer = await _call(app, path, body, token)
        if status != 200:
            raise RuntimeError(f"{path}: {status} {answer}")
        return answer

    token = (await ok("/api/v1/auth/login", {"username": "bench", "password": PASSWORD}))[
        "authToken"
    ]
    rng = random.Random(7)
    artists, tracks = max(1, size // 12), size
    seeds = [f"R{rng.randint(1, artists)}" for _ in range(10)]
    seeds += [f"S{rng.randint(1, tracks)}" for _ in range(10)]
    seeds += [f"G{rng.randint(1, 60)}" for _ in range(10)]
    stations = []
    for seed in dict.fromkeys(seeds):
        stations.append(
            (await ok("/api/v1/station/createStation", {"musicId": seed}, token))["stationId"]
        )
    tokens, track_ids = [], []
    for i in range(40):
        got = await ok(
            "/api/v1/playlist/getFragment", {"stationId": stations[i % len(stations)]}, token
        )
        for t in got["tracks"]:
            if t.get("pandoraId", "").startswith("TR:"):
                tokens.append(t["trackToken"])
                track_ids.append(int(t["pandoraId"][3:]))
    for n, track_token in enumerate(tokens[:80]):
        await ok(
            "/api/v1/station/addFeedback",
            {"trackToken": track_token, "isPositive": n % 3 != 0},
            token,
        )
    for track_token in tokens[80:140]:
        await ok("/api/v1/bookmark/add", {"trackToken": track_token}, token)
    for track_token in tokens[:20]:
        await _call(
            app, "/api/v1/bookmark/add", {"trackToken": track_token, "type": "artist"}, token
        )
    for track_token in tokens[:100]:
        await _call(app, "/api/v1/station/trackStarted", {"trackToken": track_token}, token)
    for track_id in list(dict.fromkeys(track_ids))[:100]:
        await ok("/api/v4/collections/addItem", {"pandoraId": f"TR:{track_id}"}, token)
    await ok(
        "/api/v4/playlists/create",
        {"name": "big", "tracks": [f"TR:{t}" for t in track_ids[:150]]},
        token,
    )
    ids_of = {
        "GENRES": [f"GE:{g}" for g in range(1, 61)],
        "ARTISTS": [f"AR:{a}" for a in range(1, min(artists, 200) + 1)],
        "TRACKS": [f"TR:{t}" for t in track_ids[:100]],
    }
    results: dict[str, Any] = {"stations": len(stations), "tracks": len(track_ids)}
    for name, path, template in LISTS:
        for length in SIZES:
            body = {}
            for key, value in template.items():
                if value == "{P}":
                    body[key] = length
                elif value in ids_of:
                    body[key] = ids_of[value][: 5 if length == SIZES[0] else len(ids_of[value])]
                else:
                    body[key] = value
            await ok(path, body, token)  # what the list keeps is read
            statements[0] = 0
            await ok(path, body, token)
            runs = statements[0]
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                await ok(path, body, token)
                times.append((time.perf_counter() - started) * 1000)
            items = next((len(v) for v in body.values() if isinstance(v, list)), length)
            results[f"{name}|{length}"] = {
                "statements": runs,
                "ms": statistics.median(times),
                "items": items,
            }
    lifespan.cancel()
    return results


def run_child(source: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(source / "src") if source is not None else ""
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "--size",
        str(args.size),
        "--calls",
        str(args.calls),
        "--cache",
        str(args.cache),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="catalogue tracks (default 10000)")
    parser.add_argument(
        "--calls", type=int, default=20, help="timed calls of each list (default 20)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds, trees taking turns (default 2)"
    )
    parser.add_argument("--baseline-src", type=Path, default=None, help="another tree to compare")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "airwave-bench-fragment"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.size, args.calls, args.cache)
        return
    sys.path.insert(0, str(ROOT / "bench"))
    from benchkit import compile_bytecode

    trees: dict[str, Path | None] = {"this": None}
    if args.baseline_src is not None:
        trees["baseline"] = args.baseline_src
    for source in trees.values():
        compile_bytecode(source / "src" if source is not None else ROOT / "src")
    print(
        f"config size={args.size} calls={args.calls} rounds={args.rounds} db=sqlite "
        f"in-process ASGI baseline={args.baseline_src} loadavg_1m={os.getloadavg()[0]:.2f}",
        flush=True,
    )
    found: dict[str, list[dict[str, Any]]] = {code: [] for code in trees}
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for code in order:
            found[code].append(run_child(trees[code], args))
    first = found["this"][0]
    print(f"listener stations={first['stations']} fragment_tracks={first['tracks']}", flush=True)
    for name, _path, _body in LISTS:
        for length in SIZES:
            key = f"{name}|{length}"
            line = f"list {name} asked={found['this'][0][key]['items']}"
            medians = {}
            for code, runs in found.items():
                ms = statistics.median(run[key]["ms"] for run in runs)
                medians[code] = ms
                line += f" {code}_statements={runs[0][key]['statements']} {code}_ms={ms:.2f}"
            if "baseline" in medians and medians["baseline"] > 0:
                line += f" ms_this/baseline={medians['this'] / medians['baseline']:.3f}"
            print(line, flush=True)
    print(f"machine after: loadavg_1m={os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
