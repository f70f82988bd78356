"""The web player's playback controls (issue 15) in Debian's headless Chromium against a real
server on a small library tagged with ReplayGain: track and album gain applied through Web Audio
and held under the peaks (no clipping), an album played gapless (the next track granted and
loaded while one plays), crossfade between other tracks, Add to queue from the track menu. Every
flow runs over HTTP and over HTTPS; every screen visited is checked with axe-core on the HTTP
run."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import media
import pytest
from playwright.sync_api import expect
from support import Api, Server
from web_support import (
    Tab,
    accessible,
    new_listener,
    sign_in,
    tls_args,
    wait_playing,
    wait_ready,
)

pytestmark = pytest.mark.sqlite_only
SECONDS = 6.0
ALBUM_GAIN = -8.5
TRACK_GAINS = {"Level One": -2.0, "Level Two": -4.0, "Level Three": -6.0}
# a quiet album: its gains would raise its peaks over full scale
LOUD_ALBUM_GAIN = 10.0
LOUD = {"Near Full": (12.0, 0.95), "Half Way": (9.0, 0.5)}  # track gain dB, track peak


@pytest.fixture(scope="module")
def levels_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An album tagged with track and album ReplayGain, a quiet one whose gains are more than its
    peaks allow, and another artist's album without."""
    from mutagen.flac import FLAC

    root = tmp_path_factory.mktemp("levels")
    for n, (title, gain) in enumerate(TRACK_GAINS.items(), 1):
        path = media.encode(root / "Gain" / "Levels" / f"0{n}.flac", SECONDS, 220.0 * n)
        media.tag(
            path,
            title=title,
            artist="Gain Artist",
            album="Levels",
            tracknumber=n,
            genre="Electronic",
            rg_gain=gain,
        )
        tagged = FLAC(str(path))
        tagged["replaygain_album_gain"] = [f"{ALBUM_GAIN:+.2f} dB"]
        tagged.save()
    for n, (title, (gain, peak)) in enumerate(LOUD.items(), 1):
        path = media.encode(root / "Peak" / "Quiet" / f"0{n}.flac", SECONDS, 275.0 * n)
        media.tag(
            path,
            title=title,
            artist="Peak Artist",
            album="Quiet",
            tracknumber=n,
            genre="Electronic",
            rg_gain=gain,
        )
        tagged = FLAC(str(path))
        tagged["replaygain_track_peak"] = [f"{peak:.6f}"]
        tagged["replaygain_album_gain"] = [f"{LOUD_ALBUM_GAIN:+.2f} dB"]
        tagged.save()
    for n, title in enumerate(("Far Side", "Near Side"), 1):
        media.tag(
            media.encode(root / "Fade" / "Sides" / f"0{n}.flac", SECONDS, 330.0 * n),
            title=title,
            artist="Fade Artist",
            album="Sides",
            tracknumber=n,
            genre="Electronic",
        )
    return root


@pytest.fixture(scope="module", params=["http", "https"])
def site(
    request: pytest.FixtureRequest,
    start_server: Callable[..., Server],
    levels_library: Path,
    tls_files: tuple[Path, Path],
) -> Server:
    """The library's server, over HTTP then over HTTPS (a self-signed certificate)."""
    server = start_server(
        "--open-registration",
        "--library",
        str(levels_library),
        *tls_args(request.param, tls_files),
        env={"AIRWAVE_ANALYZE_AUDIO": "false"},
    )
    wait_ready(server)
    # every MP3 transcode made beforehand: a transcode still being made streams without a length
    warm = new_listener(server, "premium")
    for name in ("Levels", "Sides", "Quiet"):
        album = album_id(warm, name)
        notes = warm.ok("v4/catalog/getDetails", {"pandoraIds": [album]})["annotations"]
        for track in notes[album]["tracks"]:
            grant = warm.ok(
                "v1/ondemand/getAudioPlaybackInfo", {"pandoraId": track, "audioFormat": "mp3"}
            )
            assert httpx.get(grant["audioURL"], verify=False).status_code == 200
    return server


def album_id(api: Api, name: str) -> str:
    found = api.ok("v3/sod/search", {"query": name, "types": ["AL"], "count": 5})
    (match,) = [p for p in found["results"] if found["annotations"][p]["name"] == name]
    return match


