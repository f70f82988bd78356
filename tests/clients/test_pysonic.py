"""py-sonic (PyPI `py-sonic`, module `libsonic`) against Airwave's Subsonic edge on both
databases: the real client library as an app built on it calls the server (form POSTs, token and
salt from an app password), browsing, searching, streaming, starring, rating, scrobbling, making
playlists, an Instant Mix, and playing a station as a playlist with its thumbs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import libsonic
import pytest
from support import Server, backend_params, unique, wait_indexed


@pytest.fixture(params=backend_params(), scope="module")
def backend_kind(request: pytest.FixtureRequest) -> str:
    """Storage matters here (thumbs, plays, playlists): both databases."""
    return request.param


@pytest.fixture(scope="module")
def airwave_db(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server("--library", str(small_demo_library))
    wait_indexed(server)
    return server


def _account(server: Server, tier: str = "premium") -> tuple[str, str]:
    name = unique("ps")
    added = server.admin("user", "add", name, "--tier", tier, "--password-stdin", input="pw pw")
    assert added.returncode == 0, added.stderr
    made = server.admin("user", "app-password", name, "--label", "py-sonic")
    assert made.returncode == 0, made.stderr
    return name, made.stdout.strip().splitlines()[-1]


def _connect(server: Server, name: str, secret: str) -> libsonic.Connection:
    url = urlsplit(server.url)
    return libsonic.Connection(
        f"{url.scheme}://{url.hostname}", name, secret, port=url.port or 80, appName="tests"
    )


def _ok(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["status"] == "ok", answer
    return answer


def test_browse_search_stream_star_rate_scrobble_playlists(airwave_db: Server) -> None:
    name, secret = _account(airwave_db)
    conn = _connect(airwave_db, name, secret)
    assert conn.ping() is True
    indexes = [a for i in _ok(conn.getArtists())["artists"]["index"] for a in i["artist"]]
    artist = _ok(conn.getArtist(indexes[0]["id"]))["artist"]
    album = _ok(conn.getAlbum(artist["album"][0]["id"]))["album"]
    song = _ok(conn.getSong(album["song"][0]["id"]))["song"]
    assert song["albumId"] == album["id"]
    directory = _ok(conn.getMusicDirectory(album["id"]))["directory"]
    assert song["id"] in [c["id"] for c in directory["child"]]
    found = _ok(conn.search3(song["title"]))["searchResult3"]
    assert song["id"] in [s["id"] for s in found["song"]]
    assert _ok(conn.getAlbumList2("newest", size=3))["albumList2"]["album"]
    audio = conn.stream(song["id"]).read()
    assert len(audio) > 10_000
    assert _ok(conn.star(sids=[song["id"]], albumIds=[album["id"]]))
    starred = _ok(conn.getStarred2())["starred2"]
    assert [s["id"] for s in starred["song"]] == [song["id"]]
    assert _ok(conn.setRating(song["id"], 4))
    assert _ok(conn.getSong(song["id"]))["song"]["userRating"] == 4
    assert _ok(conn.scrobble(song["id"], submission=False))
    playing = _ok(conn.getNowPlaying())["nowPlaying"]["entry"]
    assert (name, song["id"]) in [(e["username"], e["id"]) for e in playing]
    assert _ok(conn.scrobble(song["id"]))
    exported = airwave_db.admin("export", "plays", "--since", "2020-01-01", "--format", "json")
    mine = [p for p in json.loads(exported.stdout) if p["track_id"] == int(song["id"][1:])]
    assert [p["outcome"] for p in mine] == ["completed"]
    assert _ok(conn.createPlaylist(name="From py-sonic", songIds=[song["id"]]))
    (made,) = _ok(conn.getPlaylists())["playlists"]["playlist"]
    assert made["name"] == "From py-sonic" and made["songCount"] == 1
    other = album["song"][-1]["id"]
    assert _ok(conn.updatePlaylist(made["id"], songIdsToAdd=[other]))
    entries = _ok(conn.getPlaylist(made["id"]))["playlist"]["entry"]
    assert [e["id"] for e in entries] == [song["id"], other]
    assert _ok(conn.deletePlaylist(made["id"]))
    mix = _ok(conn.getSimilarSongs2(artist["id"], count=8))["similarSongs2"]["song"]
    assert 1 <= len(mix) <= 8 and len({s["id"] for s in mix}) == len(mix)
    mix = _ok(conn.getSimilarSongs(song["id"], count=8))["similarSongs"]["song"]
    assert mix[0]["id"] == song["id"]
    assert _ok(conn.savePlayQueue([s["id"] for s in mix[:3]], current=mix[1]["id"], position=5))
    queue = _ok(conn.getPlayQueue())["playQueue"]
    assert queue["current"] == mix[1]["id"] and len(queue["entry"]) == 3
    assert _ok(conn.createBookmark(song["id"], 1234, comment="here"))
    (mark,) = _ok(conn.getBookmarks())["bookmarks"]["bookmark"]
    assert mark["position"] == 1234 and mark["entry"]["id"] == song["id"]
    assert _ok(conn.getUser(name))["user"]["streamRole"] is True
    with pytest.raises(libsonic.errors.DataNotFoundError):
        conn.getSong("S999999")


def test_a_station_as_a_playlist_with_thumbs(airwave_db: Server) -> None:
    name, secret = _account(airwave_db, tier="free")
    web = airwave_db.client()
    web.login(name, "pw pw")
    conn = _connect(airwave_db, name, secret)
    album = _ok(conn.getAlbumList2("alphabeticalByName", size=1))["albumList2"]["album"][0]
    seed = _ok(conn.getAlbum(album["id"]))["album"]["song"][0]
    station = web.ok("v1/station/createStation", {"musicId": seed["id"]})
    (radio,) = _ok(conn.getPlaylists())["playlists"]["playlist"]
    assert radio["name"] == "Radio: " + station["name"]
    entries = _ok(conn.getPlaylist(radio["id"]))["playlist"]["entry"]
    assert entries[0]["id"] == seed["id"]
    first, second = entries[0]["id"], entries[1]["id"]
    assert len(conn.stream(first).read()) > 10_000  # the station's grant: no on-demand needed
    assert _ok(conn.scrobble(first))
    assert _ok(conn.setRating(first, 5))
    assert _ok(conn.setRating(second, 1))

    def thumbs(positive: bool) -> list[str]:
        page = web.ok(
            "v1/station/getStationFeedback",
            {"stationId": station["stationId"], "positive": positive},
        )
        return [f["musicId"] for f in page["feedback"]]

    assert thumbs(True) == [first] and thumbs(False) == [second]
    with pytest.raises(libsonic.errors.AuthError):
        conn.deletePlaylist(radio["id"])
    assert [p["id"] for p in _ok(conn.getPlaylists())["playlists"]["playlist"]] == [radio["id"]]
    following = _ok(conn.getPlaylist(radio["id"]))["playlist"]["entry"]
    assert second not in [e["id"] for e in following]
