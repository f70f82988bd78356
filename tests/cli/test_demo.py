"""`airwave serve --demo` on a new data dir: a demo account and a browsable demo catalogue.

The data dir is given the suite's demo library (2-second tracks) where `serve --demo` keeps it,
so the server finds it complete instead of writing the full-length one (half a minute of CPU;
generation itself is tests/library/test_demo_library.py's subject).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
import pytest
from support import Server

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only


def test_serve_demo_serves_the_demo_library(make_backend, small_demo_library: Path) -> None:
    backend = make_backend()
    shutil.copytree(small_demo_library, backend.data_dir / "demo-library")
    server = Server(backend, ["--demo"]).start(timeout=180)
    try:
        text = "".join(server.output)
        assert "listening on http://127.0.0.1:" in text and "'demo'" in text
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            library = httpx.get(server.url + "/healthz").json()["library"]
            if library["scans"] >= 1 and library["state"] == "idle":
                break
            time.sleep(0.2)
        assert library["last"]["added"] >= 144 and library["last"]["errors"] == 0
        api = server.client()
        api.login("demo", "demo")
        categories = api.ok("v1/music/genrecategories")["categories"]
        assert len(categories) >= 6
        artists: set[str] = set()
        for category in categories:
            for station in api.ok("v1/music/genres", {"token": category["token"]})["stations"]:
                artists |= {t["artistMusicId"] for t in station["sampleTracks"]}
        assert len(artists) >= 12
        albums_with_art, with_lyrics = 0, 0
        for music_id in sorted(artists):
            artist = api.ok("v1/music/artist", {"token": music_id})
            for album in artist["discography"]:
                assert album["art"], album["albumTitle"]
                albums_with_art += httpx.get(album["art"][0]["url"]).status_code == 200
                for track in api.ok("v1/music/album", {"token": album["musicId"]})["tracks"]:
                    if track["hasLyrics"]:
                        lines = api.ok("v1/music/fullLyrics", {"trackUid": track["musicId"]})[
                            "lines"
                        ]
                        with_lyrics += bool(lines)
        assert albums_with_art >= 24 and with_lyrics >= 3
        # the similarity index loaded faiss: its loader's search for CPU builds is not news
        assert not [line for line in server.errors if "faiss.loader" in line]
    finally:
        assert server.stop() == 0
