"""The transcode cache when things go wrong outside it: a full disk, a server killed mid-transcode.

SQLite only: what they exercise lives in files. The disk-full tests mount a small tmpfs as the data
directory (root only; they skip elsewhere, CI runs as root).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import audiokit
import httpx
import pytest
from support import Backend, Server

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only

SECONDS = 6.0
LONG_SECONDS = 90.0
TMPFS_BYTES = 32 * 1024 * 1024


@dataclass
class Instance:
    backend: Backend
    tracks: dict[str, int]
    alice: int

    def url(self, server: Server, encoding: str, track: str) -> str:
        token = audiokit.signer(self.backend).audio_token(
            listener_id=self.alice,
            track_id=self.tracks[track],
            encoding=encoding,
            expires_at=audiokit.now() + timedelta(hours=1),
        )
        return f"{server.url}/audio/{token}"


def _make_instance(library: Path, data_dir: Path) -> Instance:
    backend = Backend("sqlite", data_dir)
    tool = Server(backend, env={"AIRWAVE_ANALYZE_AUDIO": "false"})
    assert tool.cli("scan", "--library", str(library)).returncode == 0
    added = tool.cli("user", "add", "alice", "--password-stdin", input="correct horse battery\n")
    assert added.returncode == 0
    return Instance(backend, audiokit.track_ids(backend), audiokit.listener_id(backend, "alice"))


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("failures-library")
    album = root / "Failing" / "Disks (2024)"
    for n in (1, 2):
        audiokit.write_audio(album / f"0{n} Short.flac", audiokit.music(SECONDS, seed=n))
    audiokit.write_audio(album / "03 Long.flac", audiokit.music(LONG_SECONDS, seed=3))
    return root


@pytest.fixture(scope="module")
def small_disk(tmp_path_factory: pytest.TempPathFactory, library: Path) -> Iterator[Instance]:
    """An instance whose data directory is a 32 MiB tmpfs."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    data_dir = tmp_path_factory.mktemp("tmpfs-data")
    options = f"size={TMPFS_BYTES},mode=0700"
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(data_dir)],
        check=False,
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield _make_instance(library, data_dir)
    finally:
        subprocess.run(["umount", "-l", str(data_dir)], check=False)


def _fill(data_dir: Path, leave: int = 0) -> Path:
    """Take all the free space but `leave` bytes; returns the filler to delete."""
    filler = data_dir / "filler"
    free = os.statvfs(data_dir).f_bavail * os.statvfs(data_dir).f_frsize
    chunk = b"\0" * (1024 * 1024)
    with open(filler, "wb", buffering=0) as out:
        remaining = max(0, free - leave)
        try:
            while remaining > 0:
                remaining -= out.write(chunk[: min(len(chunk), remaining)])
        except OSError as exc:
            assert exc.errno == errno.ENOSPC and leave == 0, exc  # only when filling up completely
    return filler


def _parts(data_dir: Path) -> list[Path]:
    return [p for p in audiokit.cache_files(data_dir) if p.suffix == ".part"]


def _assert_no_space_answer(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["errorString"] == "SERVER_ERROR" and "disk space" in body["message"]
    assert int(response.headers["retry-after"]) > 0


def test_full_disk_gets_a_quick_clear_error_and_transcodes_once_space_is_back(
    small_disk: Instance,
) -> None:
    server = Server(small_disk.backend).start()
    try:
        url = small_disk.url(server, "aacplus", "01 Short.flac")
        filler = _fill(small_disk.backend.data_dir)
        for _ in range(2):  # the second used to wait 60 s for the lock the first leaked, then 500
            started = time.monotonic()
            _assert_no_space_answer(httpx.get(url, timeout=15))
            assert time.monotonic() - started < 5
        filler.unlink()
        started = time.monotonic()
        response = httpx.get(url, timeout=30)
        assert response.status_code == 200
        assert abs(audiokit.decode(response.content).seconds - SECONDS) <= SECONDS * 0.02
        assert time.monotonic() - started < 15
    finally:
        server.stop()


def test_disk_filling_up_during_a_transcode_gets_a_clear_error(small_disk: Instance) -> None:
    server = Server(small_disk.backend).start()
    try:
        url = small_disk.url(server, "mp3-hifi", "02 Short.flac")  # ~240 KB: more than the room
        filler = _fill(small_disk.backend.data_dir, leave=64 * 1024)
        started = time.monotonic()
        _assert_no_space_answer(httpx.get(url, headers={"Range": "bytes=0-999"}, timeout=15))
        assert time.monotonic() - started < 5
        assert server.wait_for_log(lambda line: '"transcode failed"' in line and "no space" in line)
        assert not _parts(small_disk.backend.data_dir)
        filler.unlink()
        response = httpx.get(url, timeout=30)
        assert response.status_code == 200
        assert abs(audiokit.decode(response.content).seconds - SECONDS) <= SECONDS * 0.02
    finally:
        server.stop()


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory, library: Path) -> Instance:
    return _make_instance(library, tmp_path_factory.mktemp("airwave"))


def _killed_mid_transcode(instance: Instance) -> None:
    """Start a server and kill -9 it mid-transcode; `airwave cache` shows the live write first."""
    server = Server(instance.backend).start()
    url = instance.url(server, "aacplus", "03 Long.flac")
    with httpx.stream("GET", url, timeout=60) as response:
        assert response.status_code == 200 and next(response.iter_raw())
        assert server.process is not None
        workers = _descendants(server.process.pid)
        for pid in workers:  # freeze the transcode where it is; the server keeps holding the lock
            os.kill(pid, signal.SIGSTOP)
        try:
            live = server.cli("cache")
        finally:
            server.stop(signal.SIGKILL)
            for pid in workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert live.returncode == 0 and "; 1 being written" in live.stdout, live.stdout
    assert "left by a stopped server" not in live.stdout
    assert _parts(instance.backend.data_dir), "the transcode should have been under way"


def test_cache_tells_a_killed_transcode_from_a_live_one_and_clear_deletes_it(
    instance: Instance,
) -> None:
    _killed_mid_transcode(instance)
    shown = instance_cli(instance, "cache")
    assert shown.returncode == 0 and "; 0 being written" in shown.stdout, shown.stdout
    assert "1 partial transcodes left by a stopped server" in shown.stdout
    assert _parts(instance.backend.data_dir), "showing the cache deletes nothing"
    assert instance_cli(instance, "cache", "clear").returncode == 0
    assert not _parts(instance.backend.data_dir)
    assert "left by" not in instance_cli(instance, "cache").stdout


def test_server_start_deletes_what_a_killed_transcode_left(instance: Instance) -> None:
    _killed_mid_transcode(instance)
    server = Server(instance.backend).start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _parts(instance.backend.data_dir):
            time.sleep(0.05)
        assert not _parts(instance.backend.data_dir)
        locks = [p for p in audiokit.cache_files(instance.backend.data_dir) if p.suffix == ".lock"]
        assert not locks
    finally:
        server.stop()


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (the transcoding workers of a server)."""
    found, queue = [], [pid]
    while queue:
        for task in Path(f"/proc/{queue.pop()}/task").glob("*"):
            with contextlib.suppress(OSError):
                children = [int(c) for c in (task / "children").read_text().split()]
                found += children
                queue += children
    return found


def instance_cli(instance: Instance, *args: str) -> subprocess.CompletedProcess[str]:
    return Server(instance.backend).cli(*args)