def current(page: Any) -> dict[str, Any]:
    """The player bar's track and the gain its element's ReplayGain node applies (Web Audio)."""
    return page.evaluate("""() => {
        const title = document.querySelector('.bar-title').textContent;
        const a = [...document.querySelectorAll('audio')].find(a => a.track
            && a.track.songTitle === title);
        return {title, gain: a.gainNode.gain.value}; }""")


def settings(page: Any, label: str, value: str) -> None:
    page.get_by_role("link", name="Settings").click()
    page.get_by_label(label).select_option(value)
    expect(page.locator("form", has_text="Playback").get_by_role("status")).to_have_text("Saved.")


def test_replaygain_track_album_and_off(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site, "premium")
    levels = album_id(api, "Levels")
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    settings(page, "Volume levelling (ReplayGain)", "album")
    accessible(page)
    page.goto(f"/#/library/album/{levels}")
    page.get_by_role("button", name="Play", exact=True).click()
    wait_playing(page, past=0.1)
    page.locator(".playerbar").get_by_role("button", name="Pause").click()
    now = current(page)
    # album mode: the album's gain, whichever of its tracks plays
    assert math.isclose(now["gain"], 10 ** (ALBUM_GAIN / 20), rel_tol=1e-3), now
    # track mode: that track's own gain, at once
    settings(page, "Volume levelling (ReplayGain)", "track")
    assert current(page)["title"] == now["title"]
    assert math.isclose(current(page)["gain"], 10 ** (TRACK_GAINS[now["title"]] / 20), rel_tol=1e-3)
    settings(page, "Volume levelling (ReplayGain)", "off")
    assert current(page)["gain"] == 1


def test_replaygain_never_raises_a_peak_over_full_scale(
    tabs: Callable[..., Tab], site: Server
) -> None:
    """Gains more than a track's peak allows are held at 1/peak (the album's peak in album mode),
    and a limiter at full scale sits between the gains and the speakers."""
    api, other = (
        new_listener(site, "premium"),
        new_listener(site, "premium"),
    )  # (a grant claims its listener's player)
    quiet = album_id(api, "Quiet")
    first = other.ok("v4/catalog/getDetails", {"pandoraIds": [quiet]})["annotations"][quiet]
    grant = other.ok(
        "v1/ondemand/getAudioPlaybackInfo",
        {"pandoraId": first["tracks"][0], "audioFormat": "mp3"},
    )
    assert float(grant["trackPeak"]) == LOUD["Near Full"][1]
    assert float(grant["albumPeak"]) == max(peak for _, peak in LOUD.values())
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    settings(page, "Volume levelling (ReplayGain)", "track")
    page.goto(f"/#/library/album/{quiet}")
    page.get_by_role("button", name="Play Half Way").click()
    wait_playing(page, past=0.1)
    page.locator(".playerbar").get_by_role("button", name="Pause").click()
    # track mode: +9 dB would be 2.8x; its peak of 0.5 allows 2x
    assert current(page)["title"] == "Half Way"
    assert math.isclose(current(page)["gain"], 1 / LOUD["Half Way"][1], rel_tol=1e-3)
    # album mode: +10 dB would be 3.2x; the album's peak (0.95, its other track's) allows 1.05x
    settings(page, "Volume levelling (ReplayGain)", "album")
    album_peak = max(peak for _, peak in LOUD.values())
    assert math.isclose(current(page)["gain"], 1 / album_peak, rel_tol=1e-3)
    # nothing louder than full scale reaches the speakers: the gain forced 10x past what the
    # peaks allow (as an untagged track's measured gain or two tracks in a crossfade might), what
    # leaves the limiter after the gains stays at full scale (over 2x without it)
    page.locator(".playerbar").get_by_role("button", name="Play", exact=True).click()
    wait_playing(page, past=0.2)
    levels = page.evaluate("""async () => {
        const a = [...document.querySelectorAll('audio')].find((e) => !e.paused);
        const ctx = a.gainNode.context;
        const tap = (node) => { const an = ctx.createAnalyser(); node.connect(an); return an; };
        const before = tap(a.gainNode), after = tap(a.limiter);
        a.gainNode.gain.value = 10;
        await new Promise((done) => setTimeout(done, 400));
        const peak = (an) => { const b = new Float32Array(an.fftSize);
            an.getFloatTimeDomainData(b); return Math.max(...b.map(Math.abs)); };
        return {before: peak(before), after: peak(after)}; }""")
    assert levels["before"] > 2 and levels["after"] < 1.15, levels


