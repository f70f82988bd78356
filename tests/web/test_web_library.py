"""The web player's library on demand (issue 15) in Debian's headless Chromium against a real
server on the demo library of 2-second tracks: the whole library A-Z (sorted, filtered and
paged), browsing and playing albums (the play log shows it), the now-playing screen (opened
from the player bar; on a phone its controls above the fold),
My Collection, playlists (keyboard reordering, a stale second tab, M3U8 import), the Up next
queue, autoplay after an album, a playlist, a single song and a genre's songs, the upsell for
listeners without on-demand listening.
Every flow runs over HTTP and over HTTPS; every screen visited is checked with axe-core (no
violations) on the HTTP run."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from support import Api, Server
from web_support import (
    PHONE,
    Tab,
    accessible,
    audio_state,
    new_listener,
    sign_in,
    wait_playing,
)

pytestmark = pytest.mark.sqlite_only


_ALBUMS: dict[str, list[dict[str, Any]]] = {}


def albums(site: Server) -> list[dict[str, Any]]:
    """Albums of the demo library with their tracks (annotations), looked up once."""
    if site.url not in _ALBUMS:
        api = new_listener(site, "premium")
        found = api.ok("v3/sod/search", {"query": "a", "types": ["AL"], "count": 50})
        out = []
        for pandora_id in found["results"]:
            album = found["annotations"][pandora_id]
            notes = api.ok("v4/catalog/getDetails", {"pandoraIds": album["tracks"]})["annotations"]
            out.append({**album, "trackNotes": [notes[t] for t in album["tracks"]]})
        _ALBUMS[site.url] = sorted(out, key=lambda a: a["name"])
    return _ALBUMS[site.url]


def open_album(page: Any, album: dict[str, Any]) -> None:
    """Find the album with the library's search and open its page."""
    page.get_by_role("link", name="Library", exact=True).click()
    page.get_by_role("heading", name="My Collection").wait_for()
    page.locator(".subnav").get_by_role("link", name="Browse").click()
    page.get_by_label("Search", exact=True).fill(album["name"])
    page.locator(f'.tile[data-pandora-id="{album["pandoraId"]}"] a').click()
    page.get_by_role("heading", name=album["name"], level=1).wait_for()


def bar_title(page: Any) -> str:
    return page.locator(".bar-title").inner_text()


