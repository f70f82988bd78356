"""Files the scanner and the server read stay inside the library: links out, FIFOs, devices and
huge sidecars are reported and skipped; worker processes end with the scan that started them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from subprocess import Popen
from typing import IO

import audiokit
import httpx
import media
import pytest
from support import Api, Backend, Server, assert_error

SECRET = "SECRET-SIGNING-KEY-7f3a9c"
OUTSIDE_RED = (220, 20, 20)
INSIDE_BLUE = (20, 60, 210)
NO_ANALYSIS = {"AIRWAVE_ANALYZE_AUDIO": "false"}


def build(base: Path) -> tuple[Path, Path]:
    """A library with every kind of link and odd file, under a root that is itself a symlink."""
    outside = base / "elsewhere"
    outside.mkdir()
    (outside / "url-signing-keys.json").write_text(f'{{"keys": ["{SECRET}"]}}\n')
    (outside / "red.jpg").write_bytes(media.image_bytes(OUTSIDE_RED))
    media.tag(
        media.encode(outside / "stray.flac", 1.0),
        title="Stray Outside",
        artist="Leaker",
        album="Out",
    )
    (outside / "more").mkdir()
    media.tag(
        media.encode(outside / "more" / "01 Far.mp3", 1.0),
        title="Far Away",
        artist="Leaker",
        album="Out",
    )

    real = base / "music-real"
    album = real / "Leaker" / "Exposed"
    for n, ext in enumerate([".flac", ".mp3", ".ogg", ".flac"], start=1):
        media.tag(
            media.encode(album / f"0{n} Song {n}{ext}", 1.0, 300 + 50 * n),
            title=f"Exposed {n}",
            artist="Leaker",
            album="Exposed",
            tracknumber=str(n),
        )
    os.symlink(outside / "url-signing-keys.json", album / "01 Song 1.lrc")
    os.symlink("/dev/zero", album / "02 Song 2.txt")
    os.mkfifo(album / "03 Song 3.lrc")
    (album / "04 Song 4.lrc").write_text("[00:01.00]" + "x" * (1 << 20) + "\n")
    os.symlink(outside / "red.jpg", album / "cover.jpg")
    os.symlink(outside / "red.jpg", real / "Leaker" / "artist.jpg")
    os.symlink(outside / "stray.flac", album / "05 Stray.flac")
    os.symlink(outside / "more", real / "Leaker" / "Linked Out")

    # links that stay inside the library keep working: a shared covers folder and shared lyrics
    shared = real / "Shared"
    (shared / "covers").mkdir(parents=True)
    (shared / "covers" / "blue.jpg").write_bytes(media.image_bytes(INSIDE_BLUE))
    (shared / "lyrics").mkdir()
    (shared / "lyrics" / "inside.lrc").write_text("[00:01.00]inside words\n")
    kept = real / "Keeper" / "Safe"
    media.tag(
        media.encode(kept / "01 Inside.flac", 1.0),
        title="Inside Song",
        artist="Keeper",
        album="Safe",
    )
    media.tag(
        media.encode(kept / "02 Swapped.flac", 1.0),
        title="Swapped Later",
        artist="Keeper",
        album="Safe",
    )
    os.symlink("../../Shared/covers/blue.jpg", kept / "cover.jpg")
    os.symlink(shared / "lyrics" / "inside.lrc", kept / "01 Inside.lrc")

    root = base / "music"
    os.symlink(real, root)  # the configured root is itself a symlink
    return root, outside


def tracks_by_title(api: Api, album_query: str) -> dict[str, dict]:
    item = api.ok("v1/search/fullSearch", {"query": album_query, "types": ["AL"]})["items"][0]
    album = api.ok("v1/music/album", {"token": item["musicId"]})
    return {t["songTitle"]: t for t in album["tracks"]} | {"": album}


def wait_for_scan(server: Server, scans: int = 1, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = httpx.get(server.url + "/healthz").json().get("library", {})
        if status.get("scans", 0) >= scans and status.get("state") == "idle":
            return status
        time.sleep(0.1)
    raise AssertionError("scan did not finish")


def test_nothing_outside_the_library_is_read_or_served(
    make_backend, start_server, tmp_path: Path
) -> None:
    root, outside = build(tmp_path)
    backend = make_backend()
    scan = Server(backend, env=NO_ANALYSIS).cli("scan", "--library", str(root))
    assert scan.returncode == 0, scan.stderr
    skipped = scan.stderr.replace("\n", " ")
    for name, reason in [
        ("01 Song 1.lrc", "outside the library"),
        ("02 Song 2.txt", "a device"),
        ("03 Song 3.lrc", "a FIFO"),
        ("04 Song 4.lrc", "too large"),
        ("cover.jpg", "outside the library"),
        ("artist.jpg", "outside the library"),
        ("05 Stray.flac", "outside the library"),
        ("Linked Out", "outside the library"),
    ]:
        assert name in skipped and reason in skipped, (name, scan.stderr)
    assert "8 skipped" in scan.stdout, scan.stdout

    server = start_server(
        "--library", str(root), "--open-registration", backend=backend, env=NO_ANALYSIS
    )
    status = wait_for_scan(server)
    assert status["last"]["errors"] == 8
    assert server.wait_for_log(lambda line: "skipped file" in line and "01 Song 1.lrc" in line)
    api = server.client()
    api.register("auditor")

    exposed = tracks_by_title(api, "exposed")
    assert sorted(t for t in exposed if t) == ["Exposed 1", "Exposed 2", "Exposed 3", "Exposed 4"]
    for title in ("Exposed 1", "Exposed 2", "Exposed 3", "Exposed 4"):
        assert_error(
            api.call("v1/music/fullLyrics", {"trackUid": exposed[title]["musicId"]}),
            404,
            "NOT_FOUND",
        )
    assert exposed[""]["art"] == []  # the cover link out of the library is no cover
    for kind in ("AR", "AL", "TR"):
        assert not api.ok("v1/search/fullSearch", {"query": "far away", "types": [kind]})["items"]
        assert not api.ok("v1/search/fullSearch", {"query": "stray outside", "types": [kind]})[
            "items"
        ]
    everything = str(api.ok("v1/music/album", {"token": exposed[""]["musicId"]}))
    assert SECRET not in everything
    leaker = api.ok("v1/search/fullSearch", {"query": "leaker", "types": ["AR"]})["items"][0]
    artist = api.ok("v1/music/artist", {"token": leaker["musicId"]})
    assert not artist["art"] or "/mosaic/" in artist["art"][0]["url"]  # not the red picture

    # links inside the library (and the symlinked root) work
    safe = tracks_by_title(api, "safe")
    lyrics = api.ok("v1/music/fullLyrics", {"trackUid": safe["Inside Song"]["musicId"]})
    assert lyrics["syncedLines"] == [{"time": 1.0, "text": "inside words"}]
    colour = bytes.fromhex(safe[""]["dominantColor"])
    assert safe[""]["art"] and colour[2] > 150 and colour[0] < 60, (
        colour
    )  # blue, from the shared folder
    assert httpx.get(safe[""]["art"][0]["url"]).status_code == 200

    # a scanned file later swapped for a link out of the library is not served
    ids = audiokit.track_ids(backend)
    signer = audiokit.signer(backend)
    listener = audiokit.listener_id(backend, "auditor")

    def audio_url(name: str, encoding: str = "original") -> str:
        token = signer.audio_token(
            listener_id=listener,
            track_id=ids[name],
            encoding=encoding,
            expires_at=audiokit.now() + timedelta(minutes=5),
            spin_id=None,
        )
        return f"{server.url}/audio/{token}"

    swapped = root / "Keeper" / "Safe" / "02 Swapped.flac"
    assert httpx.get(audio_url("02 Swapped.flac")).content == swapped.read_bytes()
    os.replace(_link(outside / "url-signing-keys.json", swapped.parent), swapped)
    for encoding in ("original", "mp3"):
        refused = httpx.get(audio_url("02 Swapped.flac", encoding))
        assert SECRET not in refused.text
        assert_error(refused, 404, "NOT_FOUND")
    blue = root / "Shared" / "covers" / "blue.jpg"
    os.replace(_link(outside / "red.jpg", blue.parent), blue)
    assert httpx.get(safe[""]["art"][1]["url"]).status_code == 404  # not rendered before the swap
    assert server.wait_for_log(
        lambda line: "refused library file" in line and "02 Swapped.flac" in line
    )


def test_a_server_without_library_folders_serves_only_from_scanned_folders(
    make_backend, start_server, tmp_path: Path
) -> None:
    root = tmp_path / "music"
    album = root / "Only" / "Scanned"
    audiokit.write_audio(album / "01 Kept.flac", audiokit.music(2.0, seed=1))
    audiokit.write_audio(album / "02 Swapped.flac", audiokit.music(2.0, seed=2))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "private.txt").write_text(SECRET)
    backend = make_backend()
    scan = Server(backend, env=NO_ANALYSIS).cli("scan", "--library", str(root))
    assert scan.returncode == 0, scan.stderr
    server = start_server("--open-registration", backend=backend, env=NO_ANALYSIS)
    server.client().register("visitor")
    ids = audiokit.track_ids(backend)
    signer = audiokit.signer(backend)
    listener = audiokit.listener_id(backend, "visitor")

    def fetch(name: str) -> httpx.Response:
        token = signer.audio_token(
            listener_id=listener,
            track_id=ids[name],
            encoding="original",
            expires_at=audiokit.now() + timedelta(minutes=5),
            spin_id=None,
        )
        return httpx.get(f"{server.url}/audio/{token}")

    assert fetch("01 Kept.flac").content == (album / "01 Kept.flac").read_bytes()
    swapped = album / "02 Swapped.flac"
    os.replace(_link(outside / "private.txt", album), swapped)
    refused = fetch("02 Swapped.flac")
    assert SECRET not in refused.text
    assert_error(refused, 404, "NOT_FOUND")


def _link(target: Path, directory: Path) -> Path:
    """A fresh symlink to target in directory, under a temporary name (to replace a file with)."""
    link = directory / f".link-{time.monotonic_ns()}"
    os.symlink(target, link)
    return link


def test_watch_skips_links_out_of_the_library(start_server, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    root = tmp_path / "watched"
    media.tag(
        media.encode(root / "First" / "Album" / "01 Early.mp3", 1.0),
        title="Early",
        artist="First",
        album="Album",
    )
    server = start_server("--library", str(root), "--watch", "--open-registration", env=NO_ANALYSIS)
    wait_for_scan(server)
    api = server.client()
    api.register("watcher")
    staging = tmp_path / "staging"
    media.tag(
        media.encode(staging / "01 Later.flac", 1.0),
        title="Arrived Later",
        artist="Second",
        album="Album",
    )
    os.symlink(outside / "secret.txt", staging / "01 Later.txt")
    os.mkfifo(staging / "01 Later.lrc")
    os.rename(staging, root / "Second")
    deadline = time.monotonic() + 30
    while not api.ok("v1/search/fullSearch", {"query": "arrived later", "types": ["TR"]})["items"]:
        assert time.monotonic() < deadline, "the watcher never scanned the new file"
        time.sleep(0.3)
    status = wait_for_scan(server, 2)
    assert status["last"]["errors"] == 2
    track = api.ok("v1/search/fullSearch", {"query": "arrived later", "types": ["TR"]})["items"][0]
    assert_error(api.call("v1/music/fullLyrics", {"trackUid": track["musicId"]}), 404, "NOT_FOUND")


# ---------------------------------------------------------------- workers die with the scan


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait() is missing


def _descendants(pid: int) -> set[int]:
    found = set()
    for child in _children(pid):
        found |= {child} | _descendants(child)
    return found


def _kill_once_helpers_run(
    process: subprocess.Popen, count: int, what: str, sig: int = signal.SIGKILL
) -> None:
    """Signal `process` (SIGKILL) once `count` processes run under it; every one of them must end
    within 5 s of its end (and is killed here if not, so that a failure leaves nothing behind)."""
    helpers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(helpers) < count:
            assert process.poll() is None and time.monotonic() < deadline, (
                f"the {what} ended before its helpers started"
            )
            helpers = {p for p in _descendants(process.pid) if _alive(p)}
            time.sleep(0.02)
        process.send_signal(sig)
        process.wait(30)
        deadline = time.monotonic() + 5
        while any(_alive(p) for p in helpers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in helpers if _alive(p)], f"helper processes outlived the {what}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for helper in helpers:
            if _alive(helper):
                os.kill(helper, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_the_scan_ends_its_workers(tmp_path: Path) -> None:
    backend = Backend("sqlite", tmp_path / "data")
    root = tmp_path / "many"
    template = media.encode(tmp_path / "template.mp3", 0.2)
    data = template.read_bytes()
    for i in range(1200):
        target = root / f"Artist {i % 20}" / f"{i:04d} Song.mp3"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    env = {**os.environ, **backend.env, **NO_ANALYSIS}
    scan = subprocess.Popen(
        [sys.executable, "-m", "airwave", "scan", "--library", str(root), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _kill_once_helpers_run(scan, 2, "scan")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    ("sig", "workers", "helpers"),
    [(signal.SIGKILL, 1, 3), (signal.SIGTERM, 2, 5)],
    ids=["killed", "stopped"],  # (two workers, their forkservers, an analyser at least)
)
def test_a_server_killed_or_stopped_ends_its_forkserver_and_the_analysers_forked_from_it(
    tmp_path: Path, sig: int, workers: int, helpers: int
) -> None:
    """A server forks its helpers from a forkserver of its own, whose children held it open, so
    that a server killed, or even stopped as a service manager stops it, while its pool was
    analysing left the forkserver and the analysers behind for good."""
    server = _serve_a_library_to_analyse(tmp_path, workers, subprocess.DEVNULL)
    _kill_once_helpers_run(server, helpers, "server", sig)


def _serve_a_library_to_analyse(tmp_path: Path, workers: int, out: int | IO[bytes]) -> Popen:
    """`serve` on a fresh library of 60 twenty-second tracks: it scans, then analyses a while."""
    backend = Backend("sqlite", tmp_path / "data")
    template = media.encode(tmp_path / "template.mp3", 20.0)
    for i in range(60):
        target = tmp_path / "music" / f"Artist {i % 6}" / f"{i:02d} Song.mp3"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(template.read_bytes())
    return subprocess.Popen(
        [sys.executable, "-m", "airwave", "serve", "--port", "0", "--workers", str(workers)]
        + ["--no-watch", "--library", str(tmp_path / "music")],
        env={**os.environ, **backend.env},
        stdout=out,
        stderr=subprocess.STDOUT,  # with stdout: the log file, or nowhere
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_the_demo_generator_ends_its_workers(tmp_path: Path) -> None:
    generator = subprocess.Popen(
        [sys.executable, "-m", "airwave", "demo", "--out", str(tmp_path / "demo")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _kill_once_helpers_run(generator, 2, "generator")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_server_stopped_while_analysing_leaves_its_pools_cleaned_up(tmp_path: Path) -> None:
    """A worker process of `serve` ends by os._exit, which skips the multiprocessing finalizers
    that release its analysis pool's semaphores: the resource tracker then cleaned them up and
    warned of leaked semaphores at every stop during an analysis."""
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = _serve_a_library_to_analyse(tmp_path, 2, out)
        _kill_once_helpers_run(server, 5, "server", signal.SIGTERM)
    said = log.read_text(errors="replace")
    assert "server stopped" in said
    assert "leaked" not in said, said[-2000:]
