"""`airwave backup` of a server under write load, `airwave restore` onto a fresh instance."""

from __future__ import annotations

import io
import secrets
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import Api, Backend, Server, unique, wait_indexed

PASSWORD = "correct horse battery"
ENV = {"AIRWAVE_FRAGMENT_LIMIT": "100000", "AIRWAVE_TIERS__FREE__MAX_STATIONS": "250"}


@dataclass
class Acked:
    """One listener's writes, each stamped with the moment the server acknowledged it."""

    username: str
    registered: float
    station: tuple[str, float] | None = None
    bookmark: tuple[str, float] | None = None


@dataclass
class Writer:
    """A thread doing acknowledged writes over HTTP until told to stop."""

    server: Server
    music_ids: list[str]
    done: list[Acked] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            api = self.server.client()
            try:
                name = unique("w")
                api.register(name, PASSWORD)
                acked = Acked(name, time.monotonic())
                self.done.append(acked)
                music_id = self.music_ids[i % len(self.music_ids)]
                station = api.ok("v1/station/createStation", {"musicId": music_id})
                acked.station = (station["stationId"], time.monotonic())
                mark = api.ok("v1/bookmark/add", {"musicId": music_id})
                acked.bookmark = (mark["bookmarkId"], time.monotonic())
            except Exception as exc:  # noqa: BLE001  # reported by the test, not lost in the thread
                self.failures.append(repr(exc))
                return
            finally:
                api.http.close()
            i += 1


@pytest.fixture(scope="module")
def library_args(small_demo_library: Path) -> list[str]:
    return ["--open-registration", "--library", str(small_demo_library)]


def track_ids(api: Api) -> list[str]:
    album = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AL"]})["items"][0]
    return [t["musicId"] for t in api.ok("v1/music/album", {"token": album["musicId"]})["tracks"]]


def restore(backend: Backend, archive: Path, *extra: str) -> Any:
    return Server(backend).cli("restore", str(archive), *extra)


def test_backup_under_write_load_restores_everything_acknowledged_before_it(
    start_server: Callable[..., Server],
    make_backend: Callable[[], Backend],
    library_args: list[str],
    tmp_path: Path,
) -> None:
    source = start_server(*library_args, env=ENV)
    wait_indexed(source)
    keeper = source.client()
    keeper.register("keeper", PASSWORD)
    music_ids = track_ids(keeper)
    station = keeper.ok("v1/station/createStation", {"musicId": music_ids[0]})["stationId"]
    tracks = keeper.ok("v1/playlist/getFragment", {"stationId": station, "audioFormat": "mp3"})[
        "tracks"
    ]
    audio_path = httpx.URL(tracks[0]["audioURL"]).path  # signed by the source's key
    assert httpx.head(source.url + audio_path).status_code == 200

    writer = Writer(source, music_ids)
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while len(writer.done) < 4 and not writer.failures and time.monotonic() < deadline:
            time.sleep(0.05)
        archive = tmp_path / "airwave-backup.tar.gz"
        started = time.monotonic()
        made = source.cli("backup", "--out", str(archive))
        finished = time.monotonic()
        assert made.returncode == 0, made.stderr
        during = len(writer.done)
        while len(writer.done) < during + 2 and not writer.failures and time.monotonic() < deadline:
            time.sleep(0.05)  # writes go on after the backup
    finally:
        writer.stop.set()
        thread.join(30)
    assert not writer.failures, writer.failures
    before = [a for a in writer.done if a.registered < started]
    assert len(before) >= 4 and len(writer.done) > len(before)
    assert f"backed up the {source.backend.kind} database" in made.stdout
    source.stop()

    target = make_backend()
    if source.backend.pg is not None:
        source.backend.pg.drop()  # the original is lost; the backup goes into a fresh schema
    restored = restore(target, archive)
    assert restored.returncode == 0, restored.stderr
    assert "restored the" in restored.stdout
    server = start_server(*library_args, env=ENV, backend=target)

    # the URL signed before the backup verifies with the restored keys
    assert httpx.head(server.url + audio_path).status_code == 200
    again = server.client()
    again.login("keeper", PASSWORD)
    assert station in [s["stationId"] for s in again.ok("v1/station/getStations", {})["stations"]]
    for acked in before:
        api = server.client()
        api.login(acked.username, PASSWORD)  # the old password hash came along
        stations = [s["stationId"] for s in api.ok("v1/station/getStations", {})["stations"]]
        marks = [b["bookmarkId"] for b in api.ok("v1/bookmark/getBookmarks", {})["tracks"]]
        if acked.station and acked.station[1] < started:
            assert acked.station[0] in stations, acked
        if acked.bookmark and acked.bookmark[1] < started:
            assert acked.bookmark[0] in marks, acked
    # a write acknowledged after the backup finished cannot be in it
    late = [a for a in writer.done if a.registered > finished]
    for acked in late:
        assert (
            server.client()
            .call("v1/auth/login", {"username": acked.username, "password": PASSWORD})
            .status_code
            != 200
        )
    # the restored database takes new writes (ids and sequences carried over)
    fresh = server.client()
    fresh.register(unique("after"), PASSWORD)
    fresh.ok("v1/station/createStation", {"musicId": music_ids[1]})


