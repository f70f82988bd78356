"""The server's Prometheus metrics (served at /metrics by airwave.api.metrics).

Every metric has labels, so no value exists before its first use: `serve --workers N` points
prometheus_client at a directory (`use_directory`) before any is counted, and each worker then
counts into its own files there, which a scrape of any worker adds up.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from prometheus_client import Counter, Histogram, values

ENV = "PROMETHEUS_MULTIPROC_DIR"

REQUESTS = Counter(
    "airwave_requests",
    "HTTP requests answered, by interface, endpoint and status",
    ["interface", "endpoint", "status"],
)
LATENCY = Histogram(
    "airwave_request_duration_seconds",
    "Time from a request's start to its response's end (for audio: the whole transfer)",
    ["interface", "endpoint"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
FRAGMENTS = Counter(
    "airwave_fragments_served", "Station fragments handed out, by listener tier", ["tier"]
)
TRANSCODES = Counter(
    "airwave_transcodes", "Transcodes started by this host, by encoding", ["encoding"]
)
TRANSCODE_CACHE = Counter(
    "airwave_transcode_cache_lookups",
    "Audio requests needing a transcode: hit (cached), joined (a transcode under way), miss",
    ["result"],
)


def shared_directory(data_dir: Path) -> Path:
    """Where the workers of the instance in `data_dir` count: in shared memory when the host has
    it (the counters are memory-mapped files, and a page that cannot be had on a full disk kills
    the process that touches it with SIGBUS), else under the data dir."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        tag = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        return shm / f"airwave-metrics-{os.getuid()}-{tag}"
    return data_dir / "metrics"


def use_directory(path: Path) -> None:
    """Count into files under `path` (emptied now), shared by this process's future children."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True, mode=0o700)
    os.environ[ENV] = str(path)
    values.ValueClass = values.get_value_class()


def directory() -> str | None:
    return os.environ.get(ENV) or None


def process_gone(pid: int) -> None:
    """A worker died: its live gauges stop counting (its counters stay in the totals)."""
    path = directory()
    if path is not None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, path)
