"""Audio delivery figures: streaming originals beside nginx, transcoding beside ffmpeg, first bytes.

1. Throughput (MB/s) of 1, 16 and 64 concurrent keep-alive streams of original files, Airwave
   (`airwave serve`, one process, signed /audio URLs) beside nginx (Debian package, throw-away
   config: one worker, sendfile on, access log off, loopback port) serving the same files in the
   same run, with wrk (one thread) as the load generator; the ratio airwave/nginx (target >= 0.5).
2. Time to first body byte of a new stream while that many streams run (a probe connection, fresh
   TCP
   connection per request, closed after the first bytes), p50 and p99, for both servers.
3. Transcode speed as a multiple of real time per core (audio seconds / CPU seconds of one thread)
   for
   every encoding, beside the `ffmpeg` command line (-threads 1) doing the same conversion
   (target ratio >= 0.8).
4. Time to the first audio byte of an uncached transcode through the server (target < 300 ms).

    .venv/bin/python bench/stream.py [--duration 5] [--connections 1,16,64]

Prints one line per figure; never asserts. Needs wrk, nginx and ffmpeg (apt-get install wrk
nginx-light ffmpeg); missing peers are reported and their figures skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.databases import Backend  # the shared server harness lives in tests/
from support.server import Server

HOST = "127.0.0.1"
FILES = 8
FILE_SECONDS = 60.0
TRANSCODE_SECONDS = 240.0
FIRST_BYTE_SOURCES = 5
FFMPEG_ARGS = {
    "mp3": ["-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3"],
    "mp3-hifi": ["-c:a", "libmp3lame", "-b:a", "320k", "-f", "mp3"],
    "aacplus": ["-c:a", "aac", "-b:a", "64k", "-f", "adts"],
    "opus": ["-c:a", "libopus", "-b:a", "96k", "-ar", "48000", "-f", "ogg"],
}

_WRK_SCRIPT = """\
local paths = {%(paths)s}
local i = 0
request = function()
  i = i %% #paths + 1
  return wrk.format("GET", paths[i])
end
done = function(summary, latency, requests)
  local e = summary.errors io.write(string.format("WRKRESULT %%d %%d %%d %%d\\n", summary.requests,
  summary.bytes, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


# --------------------------------------------------------------------------- set-up


def make_library(root: Path) -> None:
    """Music-like FLAC files (chords, melody, noise: they compress like real recordings)."""
    import audiokit

    for n in range(FILES):
        audiokit.write_audio(
            root / "Bench" / "Streams" / f"{n:02d} Stream.flac",
            audiokit.music(FILE_SECONDS, seed=n),
        )
    audiokit.write_audio(
        root / "Bench" / "Long" / "00 Long.flac", audiokit.music(TRANSCODE_SECONDS, seed=99)
    )
    for n in range(FIRST_BYTE_SOURCES):
        audiokit.write_audio(
            root / "Bench" / "Fresh" / f"{n:02d} Fresh.flac", audiokit.music(180.0, seed=50 + n)
        )


def scan_and_account(data_dir: Path, library: Path) -> tuple[dict[str, int], int]:
    """Scan the library into a fresh instance; a listener; returns (track id by file name,
    listener id)."""
    from sqlalchemy import select

    from airwave.config import Settings
    from airwave.core.accounts import accounts
    from airwave.core.services import Services
    from airwave.library.scanner import Scanner
    from airwave.store.models import Track

    services = Services.open(Settings(data_dir=data_dir))
    try:
        Scanner(services.database, now=services.clock.now, workers=1).scan([library])
        with services.database.write() as db:
            listener = accounts.create_listener(
                db,
                services.clock.now(),
                accounts.check_new_listener(
                    services.settings,
                    services.clock.now(),
                    accounts.NewListener("bench", secrets.token_urlsafe(12)),
                    enforce_strength=False,
                ),
            )
            listener_id = listener.id
        with services.database.read() as db:
            tracks = {Path(p).name: i for i, p in db.execute(select(Track.id, Track.path)) if p}
        return tracks, listener_id
    finally:
        services.close()


def start_airwave(data_dir: Path, log_file: Path) -> Server:
    """`airwave serve` on the bench's data dir, through the shared test harness; its log in
    log_file."""
    server = Server(Backend("sqlite", data_dir), log_file=log_file, clean_env=True)
    try:
        return server.start(timeout=30)
    except RuntimeError as exc:
        raise RuntimeError(f"airwave did not start: {exc}") from None


def start_nginx(prefix: Path, root: Path) -> tuple[subprocess.Popen, str] | None:
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None
    )
    if nginx is None:
        return None
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    for name in ("logs", "tmp"):
        (prefix / name).mkdir(parents=True, exist_ok=True)
    temp = prefix / "tmp"
    (prefix / "nginx.conf").write_text(f"""
master_process off;
daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    types {{ audio/flac flac; }}
    server {{
        listen {HOST}:{port};
        root {root};
        location / {{ }}
    }}
}}
""")
    proc = subprocess.Popen(
        [nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://{HOST}:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/", timeout=1)
        except urllib.error.HTTPError:
            return proc, base  # 403/404 for the directory: it is up
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"nginx exited: {proc.stderr.read().decode() if proc.stderr else ''}"
                ) from None
            time.sleep(0.05)
        else:
            return proc, base
    raise RuntimeError("nginx did not start")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- measurements


def wrk(script: Path, base: str, connections: int, seconds: float) -> tuple[float, int, int]:
    """(MB/s, requests, errors) over `seconds` with one wrk thread."""
    cmd = [
        "wrk",
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "30s",
        "-s",
        str(script),
        base,
    ]
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds + 120, check=True
    ).stdout
    match = re.search(r"^WRKRESULT (\d+) (\d+) (\d+) (\d+)$", out, re.M)
    if match is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    requests, size, duration_us, errors = map(int, match.groups())
    return size / (duration_us / 1e6) / 1e6, requests, errors


def first_byte(url: str, *, drain: bool = False) -> float:
    """Seconds from connecting to the first byte of the body of a GET; the rest is read only if
    `drain`."""
    parts = urlsplit(url)
    started = time.perf_counter()
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(
            f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: "
            "close\r\n\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed before the headers")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"unexpected answer: {head[:200]!r}")
        chunked = b"transfer-encoding: chunked" in head.lower()
        # with chunked coding the first line is the chunk's size: audio starts after it
        while not body or (
            chunked and (b"\r\n" not in body or body.endswith(b"\r\n") and body.count(b"\r\n") == 1)
        ):
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed before the body")
            body += chunk
        elapsed = time.perf_counter() - started
        while drain and sock.recv(1 << 20):
            pass
        return elapsed


