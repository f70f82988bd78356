"""Airwave's radio through the Subsonic edge, on both databases: Instant Mix (getSimilarSongs/2)
from the station engine, stations as playlists that play their next fragment, the apps' ratings
and stars as thumbs on the station, seen through the REST API as the web player sees them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import Server, wait_indexed
from support.subsonic import Listener

from airwave.core.radio.engine.rules import Rules


@pytest.fixture(scope="module")
def sub(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server("--library", str(small_demo_library))
    wait_indexed(server)
    return server


@pytest.fixture
def listener(sub: Server) -> Listener:
    return Listener(sub)


def _songs(sub: Server) -> list[dict[str, Any]]:
    """Every song of the library, album by album."""
    someone = Listener(sub)
    found = []
    for album in someone.ok("getAlbumList2", type="alphabeticalByName", size=500)["albumList2"][
        "album"
    ]:
        found += someone.ok("getAlbum", id=album["id"])["album"]["song"]
    return found


def _keeps_the_runs(mix: list[dict[str, Any]]) -> None:
    """No repeat, and never more from one album or artist in a row than the radio rules allow."""
    rules = Rules()
    assert len({s["id"] for s in mix}) == len(mix)
    for i in range(len(mix)):
        albums = [s["albumId"] for s in mix[max(0, i - rules.album_run) : i + 1]]
        assert not (len(albums) > rules.album_run and len(set(albums)) == 1), mix
        artists = [s["artistId"] for s in mix[max(0, i - rules.artist_run) : i + 1]]
        assert not (len(artists) > rules.artist_run and len(set(artists)) == 1), mix


def test_instant_mix_of_a_song_opens_with_it(sub: Server, listener: Listener) -> None:
    songs = _songs(sub)
    for seed in songs[:: max(1, len(songs) // 6)]:
        mix = listener.ok("getSimilarSongs", id=seed["id"], count=12)["similarSongs"]["song"]
        assert len(mix) == 12
        assert mix[0]["id"] == seed["id"]
        _keeps_the_runs(mix)
        mix2 = listener.ok("getSimilarSongs2", id=seed["id"], count=5)["similarSongs2"]["song"]
        assert len(mix2) == 5 and mix2[0]["id"] == seed["id"]
    default = listener.ok("getSimilarSongs", id=songs[0]["id"])["similarSongs"]["song"]
    assert 40 <= len(default) <= 50  # up to 50: the engine stops where its rules leave nothing
    _keeps_the_runs(default)


def test_instant_mix_of_an_artist_or_album_leans_on_it(sub: Server, listener: Listener) -> None:
    songs = _songs(sub)
    for seed in songs[:: max(1, len(songs) // 5)]:
        mix = listener.ok("getSimilarSongs2", id=seed["artistId"], count=10)["similarSongs2"]
        assert len(mix["song"]) == 10
        # a mix of an artist opens with one of the artist's own songs, as a song's with the song
        assert mix["song"][0]["artistId"] == seed["artistId"], mix
        _keeps_the_runs(mix["song"])
        mix = listener.ok("getSimilarSongs", id=seed["albumId"], count=10)["similarSongs"]
        assert mix["song"][0]["albumId"] == seed["albumId"], mix
        _keeps_the_runs(mix["song"])


def test_instant_mix_keeps_no_station_and_refuses_bad_ids(sub: Server, listener: Listener) -> None:
    song = _songs(sub)[0]
    listener.ok("getSimilarSongs2", id=song["id"], count=3)
    listener.ok("getSimilarSongs", id=song["artistId"], count=3)
    assert listener.rest.ok("v1/station/getStations", {})["stations"] == []
    assert listener.ok("getSimilarSongs", id=song["id"], count=0)["similarSongs"]["song"]
    assert listener.error("getSimilarSongs") == 10
    assert listener.error("getSimilarSongs", id="S999999") == 70
    assert listener.error("getSimilarSongs", id="nonsense") == 70
    assert listener.error("getSimilarSongs2", id=song["albumId"]) == 70
    assert listener.error("getSimilarSongs", id=song["id"], count="many") == 0


def _station(listener: Listener, song: dict[str, Any]) -> dict[str, Any]:
    """A song station made in the web player (REST)."""
    return listener.rest.ok("v1/station/createStation", {"musicId": song["id"]})


def test_stations_are_radio_playlists_that_play_the_next_fragment(
    sub: Server, listener: Listener
) -> None:
    song = _songs(sub)[3]
    station = _station(listener, song)
    listener.ok("createPlaylist", name="Mine", songId=song["id"])
    listed = listener.ok("getPlaylists")["playlists"]["playlist"]
    radio = [p for p in listed if p["id"] == station["pandoraId"]]
    assert len(radio) == 1 and len(listed) == 2, listed
    (radio_list,) = radio
    assert radio_list["id"].startswith("ST:")
    assert radio_list["name"] == "Radio: " + station["name"]
    assert "Airwave station" in radio_list["comment"] and radio_list["readonly"] is True
    mine = next(p for p in listed if p["name"] == "Mine")
    assert mine["id"].startswith("PL:") and mine["id"] != radio_list["id"]
    first = listener.ok("getPlaylist", id=radio_list["id"])["playlist"]
    assert first["name"] == radio_list["name"]
    assert 1 <= len(first["entry"]) <= 4 and first["songCount"] == len(first["entry"])
    assert first["entry"][0]["id"] == song["id"]  # a song station opens with its song
    second = listener.ok("getPlaylist", id=radio_list["id"])["playlist"]["entry"]
    assert second and not {s["id"] for s in second} & {s["id"] for s in first["entry"]}
    _keeps_the_runs(first["entry"] + second)


def test_a_free_listener_plays_a_station_from_an_app(sub: Server) -> None:
    free = Listener(sub, tier="free")
    songs = _songs(sub)
    station = _station(free, songs[5])
    listed = free.ok("getPlaylists")["playlists"]["playlist"]
    assert [p["id"] for p in listed] == [station["pandoraId"]]
    entries = free.ok("getPlaylist", id=station["pandoraId"])["playlist"]["entry"]
    credentials = {"u": free.name, "p": free.secret, "c": "tests", "v": "1.16.1"}
    audio = httpx.get(f"{sub.url}/rest/stream", params={"id": entries[0]["id"], **credentials})
    assert audio.status_code == 200 and len(audio.content) > 10_000, audio.text[:200]
    handed = {e["id"] for e in entries}
    other = next(s for s in songs if s["id"] not in handed)
    assert free.error("stream", id=other["id"]) == 50  # no library on demand for the free tier
    assert free.error("download", id=entries[0]["id"]) == 50


def test_station_playlists_are_read_only(sub: Server, listener: Listener) -> None:
    song = _songs(sub)[7]
    station = _station(listener, song)
    token = station["pandoraId"]
    assert listener.error("updatePlaylist", playlistId=token, name="Renamed") == 50
    assert listener.error("updatePlaylist", playlistId=token, songIdToAdd=song["id"]) == 50
    assert listener.error("createPlaylist", playlistId=token, songId=song["id"]) == 50
    assert listener.error("deletePlaylist", id=token) == 50
    (kept,) = listener.rest.ok("v1/station/getStations", {})["stations"]
    assert kept["name"] == station["name"]
    stranger = Listener(sub)
    assert stranger.error("getPlaylist", id=token) == 50
    assert stranger.error("deletePlaylist", id=token) == 50
    assert listener.error("getPlaylist", id="ST:0:999999") == 70
    assert listener.error("deletePlaylist", id="ST:0:999999") == 70


def _thumbs(listener: Listener, station: dict[str, Any], positive: bool) -> list[str]:
    """The station's thumbs as the web player reads them (REST getStationFeedback)."""
    page = listener.rest.ok(
        "v1/station/getStationFeedback",
        {"stationId": station["stationId"], "positive": positive},
    )
    return [f["musicId"] for f in page["feedback"]]


