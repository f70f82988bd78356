"""Scale-out throughput: getStations and getFragment with `serve --workers 1` and `--workers 2`
(SQLite by default, or PostgreSQL), then 1, 2 and 3 servers (one worker each, separate data
dirs, one PostgreSQL) behind HAProxy (round robin).

Rounds are interleaved (every configuration once per round, all servers kept running) and each
figure is the median over the rounds; the machine's load before and after is printed, since
other work on a shared machine moves the figures. The load generator is wrk when installed
(`apt-get install wrk`: C, one thread, a small share of the CPUs), else an asyncio client with
keep-alive connections in a child process; either way it runs on the servers' machine, so on a
2-core machine the workers' ratio is a lower bound of what a machine with a spare core shows.

    .venv/bin/python bench/scale.py [--seconds 4] [--rounds 3] [--connections 32]
        [--backend sqlite|postgresql] [--no-haproxy] [--baseline SOURCE_TREE]

`--baseline` also runs the worker figures of another checkout (its `src/` first on PYTHONPATH,
e.g. a `git worktree` of an older commit) in the same rounds, and prints new/baseline ratios.

Prints one line per figure and the ratios measured in the same run; never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from benchkit import CpuWatch, interrupt  # noqa: E402
from support.api import Api  # noqa: E402  # the shared server harness lives in tests/
from support.cluster import Balancer, copy_keys, haproxy_available  # noqa: E402
from support.databases import Backend, PostgresSchema, postgres_available  # noqa: E402
from support.server import Server, wait_indexed  # noqa: E402

PASSWORD = "correct horse battery"
TARGET_RATIO = 1.7

_LOADER = r"""
import asyncio, json, re, sys, time
host, port, path, calls, connections, seconds = sys.argv[1:7]
port, connections, seconds = int(port), int(connections), float(seconds)
def request(token, body):
    payload = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"X-CsrfToken: lol\r\nCookie: csrftoken=lol\r\nX-AuthToken: {token}\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload
requests = [request(t, b) for t, b in json.loads(calls)]
done = errors = 0
latencies = []
async def one(n, stop_at):
    global done, errors
    request = requests[n % len(requests)]  # each connection speaks for one listener
    reader, writer = await asyncio.open_connection(host, port)
    while time.perf_counter() < stop_at:
        started = time.perf_counter()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head).group(1))
        await reader.readexactly(length)
        latencies.append(time.perf_counter() - started)
        if head.startswith(b"HTTP/1.1 2"):
            done += 1
        else:
            errors += 1
    writer.close()
async def main():
    started = time.perf_counter()
    await asyncio.gather(*(one(n, started + seconds) for n in range(connections)))
    return time.perf_counter() - started