def _instance_with(backend: Backend, *usernames: str) -> Server:
    """An instance (not serving) with these accounts, made through the CLI."""
    instance = Server(backend)
    for name in usernames:
        made = instance.cli("user", "add", name, "--password-stdin", input=PASSWORD + "\n")
        assert made.returncode == 0, made.stderr
    return instance


def test_restore_refuses_an_instance_with_a_database_unless_forced(
    make_backend: Callable[[], Backend], tmp_path: Path
) -> None:
    instance = _instance_with(make_backend(), "first")
    archive = tmp_path / "first.tar.gz"
    assert instance.cli("backup", "--out", str(archive)).returncode == 0
    _instance_with(instance.backend, "second")

    refused = restore(instance.backend, archive)
    assert refused.returncode == 1
    assert "already" in refused.stderr and "--force" in refused.stderr
    assert "second" in instance.cli("user", "list").stdout  # untouched
    forced = restore(
        instance.backend, archive, "--force"
    )  # back to the moment of the backup, same place
    assert forced.returncode == 0, forced.stderr
    listed = instance.cli("user", "list").stdout
    assert "first" in listed and "second" not in listed


def _rewrite(archive: Path, out: Path, change: Callable[[str, bytes], bytes]) -> None:
    """Copy an archive member by member, passing each member's bytes through `change`."""
    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        for member in src:
            handle = src.extractfile(member)
            assert handle is not None
            data = change(member.name, handle.read())
            member.size = len(data)
            dst.addfile(member, io.BytesIO(data))


def test_damaged_archives_are_refused_with_a_clear_error(
    make_backend: Callable[[], Backend], tmp_path: Path
) -> None:
    server = _instance_with(make_backend(), unique())
    archive = tmp_path / "good.tar.gz"
    assert server.cli("backup", "--out", str(archive)).returncode == 0

    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    altered = tmp_path / "altered.tar.gz"
    _rewrite(
        archive,
        altered,
        lambda name, data: (
            data[:-1] + bytes([data[-1] ^ 1]) if name.startswith("database/") else data
        ),
    )
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(secrets.token_bytes(4096))
    cases = {
        truncated: "is not an Airwave backup or is damaged",
        altered: "does not match its checksum",
        junk: "is not an Airwave backup or is damaged",
        tmp_path / "absent.tar.gz": "no such file",
    }
    for path, message in cases.items():
        target = make_backend()
        answer = restore(target, path)
        assert answer.returncode == 1, (path, answer.stdout)
        assert message in answer.stderr, (path, answer.stderr)
        assert "Traceback" not in answer.stderr
        assert not (target.data_dir / "airwave.db").exists()  # nothing was touched
        assert not (target.data_dir / "url-signing-keys.json").exists()