def test_ratings_and_stars_on_station_songs_are_thumbs(sub: Server, listener: Listener) -> None:
    songs = _songs(sub)
    station = _station(listener, songs[10])
    played = listener.ok("getPlaylist", id=station["pandoraId"])["playlist"]["entry"]
    played += listener.ok("getPlaylist", id=station["pandoraId"])["playlist"]["entry"]
    up, down, starred, middling = (s["id"] for s in played[:4])
    listener.ok("setRating", id=up, rating=5)
    listener.ok("setRating", id=down, rating=1)
    listener.ok("star", id=starred)
    listener.ok("setRating", id=middling, rating=3)
    assert sorted(_thumbs(listener, station, True)) == sorted([up, starred])
    assert _thumbs(listener, station, False) == [down]
    # the ratings are the listener's too, shown back as userRating
    rated = {
        s["id"]: s.get("userRating")
        for s in listener.ok("getAlbum", id=played[0]["albumId"])["album"]["song"]
    }
    assert rated[up] == 5
    assert listener.ok("getSong", id=middling)["song"]["userRating"] == 3
    # 0 takes the thumb back; a second rating replaces the first
    listener.ok("setRating", id=up, rating=0)
    listener.ok("setRating", id=down, rating=5)
    assert sorted(_thumbs(listener, station, True)) == sorted([down, starred])
    assert _thumbs(listener, station, False) == []
    assert "userRating" not in listener.ok("getSong", id=up)["song"]
    # unstar takes back the thumbs-up a star gave, and never a thumbs-down
    listener.ok("unstar", id=starred)
    listener.ok("unstar", id=down)  # thumbed up by its rating of 5: taken back too
    listener.ok("setRating", id=up, rating=1)
    listener.ok("unstar", id=up)
    assert _thumbs(listener, station, True) == [] and _thumbs(listener, station, False) == [up]
    assert starred not in [s["id"] for s in listener.ok("getStarred2")["starred2"].get("song", [])]
    # a thumbed-down song never plays on that station again
    listener.ok("setRating", id=middling, rating=1)
    for _ in range(4):
        again = listener.ok("getPlaylist", id=station["pandoraId"])["playlist"]["entry"]
        assert middling not in [s["id"] for s in again]


