"""What the benchmarks share: a protocol client, percentiles, CPU accounting from /proc, the
server's own time per request from its access log, batching, and a SIGTERM that stops a run like
Ctrl-C."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np


def compile_bytecode(src: Path) -> None:
    """Bytecode for an Airwave source tree, as `make run` makes it (an installed package has it
    too): where PYTHONDONTWRITEBYTECODE is set, every process started would otherwise compile
    Airwave's modules again, and a start-up figure would count it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)


def interpreter() -> str:
    """The Python that runs Airwave in this bench, for its config line: the same version built
    two ways (a distribution's build with profile-guided and link-time optimisation, or one
    compiled from source without them, as pyenv does by default) moves start-up, command and
    request figures by up to a fifth (bench/README.md)."""
    return f"python={platform.python_version()} ({sys.executable})"


def databases(parser: argparse.ArgumentParser, text: str, *, reachable: bool = True) -> list[str]:
    """A bench's --database value (sqlite, postgresql or both, comma-separated) as a list; a
    parser error for anything else, and for PostgreSQL when it cannot be reached (`reachable`)."""
    chosen = [d.strip() for d in text.split(",") if d.strip()]
    if not chosen or not set(chosen) <= {"sqlite", "postgresql"}:
        parser.error("--database takes sqlite, postgresql or both")
    if reachable and "postgresql" in chosen:
        from support.databases import postgres_available  # tests/ is on the bench's path

        if not postgres_available():
            parser.error("PostgreSQL is not reachable (AIRWAVE_TEST_POSTGRES_URL)")
    return chosen


def batches(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def busy_jiffies() -> int:
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in parts[:8])
    return user + nice + system + irq + softirq + steal


def proc_jiffies(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except OSError:
        return 0


def _socket_ports(pid: int) -> set[int]:
    """The local TCP ports of a process's sockets (its connections to PostgreSQL among them)."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[9] in inodes:
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def postgres_backend_jiffies(server_pid: int, url: str) -> dict[int, int]:
    """The CPU time so far (jiffies) of each PostgreSQL backend serving a server process's
    connections, found by their client ports: the database's own work for that server's calls,
    which the server's CPU time leaves out."""
    import psycopg

    ports = _socket_ports(server_pid)
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, client_port FROM pg_stat_activity WHERE client_port IS NOT NULL"
        ).fetchall()
    return {pid: proc_jiffies(pid) for pid, port in rows if port in ports}


class CpuWatch:
    """CPU seconds of the servers, of this client and of everything else on the machine
    meanwhile."""

    def __init__(self, server_pids: list[int]) -> None:
        self.pids = server_pids
        self.tick = float(os.sysconf("SC_CLK_TCK"))
        self.start = self._sample()

    def _sample(self) -> tuple[int, list[int], int, float, float]:
        return (
            busy_jiffies(),
            [proc_jiffies(p) for p in self.pids],
            proc_jiffies(os.getpid()),
            time.monotonic(),
            os.getloadavg()[0],
        )

    def stop(self) -> tuple[str, list[float]]:
        """A summary line, and each server's CPU seconds."""
        busy, servers, me, at, load = self._sample()
        b0, s0, m0, t0, load0 = self.start
        per_server = [(b - a) / self.tick for a, b in zip(s0, servers)]
        server_s = sum(per_server)
        client_s = (me - m0) / self.tick
        other_s = max(0.0, (busy - b0) / self.tick - server_s - client_s)
        wall = at - t0
        return (
            f"loadavg_1m_start={load0:.2f} loadavg_1m_end={load:.2f} wall_s={wall:.1f} "
            f"servers_cpu_s={server_s:.1f} client_cpu_s={client_s:.1f} other_cpu_s={other_s:.1f} "
            f"(other work used {other_s / wall if wall else 0:.2f} of {os.cpu_count()} CPUs)"
        ), per_server


def interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def server_durations(log: Path, request_ids: set[str]) -> dict[str, float]:
    """The server's own time per request (its access log's duration_ms), by request id."""
    found: dict[str, float] = {}
    for _ in range(30):  # the last lines may still be on their way to the file
        found = {}
        for line in log.read_text(errors="replace").splitlines():
            if '"request_id"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("request_id") in request_ids and "duration_ms" in entry:
                found[entry["request_id"]] = float(entry["duration_ms"])
        if len(found) >= len(request_ids):
            break
        time.sleep(0.1)
    return found


USERNAME = "bench"  # the listener a benchmark signs in as
CSRF = "lol"


class ApiError(RuntimeError):
    pass


class Client:
    """One keep-alive HTTP/1.1 connection speaking the protocol (CSRF cookie + header,
    X-AuthToken)."""

    def __init__(self, base: str) -> None:
        import httpx

        self.http = httpx.Client(base_url=base, timeout=60)
        self.http.cookies.set("csrftoken", CSRF)
        self.headers = {"Content-Type": "application/json", "X-CsrfToken": CSRF}

    def call(self, path: str, body: dict, request_id: str | None = None) -> tuple[int, Any, float]:
        headers = (
            self.headers if request_id is None else {**self.headers, "X-Request-Id": request_id}
        )
        content = json.dumps(body).encode()
        started = time.perf_counter()
        response = self.http.post(f"/api/{path}", content=content, headers=headers)
        body_bytes = response.read()
        elapsed = time.perf_counter() - started
        return response.status_code, json.loads(body_bytes) if body_bytes else None, elapsed

    def ok(self, path: str, body: dict) -> Any:
        status, data, _ = self.call(path, body)
        if status != 200:
            raise ApiError(f"{path}: HTTP {status} {data}")
        return data

    def login(self, password: str) -> None:
        data = self.ok("v1/auth/login", {"username": USERNAME, "password": password})
        self.headers["X-AuthToken"] = data["authToken"]

    def close(self) -> None:
        self.http.close()
