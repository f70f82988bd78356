"""The Subsonic/OpenSubsonic edge on the wire: credentials (app passwords, the account password,
tokens, API keys), the XML and JSON envelope, errors at HTTP 200, and the methods served."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import media
import pytest
from support import Server, unique, wait_indexed

pytestmark = pytest.mark.sqlite_only  # the edge's shapes; its storage is the core's

NS = "{http://subsonic.org/restapi}"


@pytest.fixture(scope="module")
def sub(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server("--library", str(small_demo_library))
    wait_indexed(server)
    return server


def add_user(
    server: Server, password: str = "account password", tier: str = "premium"
) -> tuple[str, str]:
    """A new listener (premium: the library on demand) and one app password of theirs."""
    name = unique("sub")
    added = server.admin("user", "add", name, "--tier", tier, "--password-stdin", input=password)
    assert added.returncode == 0
    made = server.admin("user", "app-password", name, "--label", "phone")
    assert made.returncode == 0, made.stderr
    return name, made.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def user(sub: Server) -> tuple[str, str]:
    return add_user(sub)


def get(server: Server, name: str, /, **params: Any) -> httpx.Response:
    response = httpx.get(f"{server.url}/rest/{name}", params=params)
    assert response.status_code == 200, response.text
    return response


def json_call(server: Server, name: str, /, **params: Any) -> dict[str, Any]:
    return get(server, name, f="json", **params).json()["subsonic-response"]


def as_user(user: tuple[str, str]) -> dict[str, str]:
    return {"u": user[0], "p": user[1], "c": "tests", "v": "1.16.1"}


def call(server: Server, user: tuple[str, str], name: str, /, **params: Any) -> dict[str, Any]:
    """A JSON call that must succeed."""
    answer = json_call(server, name, **as_user(user), **params)
    assert answer["status"] == "ok", answer
    return answer


def error_code(answer: dict[str, Any]) -> int:
    assert answer["status"] == "failed", answer
    return answer["error"]["code"]


def test_every_credential_scheme(sub: Server, user: tuple[str, str]) -> None:
    name, secret = user
    salt = "c19b2d"
    token = hashlib.md5((secret + salt).encode()).hexdigest()
    for params in (
        {"u": name, "p": secret},
        {"u": name, "p": "enc:" + secret.encode().hex()},
        {"u": name, "t": token, "s": salt},
        {"apiKey": secret},
        {"u": name, "p": "account password"},
    ):
        answer = json_call(sub, "ping", **params)
        assert answer["status"] == "ok", (params, answer)
        assert answer["version"] == "1.16.1"
        assert answer["type"] == "airwave"
        assert answer["openSubsonic"] is True
        assert answer["serverVersion"]


def test_refusals(sub: Server, user: tuple[str, str]) -> None:
    name, secret = user
    assert error_code(json_call(sub, "ping")) == 10
    assert error_code(json_call(sub, "ping", u=name)) == 10
    assert error_code(json_call(sub, "ping", u=name, p="wrong")) == 40
    assert error_code(json_call(sub, "ping", u="nobody-here", p=secret)) == 40
    token = hashlib.md5(b"account passwordab").hexdigest()  # the account password: no token
    assert error_code(json_call(sub, "ping", u=name, t=token, s="ab")) == 40
    assert error_code(json_call(sub, "ping", u=name, t=token)) == 10
    assert error_code(json_call(sub, "ping", apiKey="not-a-key")) == 44
    assert error_code(json_call(sub, "ping", apiKey=secret, u=name)) == 43
    assert error_code(json_call(sub, "ping", u=name, p=secret, t=token, s="ab")) == 43


def test_revoked_app_password_and_suspended_account(sub: Server) -> None:
    name = unique("sub")
    assert (
        sub.admin("user", "add", name, "--password-stdin", input="account password").returncode == 0
    )
    made = sub.admin("user", "app-password", name, "--label", "phone").stdout
    secret = made.strip().splitlines()[-1]
    second = sub.admin("user", "app-password", name).stdout.strip().splitlines()[-1]
    listed = sub.admin("user", "app-password", name, "--list").stdout
    assert "phone" in listed and secret not in listed
    first_id = re.search(r"app password (\d+) \(phone\)", made).group(1)
    assert sub.admin("user", "app-password", name, "--revoke", first_id).returncode == 0
    assert error_code(json_call(sub, "ping", apiKey=secret)) == 44
    assert error_code(json_call(sub, "ping", u=name, p=secret)) == 40
    assert json_call(sub, "ping", apiKey=second)["status"] == "ok"
    assert sub.admin("user", "disable", name).returncode == 0
    assert error_code(json_call(sub, "ping", apiKey=second)) == 50
    assert error_code(json_call(sub, "ping", u=name, p="account password")) == 50


def test_xml_envelope_and_errors(sub: Server, user: tuple[str, str]) -> None:
    response = get(sub, "ping.view", **as_user(user))
    assert response.headers["content-type"].startswith("text/xml")
    root = ET.fromstring(response.content)
    assert root.tag == f"{NS}subsonic-response"
    assert root.attrib["status"] == "ok" and root.attrib["openSubsonic"] == "true"
    root = ET.fromstring(get(sub, "getMadeUpThing", **as_user(user)).content)
    assert root.attrib["status"] == "failed"
    assert root.find(f"{NS}error").attrib["code"] == "0"
    root = ET.fromstring(get(sub, "getLicense.view", **as_user(user)).content)
    assert root.find(f"{NS}license").attrib["valid"] == "true"


def test_form_post_and_system_methods(sub: Server, user: tuple[str, str]) -> None:
    response = httpx.post(
        f"{sub.url}/rest/getOpenSubsonicExtensions", data={"f": "json", **as_user(user)}
    )
    answer = response.json()["subsonic-response"]
    names = {e["name"]: e["versions"] for e in answer["openSubsonicExtensions"]}
    assert names == {"apiKeyAuthentication": [1], "formPost": [1], "songLyrics": [1]}
    folders = call(sub, user, "getMusicFolders")["musicFolders"]["musicFolder"]
    assert folders == [{"id": 1, "name": "Music"}]
    me = call(sub, user, "getUser", username=user[0])["user"]
    assert me["username"] == user[0] and me["streamRole"] is True and me["adminRole"] is False
    other = add_user(sub)
    assert error_code(json_call(sub, "getUser", username=other[0], **as_user(user))) == 50


def test_browse_artists_albums_songs(sub: Server, user: tuple[str, str]) -> None:
    indexes = call(sub, user, "getArtists")["artists"]["index"]
    artists = [a for index in indexes for a in index["artist"]]
    assert len(artists) >= 3 and all(a["id"].startswith("R") for a in artists)
    assert all(a["albumCount"] >= 1 for a in artists)
    plain = call(sub, user, "getIndexes")["indexes"]["index"]
    assert [a["id"] for i in plain for a in i["artist"]] == [a["id"] for a in artists]
    artist = call(sub, user, "getArtist", id=artists[0]["id"])["artist"]
    assert artist["name"] == artists[0]["name"] and artist["album"]
    album = call(sub, user, "getAlbum", id=artist["album"][0]["id"])["album"]
    assert album["artistId"] == artist["id"] and album["songCount"] == len(album["song"])
    song = album["song"][0]
    assert song["albumId"] == album["id"] and song["isDir"] is False and song["duration"] > 0
    assert call(sub, user, "getSong", id=song["id"])["song"] == song
    folder = call(sub, user, "getMusicDirectory", id=artist["id"])["directory"]
    assert [c["id"] for c in folder["child"]] == [a["id"] for a in artist["album"]]
    inside = call(sub, user, "getMusicDirectory", id=album["id"])["directory"]
    assert [c["id"] for c in inside["child"]] == [s["id"] for s in album["song"]]
    assert error_code(json_call(sub, "getAlbum", id="L999999", **as_user(user))) == 70
    assert error_code(json_call(sub, "getAlbum", **as_user(user))) == 10
    root = ET.fromstring(get(sub, "getAlbum", id=album["id"], **as_user(user)).content)
    songs = root.find(f"{NS}album").findall(f"{NS}song")
    assert [s.attrib["id"] for s in songs] == [s["id"] for s in album["song"]]


def _title_order(name: str) -> str:
    folded = unicodedata.normalize("NFKD", name.lower())
    plain = "".join(c for c in folded if not unicodedata.combining(c))
    return re.sub(r"^the ", "", re.sub(r"[^a-z0-9]+", " ", plain).strip())


def test_genres_album_lists_random_songs(sub: Server, user: tuple[str, str]) -> None:
    genres = call(sub, user, "getGenres")["genres"]["genre"]
    assert genres and all(g["songCount"] >= 1 and g["value"] for g in genres)
    root = ET.fromstring(get(sub, "getGenres", **as_user(user)).content)
    assert root.find(f"{NS}genres/{NS}genre").text == genres[0]["value"]
    every = call(sub, user, "getAlbumList2", type="alphabeticalByName", size=500)
    names = [a["name"] for a in every["albumList2"]["album"]]
    # by title with case, accents, punctuation and a leading "The" ignored ("Études" under E)
    assert names == sorted(names, key=_title_order) and len(names) >= 3
    for kind in ("random", "newest", "alphabeticalByArtist"):
        page = call(sub, user, "getAlbumList2", type=kind, size=2)["albumList2"]["album"]
        assert len(page) == 2
    years = call(sub, user, "getAlbumList2", type="byYear", fromYear=1900, toYear=2100, size=500)
    assert len(years["albumList2"]["album"]) == len(names)
    tagged = call(sub, user, "getAlbumList2", type="byGenre", genre=genres[0]["value"])
    assert 1 <= len(tagged["albumList2"]["album"]) <= genres[0]["albumCount"]
    legacy = call(sub, user, "getAlbumList", type="alphabeticalByName", size=1)
    assert legacy["albumList"]["album"][0]["isDir"] is True
    assert error_code(json_call(sub, "getAlbumList2", type="byYear", **as_user(user))) == 0
    randoms = call(sub, user, "getRandomSongs", size=3)["randomSongs"]["song"]
    assert len(randoms) == 3 and len({s["id"] for s in randoms}) == 3


def first_song(sub: Server, user: tuple[str, str]) -> dict[str, Any]:
    album = call(sub, user, "getAlbumList2", type="alphabeticalByName", size=1)
    album_id = album["albumList2"]["album"][0]["id"]
    return call(sub, user, "getAlbum", id=album_id)["album"]["song"][0]


def test_stream_download_and_cover_art(sub: Server, user: tuple[str, str]) -> None:
    song = first_song(sub, user)
    url = f"{sub.url}/rest/"
    original = httpx.get(url + "download", params={"id": song["id"], **as_user(user)})
    assert original.status_code == 200 and len(original.content) > 10_000
    assert original.headers["content-type"] == song["contentType"]
    same = httpx.get(url + "stream.view", params={"id": song["id"], **as_user(user)})
    assert same.content == original.content
    ranged = httpx.get(
        url + "stream", params={"id": song["id"], **as_user(user)}, headers={"Range": "bytes=0-99"}
    )
    assert ranged.status_code == 206 and ranged.content == original.content[:100]
    mp3 = httpx.get(url + "stream", params={"id": song["id"], "format": "mp3", **as_user(user)})
    assert mp3.status_code == 200 and mp3.headers["content-type"] == "audio/mpeg"
    assert mp3.content[:3] == b"ID3" or mp3.content[0] == 0xFF
    small = httpx.get(url + "stream", params={"id": song["id"], "maxBitRate": 64, **as_user(user)})
    assert small.status_code == 200 and small.headers["content-type"] == "audio/aac"
    posted = httpx.post(url + "stream", data={"id": song["id"], **as_user(user)})
    assert posted.content == original.content
    cover = httpx.get(
        url + "getCoverArt", params={"id": song["coverArt"], "size": 100, **as_user(user)}
    )
    assert cover.status_code == 200 and cover.headers["content-type"] == "image/jpeg"
    assert cover.content[:2] == b"\xff\xd8"
    artist_cover = httpx.get(url + "getCoverArt", params={"id": song["artistId"], **as_user(user)})
    assert artist_cover.status_code == 200 and artist_cover.content[:2] == b"\xff\xd8"
    missing = json_call(sub, "stream", id="S999999", **as_user(user))
    assert error_code(missing) == 70
    free = add_user(sub, tier="free")
    assert error_code(json_call(sub, "stream", id=song["id"], **as_user(free))) == 50


def test_search(sub: Server, user: tuple[str, str]) -> None:
    song = first_song(sub, user)
    found = call(sub, user, "search3", query=song["title"])["searchResult3"]
    assert song["id"] in [s["id"] for s in found["song"]]
    by_artist = call(sub, user, "search3", query=song["artist"], songCount=0, albumCount=0)
    assert by_artist["searchResult3"]["artist"][0]["name"] == song["artist"]
    assert "song" not in by_artist["searchResult3"] or not by_artist["searchResult3"]["song"]
    everything = call(sub, user, "search3", query='""', songCount=500, artistCount=500)
    every_song = everything["searchResult3"]["song"]
    assert song["id"] in [s["id"] for s in every_song]
    page = call(sub, user, "search3", query="", songCount=2, songOffset=1)["searchResult3"]
    assert [s["id"] for s in page["song"]] == [s["id"] for s in every_song[1:3]]
    old = call(sub, user, "search2", query=song["album"])["searchResult2"]
    assert song["albumId"] in [a["id"] for a in old["album"]]


def test_star_unstar_starred(sub: Server) -> None:
    user = add_user(sub)
    song = first_song(sub, user)
    assert call(sub, user, "getStarred2")["starred2"] in (
        {},
        {"artist": [], "album": [], "song": []},
    )
    call(sub, user, "star", id=song["id"], albumId=song["albumId"], artistId=song["artistId"])
    kept = call(sub, user, "getStarred2")["starred2"]
    assert [s["id"] for s in kept["song"]] == [song["id"]] and kept["song"][0]["starred"]
    assert [a["id"] for a in kept["album"]] == [song["albumId"]]
    assert [a["id"] for a in kept["artist"]] == [song["artistId"]]
    assert call(sub, user, "getSong", id=song["id"])["song"]["starred"]
    assert call(sub, user, "getAlbum", id=song["albumId"])["album"]["starred"]
    assert "starred" not in song  # first_song read it before
    old = call(sub, user, "getStarred")["starred"]
    assert [a["id"] for a in old["album"]] == [song["albumId"]] and old["album"][0]["isDir"]
    # the same collection the REST v4 edge and the web player show
    call(sub, user, "unstar", id=song["id"], albumId=song["albumId"])
    kept = call(sub, user, "getStarred2")["starred2"]
    assert not kept.get("song") and not kept.get("album")
    assert "starred" not in call(sub, user, "getSong", id=song["id"])["song"]
    assert [a["id"] for a in kept["artist"]] == [song["artistId"]]
    assert error_code(json_call(sub, "star", id="S999999", **as_user(user))) == 70
    free = add_user(sub, tier="free")
    assert error_code(json_call(sub, "star", id=song["id"], **as_user(free))) == 50


def test_playlists(sub: Server) -> None:
    user = add_user(sub)
    album = call(sub, user, "getAlbumList2", type="alphabeticalByName", size=1)
    songs = call(sub, user, "getAlbum", id=album["albumList2"]["album"][0]["id"])["album"]["song"]
    song_ids = [s["id"] for s in songs[:3]]
    made = call(sub, user, "createPlaylist", name="Road trip", songId=song_ids)["playlist"]
    assert made["name"] == "Road trip" and made["owner"] == user[0]
    assert [e["id"] for e in made["entry"]] == song_ids and made["songCount"] == 3
    listed = call(sub, user, "getPlaylists")["playlists"]["playlist"]
    assert [p["id"] for p in listed] == [made["id"]]
    call(
        sub,
        user,
        "updatePlaylist",
        playlistId=made["id"],
        name="Road trip 2",
        comment="for the car",
        songIndexToRemove=[0, 2],
        songIdToAdd=song_ids[0],
    )
    got = call(sub, user, "getPlaylist", id=made["id"])["playlist"]
    assert got["name"] == "Road trip 2" and got["comment"] == "for the car"
    assert [e["id"] for e in got["entry"]] == [song_ids[1], song_ids[0]]
    replaced = call(sub, user, "createPlaylist", playlistId=made["id"], songId=song_ids[2])
    assert [e["id"] for e in replaced["playlist"]["entry"]] == [song_ids[2]]
    # another listener neither reads nor edits it
    other = add_user(sub)
    assert error_code(json_call(sub, "getPlaylist", id=made["id"], **as_user(other))) == 50
    assert error_code(json_call(sub, "createPlaylist", **as_user(user))) == 10
    call(sub, user, "deletePlaylist", id=made["id"])
    assert error_code(json_call(sub, "getPlaylist", id=made["id"], **as_user(user))) == 70
    assert not call(sub, user, "getPlaylists")["playlists"].get("playlist")


def test_scrobble_into_the_play_log(sub: Server) -> None:
    user = add_user(sub)
    song = first_song(sub, user)
    track_id = int(song["id"][1:])
    call(sub, user, "scrobble", id=song["id"], submission="false")
    call(sub, user, "scrobble", id=song["id"])  # the same play, now played through
    call(sub, user, "scrobble", id=song["id"], time=1_700_000_000_000)  # an offline play
    exported = sub.admin("export", "plays", "--since", "2023-01-01", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    mine = [p for p in json.loads(exported.stdout) if p["track_id"] == track_id]
    assert len(mine) == 2  # the start was settled by its submission, not logged twice
    assert all(p["outcome"] == "completed" and p["seconds_played"] > 0 for p in mine)
    assert any(p["started_at"].startswith("2023-11-14") for p in mine)
    free = add_user(sub, tier="free")
    assert error_code(json_call(sub, "scrobble", id=song["id"], **as_user(free))) == 50


def test_never_a_500_nor_html(sub: Server, user: tuple[str, str]) -> None:
    for path, params in (
        ("", {}),
        ("getAlbum.view", {"id": "R1", **as_user(user)}),  # an artist id where an album is due
        ("getAlbum", {"id": "nonsense", **as_user(user)}),
        ("getAlbumList2", {"type": "highest", **as_user(user)}),
        ("getRandomSongs", {"size": "many", **as_user(user)}),
        ("ping", {"u": user[0], "p": "enc:zz"}),
        ("scrobble", {"id": "S1", "time": "yesterday", **as_user(user)}),
        ("getStarred2", {"apiKey": ""}),
    ):
        response = httpx.get(f"{sub.url}/rest/{path}", params={"f": "json", **params})
        assert response.status_code == 200, (path, response.text)
        answer = response.json()["subsonic-response"]
        assert answer["status"] == "failed" and answer["error"]["code"] in (0, 10, 40, 70)
    posted = httpx.post(
        f"{sub.url}/rest/ping", content=b"\xff\xfe", headers={"content-type": "text/plain"}
    )
    assert posted.status_code == 200 and posted.headers["content-type"].startswith("text/xml")


def test_listener_album_lists(sub: Server) -> None:
    user = add_user(sub)
    page = call(sub, user, "getAlbumList2", type="alphabeticalByName", size=2)
    first, second = (a["id"] for a in page["albumList2"]["album"])
    song_of = {
        album: call(sub, user, "getAlbum", id=album)["album"]["song"][0]["id"]
        for album in (first, second)
    }

    def listed(kind: str) -> list[str]:
        answer = call(sub, user, "getAlbumList2", type=kind, size=10)["albumList2"]
        return [a["id"] for a in answer.get("album", [])]

    assert listed("starred") == listed("frequent") == listed("recent") == []
    call(sub, user, "star", albumId=second)
    assert listed("starred") == [second]
    for album, at in (
        (first, 1_700_000_000_000),
        (first, 1_700_000_100_000),
        (second, 1_700_000_200_000),
    ):
        call(sub, user, "scrobble", id=song_of[album], time=at)
    assert listed("frequent") == [first, second]
    assert listed("recent") == [second, first]


def test_songs_by_genre_lyrics_radio_stations(sub: Server, user: tuple[str, str]) -> None:
    genre = call(sub, user, "getGenres")["genres"]["genre"][0]
    first = call(sub, user, "getSongsByGenre", genre=genre["value"], count=500)
    tagged = first["songsByGenre"]["song"]
    assert len(tagged) == genre["songCount"]
    page = call(sub, user, "getSongsByGenre", genre=genre["value"], count=1, offset=1)
    assert [s["id"] for s in page["songsByGenre"]["song"]] == [tagged[1]["id"]]
    everything = call(sub, user, "search3", query="", songCount=500)["searchResult3"]["song"]
    found = None
    for song in everything:
        lyrics = call(sub, user, "getLyricsBySongId", id=song["id"])["lyricsList"]
        if lyrics.get("structuredLyrics"):
            found = song, lyrics["structuredLyrics"][0]
            break
    assert found is not None, "the demo library has lyrics"
    song, entry = found
    assert entry["displayTitle"] == song["title"] and entry["line"]
    assert all("start" in line for line in entry["line"]) == entry["synced"]
    assert call(sub, user, "getInternetRadioStations")["internetRadioStations"] == {}


def test_artist_and_album_info(sub: Server, user: tuple[str, str]) -> None:
    song = first_song(sub, user)
    info = call(sub, user, "getArtistInfo2", id=song["artistId"])["artistInfo2"]
    near = [a["id"] for a in info["similarArtist"]]
    assert near and song["artistId"] not in near
    picture = httpx.get(info["largeImageUrl"])
    assert picture.status_code == 200 and picture.content[:2] == b"\xff\xd8"
    old = call(sub, user, "getArtistInfo", id=song["artistId"], count=1)["artistInfo"]
    assert [a["id"] for a in old["similarArtist"]] == near[:1]
    album = call(sub, user, "getAlbumInfo2", id=song["albumId"])["albumInfo"]
    assert httpx.get(album["smallImageUrl"]).status_code == 200
    assert error_code(json_call(sub, "getAlbumInfo", id=song["artistId"], **as_user(user))) == 70


def test_scan_status(sub: Server, user: tuple[str, str]) -> None:
    status = call(sub, user, "getScanStatus")["scanStatus"]
    every = call(sub, user, "search3", query="", songCount=500)["searchResult3"]["song"]
    assert status == {"scanning": False, "count": len(every)}


def test_top_songs(sub: Server, user: tuple[str, str]) -> None:
    song = first_song(sub, user)
    top = call(sub, user, "getTopSongs", artist=song["artist"].upper(), count=3)["topSongs"]
    assert 1 <= len(top["song"]) <= 3
    assert all(s["artistId"] == song["artistId"] for s in top["song"])
    assert not call(sub, user, "getTopSongs", artist="Nobody At All")["topSongs"].get("song")


def test_artists_list_follows_a_scan_by_another_process(
    start_server: Callable[..., Server], tmp_path: Path
) -> None:
    """getArtists is kept between calls while the catalogue is unchanged; a scan run by the
    command (another process) shows at once, new artists and gone ones alike."""
    root = tmp_path / "lib"
    media.tag(media.encode(root / "A" / "01 One.flac", 0.5), title="One", artist="Alpha", album="A")
    server = start_server(env={"AIRWAVE_ANALYZE_AUDIO": "false"})
    assert "1 added" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    me = add_user(server)

    def artists() -> list[str]:
        index = call(server, me, "getArtists")["artists"].get("index", [])
        return [a["name"] for i in index for a in i["artist"]]

    assert artists() == artists() == ["Alpha"]
    media.tag(media.encode(root / "B" / "01 Two.flac", 0.5), title="Two", artist="Beta", album="B")
    assert "1 added" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    assert artists() == ["Alpha", "Beta"]
    (root / "A" / "01 One.flac").unlink()
    assert "1 removed" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    assert artists() == ["Beta"]