def plays_of(site: Server, api: Api) -> list[dict[str, Any]]:
    """The operator's play log (`airwave export plays`) of this listener."""
    exported = site.admin("export", "plays", "--since", "2000-01-01", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    rows = json.loads(exported.stdout[exported.stdout.index("[") :])
    return [r for r in rows if r["listener_id"] == api.listener_id]  # type: ignore[attr-defined]


def playlist_order(api: Api, pandora_id: str) -> list[int]:
    answer = api.ok("v4/playlists/getTracks", {"pandoraId": pandora_id, "limit": 100})
    return [e["itemId"] for e in answer["tracks"]]


def shown_order(page: Any) -> list[int]:
    return [
        int(k)
        for k in page.locator("ol.reorder > li").evaluate_all("els => els.map(e => e.dataset.key)")
    ]


def test_first_load_stays_small_and_leaves_the_library_out(
    tabs: Callable[..., Tab], site: Server
) -> None:
    tab = tabs()
    page = tab.page
    page.goto("/")
    page.get_by_label("Username").wait_for()
    page.wait_for_load_state("networkidle")
    loaded = page.evaluate("""() => [...performance.getEntriesByType('navigation'),
        ...performance.getEntriesByType('resource')].filter(e =>
        !/[/](art|audio)[/]/.test(e.name)).map(e => [e.name, e.transferSize])""")
    transfer = sum(size for _, size in loaded)
    assert 0 < transfer < 150_000, transfer
    assert not [name for name, _ in loaded if name.endswith("/library.js")]
    print(f"first-load transfer {transfer} bytes")


def test_browse_to_an_album_and_play_it(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    album = albums(site)[0]
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    accessible(page)
    open_album(page, album)
    accessible(page)
    first = album["trackNotes"][0]
    page.get_by_role("button", name="Play", exact=True).click()
    wait_playing(page)
    expect(page.locator(".bar-title")).to_have_text(first["name"])
    # the player bar opens the now-playing screen: the cover first and large (the size drawn,
    # 2x in its srcset), the album it plays from, the track's artist and album, and what is next
    page.locator(".playerbar").get_by_role("link", name="Expand the player").click()
    page.wait_for_function("() => document.querySelector('#now .track-title').dataset.musicId")
    now = page.locator("#now")
    shown = now.locator(".track-title").get_attribute("data-music-id")
    playing = {t["musicId"]: t for t in album["trackNotes"]}
    assert shown in playing
    expect(now.locator(".now-from")).to_have_text(f"Playing from album {album['name']}")
    expect(now.locator(".track-byline")).to_contain_text(playing[shown]["artistName"])
    expect(now.locator(".track-album")).to_have_text(album["name"])
    cover = now.get_by_role("img", name=f"Cover of {album['name']}")
    expect(cover).to_be_visible()
    drawn = cover.evaluate("""(img) => ({width: img.getBoundingClientRect().width,
        stage: img.closest('.now').getBoundingClientRect().width, srcset: img.srcset})""")
    assert drawn["width"] >= 0.4 * drawn["stage"], drawn  # art-led: the cover leads the screen
    assert len(drawn["srcset"].split(",")) >= 2, drawn  # the browser picks 1x or 2x
    expect(now.get_by_role("slider", name="Seek")).to_be_visible()
    expect(page.get_by_role("heading", name="Up next")).to_be_visible()
    accessible(page)
    # each track played to its end is in the operator's play log, outside any station
    deadline = time.monotonic() + 20
    logged: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        logged = [p for p in plays_of(site, api) if p["outcome"] == "completed"]
        if logged:
            break
        time.sleep(0.5)
    assert logged, plays_of(site, api)
    assert logged[0]["title"] == first["name"] and logged[0]["station_id"] is None
    assert logged[0]["album"] == album["name"]


def test_browse_the_whole_library_a_to_z(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Library", exact=True).click()
    page.locator(".subnav").get_by_role("link", name="Browse").click()
    whole = page.get_by_role("region", name="The whole library")
    artists = whole.get_by_role("list", name="Artists")
    artists.locator("li").first.wait_for()
    every = api.ok("v4/catalog/browse", {"type": "AR", "limit": 500})
    names = [every["annotations"][a]["name"] for a in every["items"]]
    expect(whole.get_by_role("status")).to_have_text(f"{len(names)} of {len(names)} artists")
    assert artists.locator("li strong").all_inner_texts() == names
    accessible(page)

    # songs come a page at a time, sorted as chosen
    whole.get_by_role("link", name="Songs").click()
    songs = page.get_by_role("region", name="The whole library").get_by_role("list", name="Songs")
    songs.locator("li").first.wait_for()
    total = api.ok("v4/catalog/browse", {"type": "TR", "limit": 1})["total"]
    assert total > 60
    status = page.get_by_role("region", name="The whole library").get_by_role("status")
    expect(status).to_have_text(f"60 of {total} songs")
    page.get_by_role("button", name="Show more").click()
    expect(status).to_have_text(f"{min(120, total)} of {total} songs")
    page.get_by_label("Sort by").select_option("DATE_ADDED")
    expect(page).to_have_url(re.compile(r"kind=TR&sort=DATE_ADDED"))
    newest = api.ok("v4/catalog/browse", {"type": "TR", "sortOrder": "DATE_ADDED", "limit": 3})
    first = newest["annotations"][newest["items"][0]]["name"]
    expect(songs.locator("li strong").first).to_have_text(first)

    # albums filtered by name; a filter that matches nothing says so; an album opens and plays
    album = albums(site)[1]
    page.get_by_role("region", name="The whole library").get_by_role("link", name="Albums").click()
    page.get_by_label("Filter").fill(album["name"])
    tile = page.locator(f'.tile[data-pandora-id="{album["pandoraId"]}"]')
    expect(tile).to_be_visible()
    page.get_by_label("Filter").fill("no such album anywhere")
    expect(status).to_have_text("No albums match “no such album anywhere”.")
    page.get_by_label("Filter").fill(album["name"])
    tile.locator("a").click()
    page.get_by_role("heading", name=album["name"], level=1).wait_for()
    page.get_by_role("button", name="Play", exact=True).click()
    wait_playing(page)
    expect(page.locator(".bar-title")).to_have_text(album["trackNotes"][0]["name"])


def test_now_playing_on_a_phone_keeps_the_controls_above_the_fold(
    tabs: Callable[..., Tab], site: Server
) -> None:
    """On a 390x844 phone the player bar's title opens the now-playing screen, where the cover,
    the title, the seek slider, play/pause and skip all show without scrolling."""
    api = new_listener(site, "premium")
    album = albums(site)[3]
    tab = tabs(viewport=PHONE)
    page = tab.page
    sign_in(tab, api.username)
    page.goto(f"/#/library/album/{album['pandoraId']}")
    page.get_by_role("button", name="Play", exact=True).click()
    wait_playing(page)
    page.locator(".playerbar").get_by_role("button", name="Pause").click()
    page.locator(".bar-title").click()
    page.wait_for_function("() => location.hash === '#/now'")
    now = page.locator("#now")
    expect(now.locator("img.cover.big")).to_be_visible()
    boxes = page.evaluate("""() => ({scrollY, width: document.documentElement.scrollWidth,
        boxes: ['#now img.cover.big', '#now .track-title', '#now input.seek',
        '#now .controls button.play', '#now .controls button[aria-label=Skip]'].map((q) => {
        const r = document.querySelector(q).getBoundingClientRect();
        return {q, top: r.top, bottom: r.bottom, left: r.left, right: r.right}; })})""")
    wide = page.evaluate(
        """(w) => [...document.querySelectorAll('body *')].filter((e) =>
        e.getBoundingClientRect().right > w).map((e) => e.tagName + '.' + e.className + ' '
        + Math.round(e.getBoundingClientRect().right)).slice(0, 12)""",
        PHONE["width"],
    )
    assert boxes["scrollY"] == 0 and boxes["width"] <= PHONE["width"], (boxes, wide)
    for box in boxes["boxes"]:
        assert 0 <= box["top"] and box["bottom"] <= PHONE["height"], box
        assert 0 <= box["left"] and box["right"] <= PHONE["width"], box
    accessible(page)


def test_add_an_album_to_my_collection(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    album = albums(site)[1]
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Library", exact=True).click()
    expect(page.get_by_role("status").filter(has_text="Nothing here yet")).to_be_visible()
    open_album(page, album)
    collect = page.get_by_role("button", name="Add to My Collection")
    collect.click()
    expect(page.get_by_role("button", name="In My Collection")).to_have_attribute(
        "aria-pressed", "true"
    )
    assert api.ok("v4/collections/hasItems", {"pandoraIds": [album["pandoraId"]]})["items"] == {
        album["pandoraId"]: True
    }
    page.get_by_role("link", name="Library", exact=True).click()
    tile = page.locator(f'.tile[data-pandora-id="{album["pandoraId"]}"]')
    expect(tile).to_contain_text(album["name"])
    accessible(page)
    # kinds, sort orders and the filter
    page.locator(".subnav").get_by_role("link", name="Songs").click()
    expect(page.locator("main").get_by_role("status")).to_contain_text("Nothing here yet")
    page.locator(".subnav").get_by_role("link", name="Albums").click()
    page.get_by_label("Sort by").select_option("ALPHA")
    expect(page).to_have_url(re.compile(r"type=AL&sort=ALPHA$"))
    expect(tile).to_be_visible()
    page.get_by_label("Filter").fill("zzz no such name")
    expect(page.locator("main").get_by_role("status")).to_have_text("0 of 1 items")
    expect(tile).to_be_hidden()


def test_playlist_create_add_reorder_by_keyboard_and_a_stale_tab(
    tabs: Callable[..., Tab], site: Server
) -> None:
    api = new_listener(site, "premium")
    album = albums(site)[2]
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Playlists", exact=True).click()
    page.get_by_role("button", name="New playlist").click()
    page.get_by_role("dialog").get_by_label("Name").fill("Road trip")
    page.get_by_role("dialog").get_by_role("button", name="Create").click()
    page.get_by_role("heading", name="Road trip", level=1).wait_for()
    playlist_id = page.url.split("#/playlist/")[1].replace("%3A", ":")
    accessible(page)

    # the whole album from its page, one more track from a track's menu
    open_album(page, album)
    page.get_by_role("button", name="Add to playlist").click()
    page.get_by_role("dialog").get_by_role("button", name="Road trip").click()
    expect(page.locator(".toast")).to_contain_text("to “Road trip”")
    extra = albums(site)[3]["trackNotes"][0]
    open_album(page, albums(site)[3])
    page.get_by_role("button", name=f"More for {extra['name']}").click()
    page.get_by_role("dialog").get_by_role("button", name="Add to playlist…").click()
    page.get_by_role("dialog").get_by_role("button", name="Road trip").click()
    expect(page.locator(".toast").last).to_contain_text("Added 1 track to “Road trip”")

    page.goto(f"/#/playlist/{playlist_id}")
    rows = page.locator("ol.reorder > li")
    expect(rows).to_have_count(len(album["tracks"]) + 1)
    before = playlist_order(api, playlist_id)
    assert shown_order(page) == before
    accessible(page)

    # Alt+Down on the focused first row moves it one down, on the server too
    rows.first.focus()
    page.keyboard.press("Alt+ArrowDown")
    moved = [before[1], before[0], *before[2:]]
    deadline = time.monotonic() + 10
    while playlist_order(api, playlist_id) != moved and time.monotonic() < deadline:
        time.sleep(0.2)
    assert playlist_order(api, playlist_id) == moved
    expect(page.locator(f'ol.reorder > li[data-key="{before[0]}"]')).to_be_focused()
    page.keyboard.press("Alt+ArrowUp")
    deadline = time.monotonic() + 10
    while playlist_order(api, playlist_id) != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert playlist_order(api, playlist_id) == before

    # two quick presses are two moves, sent one after the other (never one stale version)
    rows.first.focus()
    page.keyboard.press("Alt+ArrowDown")
    page.keyboard.press("Alt+ArrowDown")
    twice = [before[1], before[2], before[0], *before[3:]]
    deadline = time.monotonic() + 10
    while playlist_order(api, playlist_id) != twice and time.monotonic() < deadline:
        time.sleep(0.2)
    assert playlist_order(api, playlist_id) == twice
    page.keyboard.press("Alt+ArrowUp")
    page.keyboard.press("Alt+ArrowUp")
    deadline = time.monotonic() + 10
    while playlist_order(api, playlist_id) != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert playlist_order(api, playlist_id) == before

    # a second tab shows the playlist; the first tab then changes it (a new version)
    other = tabs()
    sign_in(other, api.username)
    other.page.goto(f"/#/playlist/{playlist_id}")
    expect(other.page.locator("ol.reorder > li")).to_have_count(len(before))
    page.locator(f'ol.reorder > li[data-key="{before[-1]}"]').focus()
    page.keyboard.press("Alt+ArrowUp")
    changed = [*before[:-2], before[-1], before[-2]]
    deadline = time.monotonic() + 10
    while playlist_order(api, playlist_id) != changed and time.monotonic() < deadline:
        time.sleep(0.2)
    assert playlist_order(api, playlist_id) == changed
    # the stale tab's edit is refused by the server's version check and the tab reloads
    other.expected = {409}
    other.page.locator("ol.reorder > li").first.focus()
    other.page.keyboard.press("Alt+ArrowDown")
    expect(other.page.locator(".toast")).to_contain_text("changed elsewhere")
    assert playlist_order(api, playlist_id) == changed
    expect(other.page.locator("ol.reorder > li").first).to_have_attribute(
        "data-key", str(changed[0])
    )
    assert shown_order(other.page) == changed

    # remove a track, rename, delete
    name = album["trackNotes"][0]["name"]
    page.get_by_role("button", name=f"Remove {name} from the playlist").click()
    expect(rows).to_have_count(len(before) - 1)
    assert len(playlist_order(api, playlist_id)) == len(before) - 1
    page.get_by_role("button", name="Rename").click()
    page.get_by_role("dialog").get_by_label("Name").fill("Long drive")
    page.get_by_role("dialog").get_by_role("button", name="Rename").click()
    page.get_by_role("heading", name="Long drive", level=1).wait_for()
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    page.get_by_role("heading", name="Playlists", level=1).wait_for()
    expect(page.get_by_role("status").filter(has_text="No playlists yet.")).to_be_visible()


def test_import_an_m3u8_reports_the_unmatched_line(
    tabs: Callable[..., Tab], site: Server, small_demo_library: Path, tmp_path: Path
) -> None:
    api = new_listener(site, "premium")
    files = sorted(
        p for p in small_demo_library.rglob("*") if p.suffix in (".flac", ".mp3", ".ogg")
    )
    assert len(files) >= 2
    listing = tmp_path / "mix.m3u8"
    listing.write_text(
        "#EXTM3U\n#PLAYLIST:Imported mix\n"
        f"{files[0]}\n{files[1]}\n"
        "#EXTINF:200,Nobody - Not In This Library\n/nowhere/not-in-this-library.mp3\n",
        encoding="utf-8",
    )
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Playlists", exact=True).click()
    page.get_by_label("Import an M3U8 or XSPF file").set_input_files(str(listing))
    report = page.locator(".import-report")
    expect(report.get_by_role("heading")).to_contain_text("2 tracks")
    expect(report).to_contain_text("1 entry matches no track of the library")
    expect(report.locator(".unmatched li")).to_have_count(1)
    expect(report.locator(".unmatched li")).to_contain_text("Line 6")
    expect(report.locator(".unmatched li")).to_contain_text("Not In This Library")
    accessible(page)
    report.get_by_role("link", name="Open the playlist").click()
    expect(page.locator("ol.reorder > li")).to_have_count(2)


def test_queue_play_next_reorder_and_remove(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    album = albums(site)[4]
    chosen = albums(site)[5]["trackNotes"][0]
    # the album's MP3 transcodes made beforehand (by another listener): a transcode still being
    # made streams without byte ranges, and the seek below needs them
    warm = new_listener(site, "premium")
    for track in album["trackNotes"]:
        grant = warm.ok(
            "v1/ondemand/getAudioPlaybackInfo",
            {"pandoraId": track["pandoraId"], "audioFormat": "mp3"},
        )
        assert httpx.get(grant["audioURL"], verify=False).status_code == 200
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    open_album(page, album)
    page.get_by_role("button", name="Play", exact=True).click()
    wait_playing(page)
    page.locator(".playerbar").get_by_role("button", name="Pause").click()
    playing = bar_title(page)
    open_album(page, albums(site)[5])
    page.get_by_role("button", name=f"More for {chosen['name']}").click()
    page.get_by_role("dialog").get_by_role("button", name="Play next").click()
    page.get_by_role("link", name="Now playing").click()
    queue = page.locator("ol.queue > li")
    expect(queue.first).to_have_attribute("data-pandora-id", chosen["pandoraId"])
    accessible(page)
    # reorder by keyboard: the chosen track one down, then back up
    queue.first.focus()
    page.keyboard.press("Alt+ArrowDown")
    expect(queue.nth(1)).to_have_attribute("data-pandora-id", chosen["pandoraId"])
    expect(queue.nth(1)).to_be_focused()
    page.keyboard.press("Alt+ArrowUp")
    expect(queue.first).to_have_attribute("data-pandora-id", chosen["pandoraId"])
    # remove the one after it
    count = queue.count()
    second = queue.nth(1).get_attribute("data-pandora-id")
    queue.nth(1).get_by_role("button", name="Remove").click()
    expect(queue).to_have_count(count - 1)
    assert second not in [queue.nth(i).get_attribute("data-pandora-id") for i in range(count - 1)]
    # on-demand tracks seek
    now = page.locator("#now")
    seek = now.get_by_role("slider", name="Seek")
    expect(seek).to_be_visible()
    # (paused since the start: the 2-second tracks would end under the test's feet)
    page.wait_for_function(
        "() => [...document.querySelectorAll('audio')].some(a => a.src && a.readyState >= 1)"
    )
    expect(seek).to_be_enabled()
    seek.fill("1")
    page.wait_for_function(
        "() => [...document.querySelectorAll('audio')].some(a => a.src && a.currentTime >= 0.9)"
    )
    # skipping plays the chosen track next
    assert page.locator("#now .track-title").inner_text() == playing
    now.get_by_role("button", name="Skip").click()
    expect(page.locator("#now .track-title")).to_have_text(chosen["name"])
    wait_playing(page, past=0.1)


def test_autoplay_continues_after_the_last_track(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    album = albums(site)[6]
    last = album["trackNotes"][-1]
    names = {t["name"] for t in album["trackNotes"]}
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    open_album(page, album)
    page.get_by_role("button", name=f"Play {last['name']}").click()
    expect(page.locator(".bar-title")).to_have_text(last["name"])
    # after the album's last track the station engine's picks play: music from elsewhere
    deadline = time.monotonic() + 30
    while bar_title(page) in names | {""} and time.monotonic() < deadline:
        time.sleep(0.2)
    assert bar_title(page) not in names
    wait_playing(page, past=0.1)
    page.get_by_role("link", name="Now playing").click()
    # autoplay's picks take thumbs
    expect(page.locator("#now").get_by_role("button", name="Thumbs up")).to_be_enabled()
    before = page.locator("#now .track-title").inner_text()
    page.locator("#now").get_by_role("button", name="Thumbs down").click()
    expect(page.locator("#now .track-title")).not_to_have_text(before)


def until_elsewhere(page: Any, names: set[str], timeout: float = 30) -> str:
    """Wait until a track not among `names` (autoplay's pick) plays and the player bar shows it
    (between tracks the bar shows what the queue plays from: not a track)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if bar_title(page) not in names | {""} and audio_state(page)["playing"]:
            break
        time.sleep(0.2)
    shown = bar_title(page)
    assert shown not in names | {""} and audio_state(page)["playing"], (shown, audio_state(page))
    return shown


def test_autoplay_continues_after_a_playlist_a_single_song_and_a_genre(
    tabs: Callable[..., Tab], site: Server
) -> None:
    """Autoplay follows every kind of queue: a playlist (pods/getPlaylistAutoplaySongs), one song
    played on its own, and a genre's songs (no context the server takes: it follows on from the
    last track)."""
    api = new_listener(site, "premium")
    album = albums(site)[2]
    listed = album["trackNotes"][:2]
    made = api.ok(
        "v4/playlists/create", {"name": "Short list", "tracks": [t["pandoraId"] for t in listed]}
    )
    tab = tabs()
    page = tab.page
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/pods/" in r.url else None)
    sign_in(tab, api.username)

    # the playlist's last track, then music like it (none of the playlist's)
    page.goto(f"/#/playlist/{made['pandoraId']}")
    page.get_by_role("button", name=f"Play {listed[-1]['name']}").click()
    expect(page.locator(".bar-title")).to_have_text(listed[-1]["name"])
    until_elsewhere(page, {t["name"] for t in listed})
    assert any(url.endswith("/pods/getPlaylistAutoplaySongs") for url in asked), asked
    wait_playing(page, past=0.1)

    # one song, found by search and played next from its menu (nothing else queued)
    song = albums(site)[3]["trackNotes"][1]
    page.get_by_role("link", name="Library", exact=True).click()
    page.locator(".subnav").get_by_role("link", name="Browse").click()
    page.get_by_label("Search", exact=True).fill(song["name"])
    page.get_by_role("list", name="Songs").get_by_role(
        "button", name=f"More for {song['name']}"
    ).first.click()
    page.get_by_role("dialog").get_by_role("button", name="Play next").click()
    page.get_by_role("link", name="Now playing").click()
    expect(page.locator(".bar-title")).to_have_text(song["name"])
    until_elsewhere(page, {song["name"]})
    expect(page.locator("ol.queue > li").first).to_contain_text("Autoplay")

    # a genre's sample songs, from the last of them
    token = api.ok("v1/music/genrecategories", {})["categories"][0]["token"]
    page.goto(f"/#/library/genre/{token}")
    songs = page.locator("main ol.list").first
    songs.locator("li").first.wait_for()
    names = set(songs.locator("li strong").all_inner_texts())
    last = songs.locator("li").last.locator("strong").inner_text()
    songs.get_by_role("button", name=f"Play {last}").click()
    expect(page.locator(".bar-title")).to_have_text(last)
    until_elsewhere(page, names)
    wait_playing(page, past=0.1)


def test_a_free_listener_sees_the_upsell_not_the_library(
    tabs: Callable[..., Tab], site: Server
) -> None:
    api = new_listener(site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Library", exact=True).click()
    expect(
        page.get_by_role("heading", name="Your library on demand is part of Premium")
    ).to_be_visible()
    expect(page.get_by_role("heading", name="My Collection")).to_have_count(0)
    accessible(page)
    page.get_by_role("link", name="Playlists", exact=True).click()
    expect(
        page.get_by_role("heading", name="Your library on demand is part of Premium")
    ).to_be_visible()
    expect(page.get_by_role("button", name="New playlist")).to_have_count(0)
