"""The web player's history and resume (issue 15) in Debian's headless Chromium against a real
server on the demo library of 2-second tracks: History lists what played on stations and on
demand (kept by the server, so another browser sees it too), and a reload puts the last station or
on-demand queue back at its track and time, paused. Every flow runs over HTTP and over HTTPS;
every screen visited is checked with axe-core on the HTTP run."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from support import Api, Server
from web_support import (
    Tab,
    accessible,
    audio_state,
    new_listener,
    sign_in,
    wait_playing,
)

pytestmark = pytest.mark.sqlite_only


def an_album(site: Server, api: Api, index: int) -> dict[str, Any]:
    """An album of the demo library with its track annotations, its MP3 transcodes made (a
    transcode still being made streams without byte ranges, and restoring a position seeks)."""
    found = api.ok("v3/sod/search", {"query": "a", "types": ["AL"], "count": 50})
    albums = sorted((found["annotations"][p] for p in found["results"]), key=lambda a: a["name"])
    album = albums[index]
    notes = api.ok("v4/catalog/getDetails", {"pandoraIds": album["tracks"]})["annotations"]
    album["trackNotes"] = [notes[t] for t in album["tracks"]]
    warm = new_listener(site, "premium")
    for track in album["trackNotes"]:
        grant = warm.ok(
            "v1/ondemand/getAudioPlaybackInfo",
            {"pandoraId": track["pandoraId"], "audioFormat": "mp3"},
        )
        assert httpx.get(grant["audioURL"], verify=False).status_code == 200
    return album


def heard(api: Api) -> list[dict[str, Any]]:
    return api.ok("v1/listener/getPlayHistory", {"pageSize": 100})["items"]


def bar(page: Any) -> Any:
    return page.get_by_role("region", name="Player")


def pause(page: Any) -> None:
    """Pause with the play/pause button in sight (the now-playing screen's, or the player bar's)."""
    page.locator("button.icon.play:visible").first.click()
    page.wait_for_function("() => [...document.querySelectorAll('audio')].every(a => a.paused)")


def test_history_lists_station_plays_and_lasts(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", name="Nothing played yet")).to_be_visible()
    accessible(page)

    seed = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AR"]})["items"][0]
    station = api.ok("v1/station/createStation", {"musicId": seed["musicId"]})
    page.goto("/#/stations")
    page.get_by_role("button", name=f"Play {station['name']}").click()
    wait_playing(page)
    # two tracks heard (the 2-second tracks of the demo library follow each other)
    deadline = time.monotonic() + 30
    while len(heard(api)) < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert len(heard(api)) >= 2
    pause(page)
    played = heard(api)

    page.get_by_role("link", name="History").click()
    rows = page.locator(".history li")
    expect(rows.first).to_be_visible()
    expect(page.get_by_role("heading", name="Today")).to_be_visible()
    expect(rows).to_have_count(len(heard(api)))
    newest = played[0]["track"]
    expect(rows.first).to_have_attribute("data-music-id", newest["musicId"])
    expect(rows.first).to_contain_text(newest["songTitle"])
    expect(rows.first.get_by_role("link", name=station["name"])).to_be_visible()
    # radio listeners start a station from a track they heard
    expect(
        rows.first.get_by_role("button", name=f"Start a station from {newest['songTitle']}")
    ).to_be_visible()
    accessible(page)

    # the server keeps it: another browser signed in as the same listener sees the same list
    other = tabs()
    sign_in(other, api.username)
    other.page.goto("/#/history")
    expect(other.page.locator(".history li").first).to_have_attribute(
        "data-music-id", newest["musicId"]
    )


def test_on_demand_history_plays_a_track_again(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    album = an_album(site, api, 1)
    first = album["trackNotes"][0]
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.goto(f"/#/library/album/{album['pandoraId']}")
    page.get_by_role("button", name=f"Play {first['name']}").click()
    wait_playing(page)
    deadline = time.monotonic() + 20
    while not heard(api) and time.monotonic() < deadline:
        time.sleep(0.3)
    pause(page)
    page.get_by_role("link", name="History").click()
    row = page.locator(f'.history li[data-music-id="{first["musicId"]}"]').last
    expect(row).to_contain_text("Your library")
    accessible(page)
    row.get_by_role("button", name=f"Play {first['name']}").click()
    expect(page.locator(".bar-title")).to_have_text(first["name"])
    wait_playing(page, past=0.1)


def test_a_reload_puts_the_station_back_paused(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    seed = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AR"]})["items"][-1]
    station = api.ok("v1/station/createStation", {"musicId": seed["musicId"]})
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("button", name=f"Play {station['name']}").click()
    wait_playing(page)
    pause(page)
    now = page.locator("#now")
    title = now.locator(".track-title").inner_text()
    assert title

    page.reload()
    expect(now.locator(".track-title")).to_have_text(title)
    expect(now.get_by_role("link", name=station["name"])).to_be_visible()
    expect(now.locator(".message")).to_contain_text("where you left off")
    expect(now.get_by_role("button", name="Play", exact=True)).to_be_visible()
    assert not audio_state(page)["playing"]
    accessible(page)
    # the player bar of the other screens has it too; Play carries on, on the same station
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Stations").click()
    expect(page.locator(".bar-title")).to_have_text(title)
    bar(page).get_by_role("button", name="Play", exact=True).click()
    wait_playing(page, past=0.1)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Now playing").click()
    expect(now.get_by_role("link", name=station["name"])).to_be_visible()

    # signing out forgets it: the next listener of this browser starts with nothing on
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.get_by_label("Username").wait_for()
    assert page.evaluate("() => localStorage.getItem('airwave.resume')") is None


def test_a_reload_puts_the_queue_back_at_its_time(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    album = an_album(site, api, 2)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.goto(f"/#/library/album/{album['pandoraId']}")
    page.get_by_role("button", name="Play", exact=True).click()
    wait_playing(page)
    pause(page)
    title = page.locator(".bar-title").inner_text()
    page.get_by_role("link", name="Now playing").click()
    queued = page.locator("ol.queue > li")
    expect(queued.first).to_be_visible()
    upcoming = queued.evaluate_all("els => els.map(e => e.dataset.pandoraId)")
    seek = page.locator("#now").get_by_role("slider", name="Seek")
    expect(seek).to_be_enabled()
    seek.fill("1")
    page.wait_for_function(
        "() => [...document.querySelectorAll('audio')].some(a => a.src && a.currentTime >= 0.9)"
    )
    page.wait_for_function(
        "() => (JSON.parse(localStorage.getItem('airwave.resume') || '{}').position || 0) >= 0.9"
    )

    page.reload()
    page.locator("#now .track-title").wait_for()
    expect(page.locator("#now .track-title")).to_have_text(title)
    expect(queued).to_have_count(len(upcoming))
    assert queued.evaluate_all("els => els.map(e => e.dataset.pandoraId)") == upcoming
    # the time in the track is back, and nothing plays until asked
    page.wait_for_function(
        "() => [...document.querySelectorAll('audio')].some(a => a.src && a.currentTime >= 0.9)"
    )
    assert not audio_state(page)["playing"]
    expect(page.locator("#now").get_by_role("button", name="Play", exact=True)).to_be_visible()
    accessible(page)
    # Play carries on from there: the first sound comes from the time it was left at
    page.evaluate("""() => { window.resumedAt = null; for (const a of document.querySelectorAll(
        'audio')) a.addEventListener('playing', () => { if (window.resumedAt === null)
        window.resumedAt = a.currentTime; }); }""")
    page.locator("#now").get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function("() => window.resumedAt !== null")
    assert page.evaluate("() => window.resumedAt") >= 0.9
    wait_playing(page, past=0.1)
