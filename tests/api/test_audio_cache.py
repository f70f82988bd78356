"""The transcode cache and file serving under stress: kill -9 mid-transcode, two servers sharing one
cache,
the size bound, the cache CLI, a 1 GB file served with flat memory, and the TLS (non zero-copy)
path.

These run on SQLite only: what they exercise lives in files, not in the database.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import audiokit
import httpx
import numpy as np
import pytest
import trustme
from support import Backend, Server

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only

LONG_SECONDS = 90.0
SHORT_SECONDS = 8.0
VERY_LONG_SECONDS = 300.0
GIB = 1024**3


@dataclass
class Instance:
    backend: Backend
    library: Path
    tracks: dict[str, int]
    alice: int
    servers: list[Server]

    def start(self, *args: str, env: dict[str, str] | None = None) -> Server:
        server = Server(self.backend, list(args), dict(env or {})).start()
        self.servers.append(server)
        return server

    def url(self, server: Server, encoding: str, track: str | int) -> str:
        track_id = self.tracks[track] if isinstance(track, str) else track
        token = audiokit.signer(self.backend).audio_token(
            listener_id=self.alice,
            track_id=track_id,
            encoding=encoding,
            expires_at=audiokit.now() + timedelta(hours=1),
        )
        return f"{server.url}/audio/{token}"

    def source(self, name: str) -> str:
        return str(next(self.library.rglob(name)))


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Instance]:
    library = tmp_path_factory.mktemp("cache-library")
    album = library / "Long Player" / "Sides (2021)"
    audiokit.write_audio(album / "01 Long.flac", audiokit.music(LONG_SECONDS, seed=3))
    for n in range(2, 9):
        audiokit.write_audio(album / f"0{n} Short.flac", audiokit.music(SHORT_SECONDS, seed=n))
    tone = audiokit.music(
        1.0, seed=9
    )  # a long, cheaply made source: one second of music, over and over
    audiokit.write_audio(album / "09 Very Long.flac", np.tile(tone, int(VERY_LONG_SECONDS)))
    backend = Backend("sqlite", tmp_path_factory.mktemp("airwave"))
    tool = Server(backend, env={"AIRWAVE_ANALYZE_AUDIO": "false"})
    assert tool.cli("scan", "--library", str(library)).returncode == 0
    assert (
        tool.cli(
            "user", "add", "alice", "--password-stdin", input="correct horse battery\n"
        ).returncode
        == 0
    )
    made = Instance(
        backend, library, audiokit.track_ids(backend), audiokit.listener_id(backend, "alice"), []
    )
    yield made
    for server in made.servers:
        server.stop()


def transcode_lines(server: Server, name: str) -> list[str]:
    return [line for line in server.errors if '"transcoded"' in line and name in line]


def parts(data_dir: Path) -> list[Path]:
    return [p for p in audiokit.cache_files(data_dir) if p.suffix == ".part"]


def entries(data_dir: Path) -> list[Path]:
    return [p for p in audiokit.cache_files(data_dir) if p.suffix in (".mp3", ".aac", ".opus")]


def test_kill_mid_transcode_leaves_no_entry_and_the_next_request_is_correct(
    instance: Instance,
) -> None:
    server = instance.start()
    url = instance.url(server, "aacplus", "01 Long.flac")
    with httpx.stream("GET", url, timeout=60) as response:
        assert response.status_code == 200
        first = next(response.iter_raw())
        assert first
        server.stop(signal.SIGKILL)
    assert parts(instance.backend.data_dir), "the transcode should have been under way"
    assert not entries(instance.backend.data_dir)
    again = instance.start()
    body = httpx.get(instance.url(again, "aacplus", "01 Long.flac"), timeout=120).content
    decoded = audiokit.decode(body)
    assert decoded.codec == "aac" and abs(decoded.seconds - LONG_SECONDS) <= LONG_SECONDS * 0.01
    assert body[: len(first)] == first
    (entry,) = entries(instance.backend.data_dir)
    assert entry.read_bytes() == body and not parts(instance.backend.data_dir)
    again.stop()


def test_a_transcode_nobody_listens_to_is_abandoned(instance: Instance) -> None:
    from airwave.audio.cache import ABANDON_AFTER, TranscodeCache
    from airwave.audio.formats import PROFILES

    server = instance.start()
    url = instance.url(server, "aacplus", "09 Very Long.flac")
    source = Path(instance.source("09 Very Long.flac"))
    st = source.stat()
    cache = TranscodeCache(instance.backend.data_dir / "cache" / "audio", limit=0)
    entry = cache.entry_path(
        cache.key(str(source), st.st_size, st.st_mtime_ns, PROFILES["aacplus"]), PROFILES["aacplus"]
    )
    with httpx.stream("GET", url, timeout=60) as response:
        next(response.iter_raw())
    deadline = time.monotonic() + ABANDON_AFTER + 10
    while time.monotonic() < deadline and parts(instance.backend.data_dir):
        time.sleep(0.05)
    assert not parts(instance.backend.data_dir) and not entry.exists()
    assert not transcode_lines(server, "09 Very Long")
    body = httpx.get(url, timeout=120).content  # the next listener gets a fresh, whole transcode
    assert abs(audiokit.decode(body).seconds - VERY_LONG_SECONDS) <= VERY_LONG_SECONDS * 0.01
    assert entry.read_bytes() == body
    server.stop()


def test_sigterm_lets_a_stream_in_progress_finish(instance: Instance) -> None:
    # a grace long enough for the transcode on a loaded machine: the test is about draining
    server = instance.start(env={"AIRWAVE_SHUTDOWN_GRACE": "120"})
    url = instance.url(server, "mp3-hifi", "01 Long.flac")
    with httpx.stream("GET", url, timeout=60) as response:
        chunks = response.iter_raw()
        body = next(chunks)
        server.process.send_signal(signal.SIGTERM)  # graceful: requests in flight may finish
        body += b"".join(chunks)
    assert abs(audiokit.decode(body).seconds - LONG_SECONDS) <= LONG_SECONDS * 0.01
    assert server.process.wait(60) == 0
    assert not parts(instance.backend.data_dir)


def test_sigterm_abandons_a_transcode_nobody_listens_to(instance: Instance) -> None:
    server = instance.start()
    with httpx.stream("GET", instance.url(server, "mp3", "01 Long.flac"), timeout=60) as response:
        next(response.iter_raw())
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(20) == 0
    assert not parts(instance.backend.data_dir)
    for entry in [
        e for e in entries(instance.backend.data_dir) if e.suffix == ".mp3"
    ]:  # what is there is whole
        assert (
            abs(audiokit.decode(entry.read_bytes()).seconds - LONG_SECONDS) <= LONG_SECONDS * 0.01
        )


def test_two_servers_share_one_transcode(instance: Instance) -> None:
    one, two = instance.start(), instance.start()
    bodies: list[bytes] = []

    def fetch(server: Server) -> None:
        bodies.append(httpx.get(instance.url(server, "mp3", "02 Short.flac"), timeout=60).content)

    threads = [threading.Thread(target=fetch, args=(s,)) for s in (one, two, one, two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(bodies) == 4
    for body in bodies:
        assert abs(audiokit.decode(body).seconds - SHORT_SECONDS) <= SHORT_SECONDS * 0.01
    assert len({body[-50_000:] for body in bodies}) == 1
    time.sleep(0.2)
    assert len(transcode_lines(one, "02 Short") + transcode_lines(two, "02 Short")) == 1
    one.stop()
    two.stop()


def test_cache_stays_within_its_bound_and_the_cli_shows_and_clears_it(instance: Instance) -> None:
    data_dir = instance.backend.data_dir
    server = instance.start(env={"AIRWAVE_TRANSCODE_CACHE_MB": "1"})
    for n in range(3, 9):
        body = httpx.get(instance.url(server, "mp3-hifi", f"0{n} Short.flac"), timeout=60).content
        assert abs(audiokit.decode(body).seconds - SHORT_SECONDS) <= SHORT_SECONDS * 0.01
    deadline = time.monotonic() + 10
    while (
        time.monotonic() < deadline
        and sum(p.stat().st_size for p in entries(data_dir)) > 1024 * 1024
    ):
        time.sleep(0.05)
    assert sum(p.stat().st_size for p in entries(data_dir)) <= 1024 * 1024
    newest = instance.url(server, "mp3-hifi", "08 Short.flac")
    assert httpx.get(newest).headers.get("content-length")  # the most recent survives eviction
    shown = server.cli("cache")
    assert shown.returncode == 0 and "entries" in shown.stdout and "MiB" in shown.stdout
    cleared = server.cli("cache", "clear")
    assert cleared.returncode == 0 and "deleted" in cleared.stdout
    assert not entries(data_dir) and not parts(data_dir)
    assert " 0 entries" in server.cli("cache").stdout
    assert httpx.get(newest, timeout=60).status_code == 200  # produced again on demand
    server.stop()


def _stream_and_watch(url: str, pid: int, **kwargs: Any) -> tuple[int, int]:
    """Bytes received and the server's largest RSS growth (KiB) while they streamed."""
    before = audiokit.rss_kib(pid)
    peak, received, next_look = before, 0, 0
    with httpx.stream("GET", url, timeout=120, **kwargs) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw(1024 * 1024):
            received += len(chunk)
            if received >= next_look:
                peak = max(peak, audiokit.rss_kib(pid))
                next_look += 32 * 1024 * 1024
    return received, peak - before


