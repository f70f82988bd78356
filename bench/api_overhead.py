"""What Airwave's protocol layer costs: station/getStations against a bare Starlette route.

Both endpoints are served by one uvicorn process started the way `airwave serve` starts it
(`airwave.server.run`, production logging, access log on unless --no-access-log); the only
difference is that POST /bare goes to a plain Starlette `Route` and everything else to
`create_app(services)`. The load generator (wrk, or a Python asyncio client when wrk is
absent) runs in this process, the server in a child process, so they share no GIL.

    .venv/bin/python bench/api_overhead.py [--database sqlite,postgresql] [--rounds 3]
        [--duration 5] [--warmup 1] [--connections 1,16,64] [--baseline-src DIR]

Rounds interleave the routes (their order rotating) at each connection count; the figures are
medians over the rounds: requests a second, latency, and the server process's CPU per call (from
/proc; on PostgreSQL also the CPU of the database's backends serving that server). With
--baseline-src, a second server (its own instance) runs another checkout's code and its
getStations is measured in the same rounds: before and after in one run. Prints one line per
figure and the ratios measured in the same run; never asserts.

wrk's p50/p99 include the start of each run: wrk opens its connections as it starts, and the
libuv inside uvloop accepts one connection an iteration of the event loop, which at saturation
serves every ready request first; so at 16 and 64 connections wrk's p99 says how fast a saturated
server takes new connections. After the rounds of each connection count, each route is measured
once more (--steady seconds) by a Python client whose connections are all open before the clock
starts: the `steady_p50_ms`/`steady_p99_ms` lines, the tail of a server serving the connections
it has (its throughput is the Python client's, lower than wrk's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from benchkit import databases, interpreter, postgres_backend_jiffies, proc_jiffies
from support.databases import (  # the shared server harness lives in tests/
    POSTGRES_URL,
    Backend,
    PostgresSchema,
    postgres_available,
)
from support.server import Server

HOST = "127.0.0.1"  # the only target this bench ever loads
BARE_PATH = "/bare"
API_PATH = "/api/v1/station/getStations"
USERNAME = "bench"
CSRF = "lol"
TARGET_COST_PCT = {1: 50.0}  # issue 17: <= 50% at one connection, <= 65% with more
TARGET_COST_PCT_MANY = 65.0
TARGET_CPU_MS = 0.25


# --------------------------------------------------------------------------- server (child)


def serve(data_dir: Path, access_log: bool) -> None:
    """Child process: Airwave plus /bare on one uvicorn server, as `airwave serve` runs it."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    from starlette.types import ASGIApp, Receive, Scope, Send

    from airwave import logs, server
    from airwave.api import app as api_app
    from airwave.config import Settings
    from airwave.core.services import Services

    async def bare_endpoint(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({"ok": True})

    bare = Starlette(routes=[Route(BARE_PATH, bare_endpoint, methods=["POST"])])

    def with_bare(airwave: ASGIApp) -> ASGIApp:
        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"] == BARE_PATH:
                await bare(scope, receive, send)
            else:
                await airwave(scope, receive, send)

        return app

    # server.run builds its app with create_app(services, library); wrapping that one call keeps
    # every
    # uvicorn setting identical to production. The parent checks that /bare answers.
    server.create_app = lambda services, *rest: with_bare(api_app.create_app(services, *rest))

    settings = Settings(data_dir=data_dir, host=HOST, port=0, access_log=access_log)
    logs.configure(settings.log_level, settings.log_format)
    services = Services.open(settings)
    server.run(services, lambda url: print(f"listening on {url}", flush=True))


# --------------------------------------------------------------------------- set-up (parent)


def create_account(backend: Backend, password: str) -> None:
    from airwave.config import Settings
    from airwave.core.accounts import accounts
    from airwave.core.services import Services

    extra = {"database_url": backend.pg.url} if backend.pg is not None else {}
    services = Services.open(Settings(data_dir=backend.data_dir, host=HOST, port=0, **extra))
    try:
        with services.database.write() as db:
            accounts.create_listener(
                db,
                services.clock.now(),
                accounts.check_new_listener(
                    services.settings,
                    services.clock.now(),
                    accounts.NewListener(USERNAME, password),
                    enforce_strength=False,
                ),
            )
    finally:
        services.close()


def post(url: str, body: dict, token: str | None = None) -> tuple[int, dict]:
    headers = {
        "Content-Type": "application/json",
        "X-CsrfToken": CSRF,
        "Cookie": f"csrftoken={CSRF}",
    }
    if token:
        headers["X-AuthToken"] = token
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def start_server(
    backend: Backend, access_log: bool, log_file: Path, source: Path | None = None
) -> Server:
    """This script's own server child (Airwave plus /bare), through the shared test harness;
    Airwave from the checkout `source` (its src/ first on PYTHONPATH) when given."""
    args = [] if access_log else ["--no-access-log"]
    server = Server(
        backend,
        args,
        env={"PYTHONPATH": str(source / "src")} if source is not None else {},
        log_file=log_file,
        clean_env=True,
        command=[sys.executable, __file__, "--serve", str(backend.data_dir)],
    )
    try:
        return server.start(timeout=30)
    except RuntimeError as exc:
        raise RuntimeError(f"server did not start: {exc}") from None


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------- load generators


@dataclass
class Result:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int  # connect/read/write/timeout errors and non-2xx answers

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


_WRK_SCRIPT = """\
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-CsrfToken"] = "%(csrf)s"
wrk.headers["Cookie"] = "csrftoken=%(csrf)s"
wrk.headers["X-AuthToken"] = "%(token)s"

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRKRESULT %%d %%d %%d %%d %%d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def run_wrk(script: Path, url: str, connections: int, seconds: float) -> Result:
    # One wrk thread: the machine has 2 cores and the server (one Python process) needs the other.
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "5s",
        "-s",
        str(script),
        url,
    ]
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds + 60, check=True
    ).stdout
    match = re.search(r"^WRKRESULT (\d+) (\d+) (\d+) (\d+) (\d+)$", out, re.M)
    if match is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    requests, duration_us, p50_us, p99_us, errors = map(int, match.groups())
    return Result(requests, duration_us / 1e6, p50_us / 1000, p99_us / 1000, errors)


def run_python(url: str, token: str, connections: int, seconds: float) -> Result:
    """Keep-alive HTTP/1.1 over asyncio streams, one task per connection: wrk's fallback, and the
    steady-state latency (every connection is open, and has had one answer, before the clock
    starts: a saturated server takes new connections one an iteration of its event loop, see
    the module's docstring)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    request = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        f"X-CsrfToken: {CSRF}\r\nCookie: csrftoken={CSRF}\r\nX-AuthToken: {token}\r\n"
        "Content-Length: 2\r\n\r\n{}"
    ).encode()
    latencies: list[float] = []
    errors = 0

    async def call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", head).group(1))
        await reader.readexactly(length)
        return head

    async def worker(
        stream: tuple[asyncio.StreamReader, asyncio.StreamWriter], stop_at: float
    ) -> None:
        nonlocal errors
        reader, writer = stream
        try:
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                head = await call(reader, writer)
                latencies.append(time.perf_counter() - started)
                if not head.startswith((b"HTTP/1.1 2", b"HTTP/1.0 2")):
                    errors += 1
        finally:
            writer.close()

    async def opened() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        stream = await asyncio.open_connection(parts.hostname, parts.port)
        await call(*stream)
        return stream

    async def main() -> float:
        streams = [await opened() for _ in range(connections)]  # one at a time, each answered
        started = time.perf_counter()
        await asyncio.gather(*(worker(stream, started + seconds) for stream in streams))
        return time.perf_counter() - started

    elapsed = asyncio.run(main())
    latencies.sort()

    def percentile_ms(q: float) -> float:
        return (
            latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0.0
        )

    return Result(len(latencies), elapsed, percentile_ms(0.50), percentile_ms(0.99), errors)


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Throughput, latency and server CPU of POST /api/v1/station/getStations "
        "(authenticated, no stations) against a bare Starlette POST route on the same uvicorn "
        "process; prints the protocol layer's cost in throughput.",
    )
    parser.add_argument(
        "--duration", type=float, default=5.0, help="seconds per measurement (default 5)"
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=1.0,
        help="seconds of unmeasured load before each (default 1)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds; medians are printed (default 3)"
    )
    parser.add_argument(
        "--connections",
        default="1,16,64",
        help="comma-separated concurrent connection counts (default 1,16,64)",
    )
    parser.add_argument(
        "--database",
        default="sqlite",
        help="comma-separated: sqlite, postgresql (AIRWAVE_TEST_POSTGRES_URL or the local test "
        "database; default sqlite)",
    )
    parser.add_argument(
        "--loadgen",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="wrk if installed (auto), or the Python asyncio fallback",
    )
    parser.add_argument(
        "--steady",
        type=float,
        default=3.0,
        help="seconds of the steady-state latency measurement per route and connection count, "
        "Python client, connections open before the clock starts (default 3; 0: none)",
    )
    parser.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="turn Airwave's access log off (default: on, as in production)",
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="also serve getStations from this checkout (its src/ on PYTHONPATH, e.g. `git "
        "archive main src | tar -x -C DIR`), measured in the same rounds, and print the ratios",
    )
    parser.add_argument("--serve", metavar="DATA_DIR", help=argparse.SUPPRESS)  # the server child
    args = parser.parse_args()
    try:
        args.connections = [int(c) for c in args.connections.split(",") if c.strip()]
    except ValueError:
        parser.error("--connections takes integers such as 1,64")
    if not args.connections or min(args.connections) < 1 or max(args.connections) > 1000:
        parser.error("--connections must be between 1 and 1000")
    if not 0 < args.duration <= 300 or not 0 <= args.warmup <= 60 or not 1 <= args.rounds <= 20:
        parser.error("--duration must be in (0, 300], --warmup in [0, 60], --rounds in [1, 20]")
    if not 0 <= args.steady <= 300:
        parser.error("--steady must be in [0, 300]")
    # PostgreSQL's reachability is checked in main: the server child parses these arguments too
    args.database = databases(parser, args.database, reachable=False)
    if args.baseline_src is not None and not (args.baseline_src / "src" / "airwave").is_dir():
        parser.error("--baseline-src DIR needs DIR/src/airwave")
    return args


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


