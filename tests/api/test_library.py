"""The scanner and the catalogue API over a library of tricky, real files."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import media
import pytest
from support import Api, Server, assert_error

LONG = "Ü" + "x" * 200


def build_library(root: Path) -> Path:
    """Files a real collection has: tidy ones and every kind of mess."""
    cover = media.image_bytes((30, 90, 200))
    # a tidy album with a cover file, multi-valued genres, lyrics of three kinds
    album = root / "Nébula Quartet" / "Blue Hours (1998)"
    for n, ext in enumerate([".flac", ".mp3", ".ogg", ".m4a"], start=1):
        media.tag(
            media.encode(album / f"0{n} Hour {n}{ext}", 1.0, 300 + 40 * n),
            title=f"Hour {n}",
            artist="Nébula Quartet",
            album="Blue Hours",
            tracknumber=f"{n}/4",
            date="1998",
            genre=["Jazz", "Fusion"] if n == 1 else "Jazz",
            composer="Ana Ruiz",
            mbid=f"mb-hour-{n}",
            **({"lyrics": "embedded words\nsecond line"} if n == 2 else {}),
        )
    (album / "cover.jpg").write_bytes(cover)
    (album / "03 Hour 3.lrc").write_text(
        "[ar:Nébula Quartet]\n[by:lrc maker]\n[00:01.50]first timed\n[00:03.25]second timed\n"
    )
    (album / "04 Hour 4.txt").write_text("plain text lyrics\n")
    (root / "Nébula Quartet" / "artist.jpg").write_bytes(media.image_bytes((10, 200, 10)))
    # embedded art only; featuring credit; explicit; replay gain
    second = root / "The Static" / "Noise Floor"
    media.tag(
        media.encode(second / "01 Hum.mp3", 1.0),
        title="Hum",
        artist="The Static feat. Guest Voice",
        album="Noise Floor",
        genre="Rock",
        picture=cover,
        explicit=True,
        rg_gain=-6.25,
        tracknumber="1",
    )
    media.tag(
        media.encode(second / "02 Buzz.opus", 1.0),
        title="Buzz",
        artist="the static",
        album="Noise Floor",
        genre="rock",
        tracknumber="2",
    )
    # a compilation with two artists
    comp = root / "Compilations" / "Night Drive"
    media.tag(
        media.encode(comp / "01 A.mp3", 1.0),
        title="Road",
        artist="Nébula Quartet",
        album="Night Drive",
        compilation=True,
        genre="Jazz",
    )
    media.tag(
        media.encode(comp / "02 B.flac", 1.0),
        title="Lights",
        artist="The Static",
        album="Night Drive",
        compilation=True,
        genre="Rock",
    )
    # no tags at all: everything from the path
    media.encode(root / "Pathfinder" / "Found Sounds (2004)" / "07 - Untagged Song.wav", 1.0)
    # ID3v1 only
    v1 = media.encode(root / "Old" / "Timer" / "old.mp3", 1.0)
    with open(v1, "ab") as handle:
        handle.write(
            b"TAG"
            + b"Vintage".ljust(30, b"\0")
            + b"Retro Band".ljust(30, b"\0")
            + b"Dusty".ljust(30, b"\0")
            + b"1979"
            + b"\0" * 28
            + b"\0\x05"
            + bytes([17])
        )
    # unicode and very long names
    media.tag(
        media.encode(root / "東京 Ensemble" / f"{LONG[:80]}" / "01 夜.flac", 1.0),
        title="夜 " + LONG,
        artist="東京 Ensemble",
        album=LONG,
        genre="Ambient",
    )
    # damaged files never stop the scan
    (root / "Broken").mkdir()
    (root / "Broken" / "zero.mp3").write_bytes(b"")
    (root / "Broken" / "garbage.flac").write_bytes(os.urandom(5000))
    (root / "Broken" / "truncated.m4a").write_bytes((album / "04 Hour 4.m4a").read_bytes()[:300])
    # a symlink loop
    os.symlink(root, root / "Broken" / "loop")
    return root


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("music"))


def wait_for_scan(server: Server, scans: int = 1) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = httpx.get(server.url + "/healthz").json().get("library", {})
        if status.get("scans", 0) >= scans and status.get("state") == "idle":
            return status
        time.sleep(0.1)
    raise AssertionError("scan did not finish")


@pytest.fixture(scope="module")
def served(start_server, library: Path) -> tuple[Server, Api]:
    server = start_server("--library", str(library), "--open-registration")
    wait_for_scan(server)
    api = server.client()
    api.register("librarian")
    return server, api


def find(api: Api, query: str, kind: str) -> dict:
    items = [i for i in api.ok("v1/search/fullSearch", {"query": query, "types": [kind]})["items"]]
    assert items, f"nothing found for {query!r}"
    return items[0]


def test_scan_reports_damaged_files_and_keeps_going(served) -> None:
    server, _ = served
    status = wait_for_scan(server)
    assert status["last"]["added"] == 11 and status["last"]["errors"] == 3
    skipped = " ".join(line for line in server.errors if "skipped file" in line)
    for name in ("zero.mp3", "garbage.flac", "truncated.m4a"):
        assert name in skipped


def test_tags_make_the_catalogue(served) -> None:
    _, api = served
    artist = api.ok("v1/music/artist", {"token": find(api, "nebula quartet", "AR")["musicId"]})
    assert artist["name"] == "Nébula Quartet" and artist["trackCount"] == 5
    assert [a["albumTitle"] for a in artist["discography"]] == ["Blue Hours"]
    assert [a["albumTitle"] for a in artist["appearsOn"]] == ["Night Drive"]
    assert artist["genre"][:2] == ["Jazz", "Fusion"]
    album = api.ok("v1/music/album", {"token": artist["discography"][0]["seoToken"]})
    assert [t["songTitle"] for t in album["tracks"]] == ["Hour 1", "Hour 2", "Hour 3", "Hour 4"]
    assert album["year"] == "1998" and album["tracks"][0]["genre"] == ["Jazz", "Fusion"]
    assert {t["composerName"] for t in album["tracks"]} == {"Ana Ruiz"}


def test_featuring_credits_and_case_merge_into_one_artist(served) -> None:
    _, api = served
    static = api.ok("v1/music/artist", {"token": find(api, "the static", "AR")["musicId"]})
    assert static["name"] == "The Static" and static["trackCount"] == 3
    hum = api.ok("v1/music/track", {"token": find(api, "hum", "TR")["musicId"]})
    assert (
        hum["artistName"] == "The Static" and hum["explicit"] is True and hum["fileGain"] == "-6.25"
    )
    assert "explicit lyrics" in hum["focusTraits"]


def test_compilations_belong_to_various_artists(served) -> None:
    _, api = served
    album = api.ok("v1/music/album", {"token": find(api, "night drive", "AL")["musicId"]})
    assert album["isCompilation"] is True and album["artistName"] == "Various Artists"
    assert {t["artistName"] for t in album["tracks"]} == {"Nébula Quartet", "The Static"}


def test_untagged_and_id3v1_files(served) -> None:
    _, api = served
    untagged = api.ok("v1/music/track", {"token": find(api, "untagged song", "TR")["musicId"]})
    assert (
        untagged["artistName"],
        untagged["albumTitle"],
        untagged["trackNum"],
        untagged["year"],
    ) == ("Pathfinder", "Found Sounds", 7, 2004)
    vintage = api.ok("v1/music/track", {"token": find(api, "vintage", "TR")["musicId"]})
    assert (vintage["artistName"], vintage["albumTitle"], vintage["year"], vintage["trackNum"]) == (
        "Retro Band",
        "Dusty",
        1979,
        5,
    )
    assert vintage["genre"] == ["Rock"]  # ID3v1 genre number 17


def test_unicode_and_long_names(served) -> None:
    _, api = served
    hit = find(api, "東京 ensemble", "AR")
    assert hit["name"] == "東京 Ensemble"
    track = api.ok("v1/music/track", {"token": find(api, "夜", "TR")["musicId"]})
    assert track["songTitle"].startswith("夜 Ü") and len(track["albumTitle"]) == len(LONG)


def test_search_is_accent_insensitive_ranked_and_fuzzy(served) -> None:
    _, api = served
    for query in ("Nébula", "nebula", "NEBULA QUARTET", "nebu", "quartet", "nebual quartet"):
        assert find(api, query, "AR")["name"] == "Nébula Quartet", query
    items = api.ok("v1/search/fullSearch", {"query": "hour", "types": ["TR"]})["items"]
    assert [i["name"] for i in items] == ["Hour 1", "Hour 2", "Hour 3", "Hour 4"]
    scores = {
        i["name"]: i["score"] for i in api.ok("v1/search/fullSearch", {"query": "static"})["items"]
    }
    assert scores["The Static"] > 2  # a word match beats any fuzzy one
    ranked = api.ok("v1/search/fullSearch", {"query": "jazz"})["items"]
    assert ranked[0]["type"] == "genre" and ranked[0]["score"] >= 4
    page = api.ok(
        "v1/search/fullSearch", {"query": "hour", "types": ["TR"], "start": 2, "count": 1}
    )["items"]
    assert [i["name"] for i in page] == ["Hour 3"]
    # codes of kinds Airwave has not (clients send CO, PL, ...) are ignored, not refused
    mixed = api.ok("v1/search/fullSearch", {"query": "hour", "types": ["TR", "CO", "PL"]})
    assert mixed["items"] and {i["type"] for i in mixed["items"]} == {"track"}
    assert api.ok("v1/search/fullSearch", {"query": "hour", "types": ["CO"]}) == {"items": []}
    # the older web client's {type: "all", maxItemsPerCategory}: what a station can grow from
    # (albums matched "hour" too), at most that many of each kind
    assert "album" in {
        i["type"] for i in api.ok("v1/search/fullSearch", {"query": "hour"})["items"]
    }
    older = api.ok(
        "v1/search/fullSearch", {"query": "hour", "type": "all", "maxItemsPerCategory": 2}
    )["items"]
    assert [i["name"] for i in older if i["type"] == "track"] == ["Hour 1", "Hour 2"]
    assert {i["type"] for i in older} <= {"artist", "track", "genre"}


def test_v3_search_answers_ids_and_their_annotations(served) -> None:
    server, api = served
    found = api.ok("v3/sod/search", {"query": "nebula", "types": ["ar", "AL", "TR", "CO", "PL"]})
    assert found["results"] and set(found["annotations"]) == set(found["results"])
    artist = found["annotations"][found["results"][0]]
    assert artist["type"] == "AR" and artist["name"] == "Nébula Quartet"
    assert artist["pandoraId"] == found["results"][0] and artist["trackCount"] == 5
    assert artist["icon"]["artUrl"].endswith("/500.jpg") and artist["listenerCount"] == 0
    albums = api.ok("v3/sod/search", {"query": "blue hours", "types": ["AL"]})
    album = albums["annotations"][albums["results"][0]]
    assert album["name"] == "Blue Hours" and album["artistName"] == "Nébula Quartet"
    assert album["trackCount"] == len(album["tracks"]) > 0
    assert album["rightsInfo"]["hasInteractive"] is False  # the free tier plays radio only
    hour = api.ok("v3/sod/search", {"query": "hour 2", "types": ["TR"], "count": 1})
    track = hour["annotations"][hour["results"][0]]
    assert track["name"] == "Hour 2" and isinstance(track["duration"], int)
    assert track["artistId"].startswith("AR:") and track["albumId"].startswith("AL:")
    # shareable paths (on this site) open the web player's page: the artist's, or the album
    assert track["shareableUrlPath"].startswith("/music/")
    page = httpx.get(server.url + track["shareableUrlPath"])
    assert page.status_code == 302 and page.headers["location"].startswith("/#/album/L")
    assert (
        httpx.get(server.url + artist["shareableUrlPath"]).headers["location"]
        == "/#/artist/" + artist["musicId"]
    )
    assert httpx.get(server.url + track["shareableUrlPath"] + "9999").status_code == 404
    genre = api.ok("v3/sod/search", {"query": "jazz", "types": ["SF"]})
    assert genre["annotations"][genre["results"][0]]["type"] == "GE"
    bare = api.ok("v3/sod/search", {"query": "nebula", "types": ["AR"], "annotate": False})
    assert bare["results"] and bare["annotations"] == {}
    assert api.ok("v3/sod/search", {"query": "nebula", "types": ["PL"]}) == {
        "results": [],
        "annotations": {},
    }
    for body in ({"query": "x", "types": "AR"}, {"query": 5}, {"query": "x", "count": 0}):
        assert_error(api.call("v3/sod/search", body), 400, "INVALID_REQUEST")


@pytest.mark.parametrize(
    "body",
    [
        {"query": "x", "types": ["X" * 17]},
        {"query": "x", "count": 0},
        {"query": "x" * 300},
        {"types": ["AR"]},
    ],
)
def test_search_validation(served, body: dict) -> None:
    _, api = served
    assert_error(api.call("v1/search/fullSearch", body), 400, "INVALID_REQUEST")


def test_art_from_cover_file_embedded_picture_artist_image_and_mosaic(served) -> None:
    server, api = served
    album = api.ok("v1/music/album", {"token": find(api, "blue hours", "AL")["musicId"]})
    assert [a["size"] for a in album["art"]] == [90, 130, 500, 640, 1080]
    assert album["dominantColor"] == "1e5ac8"
    small = httpx.get(album["art"][0]["url"])
    assert small.status_code == 200 and small.headers["content-type"] == "image/jpeg"
    assert "immutable" in small.headers["cache-control"]
    assert (
        httpx.get(
            album["art"][0]["url"], headers={"If-None-Match": small.headers["etag"]}
        ).status_code
        == 304
    )
    import io

    from PIL import Image

    assert Image.open(io.BytesIO(small.content)).size == (90, 90)
    noise = api.ok("v1/music/album", {"token": find(api, "noise floor", "AL")["musicId"]})
    assert noise["art"] and httpx.get(noise["art"][2]["url"]).status_code == 200  # embedded picture
    nebula = api.ok("v1/music/artist", {"token": find(api, "nebula", "AR")["musicId"]})
    assert "/mosaic/" not in nebula["art"][0]["url"]  # artist.jpg
    assert (
        Image.open(io.BytesIO(httpx.get(nebula["art"][0]["url"]).content)).getpixel((45, 45))[1]
        > 150
    )
    static = api.ok("v1/music/artist", {"token": find(api, "the static", "AR")["musicId"]})
    assert (
        "/mosaic/" in static["art"][0]["url"]
        and httpx.get(static["art"][1]["url"]).status_code == 200
    )
    assert httpx.get(server.url + "/art/" + "0" * 40 + "/90.jpg").status_code == 404
    assert httpx.get(server.url + "/art/" + "0" * 40 + "/91.jpg").status_code == 404


def test_lyrics_embedded_lrc_and_txt(served) -> None:
    _, api = served
    album = api.ok("v1/music/album", {"token": find(api, "blue hours", "AL")["musicId"]})
    tracks = {t["songTitle"]: t for t in album["tracks"]}
    embedded = api.ok("v1/music/fullLyrics", {"trackUid": tracks["Hour 2"]["musicId"]})
    assert embedded["lines"] == ["embedded words", "second line"]
    timed = api.ok("v1/music/fullLyrics", {"trackUid": tracks["Hour 3"]["pandoraId"]})
    assert timed["syncedLines"] == [
        {"time": 1.5, "text": "first timed"},
        {"time": 3.25, "text": "second timed"},
    ]
    assert timed["credits"] == "lrc maker"
    snippet = api.ok("v1/music/track", {"token": tracks["Hour 3"]["musicId"]})["lyricSnippet"]
    assert snippet["lyricId"] == timed["lyricId"] and snippet["checksum"] == timed["checksum"]
    assert api.ok("v1/music/fullLyrics", {"trackUid": tracks["Hour 4"]["musicId"]})["lines"] == [
        "plain text lyrics"
    ]
    assert_error(
        api.call("v1/music/fullLyrics", {"trackUid": tracks["Hour 1"]["musicId"]}), 404, "NOT_FOUND"
    )


def test_genre_browsing(served) -> None:
    _, api = served
    categories = {c["name"]: c for c in api.ok("v1/music/genrecategories")["categories"]}
    assert {"Jazz", "Rock", "Ambient & New Age"} <= set(categories)
    jazz = api.ok("v1/music/genres", {"token": categories["Jazz"]["token"]})
    names = [s["name"] for s in jazz["stations"]]
    assert names[0] == "Jazz" and "Fusion" in names
    assert (
        jazz["stations"][0]["stationName"] == "Jazz Radio" and jazz["stations"][0]["sampleTracks"]
    )
    assert_error(api.call("v1/music/genres", {"token": "no-such-category"}), 404, "NOT_FOUND")
    by_category_token = api.ok("v1/music/genres", {"categoryToken": categories["Jazz"]["token"]})
    assert by_category_token == jazz  # the name some clients send
    assert_error(api.call("v1/music/genres", {}), 400, "INVALID_REQUEST")


@pytest.mark.parametrize(
    "path, token, status, error",
    [
        ("v1/music/artist", "R999999", 404, "NOT_FOUND"),
        ("v1/music/artist", "L1", 400, "INVALID_PANDORA_TYPE"),
        ("v1/music/album", "garbage", 404, "NOT_FOUND"),
        ("v1/music/track", "AR:1", 400, "INVALID_PANDORA_TYPE"),
        ("v1/music/track", "S99999999999999999", 404, "NOT_FOUND"),
    ],
)
def test_catalogue_lookup_errors(served, path: str, token: str, status: int, error: str) -> None:
    _, api = served
    assert_error(api.call(path, {"token": token}), status, error)


def test_seed_suggestions_need_the_listeners_station(served) -> None:
    _, api = served
    assert_error(
        api.call("v1/search/getSeedSuggestions", {"stationId": "12345"}),
        404,
        "STATION_DOES_NOT_EXIST",
    )


def test_rescan_of_unchanged_library_reads_no_tags(make_backend, library: Path) -> None:
    tool = Server(make_backend(), env={"AIRWAVE_ANALYZE_AUDIO": "false"})
    assert tool.cli("scan", "--library", str(library)).returncode == 0
    result = tool.cli("scan", "--library", str(library))
    assert result.returncode == 0, result.stderr
    assert (
        "0 added, 0 updated, 0 moved, 0 removed, 14 unchanged, 0 skipped (3 known "
        "unreadable); 0 tag reads" in result.stdout
    ), result.stdout
    touched = library / "The Static" / "Noise Floor" / "01 Hum.mp3"
    os.utime(
        touched, (time.time() + 5, time.time() + 5)
    )  # same content, new mtime: hashed, not re-read
    result = tool.cli("scan", "--library", str(library))
    assert "0 tag reads" in result.stdout
    # --full reads every file again (the unreadable ones too) and keeps every track
    result = tool.cli("scan", "--library", str(library), "--full")
    assert result.returncode == 0, result.stderr
    assert (
        "0 added, 11 updated, 0 moved, 0 removed, 0 unchanged, 3 skipped (0 known "
        "unreadable); 14 tag reads" in result.stdout
    ), result.stdout
    result = tool.cli("scan", "--library", str(library))
    assert "14 unchanged, 0 skipped (3 known unreadable); 0 tag reads" in result.stdout


def test_moved_and_vanished_files_keep_their_track_ids(start_server, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    media.tag(
        media.encode(root / "A" / "B" / "01 One.mp3", 1.0),
        title="One",
        artist="A",
        album="B",
        mbid="mb-one",
    )
    media.tag(
        media.encode(root / "A" / "B" / "02 Two.flac", 1.0), title="Two", artist="A", album="B"
    )
    server = start_server("--open-registration")  # the command scans: it holds the library
    assert "2 added" in server.cli("scan", "--library", str(root)).stdout
    api = server.client()
    api.register("mover")
    one, two = find(api, "one", "TR")["musicId"], find(api, "two", "TR")["musicId"]
    # moved (matched by MusicBrainz id) and renamed (matched by tag fingerprint)
    (root / "Elsewhere").mkdir()
    shutil.move(root / "A" / "B" / "01 One.mp3", root / "Elsewhere" / "renamed.mp3")
    shutil.move(root / "A" / "B" / "02 Two.flac", root / "Elsewhere" / "two again.flac")
    result = server.cli("scan", "--library", str(root))
    assert "2 moved" in result.stdout, result.stdout
    assert find(api, "one", "TR")["musicId"] == one and find(api, "two", "TR")["musicId"] == two
    # vanished: gone from the catalogue, back with the same id when the file returns
    shutil.move(root / "Elsewhere" / "renamed.mp3", tmp_path / "away.mp3")
    assert "1 removed" in server.cli("scan", "--library", str(root)).stdout
    assert_error(api.call("v1/music/track", {"token": one}), 404, "NOT_FOUND")
    assert not api.ok("v1/search/fullSearch", {"query": "one", "types": ["TR"]})["items"]
    shutil.move(tmp_path / "away.mp3", root / "back.mp3")
    assert "1 moved" in server.cli("scan", "--library", str(root)).stdout
    assert api.ok("v1/music/track", {"token": one})["songTitle"] == "One"


def test_changed_files_are_reread(start_server, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    path = media.tag(
        media.encode(root / "X" / "Y" / "01 Old.mp3", 1.0), title="Old Title", artist="X", album="Y"
    )
    server = start_server("--open-registration")
    assert "1 added" in server.cli("scan", "--library", str(root)).stdout
    api = server.client()
    api.register("editor")
    track_id = find(api, "old title", "TR")["musicId"]
    media.tag(path, title="New Title", artist="X", album="Y", genre="Blues")
    result = server.cli("scan", "--library", str(root))
    assert "1 updated" in result.stdout and "1 tag reads" in result.stdout
    track = api.ok("v1/music/track", {"token": track_id})
    assert track["songTitle"] == "New Title" and track["genre"] == ["Blues"]
    assert not api.ok("v1/search/fullSearch", {"query": "old", "types": ["TR"]})["items"]
    # the new title is in both full-text indexes: by word and prefix, and misspelt (trigrams)
    for query in ("new title", "titl", "nwe title"):
        assert find(api, query, "TR")["musicId"] == track_id, query


def test_an_interrupted_scan_resumes(make_backend, tmp_path: Path) -> None:
    """Kill the scanner after its first committed batch; the next run reads only the rest."""
    from support import Backend

    backend: Backend = make_backend()
    root = many_files(tmp_path, 1500)
    env = {**os.environ, **backend.env}
    first = subprocess.Popen(
        # what is read and committed is the subject, not sound analysis
        [
            *(sys.executable, "-m", "airwave", "scan", "--library", str(root)),
            *("--workers", "1", "--no-analyze"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    committed = wait_for_first_batch(backend, first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert 0 < committed < 1500, committed
    second = subprocess.run(
        [sys.executable, "-m", "airwave", "scan", "--library", str(root), "--no-analyze"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    reads = int(re.search(r"(\d+) tag reads", second.stdout).group(1))
    assert reads == 1500 - committed, second.stdout


def many_files(tmp_path: Path, count: int) -> Path:
    root = tmp_path / "many"
    template = media.encode(tmp_path / "template.mp3", 0.2)
    for i in range(count):
        target = root / f"Artist {i % 30}" / f"Album {i % 60}" / f"{i:04d} Song.mp3"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, target)
        media.tag(target, title=f"Song {i}", artist=f"Artist {i % 30}", album=f"Album {i % 60}")
    return root


def wait_for_first_batch(backend, process: subprocess.Popen) -> int:  # noqa: ANN001
    """Rows the scan has committed once its first batch is in (0 if it ended first)."""
    from sqlalchemy import text

    from airwave.store.db import Database

    db = Database(backend.pg.url if backend.pg else f"sqlite:///{backend.data_dir / 'airwave.db'}")
    committed = 0
    deadline = time.monotonic() + 60
    try:
        while committed == 0 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
            try:
                with db.read() as session:
                    committed = (
                        session.execute(text("SELECT COUNT(*) FROM library_files")).scalar() or 0
                    )
            except Exception:
                committed = 0
    finally:
        db.dispose()
    return committed


def test_files_changing_during_a_scan(make_backend, tmp_path: Path) -> None:
    """Edits and deletions while a scan runs never break it, and the next scan converges."""
    backend = make_backend()
    root = many_files(tmp_path, 1200)
    env = {**os.environ, **backend.env}
    scan = [
        *(sys.executable, "-m", "airwave", "scan", "--library", str(root)),
        *("--workers", "1", "--no-analyze"),  # the catalogue is the subject, not the sound
    ]
    first = subprocess.Popen(
        scan, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for_first_batch(backend, first)
    edited = next(root.glob("Artist 9/Album 39/1179 Song.mp3"))
    media.tag(
        edited, title="Edited While Scanning", artist="Artist 9", album="Album 39", genre="Changed"
    )
    deleted = next(root.glob("Artist 8/Album 38/1178 Song.mp3"))
    deleted.unlink()
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    second = subprocess.run(scan, env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    server = Server(backend, ["--open-registration"]).start()
    try:
        api = server.client()
        api.register("watcher")
        assert find(api, "edited while scanning", "TR")["name"] == "Edited While Scanning"
        names = [
            i["name"]
            for i in api.ok("v1/search/fullSearch", {"query": "song 1178", "types": ["TR"]})[
                "items"
            ]
        ]
        assert "Song 1178" not in names and "Song 1179" not in names
        assert (
            api.ok("v1/search/fullSearch", {"query": "song 1177", "types": ["TR"]})["items"][0][
                "name"
            ]
            == "Song 1177"
        )
    finally:
        server.stop()


def test_watch_picks_up_new_files(start_server, tmp_path: Path) -> None:
    root = tmp_path / "watched"
    media.tag(
        media.encode(root / "First" / "Album" / "01 Early.mp3", 1.0),
        title="Early",
        artist="First",
        album="Album",
    )
    server = start_server("--library", str(root), "--watch", "--open-registration")
    wait_for_scan(server)
    api = server.client()
    api.register("watcher")
    assert find(api, "early", "TR")["name"] == "Early"
    media.tag(
        media.encode(tmp_path / "staging.flac", 1.0),
        title="Arrived Later",
        artist="Second",
        album="Album",
    )
    (root / "Second" / "Album").mkdir(parents=True)
    shutil.move(tmp_path / "staging.flac", root / "Second" / "Album" / "01 Arrived Later.flac")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if api.ok("v1/search/fullSearch", {"query": "arrived later", "types": ["TR"]})["items"]:
            break
        time.sleep(0.3)
    else:
        raise AssertionError("the watcher never scanned the new file")


def test_genre_counts_follow_the_library(start_server, tmp_path: Path) -> None:
    """A genre's track count, its category and the genres in it count present tracks only, and
    follow a rescan by another process at once (the server keeps counts per catalogue stamp)."""
    root = tmp_path / "lib"
    album = root / "Delta Trio" / "Crossroads"
    for n, genre in enumerate((["Delta Blues", "Swing"], "Delta Blues", "Delta Blues"), 1):
        media.tag(
            media.encode(album / f"0{n} Song {n}.mp3", 1.0),
            title=f"Song {n}",
            artist="Delta Trio",
            album="Crossroads",
            genre=genre,
        )
    server = start_server("--open-registration")
    assert "3 added" in server.cli("scan", "--library", str(root)).stdout
    api = server.client()
    api.register("counter")

    def genres(category: str) -> dict[str, int]:
        listed = {c["name"]: c for c in api.ok("v1/music/genrecategories")["categories"]}
        if category not in listed:
            return {}
        stations = api.ok("v1/music/genres", {"token": listed[category]["token"]})["stations"]
        return {s["name"]: s["trackCount"] for s in stations}

    def searched(query: str) -> int | None:
        found = api.ok("v3/sod/search", {"query": query, "types": ["SF"]})
        counts = [a.get("trackCount") for a in found["annotations"].values() if a["type"] == "GE"]
        return counts[0] if counts else None

    assert genres("Blues") == {"Delta Blues": 3} and genres("Jazz") == {"Swing": 1}
    assert searched("delta blues") == 3  # asked twice: the second answer is the kept count
    assert searched("delta blues") == 3 and searched("swing") == 1
    (album / "01 Song 1.mp3").unlink()  # the only Swing track, and one of Delta Blues'
    assert "1 removed" in server.cli("scan", "--library", str(root)).stdout
    assert genres("Blues") == {"Delta Blues": 2}
    assert genres("Jazz") == {}  # no playable genre left in it: the category is gone
    assert searched("delta blues") == 2
    assert searched("swing") in (None, 0)


def test_subsonic_counts_and_random_songs_follow_the_library(start_server, tmp_path: Path) -> None:
    """getGenres, getScanStatus and getRandomSongs (with its genre and year filters) over
    present tracks only, right after a rescan by another process."""
    root = tmp_path / "lib"
    albums = [("Reef", "Surf", 1963, 4), ("Tide", "Surf", 1990, 2), ("Echo", "Dub", 1975, 6)]
    for album, genre, year, tracks in albums:
        for n in range(1, tracks + 1):
            media.tag(
                media.encode(root / "Band" / album / f"0{n} {album} {n}.mp3", 0.5),
                title=f"{album} {n}",
                artist="Band",
                album=album,
                genre=genre,
                date=str(year),
            )
    server = start_server()
    assert "12 added" in server.cli("scan", "--library", str(root)).stdout
    name = "subsonic-counter"
    assert server.admin("user", "add", name, "--password-stdin", input="pw").returncode == 0
    made = server.admin("user", "app-password", name, "--label", "phone")
    password = made.stdout.strip().splitlines()[-1]

    def call(method: str, **params: object) -> dict:
        query = {"u": name, "p": password, "c": "tests", "v": "1.16.1", "f": "json", **params}
        answer = httpx.get(f"{server.url}/rest/{method}", params=query).json()["subsonic-response"]
        assert answer["status"] == "ok", answer
        return answer

    def genres() -> dict[str, tuple[int, int]]:
        found = call("getGenres")["genres"]["genre"]
        return {g["value"]: (g["songCount"], g["albumCount"]) for g in found}

    def random(size: int, **filters: object) -> list[str]:
        songs = call("getRandomSongs", size=size, **filters)["randomSongs"].get("song", [])
        assert len({s["id"] for s in songs}) == len(songs)  # never the same track twice
        return sorted(s["title"] for s in songs)

    def artists() -> tuple[dict[str, int], list[str], str]:
        """getArtists' album counts, getIndexes' names, and getArtists in XML (kept answers)."""
        index = call("getArtists")["artists"]["index"]
        counts = {a["name"]: a["albumCount"] for letter in index for a in letter["artist"]}
        names = [a["name"] for i in call("getIndexes")["indexes"]["index"] for a in i["artist"]]
        query = {"u": name, "p": password, "c": "tests", "v": "1.16.1"}
        xml = httpx.get(f"{server.url}/rest/getArtists", params=query).text
        return counts, names, xml

    assert genres() == {"Dub": (6, 1), "Surf": (6, 2)}
    assert call("getScanStatus")["scanStatus"]["count"] == 12
    counts, names, xml = artists()
    assert counts == {"Band": 3} and names == ["Band"] and 'albumCount="3"' in xml
    assert artists() == (counts, names, xml)  # the same again, from what was kept
    assert random(50, genre="surf") == sorted(
        [f"Reef {n}" for n in range(1, 5)] + ["Tide 1", "Tide 2"]
    )
    assert random(50, fromYear=1960, toYear=1970) == [f"Reef {n}" for n in range(1, 5)]
    assert random(50, genre="Dub", fromYear=1960, toYear=1970) == []
    assert random(50, genre="no such genre") == []
    some = random(5)
    assert len(some) == 5 and len(random(3, genre="Dub")) == 3
    assert all(title.startswith("Echo") for title in random(3, genre="Dub"))
    for n in (1, 2):
        (root / "Band" / "Tide" / f"0{n} Tide {n}.mp3").unlink()
    assert "2 removed" in server.cli("scan", "--library", str(root)).stdout
    assert genres() == {"Dub": (6, 1), "Surf": (4, 1)}
    assert call("getScanStatus")["scanStatus"]["count"] == 10
    counts, names, xml = artists()
    assert counts == {"Band": 2} and names == ["Band"] and 'albumCount="2"' in xml
    assert random(50, genre="Surf") == [f"Reef {n}" for n in range(1, 5)]
    assert len(random(50)) == 10
    by_genre = call("getSongsByGenre", genre="SURF", count=3, offset=1)["songsByGenre"]["song"]
    assert [s["title"] for s in by_genre] == ["Reef 2", "Reef 3", "Reef 4"]
    albums = call("getAlbumList2", type="byGenre", genre="surf")["albumList2"]["album"]
    assert [a["name"] for a in albums] == ["Reef"]
    for genre in ("Tide", "no such genre"):  # an album title is no genre
        assert not call("getSongsByGenre", genre=genre)["songsByGenre"].get("song")
        albums = call("getAlbumList2", type="byGenre", genre=genre)["albumList2"]
        assert not albums.get("album")