def test_albums_play_gapless_and_other_music_crossfades(
    tabs: Callable[..., Tab], site: Server
) -> None:
    api = new_listener(site, "premium")
    levels, sides = album_id(api, "Levels"), album_id(api, "Sides")
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    settings(page, "Crossfade between tracks", "1")
    page.goto(f"/#/library/album/{levels}")
    page.get_by_role("heading", name="Levels", level=1).wait_for()
    # sampled in the page: tracks loaded before their turn, and pairs of tracks heard at once
    page.evaluate("""() => { window.readied = new Set(); window.overlaps = new Set();
        setInterval(() => { const els = [...document.querySelectorAll('audio')];
        for (const a of els) if (a.paused && a.track && !a.currentTime && a.readyState >= 2)
            window.readied.add(a.track.songTitle);
        const on = els.filter(a => !a.paused && a.track && a.currentTime > 0)
            .map(a => a.track.songTitle).sort();
        if (on.length === 2) window.overlaps.add(on.join('|')); }, 20); }""")
    page.get_by_role("button", name="Play Level Two").click()
    expect(page.locator(".bar-title")).to_have_text("Level Two")
    page.goto(f"/#/library/album/{sides}")
    page.get_by_role("button", name="More for Far Side").click()
    page.get_by_role("dialog").get_by_role("button", name="Add to queue").click()
    expect(page.locator(".toast").last).to_contain_text("Added “Far Side” to the queue")
    page.get_by_role("link", name="Now playing").click()
    queue = page.locator("ol.queue > li")
    expect(queue.nth(1)).to_contain_text("Far Side")
    expect(queue.first).to_contain_text("Level Three")
    accessible(page)

    expect(page.locator(".bar-title")).to_have_text("Level Three", timeout=20_000)
    expect(page.locator(".bar-title")).to_have_text("Far Side", timeout=20_000)
    wait_playing(page, past=0.1)
    # gapless: each next track was granted and loaded in the other element before its turn;
    # the album's tracks follow on without overlapping, Far Side fades in under Level Three
    readied = page.evaluate("() => [...window.readied]")
    assert {"Level Three", "Far Side"} <= set(readied), readied
    overlaps = page.evaluate("() => [...window.overlaps]")
    assert "Far Side|Level Three" in overlaps, overlaps
    assert "Level Three|Level Two" not in overlaps, overlaps


CONTRAST = """() => {
    const lum = (rgb) => { const [r, g, b] = rgb.match(/[\\d.]+/g).slice(0, 3).map(Number)
        .map((v) => v / 255).map((v) => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    const behind = (el) => { for (let e = el.parentElement; e; e = e.parentElement) {
        const c = getComputedStyle(e).backgroundColor;
        if (!/rgba\\(.*, 0\\)$/.test(c) && c !== 'transparent') return c; }
        return 'rgb(255, 255, 255)'; };
    const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05); };
    return [...document.querySelectorAll('main input:not([type=checkbox]):not([type=range]),'
        + ' main select, main textarea, main button:not(.primary)')]
        .filter((el) => el.offsetParent && !el.disabled).map((el) => {
            const s = getComputedStyle(el);
            const fill = s.backgroundColor;
            // the edge that tells the control apart: its border, or its own fill when it has one
            const edge = Math.max(ratio(s.borderTopColor, behind(el)),
                /rgba\\(.*, 0\\)$/.test(fill) ? 0 : ratio(fill, behind(el)));
            return {what: el.outerHTML.slice(0, 60), edge}; });
}"""


@pytest.mark.http_only  # styles only: TLS changes nothing here
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_inputs_and_buttons_stand_out_from_their_background(
    tabs: Callable[..., Tab], site: Server, scheme: str
) -> None:
    """Non-text contrast (WCAG 1.4.11): every input, select and button of Settings is told apart
    from what is behind it at 3:1 or more, in both themes."""
    api = new_listener(site, "premium")
    tab = tabs(color_scheme=scheme)
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("heading", name="Settings", exact=True).wait_for()
    page.get_by_label("Volume levelling (ReplayGain)").wait_for()
    controls = page.evaluate(CONTRAST)
    assert len(controls) > 10, (page.url, page.locator("main").inner_html()[:300])
    faint = [c for c in controls if c["edge"] < 3]
    assert not faint, faint