@dataclass
class Target:
    """One server of the run: its process, its listener's wrk script and token."""

    server: Server
    backend: Backend
    token: str
    script: Path


def start_target(
    kind: str, tmp: Path, name: str, args: argparse.Namespace, source: Path | None
) -> Target:
    """A fresh instance (data dir, and schema on PostgreSQL), its listener and its server, from
    `source` (another checkout's src/ first on PYTHONPATH) when given; checked before measuring."""
    pg = PostgresSchema() if kind == "postgresql" else None
    backend = Backend(kind, tmp / f"data-{name}", pg)
    server: Server | None = None
    try:
        password = secrets.token_urlsafe(12)
        create_account(backend, password)
        server = start_server(backend, args.access_log, tmp / f"server-{name}.log", source=source)
        base = server.url
        status, body = post(
            f"{base}/api/v1/auth/login", {"username": USERNAME, "password": password}
        )
        if status != 200:
            raise RuntimeError(f"login failed: {status} {body}")
        token = body["authToken"]
        status, body = post(f"{base}{API_PATH}", {}, token)
        if status != 200 or body.get("totalStations") != 0:
            raise RuntimeError(f"getStations check failed: {status} {body}")
        status, body = post(f"{base}{BARE_PATH}", {}, token)
        if status != 200 or body != {"ok": True}:
            raise RuntimeError(f"/bare check failed: {status} {body}")
        script = tmp / f"post-{name}.lua"
        script.write_text(_WRK_SCRIPT % {"csrf": CSRF, "token": token})
        return Target(server, backend, token, script)
    except BaseException:
        if server is not None:
            server.stop()
        if pg is not None:
            pg.drop()
        raise


