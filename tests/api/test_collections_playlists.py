"""v4 collections/* and playlists/* (spec §7b), with the v3/v5 spellings clients send."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import media
import pytest
from support import Api, Server, assert_error, unique, wait_indexed


@pytest.fixture(scope="module")
def served(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server("--open-registration", "--library", str(small_demo_library))
    wait_indexed(server)
    return server


def member(server: Server, tier: str = "premium") -> Api:
    api = server.client()
    name = unique("od")
    api.register(name)
    api.username = name  # type: ignore[attr-defined]
    if tier != "free":
        assert server.admin("user", "tier", name, tier).returncode == 0
    return api


def ids_of(api: Api, kind: str, count: int) -> list[str]:
    found: list[str] = []
    for letter in "aeiou":
        for pandora_id in api.ok("v3/sod/search", {"query": letter, "types": [kind]})["results"]:
            if pandora_id not in found:
                found.append(pandora_id)
    assert len(found) >= count, found
    return found[:count]


def names(page: dict) -> list[str]:
    return [page["annotations"][i["pandoraId"]]["name"] for i in page["items"]]


def test_collection_add_has_count_remove_and_version(served: Server) -> None:
    api = member(served)
    tracks, albums, artists = ids_of(api, "TR", 3), ids_of(api, "AL", 2), ids_of(api, "AR", 1)
    version = api.ok("v4/collections/getVersion")["version"]
    for pandora_id in [*tracks, *albums, *artists, tracks[0]]:  # the last one twice
        assert api.ok("v4/collections/addItem", {"pandoraId": pandora_id}) == {}
    assert api.ok("v4/collections/getVersion")["version"] == version + 6
    counts = api.ok("v4/collections/countItems")
    assert counts == {"artists": 1, "albums": 2, "tracks": 3, "playlists": 0, "total": 6}
    has = api.ok("v4/collections/hasItems", {"pandoraIds": [tracks[0], "TR:999999", "nonsense"]})
    assert has == {"items": {tracks[0]: True, "TR:999999": False, "nonsense": False}}
    newest = api.ok("v4/collections/getItems", {"limit": 2})
    assert [i["pandoraId"] for i in newest["items"]] == [artists[0], albums[1]]
    assert newest["total"] == newest["totalCount"] == 6 and newest["cursor"]
    assert set(newest["annotations"]) == {artists[0], albums[1]}
    only_tracks = api.ok("v4/collections/getItems", {"types": ["TR"]})
    assert {i["pandoraId"] for i in only_tracks["items"]} == set(tracks)
    assert all(i["pandoraType"] == "TR" for i in only_tracks["items"])
    # removing twice is fine (another device may have been first); the version counts once
    for _ in range(2):
        assert api.ok("v4/collections/removeItem", {"pandoraId": tracks[0]}) == {}
    assert api.ok("v4/collections/getVersion")["version"] == version + 7
    assert api.ok("v4/collections/countItems")["tracks"] == 2
    # errors: what cannot be collected, what does not exist, who may not
    assert_error(
        api.call("v4/collections/addItem", {"pandoraId": "GE:1"}), 400, "INVALID_PANDORA_TYPE"
    )
    assert_error(api.call("v4/collections/addItem", {"pandoraId": "TR:999999"}), 404, "NOT_FOUND")
    assert_error(
        member(served, "free").call("v4/collections/getItems"), 403, "LISTENER_NOT_AUTHORIZED"
    )


def test_sorted_views_page_with_a_cursor_while_items_arrive(served: Server) -> None:
    api = member(served)
    albums = ids_of(api, "AL", 12)
    for pandora_id in albums[:8]:
        api.ok("v4/collections/addItem", {"pandoraId": pandora_id})
    first = api.ok(
        "v5beta/collections/getSortedAlbums",
        {"request": {"sortOrder": "ALPHA", "limit": 3, "annotationLimit": 3}},
    )
    assert first["totalCount"] == 8 and len(first["items"]) == 3
    for pandora_id in albums[8:]:  # arrive while the client pages
        api.ok("v4/collections/addItem", {"pandoraId": pandora_id})
    seen, cursor = names(first), first["cursor"]
    while cursor:
        page = api.ok(
            "v5/collections/getSortedAlbums", {"request": {"sortOrder": "ALPHA", "cursor": cursor}}
        )
        seen += names(page)
        cursor = page.get("cursor")
    assert seen == sorted(seen, key=str.casefold) and len(seen) == len(set(seen))
    everything = api.ok("v4/collections/getSortedItems", {"sortOrder": "ALPHA", "limit": 100})
    every_name = names(everything)
    assert set(seen[:3]) <= set(every_name) and len(every_name) == 12
    by_artist = api.ok("v4/collections/getSortedItems", {"sortOrder": "ARTIST", "limit": 100})
    artists = [by_artist["annotations"][i["pandoraId"]]["artistName"] for i in by_artist["items"]]
    assert artists == sorted(artists, key=str.casefold)
    # the artist's view: that artist's albums only
    artist = by_artist["annotations"][by_artist["items"][0]["pandoraId"]]["artistId"]
    theirs = api.ok("v4/collections/getItemsByArtist", {"artistPandoraId": artist})
    assert theirs["items"] and all(
        theirs["annotations"][i["pandoraId"]]["artistId"] == artist for i in theirs["items"]
    )
    assert api.ok("v5/collections/getSortedArtists", {"request": {}})["totalCount"] == 0
    assert_error(
        api.call("v4/collections/getSortedItems", {"cursor": first["cursor"]}),
        400,
        "INVALID_REQUEST",
    )  # a cursor of another order
    assert_error(
        api.call("v4/collections/getSortedItems", {"sortOrder": "SIDEWAYS"}),
        400,
        "INVALID_REQUEST",
    )


def playlist_tracks(api: Api, pandora_id: str) -> tuple[int, list[tuple[int, str]]]:
    page = api.ok("v4/playlists/getTracks", {"pandoraId": pandora_id, "limit": 1000})
    return page["version"], [(t["itemId"], t["pandoraId"]) for t in page["tracks"]]


def test_playlists_create_edit_with_versions_and_delete(served: Server) -> None:
    api, stranger = member(served), member(served)
    tracks = ids_of(api, "TR", 6)
    made = api.ok(
        "v4/playlists/create", {"request": {"details": {"name": "Drive"}, "tracks": tracks[:3]}}
    )
    pid = made["pandoraId"]
    assert made["type"] == "PL" and pid.startswith("PL:") and made["version"] == 1
    assert made["totalTracks"] == 3 and isinstance(made["duration"], int)
    assert api.ok("v4/collections/hasItems", {"pandoraIds": [pid]})["items"][pid] is True

    appended = api.ok(
        "v4/playlists/appendItems",
        {"pandoraId": pid, "playlistVersion": 1, "itemPandoraIds": [tracks[3], tracks[3]]},
    )
    assert appended["version"] == 2 and appended["totalTracks"] == 5
    version, entries = playlist_tracks(api, pid)
    assert [t for _, t in entries] == [*tracks[:3], tracks[3], tracks[3]]
    # a stale version, a bad item, another listener: refused, and nothing changes
    assert_error(
        api.call(
            "v4/playlists/appendItems", {"pandoraId": pid, "version": 1, "pandoraIds": [tracks[5]]}
        ),
        409,
        "PLAYLIST_VERSION_MISMATCH",
    )
    assert_error(
        api.call(
            "v4/playlists/editTracks",
            {
                "pandoraId": pid,
                "version": 2,
                "deletes": [entries[0][0]],
                "moves": [{"itemId": 1, "toIndex": 0}],
            },
        ),
        400,
        "PLAYLIST_BAD_RANGE",
    )
    assert_error(
        stranger.call("v4/playlists/getTracks", {"pandoraId": pid}), 403, "USER_NOT_AUTHORIZED"
    )
    assert_error(
        stranger.call("v4/playlists/delete", {"pandoraId": pid}), 403, "USER_NOT_AUTHORIZED"
    )
    assert_error(
        api.call(
            "v4/playlists/appendItems", {"pandoraId": pid, "version": 2, "pandoraIds": ["AL:1"]}
        ),
        400,
        "INVALID_PANDORA_TYPE",
    )
    assert playlist_tracks(api, pid) == (2, entries)

    # delete the first entry, move the last to the front (oldIndex/newIndex spelling), insert
    edited = api.ok(
        "v4/playlists/editTracks",
        {
            "pandoraId": pid,
            "version": 2,
            "deletes": [str(entries[0][0])],
            "moves": [{"itemId": entries[4][0], "oldIndex": 4, "newIndex": 0}],
            "inserts": [{"pandoraId": tracks[5], "index": 2}],
        },
    )
    assert edited["version"] == 3
    _, now = playlist_tracks(api, pid)
    assert [t for _, t in now] == [tracks[3], tracks[1], tracks[5], tracks[2], tracks[3]]

    shuffled = api.ok("v5/playlists/shuffleTracks", {"pandoraId": pid, "version": 3})
    assert shuffled["version"] == 4
    assert sorted(t for _, t in playlist_tracks(api, pid)[1]) == sorted(t for _, t in now)
    renamed = api.ok(
        "v5beta/playlists/setDetails",
        {"pandoraId": pid, "details": {"name": "Night drive", "description": "for late"}},
    )
    assert (renamed["name"], renamed["description"], renamed["version"]) == (
        "Night drive",
        "for late",
        5,
    )
    first_item = playlist_tracks(api, pid)[1][0][0]
    trimmed = api.ok(
        "v3/playlists/deleteTracks",
        {"pandoraId": pid, "playlistVersion": 5, "itemIds": [first_item]},
    )
    assert trimmed["totalTracks"] == 4 and trimmed["version"] == 6
    page = api.ok("v4/playlists/getTracks", {"pandoraId": pid, "offset": 1, "limit": 2})
    assert [t["index"] for t in page["tracks"]] == [1, 2] and page["totalTracks"] == 4
    assert set(page["annotations"]) == {t["pandoraId"] for t in page["tracks"]}
    assert all(t["trackPandoraId"] == t["pandoraId"] and t["available"] for t in page["tracks"])
    listed = api.ok("v4/playlists/annotatePlaylists", {"pandoraIds": [pid, "PL:999999"]})
    assert list(listed["annotations"]) == [pid]
    assert stranger.ok("v4/playlists/annotatePlaylists", {"pandoraIds": [pid]}) == {
        "annotations": {}
    }
    by_name = api.ok("v5/collections/getSortedPlaylists", {"request": {"sortOrder": "ALPHA"}})
    assert names(by_name) == ["Night drive"]

    assert api.ok("v4/playlists/delete", {"pandoraId": pid}) == {}
    assert_error(api.call("v4/playlists/getTracks", {"pandoraId": pid}), 404, "NOT_FOUND")
    assert api.ok("v4/collections/countItems")["playlists"] == 0


def test_limits_and_bad_bodies(served: Server) -> None:
    api = member(served)
    track = ids_of(api, "TR", 1)[0]
    pid = api.ok("v4/playlists/create", {"name": "Big"})["pandoraId"]
    # one append may not pass the 10,000-entry limit: refused whole, with a clear message
    too_many = api.call(
        "v4/playlists/appendItems", {"pandoraId": pid, "version": 1, "pandoraIds": [track] * 10_001}
    )
    assert_error(too_many, 400, "INVALID_REQUEST")
    full = api.ok(
        "v4/playlists/appendItems", {"pandoraId": pid, "version": 1, "pandoraIds": [track] * 10_000}
    )
    assert full["totalTracks"] == 10_000
    over = api.call(
        "v4/playlists/appendItems", {"pandoraId": pid, "version": 2, "pandoraIds": [track]}
    )
    assert "10000" in assert_error(over, 400, "INVALID_REQUEST")["message"]
    assert (
        api.ok("v4/playlists/getTracks", {"pandoraId": pid, "offset": 9_999})["tracks"][0]["index"]
        == 9_999
    )
    for body in (
        {},
        {"name": ""},
        {"name": "x" * 201},
        {"name": 5},
        {"name": "ok", "tracks": "TR:1"},
        {"name": "ok", "tracks": ["AR:1"]},
    ):
        assert api.call("v4/playlists/create", body).status_code in (400, 404), body
    for body in (
        {"pandoraId": pid},
        {"pandoraId": pid, "version": "1"},
        {"pandoraId": "PL:x", "version": 1},
    ):
        assert api.call("v4/playlists/editTracks", body).status_code in (400, 404), body


def test_two_devices_editing_at_once_cannot_both_win(served: Server) -> None:
    api = member(served)
    tracks = ids_of(api, "TR", 2)
    pid = api.ok("v4/playlists/create", {"name": "Race", "tracks": tracks})["pandoraId"]
    phone = served.client()
    phone.login(api.username, "correct horse battery")  # type: ignore[attr-defined]
    devices = [api, phone]
    outcomes: list[int] = []
    start = threading.Barrier(2)

    def edit(device: Api, track: str) -> None:
        start.wait()
        answer = device.call(
            "v4/playlists/appendItems", {"pandoraId": pid, "version": 1, "pandoraIds": [track]}
        )
        outcomes.append(answer.status_code)

    threads = [
        threading.Thread(target=edit, args=(d, t)) for d, t in zip(devices, tracks, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == [200, 409]
    version, entries = playlist_tracks(api, pid)
    assert version == 2 and len(entries) == 3


def test_a_vanished_track_stays_unavailable_and_comes_back(
    start_server: Callable[..., Server], tmp_path: Path
) -> None:
    root = tmp_path / "lib"
    for n in (1, 2):
        media.tag(
            media.encode(root / "Band" / "Record" / f"0{n} Song {n}.flac", 1.0),
            title=f"Song {n}",
            artist="Band",
            album="Record",
        )
    server = start_server("--open-registration", env={"AIRWAVE_ANALYZE_AUDIO": "false"})
    # scanned by the command: a server with library folders holds the library (its lease)
    assert "2 added" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    api = member(server)
    songs = api.ok("v3/sod/search", {"query": "song", "types": ["TR"]})["results"]
    pid = api.ok("v4/playlists/create", {"name": "Two", "tracks": songs})["pandoraId"]
    away = tmp_path / "away.flac"
    shutil.move(root / "Band" / "Record" / "02 Song 2.flac", away)
    assert "1 removed" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    page = api.ok("v4/playlists/getTracks", {"pandoraId": pid})
    assert [t["available"] for t in page["tracks"]] == [True, False] and page["totalTracks"] == 2
    shutil.move(away, root / "Band" / "Record" / "02 Song 2.flac")
    assert "1 moved" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    page = api.ok("v4/playlists/getTracks", {"pandoraId": pid})
    assert [t["available"] for t in page["tracks"]] == [True, True]


def test_annotations_follow_a_scan_run_by_another_process(
    start_server: Callable[..., Server], tmp_path: Path
) -> None:
    """The server keeps what it read of the catalogue while the catalogue is unchanged; a scan
    in another process (the command, or another server on the same database) changes the
    catalogue stamp, and the next annotation shows the change. Listener counts change without a
    scan and are never kept."""
    root = tmp_path / "lib"
    song = media.tag(
        media.encode(root / "Band" / "Record" / "01 Song.flac", 1.0),
        title="Old Title",
        artist="Band",
        album="Record",
    )
    server = start_server("--open-registration", env={"AIRWAVE_ANALYZE_AUDIO": "false"})
    assert "1 added" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    api = member(server)
    (track,) = api.ok("v3/sod/search", {"query": "old title", "types": ["TR"]})["results"]
    (album,) = api.ok("v3/sod/search", {"query": "record", "types": ["AL"]})["results"]
    (artist,) = api.ok("v3/sod/search", {"query": "band", "types": ["AR"]})["results"]
    every = [track, album, artist]
    seen = lambda: api.ok("v4/catalog/annotateObjects", {"pandoraIds": every})  # noqa: E731
    for _ in range(2):  # read, then kept
        first = seen()
        assert first[track]["name"] == "Old Title" and first[album]["name"] == "Record"
        assert first[artist]["listenerCount"] == 0
    api.ok("v1/station/createStation", {"pandoraId": artist})
    assert seen()[artist]["listenerCount"] == 1  # no scan: counted afresh
    media.tag(song, title="New Title", artist="Band", album="Record", explicit=True)
    os.utime(song, (time.time() + 5, time.time() + 5))
    assert "1 updated" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    after = seen()
    assert after[track]["name"] == "New Title" and after[track]["explicitness"] == "EXPLICIT"
    assert after[album]["explicitness"] == "EXPLICIT"
    shutil.move(song, tmp_path / "away.flac")
    assert "1 removed" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    gone = seen()
    assert album not in gone and artist not in gone  # no present track: not annotated
    assert gone[track]["name"] == "New Title"  # playlists still show it, unavailable


def album_tracks(api: Api, album: str) -> list[str]:
    return api.ok("v4/catalog/getDetails", {"pandoraIds": [album]})["annotations"][album]["tracks"]


def test_autoplay_goes_on_after_an_album_and_learns_from_thumbs(served: Server) -> None:
    api = member(served)
    album = ids_of(api, "AL", 1)[0]
    own = album_tracks(api, album)
    answer = api.ok(
        "v5/pods/getAutoplaySongs",
        {"contextId": album, "numSongs": 6, "contextTracks": own[::-1][:2]},
    )
    picks = [r["musicId"] for r in answer["songRecommendations"]]
    assert len(picks) == 6 and not set(picks) & set(own)  # after an album: other music
    assert set(answer["annotations"]) == set(picks) and answer["requestId"]
    assert all(r["autoplaySourceId"] == album for r in answer["songRecommendations"])
    # a pick plays like any on-demand track
    played = api.ok("v1/ondemand/getAudioPlaybackInfo", {"pandoraId": picks[0]})
    assert served.client().http.get(played["audioURL"]).status_code == 200
    # a thumbs-down is never chosen again after this album; a thumbs-up is marked
    down, up = answer["songRecommendations"][0], answer["songRecommendations"][1]
    assert (
        api.ok("v4/pods/addAutoplayFeedback", {"token": down["token"], "isPositive": False}) == {}
    )
    assert (
        api.ok(
            "v4/pods/addAutoplayFeedback",
            {"contextId": album, "trackPandoraId": up["musicId"], "isPositive": True},
        )
        == {}
    )
    seen = []
    for _ in range(4):
        more = api.ok(
            "v4/pods/getAutoplaySongs", {"contextId": album, "numSongs": 20, "annotationLimit": 0}
        )
        assert more["annotations"] == {}
        seen += [(r["musicId"], r["songRating"]) for r in more["songRecommendations"]]
    assert down["musicId"] not in {t for t, _ in seen}
    assert all(rating == (1 if t == up["musicId"] else 0) for t, rating in seen)


def test_autoplay_and_autofill_of_a_playlist(served: Server) -> None:
    api, stranger = member(served), member(served)
    tracks = ids_of(api, "TR", 4)
    pid = api.ok("v4/playlists/create", {"name": "Seeds", "tracks": tracks})["pandoraId"]
    for path in ("v4/pods/getPlaylistAutoplaySongs", "v5/pods/getPlaylistAutofillSongs"):
        found = api.ok(path, {"pandoraId": pid, "numSongs": 5})["songRecommendations"]
        assert found and not {r["musicId"] for r in found} & set(tracks), path
    suggested = api.ok("v5/pods/getPlaylistSearchRecommendations", {"contextId": pid})
    assert len(suggested["songRecommendations"]) == 10
    assert_error(
        api.call("v4/pods/getPlaylistAutoplaySongs", {"pandoraId": tracks[0]}),
        400,
        "INVALID_PANDORA_TYPE",
    )
    assert_error(
        stranger.call("v4/pods/getAutoplaySongs", {"contextId": pid}), 403, "USER_NOT_AUTHORIZED"
    )
    assert_error(api.call("v4/pods/getAutoplaySongs", {}), 400, "INVALID_REQUEST")
    assert_error(
        api.call("v4/pods/addAutoplayFeedback", {"token": "nonsense", "isPositive": True}),
        400,
        "INVALID_REQUEST",
    )
    assert_error(
        member(served, "free").call("v4/pods/getAutoplaySongs", {"contextId": tracks[0]}),
        403,
        "LISTENER_NOT_AUTHORIZED",
    )


def test_playlist_files_out_and_back_in(served: Server, tmp_path: Path) -> None:
    api = member(served)
    tracks = ids_of(api, "TR", 5)
    pid = api.ok("v4/playlists/create", {"name": "Out and in", "tracks": tracks})["pandoraId"]
    for fmt in ("m3u8", "xspf"):
        exported = api.ok("v4/playlists/export", {"pandoraId": pid, "format": fmt})
        assert exported["fileName"] == f"out-and-in.{fmt}"
        back = api.ok("v4/playlists/import", {"content": exported["content"]})  # format detected
        assert back["unmatched"] == [] and back["playlist"]["name"] == "Out and in"
        assert [t for _, t in playlist_tracks(api, back["playlist"]["pandoraId"])[1]] == tracks
    # by tags when paths do not match (another machine's file), and misses reported by line
    first = api.ok("v4/catalog/annotateObjectsSimple", {"pandoraIds": [tracks[0]]})[tracks[0]]
    text = "\n".join(
        [
            "#EXTM3U",
            f"#EXTINF:2,{first['artistName']} - {first['name']}",
            "/elsewhere/Music/some file.mp3",
            "#EXTINF:200,Nobody - Nothing At All",
            "/elsewhere/Music/missing.mp3",
            "https://radio.example/stream",
        ]
    )
    imported = api.ok("v4/playlists/import", {"content": text, "format": "m3u", "name": "Mixed"})
    assert imported["playlist"]["totalTracks"] == 1
    assert [(u["line"], u["entry"]) for u in imported["unmatched"]] == [
        (5, "Nobody - Nothing At All"),
        (6, "https://radio.example/stream"),
    ]
    assert [t for _, t in playlist_tracks(api, imported["playlist"]["pandoraId"])[1]] == tracks[:1]
    for body in (
        {"content": "<playlist><trackList><track>", "format": "xspf"},
        {"content": "<?xml version='1.0'?><nope/>", "format": "xspf"},
        {"content": "#EXTM3U\n", "format": "wav"},
    ):
        assert_error(api.call("v4/playlists/import", body), 400, "INVALID_REQUEST")
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><playlist>&b;</playlist>'
    )
    assert_error(
        api.call("v4/playlists/import", {"content": bomb, "format": "xspf"}), 400, "INVALID_REQUEST"
    )
    assert_error(
        api.call("v4/playlists/export", {"pandoraId": pid, "format": "wav"}), 400, "INVALID_REQUEST"
    )


@pytest.mark.sqlite_only  # the command's shape; its storage is the endpoint's, tested on both
def test_playlist_files_through_the_cli(served: Server, tmp_path: Path) -> None:
    api = member(served)
    tracks = ids_of(api, "TR", 3)
    pid = api.ok("v4/playlists/create", {"name": "Command line", "tracks": tracks})["pandoraId"]
    user = api.username  # type: ignore[attr-defined]
    target = tmp_path / "exported.xspf"
    done = served.cli(
        "playlist", "export", pid, "--user", user, "--format", "xspf", "--out", str(target)
    )
    assert done.returncode == 0, done.stderr
    assert target.read_text().count("<track>") == 3
    target.write_text(
        target.read_text().replace(
            "</trackList>",
            "<track><title>Gone</title><creator>Nobody</creator></track></trackList>",
        )
    )
    done = served.cli("playlist", "import", str(target), "--user", user, "--name", "Round trip")
    assert done.returncode == 0, done.stderr
    assert "3 tracks, 1 unmatched" in done.stdout and "line 4: Nobody - Gone" in done.stderr
    listed = served.cli("playlist", "list", "--user", user)
    assert "Round trip" in listed.stdout and "Command line" in listed.stdout
    missing = served.cli("playlist", "import", str(tmp_path / "nope.m3u"), "--user", user)
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    stranger = served.cli("playlist", "export", pid, "--user", member(served).username)  # type: ignore[attr-defined]
    assert stranger.returncode == 1 and "another listener" in stranger.stderr


def test_the_librarys_playlist_files_become_the_operators_playlists(
    start_server: Callable[..., Server], tmp_path: Path
) -> None:
    root = tmp_path / "lib"
    songs = []
    for n in (1, 2, 3):
        songs.append(
            media.tag(
                media.encode(root / "Band" / "Record" / f"0{n} Song {n}.flac", 1.0),
                title=f"Song {n}",
                artist="Band",
                album="Record",
            )
        )
    listing = root / "Band" / "best of.m3u"
    listing.write_text("Record/03 Song 3.flac\nRecord/01 Song 1.flac\n../nowhere.mp3\n")
    server = start_server("--open-registration", env={"AIRWAVE_ANALYZE_AUDIO": "false"})
    scanned = server.cli("scan", "--library", str(root), "--no-analyze")
    assert "1 playlist files wait for an administrator account" in scanned.stdout
    done = server.admin(
        "user",
        "add",
        "operator",
        "--admin",
        "--tier",
        "premium",
        "--password-stdin",
        input="operator pw\n",
    )
    assert done.returncode == 0, done.stderr
    scanned = server.cli("scan", "--library", str(root), "--no-analyze")
    assert "playlist files: 1 new, 0 changed, 0 gone; 1 entries match no track" in scanned.stdout
    api = server.client()
    api.login("operator", "operator pw")
    mine = api.ok("v5/collections/getSortedPlaylists", {"request": {}})
    (pid,) = [i["pandoraId"] for i in mine["items"]]
    assert mine["annotations"][pid]["name"] == "best of"
    titles = lambda: [  # noqa: E731
        api.ok("v4/catalog/annotateObjectsSimple", {"pandoraIds": [t]})[t]["name"]
        for _, t in playlist_tracks(api, pid)[1]
    ]
    assert titles() == ["Song 3", "Song 1"]
    listing.write_text("#EXTM3U\nRecord/02 Song 2.flac\n")
    os.utime(listing, (time.time() + 5, time.time() + 5))
    assert "1 changed" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    assert titles() == ["Song 2"]
    listing.unlink()
    assert "1 gone" in server.cli("scan", "--library", str(root), "--no-analyze").stdout
    assert api.ok("v4/collections/countItems")["playlists"] == 0


def test_on_demand_play_holds_the_player_like_a_station(served: Server) -> None:
    laptop = member(served)
    phone = served.client()
    phone.login(laptop.username, "correct horse battery")  # type: ignore[attr-defined]
    album = ids_of(laptop, "AL", 1)[0]
    tracks = album_tracks(laptop, album)
    pid = laptop.ok("v4/playlists/create", {"name": "Hold", "tracks": tracks})["pandoraId"]
    laptop.ok("v4/collections/addItem", {"pandoraId": ids_of(laptop, "AR", 1)[0]})  # newer
    played = phone.ok(
        "v1/ondemand/getAudioPlaybackInfo", {"pandoraId": tracks[0], "sourcePandoraId": pid}
    )
    assert played["audioURL"]
    # while the phone plays, the laptop is refused on demand and on stations
    assert_error(
        laptop.call("v1/ondemand/getAudioPlaybackInfo", {"pandoraId": tracks[1]}),
        409,
        "STREAM_VIOLATION",
    )
    station = laptop.ok("v1/station/createStation", {"musicId": tracks[0]})["stationId"]
    assert_error(
        laptop.call("v1/playlist/getFragment", {"stationId": station}), 409, "STREAM_VIOLATION"
    )
    # the phone goes on; the playlist it plays from is now the most recent in the collection
    phone.ok("v1/ondemand/getAudioPlaybackInfo", {"pandoraId": tracks[1], "sourcePandoraId": pid})
    recent = laptop.ok("v4/collections/getSortedItems", {"sortOrder": "RECENT", "limit": 1})
    assert [i["pandoraId"] for i in recent["items"]] == [pid]
