"""Bookmarks over HTTP: add by every kind of reference, idempotence, listing, isBookmarked,
deletion, other listeners."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import Api, Server, assert_error, unique, wait_indexed

BOOKMARK_FIELDS = {
    "bookmarkId",
    "musicId",
    "pandoraId",
    "type",
    "dateCreated",
    "name",
    "artistName",
    "art",
    "seoToken",
    "isAvailable",
}


@pytest.fixture(scope="module")
def library(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server(
        "--open-registration",
        "--library",
        str(small_demo_library),
        env={"AIRWAVE_FRAGMENT_LIMIT": "100000", "AIRWAVE_ENGINE_SEED": "5"},
    )
    wait_indexed(server)
    return server


def listener(server: Server) -> Api:
    api = server.client()
    api.register(unique())
    return api


def jazz_tracks(api: Api) -> list[dict[str, Any]]:
    """Tracks the way a client finds them: an album of the first jazz artist found by search."""
    album = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AL"]})["items"][0]
    return api.ok("v1/music/album", {"token": album["musicId"]})["tracks"]


def test_add_by_music_id_pandora_id_and_track_token(library: Server) -> None:
    api = listener(library)
    tracks = jazz_tracks(api)
    first, second = tracks[0], tracks[1]

    by_music = api.ok("v1/bookmark/add", {"musicId": first["musicId"]})
    assert BOOKMARK_FIELDS | {"songTitle", "albumTitle", "trackLength"} <= set(by_music)
    assert by_music["type"] == "track" and by_music["musicId"] == first["musicId"]
    assert (
        by_music["pandoraId"] == first["pandoraId"] and by_music["songTitle"] == first["songTitle"]
    )
    assert by_music["art"] and by_music["isAvailable"] is True

    # adding again, by the other spelling, is the same bookmark
    again = api.ok("v1/bookmark/add", {"pandoraId": first["pandoraId"]})
    assert (
        again["bookmarkId"] == by_music["bookmarkId"]
        and again["dateCreated"] == by_music["dateCreated"]
    )

    artist = api.ok("v1/bookmark/add", {"pandoraId": "AR:" + first["artistMusicId"][1:]})
    assert artist["type"] == "artist" and artist["name"] == first["artistName"]
    assert "songTitle" not in artist and artist["art"]

    station = api.ok("v1/station/createStation", {"musicId": second["musicId"]})
    played = api.ok("v1/playlist/getFragment", {"stationId": station["stationId"]})["tracks"]
    token_mark = api.ok("v1/bookmark/add", {"trackToken": played[0]["trackToken"]})
    assert token_mark["musicId"] == played[0]["musicId"] and token_mark["type"] == "track"
    artist_mark = api.ok(
        "v1/bookmark/add", {"trackToken": played[1]["trackToken"], "type": "artist"}
    )
    assert artist_mark["musicId"] == played[1]["artistMusicId"]

    listed = api.ok("v1/bookmark/getBookmarks", {})
    track_ids = [b["musicId"] for b in listed["tracks"]]
    assert listed["totalTracks"] == len(set([first["musicId"], played[0]["musicId"]]))
    assert (
        track_ids[0] == played[0]["musicId"] or played[0]["musicId"] == first["musicId"]
    )  # newest first
    assert listed["totalArtists"] == len({first["artistMusicId"], played[1]["artistMusicId"]})


def test_is_bookmarked_follows_bookmarks(library: Server) -> None:
    api = listener(library)
    tracks = jazz_tracks(api)
    track = tracks[0]
    assert api.ok("v1/music/track", {"token": track["musicId"]})["isBookmarked"] is False
    assert api.ok("v1/music/artist", {"token": track["artistMusicId"]})["isBookmarked"] is False
    api.ok("v1/bookmark/add", {"musicId": track["musicId"]})
    api.ok("v1/bookmark/add", {"musicId": track["artistMusicId"]})
    assert api.ok("v1/music/track", {"token": track["musicId"]})["isBookmarked"] is True
    assert api.ok("v1/music/artist", {"token": track["artistMusicId"]})["isBookmarked"] is True

    album_id = track["albumMusicId"]
    assert api.ok("v1/music/album", {"token": album_id})["isBookmarked"] is False
    for t in tracks:
        api.ok("v1/bookmark/add", {"musicId": t["musicId"]})
    assert api.ok("v1/music/album", {"token": album_id})["isBookmarked"] is True

    # in fragments: a station seeded by the album's artist serves its tracks, all bookmarked now
    station = api.ok("v1/station/createStation", {"musicId": track["musicId"]})
    seen = []
    for _ in range(3):
        seen += api.ok("v1/playlist/getFragment", {"stationId": station["stationId"]})["tracks"]
    marked = {t["musicId"] for t in tracks}
    assert all(t["isBookmarked"] == (t["musicId"] in marked) for t in seen)
    assert any(t["isBookmarked"] for t in seen) or not (marked & {t["musicId"] for t in seen})

    # another listener sees none of it
    other = listener(library)
    assert other.ok("v1/music/track", {"token": track["musicId"]})["isBookmarked"] is False
    assert other.ok("v1/bookmark/getBookmarks", {}) == {
        "artists": [],
        "tracks": [],
        "totalArtists": 0,
        "totalTracks": 0,
    }


def test_paging_type_filter_and_order(library: Server) -> None:
    api = listener(library)
    tracks = jazz_tracks(api)[:5]
    for t in tracks:
        api.ok("v1/bookmark/add", {"musicId": t["musicId"]})
    api.ok("v1/bookmark/add", {"musicId": tracks[0]["artistMusicId"]})
    everything = api.ok("v1/bookmark/getBookmarks", {})
    assert [b["musicId"] for b in everything["tracks"]] == [t["musicId"] for t in reversed(tracks)]
    page = api.ok("v1/bookmark/getBookmarks", {"type": "track", "pageSize": 2, "startIndex": 1})
    assert [b["musicId"] for b in page["tracks"]] == [tracks[3]["musicId"], tracks[2]["musicId"]]
    assert page["artists"] == [] and page["totalArtists"] == 1 and page["totalTracks"] == 5
    artists_only = api.ok("v1/bookmark/getBookmarks", {"type": "artist"})
    assert artists_only["tracks"] == [] and len(artists_only["artists"]) == 1
    for body in ({"type": "album"}, {"pageSize": 0}, {"pageSize": 1001}, {"startIndex": -1}):
        assert_error(api.call("v1/bookmark/getBookmarks", body), 400, "INVALID_REQUEST")


def test_delete_by_each_reference(library: Server) -> None:
    api = listener(library)
    a, b, c = jazz_tracks(api)[:3]
    mark_a = api.ok("v1/bookmark/add", {"musicId": a["musicId"]})
    api.ok("v1/bookmark/add", {"musicId": b["musicId"]})
    api.ok("v1/bookmark/add", {"musicId": c["musicId"]})
    api.ok("v1/bookmark/delete", {"bookmarkId": mark_a["bookmarkId"]})
    api.ok("v1/bookmark/delete", {"musicId": b["musicId"]})
    api.ok("v1/bookmark/delete", {"pandoraId": c["pandoraId"]})
    assert api.ok("v1/bookmark/getBookmarks", {})["totalTracks"] == 0
    assert_error(
        api.call("v1/bookmark/delete", {"bookmarkId": mark_a["bookmarkId"]}), 404, "NOT_FOUND"
    )
    assert_error(api.call("v1/bookmark/delete", {"musicId": a["musicId"]}), 404, "NOT_FOUND")


def test_errors_and_other_listeners(library: Server) -> None:
    api, other = listener(library), listener(library)
    track = jazz_tracks(api)[0]
    for body in ({}, {"musicId": track["musicId"], "pandoraId": track["pandoraId"]}):
        assert_error(api.call("v1/bookmark/add", body), 400, "INVALID_REQUEST")
        assert_error(api.call("v1/bookmark/delete", body), 400, "INVALID_REQUEST")
    assert_error(
        api.call("v1/bookmark/add", {"musicId": track["albumMusicId"]}), 400, "INVALID_PANDORA_TYPE"
    )
    genre = api.ok("v1/search/fullSearch", {"query": "jazz", "types": ["GE"]})["items"][0]
    assert_error(
        api.call("v1/bookmark/add", {"pandoraId": genre["pandoraId"]}), 400, "INVALID_PANDORA_TYPE"
    )
    assert_error(api.call("v1/bookmark/add", {"musicId": "S99999999"}), 404, "NOT_FOUND")
    assert_error(api.call("v1/bookmark/add", {"musicId": "not an id"}), 404, "NOT_FOUND")
    assert_error(api.call("v1/bookmark/add", {"trackToken": "no-such-token"}), 404, "NOT_FOUND")
    assert_error(
        api.call("v1/bookmark/add", {"musicId": track["musicId"], "type": "artist"}),
        400,
        "INVALID_PANDORA_TYPE",
    )
    assert_error(api.call("v1/bookmark/add", {"musicId": 5}), 400, "INVALID_REQUEST")

    mark = api.ok("v1/bookmark/add", {"musicId": track["musicId"]})
    assert_error(
        other.call("v1/bookmark/delete", {"bookmarkId": mark["bookmarkId"]}),
        403,
        "USER_NOT_AUTHORIZED",
    )
    assert_error(other.call("v1/bookmark/delete", {"musicId": track["musicId"]}), 404, "NOT_FOUND")
    assert_error(other.call("v1/bookmark/delete", {"bookmarkId": "12abc"}), 404, "NOT_FOUND")
    assert api.ok("v1/bookmark/getBookmarks", {})["totalTracks"] == 1  # untouched

    station = api.ok("v1/station/createStation", {"musicId": track["musicId"]})
    token = api.ok("v1/playlist/getFragment", {"stationId": station["stationId"]})["tracks"][0][
        "trackToken"
    ]
    assert_error(other.call("v1/bookmark/add", {"trackToken": token}), 403, "USER_NOT_AUTHORIZED")
    assert_error(library.client().call("v1/bookmark/getBookmarks", {}), 401, "AUTH_INVALID_TOKEN")