def test_ratings_off_radio_are_kept_without_thumbs(sub: Server, listener: Listener) -> None:
    song = _songs(sub)[12]
    station = _station(listener, _songs(sub)[20])  # a station that has not played the song
    listener.ok("setRating", id=song["id"], rating=1)
    listener.ok("setRating", id=song["id"], rating=4)
    assert listener.ok("getSong", id=song["id"])["song"]["userRating"] == 4
    assert _thumbs(listener, station, True) == [] and _thumbs(listener, station, False) == []
    listener.ok("star", id=song["id"])
    assert [s["id"] for s in listener.ok("getStarred2")["starred2"]["song"]] == [song["id"]]
    assert listener.error("setRating", id=song["id"], rating=9) == 0
    assert listener.error("setRating", id=song["id"], rating="high") == 0
    assert listener.error("setRating", id=song["id"]) == 10
    assert listener.error("setRating", id="S999999", rating=3) == 70
    free = Listener(sub, tier="free")
    free_station = _station(free, song)
    handed = free.ok("getPlaylist", id=free_station["pandoraId"])["playlist"]["entry"]
    first = handed[0]
    free.ok("star", id=first["id"])  # no collection on the free tier, but a thumbs-up
    assert _thumbs(free, free_station, True) == [first["id"]]
    free.ok("unstar", id=first["id"])
    assert _thumbs(free, free_station, True) == []
    other = next(s for s in _songs(sub) if s["id"] not in {h["id"] for h in handed})
    assert free.error("star", id=other["id"]) == 50
    assert free.error("unstar", id=other["id"]) == 50
    free.ok("setRating", id=other["id"], rating=2)