def bench_backend(args: argparse.Namespace, kind: str, use_wrk: bool, wrk: str | None) -> None:
    """Every figure on one backend: its own instance, server and listener (and with
    --baseline-src a second instance served by the other checkout, measured in the same rounds)."""
    tmp = Path(tempfile.mkdtemp(prefix="airwave-bench-"))
    targets: dict[str, Target] = {}
    try:
        targets["this"] = start_target(kind, tmp, "this", args, None)
        if args.baseline_src is not None:
            targets["baseline"] = start_target(kind, tmp, "baseline", args, args.baseline_src)
        tick = float(os.sysconf("SC_CLK_TCK"))

        def measure(
            target: Target, path: str, conns: int, seconds: float
        ) -> tuple[Result, float, float]:
            """One measurement; the server's CPU seconds meanwhile, and on PostgreSQL those of
            the database's backends serving it."""
            pid = target.server.process.pid if target.server.process is not None else 0
            db_before = postgres_backend_jiffies(pid, POSTGRES_URL) if kind == "postgresql" else {}
            before = proc_jiffies(pid)
            if use_wrk:
                result = run_wrk(target.script, target.server.url + path, conns, seconds)
            else:
                result = run_python(target.server.url + path, target.token, conns, seconds)
            cpu = (proc_jiffies(pid) - before) / tick
            db_after = postgres_backend_jiffies(pid, POSTGRES_URL) if kind == "postgresql" else {}
            # a backend the pool opened meanwhile counts from 0
            db_cpu = sum(j - db_before.get(p, 0) for p, j in db_after.items()) / tick
            return result, cpu, db_cpu

        loadgen = (
            f"wrk ({wrk}, 1 thread)" if use_wrk else "python-asyncio (wrk not found or not chosen)"
        )
        print(
            f"config db={kind} loadgen={loadgen} server=uvicorn via airwave.server.run "
            f"(1 process, subprocess) "
            f"access_log={'on (production default)' if args.access_log else 'OFF'} "
            f"rounds={args.rounds} duration_s={args.duration:g} warmup_s={args.warmup:g} "
            f"baseline={args.baseline_src} cpus={os.cpu_count()} {interpreter()}",
            flush=True,
        )
        routes = [("bare", "this", BARE_PATH), ("getStations", "this", API_PATH)]
        if "baseline" in targets:
            routes.append(("getStations_baseline", "baseline", API_PATH))
        for conns in args.connections:
            seen: dict[str, list[tuple[Result, float, float]]] = {name: [] for name, *_ in routes}
            for round_ in range(args.rounds):
                # the order rotates, so that no route always follows the same one
                shift = round_ % len(routes)
                for name, who, path in routes[shift:] + routes[:shift]:
                    if args.warmup > 0:
                        measure(targets[who], path, conns, args.warmup)
                    seen[name].append(measure(targets[who], path, conns, args.duration))
            rps: dict[str, float] = {}
            cpu_ms: dict[str, float] = {}
            db_ms: dict[str, float] = {}
            for name, *_ in routes:
                runs = seen[name]
                rps[name] = _median([r.rps for r, _, _ in runs])
                cpu_ms[name] = _median([c * 1000 / r.requests for r, c, _ in runs if r.requests])
                db_ms[name] = _median([d * 1000 / r.requests for r, _, d in runs if r.requests])
                errors = sum(r.errors for r, _, _ in runs)
                database = (
                    "" if kind == "sqlite" else f"postgresql_cpu_ms_per_call={db_ms[name]:.3f} "
                )
                print(
                    f"{kind} {name} conns={conns} rps={rps[name]:.0f} "
                    f"p50_ms={_median([r.p50_ms for r, _, _ in runs]):.2f} "
                    f"p99_ms={_median([r.p99_ms for r, _, _ in runs]):.2f} "
                    f"server_cpu_ms_per_call={cpu_ms[name]:.3f} {database}"
                    f"rounds_rps={'/'.join(f'{r.rps:.0f}' for r, _, _ in runs)}"
                    f"{f' errors={errors}' if errors else ''}",
                    flush=True,
                )
            if args.steady > 0 and use_wrk:
                for name, who, path in routes:
                    steady = run_python(
                        targets[who].server.url + path, targets[who].token, conns, args.steady
                    )
                    print(
                        f"{kind} {name} conns={conns} steady_p50_ms={steady.p50_ms:.2f} "
                        f"steady_p99_ms={steady.p99_ms:.2f} rps={steady.rps:.0f} "
                        "(python client, connections open before the clock starts)"
                        f"{f' errors={steady.errors}' if steady.errors else ''}",
                        flush=True,
                    )
            ratio = rps["getStations"] / rps["bare"] if rps["bare"] else 0.0
            target = TARGET_COST_PCT.get(conns, TARGET_COST_PCT_MANY)
            print(
                f"{kind} protocol_cost conns={conns} throughput_ratio={ratio:.3f} "
                f"(getStations/bare, medians) cost_pct={(1 - ratio) * 100:.1f} "
                f"target_cost_pct<={target:g} target_cpu_ms<={TARGET_CPU_MS:g}",
                flush=True,
            )
            if "baseline" in targets:
                now, before = "getStations", "getStations_baseline"
                database = (
                    ""
                    if kind == "sqlite"
                    else f"postgresql_cpu_ms_per_call={db_ms[now]:.3f}/{db_ms[before]:.3f}="
                    f"{db_ms[now] / db_ms[before] if db_ms[before] else float('nan'):.3f} "
                )
                print(
                    f"{kind} this_vs_baseline conns={conns} "
                    f"rps={rps[now]:.0f}/{rps[before]:.0f}="
                    f"{rps[now] / rps[before] if rps[before] else float('nan'):.3f} "
                    f"server_cpu_ms_per_call={cpu_ms[now]:.3f}/{cpu_ms[before]:.3f}="
                    f"{cpu_ms[now] / cpu_ms[before] if cpu_ms[before] else float('nan'):.3f} "
                    f"{database}(same run, interleaved)",
                    flush=True,
                )

        if args.access_log:
            log_file = tmp / "server-this.log"
            with log_file.open(errors="replace") as log:
                lines = sum(1 for line in log if '"logger":"airwave.access"' in line)
            print(f"{kind} access_log lines_written={lines}", flush=True)
        for name, target in targets.items():
            process = target.server.process
            if process is not None and process.poll() is not None:
                print(
                    f"warning: the {name} server exited early (code {process.returncode}); "
                    f"log:\n{tail(tmp / f'server-{name}.log')}",
                    flush=True,
                )
    finally:
        for target in targets.values():
            target.server.stop()
            if target.backend.pg is not None:
                target.backend.pg.drop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    args = parse_args()
    if args.serve:
        serve(Path(args.serve), args.access_log)
        return
    signal.signal(signal.SIGTERM, _interrupt)  # clean up on SIGTERM as on Ctrl-C
    for name in [
        k for k in os.environ if k.startswith("AIRWAVE_") and k != "AIRWAVE_TEST_POSTGRES_URL"
    ]:
        del os.environ[name]  # a fresh instance, whatever the caller's environment says
    wrk = shutil.which("wrk")
    if args.loadgen == "wrk" and wrk is None:
        sys.exit("wrk is not installed (apt-get install -y wrk)")
    use_wrk = wrk is not None and args.loadgen != "python"
    if "postgresql" in args.database and not postgres_available():
        sys.exit("PostgreSQL is not reachable (AIRWAVE_TEST_POSTGRES_URL)")

    load_start = os.getloadavg()[0]
    try:
        for kind in args.database:
            bench_backend(args, kind, use_wrk, wrk)
        # Other work on the machine skews every figure; this bench itself adds about 2.
        print(
            f"machine loadavg_1m_start={load_start:.2f} loadavg_1m_end={os.getloadavg()[0]:.2f} "
            f"(this bench adds ~2 while loading)",
            flush=True,
        )
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    except (RuntimeError, subprocess.SubprocessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
