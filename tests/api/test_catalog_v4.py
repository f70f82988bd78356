"""v4 catalog/* (spec §7b): the catalogue as annotations, for tiers with on-demand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support import Api, Server, assert_error, unique, wait_indexed


@pytest.fixture(scope="module")
def served(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server("--open-registration", "--library", str(small_demo_library))
    wait_indexed(server)
    return server


def member(server: Server, tier: str) -> Api:
    api = server.client()
    name = unique("v4")
    api.register(name)
    if tier != "free":
        assert server.admin("user", "tier", name, tier).returncode == 0
    return api


def an_artist(api: Api) -> str:
    return api.ok("v3/sod/search", {"query": "glass harbor", "types": ["AR"]})["results"][0]


def test_an_artists_page_annotates_every_id_it_names(served: Server) -> None:
    api = member(served, "premium")
    artist = an_artist(api)
    page = api.ok("v4/catalog/getDetails", {"pandoraId": artist})
    details = page["artistDetails"]
    named = details["topTracks"] + details["topAlbums"] + details["similarArtists"] + [artist]
    assert details["pandoraId"] == artist and details["topTracks"] and details["topAlbums"]
    assert set(named) <= set(page["annotations"])
    assert details["heroImage"]["artUrl"].endswith("/500.jpg")
    track = page["annotations"][details["topTracks"][0]]
    assert track["type"] == "TR" and track["rightsInfo"]["hasInteractive"] is True
    # a list of ids, wrapped as clients wrap v4 bodies; unknown and other kinds are left out
    listed = api.ok(
        "v4/catalog/getDetails",
        {"request": {"pandoraIds": [details["topAlbums"][0], "TR:999999", "ST:0:1", "x"]}},
    )
    assert list(listed) == ["annotations"]
    assert list(listed["annotations"]) == [details["topAlbums"][0]]


def test_discography_and_every_track_of_an_artist(served: Server) -> None:
    api = member(served, "premium")
    artist = an_artist(api)
    albums = api.ok("v4/catalog/getArtistDiscography", {"artistPandoraId": artist})["albums"]
    assert albums and all(a["type"] == "AL" and a["artistId"] == artist for a in albums)
    every = api.ok("v4/catalog/getAllArtistTracks", {"artistPandoraId": artist, "limit": 1000})
    # their own albums' tracks, and the ones they have on other albums (compilations)
    assert every["total"] == len(every["tracks"]) >= sum(a["trackCount"] for a in albums)
    assert all(t["type"] == "TR" and t["artistId"] == artist for t in every["tracks"])
    page = api.ok(
        "v4/catalog/getAllArtistTracks", {"artistPandoraId": artist, "offset": 2, "limit": 3}
    )
    assert page["total"] == every["total"] and page["tracks"] == every["tracks"][2:5]


def test_tiers_without_on_demand_browse_but_do_not_play_and_bad_requests(served: Server) -> None:
    free = member(served, "free")  # browses the catalogue; plays nothing on demand
    artist = an_artist(free)
    page = free.ok("v4/catalog/getDetails", {"pandoraId": artist})
    tracks = page["artistDetails"]["topTracks"]
    assert tracks and not page["annotations"][tracks[0]]["rightsInfo"]["hasInteractive"]
    assert_error(
        free.call("v1/ondemand/getAudioPlaybackInfo", {"pandoraId": tracks[0]}),
        403,
        "LISTENER_NOT_AUTHORIZED",
    )
    api = member(served, "premium")
    assert_error(api.call("v4/catalog/getDetails", {}), 400, "INVALID_REQUEST")
    assert_error(
        api.call("v4/catalog/getDetails", {"pandoraIds": ["a"], "pandoraId": "AR:1"}),
        400,
        "INVALID_REQUEST",
    )
    assert_error(
        api.call("v4/catalog/getAllArtistTracks", {"artistPandoraId": "TR:1"}),
        400,
        "INVALID_PANDORA_TYPE",
    )
    assert_error(
        api.call("v4/catalog/getArtistDiscography", {"artistPandoraId": "AR:999999"}),
        404,
        "NOT_FOUND",
    )
    assert_error(
        api.call("v4/catalog/getAllArtistTracks", {"artistPandoraId": "AR:1", "limit": 0}),
        400,
        "INVALID_REQUEST",
    )


def browse_all(api: Api, body: dict[str, object], page: int = 7) -> tuple[list[str], dict]:
    """Every item of a browse list, fetched `page` at a time; and their annotations."""
    items: list[str] = []
    notes: dict = {}
    while True:
        answer = api.ok("v4/catalog/browse", {**body, "offset": len(items), "limit": page})
        assert answer["total"] >= len(items) + len(answer["items"])
        items += answer["items"]
        notes.update(answer["annotations"])
        if not answer["items"]:
            assert len(items) == answer["total"]
            return items, notes


def test_browse_the_whole_library_a_to_z_sorted_filtered_and_paged(served: Server) -> None:
    api = member(served, "premium")
    artists, notes = browse_all(api, {"type": "AR"})
    names = [notes[a]["name"].casefold() for a in artists]
    assert len(artists) > 3 and names == sorted(names) and len(set(artists)) == len(artists)
    assert all(notes[a]["type"] == "AR" for a in artists)
    assert an_artist(api) in artists
    busiest = api.ok("v4/catalog/browse", {"type": "AR", "sortOrder": "ALBUM_COUNT"})
    counts = [busiest["annotations"][a]["albumCount"] for a in busiest["items"]]
    assert counts == sorted(counts, reverse=True) and busiest["total"] == len(artists)

    albums, notes = browse_all(api, {"type": "AL", "sortOrder": "ALPHA"})
    assert len(albums) > len(artists) // 2 and all(notes[a]["type"] == "AL" for a in albums)
    by_year, year_notes = browse_all(api, {"type": "AL", "sortOrder": "YEAR"})
    assert sorted(by_year) == sorted(albums)
    by_artist, artist_notes = browse_all(api, {"type": "AL", "sortOrder": "ARTIST"})
    assert sorted(by_artist) == sorted(albums)
    newest, _ = browse_all(api, {"type": "AL", "sortOrder": "DATE_ADDED"})
    assert sorted(newest) == sorted(albums)

    # a filter matches names and artists, ignoring case; every page agrees on the total
    wanted = notes[albums[0]]["name"][:4].upper()
    found, found_notes = browse_all(api, {"type": "AL", "filter": wanted}, page=2)
    assert albums[0] in found
    assert all(
        wanted.casefold() in (n["name"] + " " + n["artistName"]).casefold()
        for n in found_notes.values()
    )
    everything = api.ok("v4/catalog/browse", {"type": "TR", "limit": 500})
    tracks = everything["items"]
    assert everything["total"] == len(tracks) > len(albums)
    titles = [everything["annotations"][t]["name"].casefold() for t in tracks]
    assert titles == sorted(titles)
    glass = api.ok("v4/catalog/browse", {"type": "TR", "filter": "glass harbor", "limit": 500})
    assert glass["total"] == len(glass["items"]) > 0
    assert all(
        glass["annotations"][t]["artistName"].casefold() == "glass harbor" for t in glass["items"]
    )
    # a filter of wildcard characters is taken literally
    assert api.ok("v4/catalog/browse", {"type": "TR", "filter": "%_%"})["total"] == 0

    # free listeners browse too; the annotations say they can not play on demand
    free = member(served, "free")
    seen = free.ok("v4/catalog/browse", {"type": "TR", "limit": 1})
    assert not seen["annotations"][seen["items"][0]]["rightsInfo"]["hasInteractive"]

    for body in (
        {"type": "PL"},
        {"type": "AR", "sortOrder": "YEAR"},
        {"type": "TR", "sortOrder": "nope"},
        {"type": "AL", "limit": 501},
        {"type": "AL", "offset": -1},
        {"type": "AL", "filter": "x" * 201},
        {},
    ):
        assert_error(api.call("v4/catalog/browse", body), 400, "INVALID_REQUEST")