def probe_while_loaded(
    script: Path, base: str, urls: list[str], connections: int, seconds: float, samples: int = 40
) -> list[float]:
    """First-byte times of fresh streams while wrk keeps `connections` streams busy."""
    times: list[float] = []
    load = threading.Thread(target=wrk, args=(script, base, connections, seconds))
    load.start()
    time.sleep(min(1.0, seconds / 4))
    pause = max(0.01, (seconds * 0.6) / samples)
    for n in range(samples):
        times.append(first_byte(urls[n % len(urls)]))
        time.sleep(pause)
    load.join()
    return times


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def airwave_transcode_cpu(source: Path, encoding: str, out: Path) -> float:
    """CPU seconds of this thread to transcode with Airwave's transcoder (as the server does)."""
    from airwave.audio.formats import PROFILES
    from airwave.audio.transcode import transcode

    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        started = time.thread_time()
        transcode(str(source), fd, PROFILES[encoding])
        return time.thread_time() - started
    finally:
        os.close(fd)


def ffmpeg_cpu(ffmpeg: str, source: Path, encoding: str, out: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [
            ffmpeg,
            "-nostdin",
            "-v",
            "error",
            "-y",
            "-threads",
            "1",
            "-i",
            str(source),
            "-map",
            "0:a",
            *FFMPEG_ARGS[encoding],
            str(out),
        ],
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--duration", type=float, default=5.0, help="seconds per throughput measurement"
    )
    parser.add_argument(
        "--connections", default="1,16,64", help="concurrent streams (comma-separated)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="transcode runs per encoding (best is kept)"
    )
    args = parser.parse_args()
    connections = [int(c) for c in args.connections.split(",") if c.strip()]
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed (apt-get install -y wrk)")
    ffmpeg = shutil.which("ffmpeg")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    tmp = Path(tempfile.mkdtemp(prefix="airwave-stream-bench-"))
    procs: list[subprocess.Popen] = []
    try:
        library, data_dir = tmp / "music", tmp / "data"
        make_library(library)
        tracks, listener = scan_and_account(data_dir, library)
        from airwave.audio.signing import UrlSigner

        signer = UrlSigner.open(data_dir)
        expires = datetime.now(UTC) + timedelta(hours=2)

        def token(name: str, encoding: str) -> str:
            return signer.audio_token(
                listener_id=listener, track_id=tracks[name], encoding=encoding, expires_at=expires
            )

        airwave = start_airwave(data_dir, tmp / "airwave.log")
        airwave_base = airwave.url
        assert airwave.process is not None
        procs.append(airwave.process)
        nginx = start_nginx(tmp / "nginx", library)
        if nginx is not None:
            procs.append(nginx[0])
        stream_names = sorted(n for n in tracks if n.endswith("Stream.flac"))
        sizes = [(library / "Bench" / "Streams" / n).stat().st_size for n in stream_names]
        peers: dict[str, tuple[str, list[str]]] = {
            "airwave": (airwave_base, [f"/audio/{token(n, 'original')}" for n in stream_names])
        }
        if nginx is not None:
            peers["nginx"] = (
                nginx[1],
                [f"/Bench/Streams/{n.replace(' ', '%20')}" for n in stream_names],
            )
        scripts = {}
        for name, (_, paths) in peers.items():
            scripts[name] = tmp / f"{name}.lua"
            scripts[name].write_text(_WRK_SCRIPT % {"paths": ", ".join(f'"{p}"' for p in paths)})
        print(
            f"config files={len(stream_names)} file_mb={statistics.mean(sizes) / 1e6:.1f} "
            "loadgen=wrk(1 thread) airwave=1 process "
            f"nginx={'1 worker, sendfile' if nginx else 'absent'} "
            f"duration_s={args.duration:g} cpus={os.cpu_count()} "
            f"loadavg_1m={os.getloadavg()[0]:.2f}",
            flush=True,
        )

        for conns in connections:
            figures: dict[str, float] = {}
            for name, (base, paths) in peers.items():
                wrk(scripts[name], base, conns, 1)  # warm-up: page cache, connections
                mbps, requests, errors = wrk(scripts[name], base, conns, args.duration)
                figures[name] = mbps
                ttfb = probe_while_loaded(
                    scripts[name], base, [base + p for p in paths], conns, args.duration
                )
                print(
                    f"stream server={name} conns={conns} MBps={mbps:.0f} requests={requests} "
                    f"ttfb_p50_ms={percentile(ttfb, 0.5) * 1000:.2f} "
                    f"ttfb_p99_ms={percentile(ttfb, 0.99) * 1000:.2f}"
                    + (f" errors={errors}" if errors else ""),
                    flush=True,
                )
            if "nginx" in figures:
                print(
                    f"stream conns={conns} airwave_MBps={figures['airwave']:.0f} "
                    f"nginx_MBps={figures['nginx']:.0f} "
                    f"ratio={figures['airwave'] / figures['nginx']:.2f} target>=0.5",
                    flush=True,
                )

        source = library / "Bench" / "Long" / "00 Long.flac"
        from airwave.audio.transcode import system_lame_available

        for encoding in FFMPEG_ARGS:
            ours = min(
                airwave_transcode_cpu(source, encoding, tmp / f"aw.{encoding}")
                for _ in range(args.repeat)
            )
            line = (
                f"transcode encoding={encoding} airwave_x_realtime={TRANSCODE_SECONDS / ours:.1f}"
            )
            if ffmpeg:
                theirs = min(
                    ffmpeg_cpu(ffmpeg, source, encoding, tmp / f"ff.{encoding}")
                    for _ in range(args.repeat)
                )
                line += (
                    f" ffmpeg_x_realtime={TRANSCODE_SECONDS / theirs:.1f} "
                    f"ratio={theirs / ours:.2f} "
                    f"target>=0.8"
                )
            print(line + " (per core: audio seconds / CPU seconds)", flush=True)
        if ffmpeg:
            version = subprocess.run(
                [ffmpeg, "-version"], capture_output=True, text=True
            ).stdout.split("\n")[0]
            print(
                f"transcode peer={version.split(' Copyright')[0]} airwave_mp3_encoder="
                f"{'system libmp3lame' if system_lame_available() else 'PyAV libmp3lame'}",
                flush=True,
            )

        firsts: dict[str, list[float]] = {e: [] for e in FFMPEG_ARGS}
        fresh = sorted(n for n in tracks if n.endswith("Fresh.flac"))
        for name in fresh:
            for encoding in FFMPEG_ARGS:
                # drained: each transcode finishes before the next starts, so none waits for a slot
                firsts[encoding].append(
                    first_byte(f"{airwave_base}/audio/{token(name, encoding)}", drain=True)
                )
        every = [t for times in firsts.values() for t in times]
        for encoding, times in firsts.items():
            print(
                f"first_audio_byte uncached encoding={encoding} "
                f"p50_ms={statistics.median(times) * 1000:.1f} "
                f"max_ms={max(times) * 1000:.1f} samples={len(times)}",
                flush=True,
            )
        print(
            f"first_audio_byte uncached all p50_ms={statistics.median(every) * 1000:.1f} "
            f"max_ms={max(every) * 1000:.1f} target<300",
            flush=True,
        )
        print(f"machine loadavg_1m_end={os.getloadavg()[0]:.2f}", flush=True)
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    finally:
        for proc in procs:
            stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