def _play_log(sub: Server, track_id: str) -> list[dict[str, Any]]:
    exported = sub.admin("export", "plays", "--since", "2020-01-01", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    return [p for p in json.loads(exported.stdout) if p["track_id"] == int(track_id[1:])]


def test_scrobbles_of_station_songs_are_the_station_plays(sub: Server) -> None:
    free = Listener(sub, tier="free")  # no library on demand: radio only
    station = _station(free, _songs(sub)[30])
    first, second, *_ = free.ok("getPlaylist", id=station["pandoraId"])["playlist"]["entry"]
    free.ok("scrobble", id=first["id"], submission="false")
    (started,) = _play_log(sub, first["id"])
    assert started["station"] == station["name"] and started["outcome"] == ""
    playing = free.ok("getNowPlaying")["nowPlaying"]["entry"]
    mine = [e for e in playing if e["username"] == free.name]
    assert [e["id"] for e in mine] == [first["id"]]
    assert mine[0]["minutesAgo"] >= 0 and isinstance(mine[0]["playerId"], int)
    free.ok("scrobble", id=first["id"])  # played through: the same spin, completed
    (done,) = _play_log(sub, first["id"])
    assert done["outcome"] == "completed" and done["seconds_played"] > 0
    assert done["spin_id"] == started["spin_id"]
    assert free.name not in [
        e["username"] for e in free.ok("getNowPlaying")["nowPlaying"].get("entry", [])
    ]
    free.ok("scrobble", id=second["id"])  # a submission alone: started and completed at once
    (whole,) = _play_log(sub, second["id"])
    assert whole["station"] == station["name"] and whole["outcome"] == "completed"
    (listed,) = free.rest.ok("v1/station/getStations", {})["stations"]
    assert listed.get("lastPlayed")


def test_now_playing_of_on_demand_plays(sub: Server, listener: Listener) -> None:
    song = _songs(sub)[40]
    listener.ok("scrobble", id=song["id"], submission="false")
    other = Listener(sub)
    entries = other.ok("getNowPlaying")["nowPlaying"]["entry"]
    (seen,) = [e for e in entries if e["username"] == listener.name]
    assert seen["id"] == song["id"] and seen["title"] == song["title"]
    listener.rest.ok("v1/listener/setProfile", {"profilePrivate": True})
    hidden = other.ok("getNowPlaying")["nowPlaying"].get("entry", [])
    assert listener.name not in [e["username"] for e in hidden]
    assert listener.name in [
        e["username"] for e in listener.ok("getNowPlaying")["nowPlaying"]["entry"]
    ]


def test_play_queue_is_kept_per_listener(sub: Server, listener: Listener) -> None:
    songs = _songs(sub)
    assert "playQueue" not in listener.ok("getPlayQueue")
    queue = [s["id"] for s in songs[50:55]]
    listener.ok("savePlayQueue", id=queue, current=queue[2], position=81_500, c="phone-app")
    kept = listener.ok("getPlayQueue")["playQueue"]
    assert [e["id"] for e in kept["entry"]] == queue
    assert kept["current"] == queue[2] and kept["position"] == 81_500
    assert kept["username"] == listener.name and kept["changedBy"] == "phone-app"
    assert kept["changed"]
    assert "playQueue" not in Listener(sub).ok("getPlayQueue")  # another listener's is apart
    listener.ok("savePlayQueue", id=queue[:2], current=queue[0])
    assert [e["id"] for e in listener.ok("getPlayQueue")["playQueue"]["entry"]] == queue[:2]
    assert listener.error("savePlayQueue", id=queue[:2], current=queue[4]) == 0
    assert listener.error("savePlayQueue", id=["S999999"]) == 70
    assert listener.error("savePlayQueue", id=queue[:2], position="soon") == 0
    assert [e["id"] for e in listener.ok("getPlayQueue")["playQueue"]["entry"]] == queue[:2]
    listener.ok("savePlayQueue")  # no ids: cleared
    assert "playQueue" not in listener.ok("getPlayQueue")


def test_position_bookmarks(sub: Server, listener: Listener) -> None:
    songs = _songs(sub)
    first, second = songs[60]["id"], songs[61]["id"]
    assert listener.ok("getBookmarks")["bookmarks"].get("bookmark", []) == []
    listener.ok("createBookmark", id=first, position=1000, comment="chorus")
    listener.ok("createBookmark", id=second, position=2000)
    listener.ok("createBookmark", id=first, position=1500)  # moved, not doubled
    marks = listener.ok("getBookmarks")["bookmarks"]["bookmark"]
    assert [(m["entry"]["id"], m["position"]) for m in marks] == [(first, 1500), (second, 2000)]
    assert marks[0]["username"] == listener.name and marks[0]["created"] and marks[0]["changed"]
    assert Listener(sub).ok("getBookmarks")["bookmarks"].get("bookmark", []) == []
    # the REST bookmarks (liked artists and songs) are another thing: untouched
    assert listener.rest.ok("v1/bookmark/getBookmarks", {})["tracks"] == []
    listener.ok("deleteBookmark", id=second)
    assert [m["entry"]["id"] for m in listener.ok("getBookmarks")["bookmarks"]["bookmark"]] == [
        first
    ]
    assert listener.error("deleteBookmark", id=second) == 70
    assert listener.error("createBookmark", id=first) == 10
    assert listener.error("createBookmark", id="S999999", position=5) == 70


def test_start_scan_and_user_roles(sub: Server, listener: Listener) -> None:
    admin = Listener(sub, "premium", "--admin")
    status = admin.ok("startScan")["scanStatus"]
    assert status["scanning"] is True and status["count"] > 0
    assert listener.error("startScan") == 50
    wait_indexed(sub)
    me = listener.ok("getUser", username=listener.name)["user"]
    assert me["adminRole"] is False and me["streamRole"] is True
    assert me["downloadRole"] is True and me["playlistRole"] is True
    assert me["coverArtRole"] is False and me["uploadRole"] is False
    free = Listener(sub, tier="free")
    them = free.ok("getUser", username=free.name)["user"]
    assert them["streamRole"] is True and them["downloadRole"] is False
    assert them["playlistRole"] is False
    assert admin.ok("getUser", username=free.name)["user"]["username"] == free.name
    assert admin.ok("getUser", username=admin.name)["user"]["adminRole"] is True
    assert free.error("getUser", username=admin.name) == 50