elapsed = asyncio.run(main())
latencies.sort()
p50 = latencies[len(latencies) // 2] * 1000 if latencies else 0.0
print(json.dumps({"rps": done / elapsed, "p50_ms": p50, "errors": errors}))
"""


_WRK_SCRIPT = r"""
local calls = {CALLS}
local requests = {}
local n = 0
init = function(args)
  for i, c in ipairs(calls) do
    requests[i] = wrk.format("POST", "{PATH}", {
      ["Content-Type"] = "application/json", ["X-CsrfToken"] = "lol",
      ["Cookie"] = "csrftoken=lol", ["X-AuthToken"] = c[1]}, c[2])
  end
end
request = function()
  n = n + 1
  return requests[(n % #requests) + 1]
end
done = function(summary, latency, _)
  local e = summary.errors
  io.write(string.format('{"requests": %d, "seconds": %f, "bad": %d, "p50_ms": %f}\n',
    summary.requests, summary.duration / 1e6,
    e.status + e.connect + e.read + e.write + e.timeout, latency:percentile(50) / 1000))
end
"""


def _lua(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def load(
    url: str, path: str, calls: list, connections: int, seconds: float, loader: str = "wrk"
) -> dict:
    """Answered requests (2xx) per second of one endpoint through a loader in a child process;
    `calls`: (token, body) of each listener. With wrk installed (C, one thread: the loader takes
    a small share of the CPUs the servers need) each request takes the next listener's call in
    turn; otherwise an asyncio loader where each connection speaks for one listener."""
    if loader == "wrk":
        table = ", ".join(f"{{{_lua(t)}, {_lua(json.dumps(b))}}}" for t, b in calls)
        script = Path(tempfile.mkstemp(prefix="airwave-scale-", suffix=".lua")[1])
        try:
            script.write_text(
                _WRK_SCRIPT.replace("{CALLS}", "{" + table + "}").replace("{PATH}", path)
            )
            duration = f"-d{max(1, round(seconds))}s"
            out = subprocess.run(
                ["wrk", "-t1", f"-c{connections}", duration, "-s", str(script), url],
                capture_output=True, text=True, timeout=seconds + 60, check=True,
            ).stdout  # fmt: skip
        finally:
            script.unlink()
        figure = json.loads(out.strip().splitlines()[-1])
        good = figure["requests"] - figure["bad"]
        return {
            "rps": good / figure["seconds"],
            "p50_ms": figure["p50_ms"],
            "errors": figure["bad"],
        }
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    out = subprocess.run(
        [sys.executable, "-c", _LOADER, host, port, path, json.dumps(calls)]
        + [str(connections), str(seconds)],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=True,
    ).stdout
    return json.loads(out)


class Target:
    """One configuration under load: its URL, listeners (a token and a station each), pids.

    As many listeners as connections, the requests dealt out to them in turn: about one request
    of each listener in flight at a time, as from players that ask for the next fragment when the
    last one runs low (requests of one account at once queue on its player claim and station
    locks, which no number of processes changes)."""

    def __init__(self, name: str, url: str, servers: list[Server], listeners: int) -> None:
        self.name, self.url, self.servers = name, url, servers
        self.listeners: list[tuple[str, str]] = []
        for _ in range(listeners):
            api = Api(url)
            api.register(f"bench{secrets.token_hex(4)}", PASSWORD)
            categories = api.ok("v1/music/genrecategories", {})["categories"]
            genre = api.ok("v1/music/genres", {"token": categories[0]["token"]})
            track = genre["stations"][0]["sampleTracks"][0]
            created = api.ok("v1/station/createStation", {"musicId": track["artistMusicId"]})
            self.listeners.append((api.token or "", created["stationId"]))

    def pids(self) -> list[int]:
        found = []
        for server in self.servers:
            assert server.process is not None
            found.append(server.process.pid)
            children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
            try:
                found += [int(p) for p in children.read_text().split()]
            except OSError:
                pass
        return found


def start(
    backend: Backend, library: Path, workers: int, log: Path, source: Path | None = None
) -> Server:
    env = {
        "AIRWAVE_WORKERS": str(workers),
        "AIRWAVE_FRAGMENT_LIMIT": "100000000",
        "AIRWAVE_RADIO_RULES": "relaxed",
        "AIRWAVE_ANALYZE_AUDIO": "false",
        "AIRWAVE_ACCESS_LOG": "false",
        "AIRWAVE_DEFAULT_TIER": "premium",
    }
    if source is not None:  # that tree's code rather than this one's (same interpreter, packages)
        env["PYTHONPATH"] = str(source / "src")
    args = ["--library", str(library), "--open-registration"]
    server = Server(backend, args, env=env, log_file=log, clean_env=True)
    server.start(timeout=120)
    wait_indexed(server)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--no-haproxy", action="store_true")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another source tree whose worker figures are measured in the same rounds",
    )
    parser.add_argument(
        "--loader",
        choices=("wrk", "python"),
        default="wrk" if shutil.which("wrk") else "python",
        help="the load generator (default: wrk when installed)",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, interrupt)
    from airwave.library import demo

    tmp = Path(tempfile.mkdtemp(prefix="airwave-scale-"))
    running: list[Server] = []
    proxies: list[Balancer] = []
    schemas: list[PostgresSchema] = []
    try:
        library = tmp / "library"
        demo.generate(library, track_seconds=2.0)
        targets: list[Target] = []
        trees = [("", None)] + ([("@baseline", args.baseline.resolve())] if args.baseline else [])
        for suffix, source in trees:
            for workers in (1, 2):
                pg = PostgresSchema() if args.backend == "postgresql" else None
                if pg is not None:
                    schemas.append(pg)
                name = f"w{workers}{'b' if source else ''}"
                backend = Backend(args.backend, tmp / name, pg)
                server = start(backend, library, workers, tmp / f"{name}.log", source)
                running.append(server)
                targets.append(
                    Target(f"workers={workers}{suffix}", server.url, [server], args.connections)
                )
        balanced = not args.no_haproxy and haproxy_available() and postgres_available()
        if balanced:
            pg = PostgresSchema()
            schemas.append(pg)
            behind: list[Server] = []
            for n in range(3):
                server = start(
                    Backend("postgresql", tmp / f"s{n}", pg), library, 1, tmp / f"s{n}.log"
                )
                running.append(server)
                behind.append(server)
                if n == 0:
                    # every host must have the first one's keys (docs/scaling.md)
                    for other in ("s1", "s2"):
                        copy_keys(tmp / "s0", tmp / other)
            for count in (1, 2, 3):
                proxy = Balancer(
                    tmp / f"haproxy-{count}.cfg",
                    {f"s{n}": s.url for n, s in enumerate(behind[:count])},
                ).start()
                proxies.append(proxy)
                targets.append(
                    Target(f"haproxy_servers={count}", proxy.url, behind[:count], args.connections)
                )
        endpoints = {
            "getStations": lambda t: (
                "/api/v1/station/getStations",
                [(token, {}) for token, _ in t.listeners],
            ),
            "getFragment": lambda t: (
                "/api/v1/playlist/getFragment",
                [(token, {"stationId": station}) for token, station in t.listeners],
            ),
        }
        results: dict[tuple[str, str], list[float]] = {}
        watch = CpuWatch([pid for t in targets for pid in t.pids()])
        for _round in range(args.rounds):
            for endpoint, shape in endpoints.items():
                for target in targets:
                    path, calls = shape(target)
                    figure = load(
                        target.url, path, calls, args.connections, args.seconds, args.loader
                    )
                    results.setdefault((endpoint, target.name), []).append(figure["rps"])
                    if figure["errors"]:
                        print(f"# {endpoint} {target.name}: {figure['errors']} errors", flush=True)
        summary, _ = watch.stop()
        for (endpoint, name), values in results.items():
            backend = args.backend if "workers" in name else "postgresql"
            print(
                f"{endpoint} {name} rps_median={statistics.median(values):.0f} "
                f"rounds={len(values)} backend={backend}"
            )
        for endpoint in endpoints:
            for suffix, _ in trees:
                one = statistics.median(results[(endpoint, f"workers=1{suffix}")])
                two = statistics.median(results[(endpoint, f"workers=2{suffix}")])
                print(
                    f"{endpoint}{suffix} workers_2_over_1={two / one:.2f} target>={TARGET_RATIO} "
                    f"cpus={os.cpu_count()} (the load generator shares the CPUs)"
                )
            if args.baseline:
                for workers in (1, 2):
                    new = statistics.median(results[(endpoint, f"workers={workers}")])
                    old = statistics.median(results[(endpoint, f"workers={workers}@baseline")])
                    print(f"{endpoint} workers={workers} this_over_baseline={new / old:.2f}")
            if balanced:
                base = statistics.median(results[(endpoint, "haproxy_servers=1")])
                for count in (2, 3):
                    other = statistics.median(results[(endpoint, f"haproxy_servers={count}")])
                    print(
                        f"{endpoint} haproxy_servers_{count}_over_1={other / base:.2f} (one "
                        "machine: this shows the balancer's and PostgreSQL's overhead, not more "
                        "cores)"
                    )
        print(summary)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        for proxy in proxies:
            proxy.stop()
        for server in running:
            server.stop()
        for pg in schemas:
            pg.drop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