@pytest.fixture(scope="module")
def sparse(instance: Instance, tmp_path_factory: pytest.TempPathFactory) -> int:
    path = instance.library / "Huge" / "huge.mp3"  # served files must lie in the library
    path.parent.mkdir(exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(GIB)
    return audiokit.clone_track(instance.backend, instance.tracks["02 Short.flac"], path)


def test_a_1gb_file_is_served_with_flat_memory(instance: Instance, sparse: int) -> None:
    server = instance.start()
    url = instance.url(server, "original", sparse)
    httpx.get(url, headers={"Range": "bytes=0-1023"})  # warm up the code path
    received, growth = _stream_and_watch(url, server.process.pid)
    assert received == GIB
    assert growth < 20 * 1024, f"server RSS grew by {growth} KiB"
    tail = httpx.get(url, headers={"Range": f"bytes={GIB - 4096}-"})
    assert tail.status_code == 206 and tail.content == bytes(4096)
    server.stop()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, trustme.CA]:
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    return cert, key, ca


def test_tls_serves_through_the_chunked_path(
    instance: Instance, sparse: int, pki: tuple[Path, Path, Any]
) -> None:
    import ssl

    cert, key, ca = pki
    server = instance.start("--tls-cert", str(cert), "--tls-key", str(key))
    context = ssl.create_default_context()
    ca.configure_trust(context)
    source = Path(instance.source("03 Short.flac"))
    url = instance.url(server, "original", "03 Short.flac")
    assert httpx.get(url, verify=context).content == source.read_bytes()
    size = source.stat().st_size
    middle = httpx.get(
        url, verify=context, headers={"Range": f"bytes={size // 2}-{size // 2 + 999}"}
    )
    assert middle.status_code == 206 and middle.content == audiokit.file_bytes(
        source, size // 2, 1000
    )
    received, growth = _stream_and_watch(
        instance.url(server, "original", sparse), server.process.pid, verify=context
    )
    assert received == GIB and growth < 40 * 1024, f"server RSS grew by {growth} KiB"
    server.stop()
