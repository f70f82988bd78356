"""The web player (issue 6) in Debian's headless Chromium against a real server on a demo library.

Every test runs over plain HTTP; those where TLS changes something (assets and headers, secure
cookies, audio) run over HTTPS with a self-signed certificate made here too. One browser for the
module, one server per scheme. (`make screenshots` writes the main screens to docs/screenshots/
with scripts/screenshots.py; tests write nothing.)
"""

from __future__ import annotations

import email
import email.policy
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from support import Server, artists
from web_support import (
    DESKTOP,
    PASSWORD,
    PHONE,
    Tab,
    accessible,
    audio_state,
    client,
    close_clients,
    current_music_id,
    new_listener,
    open_tab,
    sign_in,
    wait_playing,
    wait_ready,
    wait_track,
)

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only

SKIP_LIMIT = 2


class Mailbox:
    """A local SMTP server (aiosmtpd) keeping the mails Airwave sends."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.messages: list[tuple[list[str], str]] = []
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        part = message.get_body(("plain",)) or message
        self.messages.append((list(envelope.rcpt_tos), part.get_content()))
        return "250 OK"

    def reset_token(self, address: str, timeout: float = 15) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for rcpt, body in self.messages:
                match = re.search(r"/#/reset\?token=([A-Za-z0-9_-]+)", body)
                if address in rcpt and match:
                    return match.group(1)
            time.sleep(0.1)
        raise AssertionError(f"no reset mail to {address}")


@pytest.fixture(scope="module")
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox()
    yield box
    box.controller.stop()


@pytest.fixture(scope="module")
def servers(
    start_server: Callable[..., Server],
    small_demo_library: Path,
    tls_files: tuple[Path, Path],
    mailbox: Mailbox,
) -> Callable[[str], Server]:
    """One server per scheme, both started at once (the HTTPS one gets ready while HTTP tests
    run)."""
    env = {
        "AIRWAVE_SMTP_HOST": "127.0.0.1",
        "AIRWAVE_SMTP_PORT": str(mailbox.port),
        "AIRWAVE_SMTP_SECURITY": "none",
        "AIRWAVE_TIERS__FREE__STATION_SKIP_LIMIT": str(SKIP_LIMIT),
        "AIRWAVE_FRAGMENT_LIMIT": "100000",
        "AIRWAVE_ENGINE_SEED": "5",
        "AIRWAVE_RADIO_RULES": "relaxed",
        "AIRWAVE_AD_INTERVAL_MINUTES": "0.02",
        "AIRWAVE_ANONYMOUS_LOGIN": "true",
        "AIRWAVE_LOGIN_FREE_FAILURES": "2",
        "AIRWAVE_LOGIN_BACKOFF_BASE": "600",
    }
    results: dict[str, Server | BaseException] = {}

    def launch(scheme: str) -> None:
        args = ["--open-registration", "--library", str(small_demo_library)]
        if scheme == "https":
            args += ["--tls-cert", str(tls_files[0]), "--tls-key", str(tls_files[1])]
        try:
            server = start_server(*args, env=env)
            wait_ready(server)
            results[scheme] = server
        except BaseException as error:  # handed to the test that needs this server
            results[scheme] = error

    threads = {
        scheme: threading.Thread(target=launch, args=(scheme,), daemon=True)
        for scheme in ("http", "https")
    }
    for thread in threads.values():
        thread.start()

    def get(scheme: str) -> Server:
        threads[scheme].join()
        result = results[scheme]
        if isinstance(result, BaseException):
            raise result
        return result

    return get


@pytest.fixture(scope="module", params=["http", "https"])
def site(request: pytest.FixtureRequest, servers: Callable[[str], Server]) -> Server:
    server = servers(request.param)
    assert server.url.startswith(request.param + "://")
    return server


_ARTISTS: dict[str, list[dict[str, Any]]] = {}


def _artist(site: Server, last: bool = False) -> dict[str, Any]:
    """An artist of the demo library (the first or last by name), looked up once per server."""
    if site.url not in _ARTISTS:
        _ARTISTS[site.url] = sorted(artists(new_listener(site)).values(), key=lambda a: a["name"])
    return _ARTISTS[site.url][-1 if last else 0]


def _station(api: Any, site: Server) -> dict[str, Any]:
    return api.ok("v1/station/createStation", {"musicId": _artist(site)["musicId"]})


def _play(tab: Tab, station: dict[str, Any]) -> str:
    page = tab.page
    page.goto("/#/stations")
    page.get_by_role("button", name=f"Play {station['name']}").click()
    wait_playing(page)
    return wait_track(page)


def test_player_page_and_assets_over_the_wire(site: Server) -> None:
    """`/` is the player (csrftoken cookie as spec §2 says); /web/ serves only its files,
    revalidated by ETag."""
    secure = "; Secure" if site.url.startswith("https://") else ""
    with httpx.Client(base_url=site.url, verify=False) as http:
        for method in ("GET", "HEAD"):
            page = http.request(method, "/", headers={"Accept-Encoding": "identity"})
            assert (
                page.status_code == 200
                and page.headers["content-type"] == "text/html; charset=utf-8"
            )
            assert re.fullmatch(
                r"csrftoken=[0-9a-f]{16}; Path=/; SameSite=Lax" + secure, page.headers["set-cookie"]
            )
            assert int(page.headers["content-length"]) > 500
            assert (page.content == b"") is (method == "HEAD")
            http.cookies.clear()
        assert 'src="/web/js/app.js"' in http.get("/").text
        http.cookies.set("csrftoken", "mine")
        assert "set-cookie" not in http.get("/").headers

        script = http.get("/web/js/app.js", headers={"Accept-Encoding": "gzip"})
        assert script.status_code == 200 and script.headers["content-type"].startswith(
            "text/javascript"
        )
        assert (
            script.headers["content-encoding"] == "gzip"
            and script.headers["cache-control"] == "no-cache"
        )
        assert (
            http.get(
                "/web/js/app.js", headers={"If-None-Match": script.headers["etag"]}
            ).status_code
            == 304
        )
        assert http.get("/web/app.css").headers["content-type"].startswith("text/css")
        assert http.get("/web/icon.svg").headers["content-type"] == "image/svg+xml"
        for path in (
            "/web/nope.js",
            "/web/js/",
            "/web/..%2F..%2Fapi%2Fapp.py",
            "/web/js/..%2F..%2Fcli.py",
            "/web/.hidden.js",
            "/web/__init__.py",
        ):
            missing = http.get(path)
            assert missing.status_code == 404, path
            assert missing.json()["errorString"] == "NOT_FOUND"
        assert http.post("/web/app.css").json()["errorString"] == "METHOD_NOT_ALLOWED"


def test_sign_in_messages_resume_and_secure_cookies(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    tab = tabs()
    tab.expected = {401}
    page = tab.page
    page.goto("/")
    page.get_by_label("Username").wait_for()
    page.wait_for_load_state("networkidle")
    transfer = page.evaluate("""() => [...performance.getEntriesByType('navigation'),
        ...performance.getEntriesByType('resource')] .filter(e =>
        !/[/](art|audio)[/]/.test(e.name)).reduce((sum, e) => sum + e.transferSize, 0)""")
    assert 0 < transfer < 400_000, transfer  # first load, art and audio aside
    print(f"first-load transfer {transfer} bytes over {site.url.split(':')[0]}")
    page.get_by_label("Username").fill(api.username)
    page.get_by_label("Password", exact=True).fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password.")

    tab.expected = {401, 403, 429}
    suspended = new_listener(site)
    assert site.cli("user", "disable", suspended.username).returncode == 0
    page.get_by_label("Username").fill(suspended.username)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text(
        "This account has been suspended. Ask the server's administrator."
    )

    throttled = new_listener(site)
    page.get_by_label("Username").fill(throttled.username)
    for attempt in range(3):  # login_free_failures is 2 here
        page.get_by_label("Password", exact=True).fill(f"wrong {attempt}")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_enabled()
    expect(page.get_by_role("alert")).to_contain_text("Too many failed attempts. Try again in")

    sign_in(tab, api.username, keep=True)
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    token = page.evaluate("() => localStorage.getItem('airwave.authToken')")
    assert token
    page.reload()  # the session resumes with existingAuthToken
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    assert page.evaluate("() => localStorage.getItem('airwave.authToken')") == token

    cookies = {c["name"]: c for c in tab.context.cookies()}
    assert {"csrftoken", "airwave_session"} <= set(cookies)
    secure = site.url.startswith("https://")
    assert cookies["csrftoken"]["secure"] is secure
    assert cookies["airwave_session"]["secure"] is secure and cookies["airwave_session"]["httpOnly"]

    # a token that stops working (here: logged out elsewhere) sends the player back to sign-in
    assert client(site).call("v1/auth/logout", token=token).status_code == 200
    page.evaluate(
        "() => { location.hash = '#/bookmarks'; }"
    )  # the next API call answers AUTH_INVALID_TOKEN
    page.get_by_role("button", name="Sign in").wait_for()
    expect(page.get_by_text("Your session has ended")).to_be_visible()
    assert page.evaluate("() => localStorage.getItem('airwave.authToken')") is None


def test_a_screen_left_behind_never_draws_over_the_next(
    tabs: Callable[..., Tab], site: Server
) -> None:
    """A screen whose answer comes after the listener moved on stays out of what replaced it.

    Seen in CI: the session ended while two screens' calls were on the way; the first failure
    showed the sign-in screen, and the second drew its error box over it (no way to sign in)."""
    api = new_listener(site)
    tab = tabs()
    tab.expected = {401}
    page = tab.page
    sign_in(tab, api.username, keep=True)
    token = page.evaluate("() => localStorage.getItem('airwave.authToken')")
    held: list[Any] = []
    page.route("**/api/v1/bookmark/getBookmarks", lambda route: held.append(route))
    page.evaluate("() => { location.hash = '#/bookmarks'; }")
    expect(page.get_by_role("heading", name="Bookmarks")).to_be_visible()
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert held, "the bookmarks call was not made"

    # the session ends while that call is held; the next screen's calls find out first
    assert client(site).call("v1/auth/logout", token=token).status_code == 200
    page.evaluate("() => { location.hash = '#/stations'; }")
    page.get_by_role("button", name="Sign in").wait_for()
    with page.expect_response("**/api/v1/bookmark/getBookmarks"):
        held[0].continue_()
    page.evaluate("() => new Promise((done) => setTimeout(done, 100))")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_role("heading", name="Bookmarks")).to_have_count(0)


def test_create_station_from_search_and_audio_plays(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    artist = _artist(site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    search = page.get_by_role("combobox", name="Search artists, songs and genres")
    search.press_sequentially(artist["name"][:5], delay=30)
    option = page.get_by_role("option").filter(has_text=artist["name"]).first
    option.wait_for()
    search.press("ArrowDown")
    search.press("ArrowUp")
    expect(page.get_by_role("option", selected=True)).to_have_count(1)
    option.click()
    page.get_by_role("heading", name="Now playing").or_(page.locator("#now")).first.wait_for()
    wait_playing(page, past=0.5)
    first = audio_state(page)["time"]
    time.sleep(0.6)
    assert (
        audio_state(page)["time"] > first or audio_state(page)["src"]
    )  # time advances (or the next track began)
    # gapless enough: the next track (preloaded) starts well within a second of the end of the last
    page.evaluate("""() => { window.gaps = []; let ended = 0;
        for (const a of document.querySelectorAll('audio')) {
            a.addEventListener('ended', () => { ended = performance.now(); });
            a.addEventListener('playing', () => {
                if (ended) { window.gaps.push(performance.now() - ended); ended = 0; } });
        } }""")
    page.wait_for_function("() => window.gaps.length >= 1", timeout=10_000)
    assert max(page.evaluate("() => window.gaps")) < 1000
    stations = api.ok("v1/station/getStations")["stations"]
    assert [s["name"] for s in stations] == [f"{artist['name']} Radio"]
    # trackStarted reached the server: the station has been played
    deadline = time.monotonic() + 10
    while (
        "lastPlayed" not in api.ok("v1/station/getStations")["stations"][0]
        and time.monotonic() < deadline
    ):
        time.sleep(0.2)
    assert "lastPlayed" in api.ok("v1/station/getStations")["stations"][0]


@pytest.mark.http_only
def test_thumbs_down_moves_on_and_never_comes_back(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    banned = _play(tab, station)
    page.locator("#now").get_by_role("button", name="Thumbs down").click()
    page.wait_for_function(
        "(id) => { const t = document.querySelector('#now .track-title');"
        " return t && t.dataset.musicId && t.dataset.musicId !== id; }",
        arg=banned,
    )
    wait_playing(page)
    seen = set()
    deadline = time.monotonic() + 4  # several 2-second tracks and at least one more fragment
    while time.monotonic() < deadline:
        seen.add(current_music_id(page))
        time.sleep(0.1)
    seen.discard("")
    assert banned not in seen and len(seen) >= 2, seen
    negative = api.ok(
        "v1/station/getStationFeedback", {"stationId": station["stationId"], "positive": False}
    )
    assert [f["musicId"] for f in negative["feedback"]] == [banned]


@pytest.mark.http_only
def test_skip_limit_message_for_a_free_listener(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    tab.expected = {429}
    page = tab.page
    sign_in(tab, api.username)
    _play(tab, station)
    now = page.locator("#now")
    expect(now.get_by_text(f"{SKIP_LIMIT} skips left")).to_be_visible()
    for left in range(SKIP_LIMIT - 1, -1, -1):
        before = current_music_id(page)
        page.keyboard.press("n")
        page.wait_for_function(
            "(id) => document.querySelector('#now .track-title').dataset.musicId !== id", arg=before
        )
        expect(now.get_by_text(f"{left} skip{'' if left == 1 else 's'} left")).to_be_visible()
    before = current_music_id(page)
    now.get_by_role("button", name="Skip").click()
    expect(now.get_by_text("You have reached your skip limit")).to_be_visible()
    # the message was about that track: when the next one starts (2-second tracks) it goes
    page.wait_for_function(
        "(id) => document.querySelector('#now .track-title').dataset.musicId !== id",
        arg=before,
        timeout=15_000,
    )
    expect(now.get_by_text("You have reached your skip limit")).to_be_hidden()


@pytest.mark.http_only
def test_station_details_rename_and_delete(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name=station["name"]).click()
    page.get_by_role("heading", name=station["name"], level=1).wait_for()
    seeds = page.get_by_role("list", name="Seeds", exact=True).get_by_role("listitem")
    expect(seeds).to_have_count(1)
    suggestion = page.get_by_role("list", name="Suggested seeds").get_by_role("button").first
    added = suggestion.get_attribute("aria-label").removeprefix("Add seed ")
    suggestion.click()
    expect(seeds).to_have_count(2)
    page.get_by_role("button", name=f"Remove seed {added}").click()
    expect(seeds).to_have_count(1)
    assert (
        len(api.ok("v1/station/getStationDetails", {"stationId": station["stationId"]})["seeds"])
        == 1
    )
    page.get_by_role("textbox", name="Station name", exact=True).fill("Late Night Mix")
    page.get_by_role("textbox", name="Description", exact=True).fill("for the small hours")
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_role("heading", name="Late Night Mix", level=1).wait_for()
    details = api.ok("v1/station/getStationDetails", {"stationId": station["stationId"]})
    assert (details["name"], details["description"]) == ("Late Night Mix", "for the small hours")

    page.get_by_role("button", name="Delete station").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete station").click()
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    expect(page.get_by_text("No stations yet")).to_be_visible()
    assert api.ok("v1/station/getStations")["stations"] == []


@pytest.mark.http_only
def test_signed_out_title_skip_link_and_empty_search(
    tabs: Callable[..., Tab], site: Server
) -> None:
    """Dead ends of the issue's list: the signed-out page was titled "Stations", "Skip to
    content" routed to #main ("Not found"), and a search with no match showed nothing."""
    api = new_listener(site)
    tab = tabs()
    page = tab.page
    page.goto("/")
    page.get_by_label("Username").wait_for()
    expect(page).to_have_title("Sign in · Airwave")
    sign_in(tab, api.username)
    expect(page).to_have_title("Stations · Airwave")
    page.get_by_role("link", name="Skip to content").focus()  # as Tab from the top reaches it
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()
    expect(page.get_by_role("heading", name="Stations", exact=True)).to_be_visible()
    assert page.evaluate("() => location.hash") in ("", "#/stations")
    page.goto("/#main")  # followed as a plain link: still a page, not "Not found"
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    search = page.get_by_role("combobox", name="Search artists, songs and genres")
    search.fill("zzqqxxnothing")
    expect(page.get_by_text("No results for “zzqqxxnothing”")).to_be_visible()
    search.fill("")
    expect(page.get_by_text("No results for “zzqqxxnothing”")).to_be_hidden()


def _track_with_lyrics(site: Server, timed: bool = False) -> tuple[str, dict[str, Any]]:
    """A demo track with lyrics (`timed`: an .lrc beside it), met as a listener meets one: on a
    Jazz station (a quarter of its tracks have lyrics); its musicId and full lyrics."""
    scout = new_listener(site)
    jazz = next(
        g
        for c in scout.ok("v1/music/genrecategories", {})["categories"]
        if c["name"] == "Jazz"
        for g in scout.ok("v1/music/genres", {"token": c["token"]})["stations"]
    )
    sid = scout.ok("v1/station/createStation", {"musicId": jazz["musicId"]})["stationId"]
    for _ in range(40):
        for track in scout.ok("v1/playlist/getFragment", {"stationId": sid})["tracks"]:
            if track.get("lyricSnippet"):
                lyrics = scout.ok("v1/music/fullLyrics", {"trackUid": track["musicId"]})
                if not timed or len(lyrics["syncedLines"]) >= 4:
                    return track["musicId"], lyrics
    raise AssertionError("no track with lyrics on a Jazz station")


@pytest.mark.http_only
def test_lyrics_show_their_lines_and_nothing_else(tabs: Callable[..., Tab], site: Server) -> None:
    """The lyrics panel ended with a literal "null" line when a track's lyrics had no credits."""
    song, lyrics = _track_with_lyrics(site)
    api = new_listener(site)
    station = api.ok("v1/station/createStation", {"musicId": song})  # opens with the song
    lines = lyrics["lines"]
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    assert _play(tab, station) == song
    now = page.locator("#now")
    now.get_by_role("button", name="Lyrics").click()
    panel = page.get_by_role("region", name="Lyrics")
    expect(panel.locator(".lyrics p")).to_have_count(len(lines))
    assert "null" not in panel.inner_text().split("\n")
    bare = page.evaluate(
        "() => [...document.getElementById('lyrics').childNodes]"
        ".filter(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim()).length"
    )
    assert bare == 0  # no stray text beside the heading, the lines and the credits


@pytest.mark.http_only
def test_bookmark_appears_on_the_bookmarks_page(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    _play(tab, station)
    page.locator("#now").get_by_role("button", name="Pause").click()
    title = page.locator("#now .track-title").inner_text()
    page.get_by_role("button", name="Bookmark track").click()
    page.get_by_role("button", name="Bookmarked").wait_for()
    page.get_by_role("button", name="Bookmark artist").click()
    # the artist's bookmark is saved once its toast shows ("Bookmarked Name."; the track's toast
    # quotes the title): opening Bookmarks before that raced the request
    page.locator("#toasts").get_by_text(re.compile(r"^Bookmarked [^“]")).wait_for()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Bookmarks").click()
    tracks = page.get_by_role("list", name="Bookmarked tracks")
    expect(tracks.get_by_role("listitem")).to_have_count(1)
    expect(tracks).to_contain_text(title)
    expect(
        page.get_by_role("list", name="Bookmarked artists").get_by_role("listitem")
    ).to_have_count(1)
    # Remove updates the counts and the empty-state text at once, as a reload would show them
    expect(page.get_by_role("heading", name="Tracks (1)")).to_be_visible()
    page.get_by_role("button", name=re.compile("^Remove bookmark")).first.click()
    expect(page.get_by_role("heading", name="Tracks (0)")).to_be_visible()
    expect(page.get_by_text("Bookmark a track from the now-playing screen.")).to_be_visible()
    expect(page.get_by_role("heading", name="Artists (1)")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Tracks (0)")).to_be_visible()
    expect(page.get_by_role("heading", name="Artists (1)")).to_be_visible()


def test_keyboard_focus_never_hides_under_the_bars(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    page = tab.page
    page.set_viewport_size({"width": 900, "height": 500})  # short: the settings page scrolls
    sign_in(tab, api.username)
    _play(tab, station)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    page.get_by_role("heading", name="Subsonic apps").wait_for()
    expect(page.locator(".playerbar")).to_be_visible()
    seen = 0
    for _ in range(60):
        page.keyboard.press("Tab")
        where = page.evaluate(
            """async () => {
                await new Promise((done) => requestAnimationFrame(
                    () => requestAnimationFrame(done)));
                const el = document.activeElement;
                if (!el || el === document.body || el.closest('.playerbar, .topbar, .skip-link')) {
                    return null;
                }
                const r = el.getBoundingClientRect();
                return {
                    top: r.top, bottom: r.bottom,
                    barTop: document.querySelector('.playerbar').getBoundingClientRect().top,
                    headBottom: document.querySelector('.topbar').getBoundingClientRect().bottom,
                    label: el.outerHTML.slice(0, 120), tag: el.tagName,
                };
            }"""
        )
        if where is None:
            continue
        seen += 1
        assert where["bottom"] <= where["barTop"] + 1, (where["label"], where["bottom"])
        assert where["top"] >= where["headBottom"] - 1, (where["label"], where["top"])
    assert seen > 20


@pytest.mark.http_only
def test_session_takeover_between_two_browsers(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    station = _station(api, site)
    first, second = tabs(), tabs()
    first.expected = second.expected = {409}
    sign_in(first, api.username)
    sign_in(second, api.username)
    _play(first, station)
    # the demo's tracks last 2 s: slowed 10x, the first device's track outlasts the test, as a
    # real song would
    first.page.evaluate(
        "() => document.querySelectorAll('audio').forEach((a) => { a.playbackRate = 0.1; })"
    )

    page = second.page
    page.get_by_role("button", name=f"Play {station['name']}").click()
    prompt = page.get_by_role("dialog", name="Playing on another device")
    prompt.wait_for()
    # nothing plays here yet: no ad link, no empty cover boxes, no track title
    now = page.locator("#now")
    expect(now.get_by_text("Learn more about this ad")).to_be_hidden()
    expect(now.locator(".now-art > :visible")).to_have_count(0)
    prompt.get_by_role("button", name="Play here").click()
    wait_playing(page)

    # the first device stops within a couple of seconds by itself (it asks while it plays), not
    # when it next needs a fragment
    first.page.get_by_role("dialog", name="Playing on another device").wait_for(timeout=5_000)
    assert not audio_state(first.page)["playing"]
    wait_playing(page, past=0.2)


@pytest.mark.http_only
def test_closing_a_playing_tab_frees_the_player_at_once(
    tabs: Callable[..., Tab], site: Server
) -> None:
    """A tab closed while playing tells the server on its way out (pagehide): the listener's
    phone plays at once, where it got STREAM_VIOLATION until the tab's music would have ended."""
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    sign_in(tab, api.username)
    _play(tab, station)
    phone = client(site)
    phone.login(api.username, PASSWORD)
    refused = phone.call("v1/playlist/getFragment", {"stationId": station["stationId"]})
    assert refused.status_code == 409  # the tab holds the player while it plays
    tab.page.close(run_before_unload=True)
    deadline = time.monotonic() + 10
    while True:
        answer = phone.call("v1/playlist/getFragment", {"stationId": station["stationId"]})
        if answer.status_code == 200:
            break
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.2)


@pytest.mark.http_only
def test_sign_out_and_sign_out_everywhere(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    here, there = tabs(), tabs()
    there.expected = {401}
    sign_in(here, api.username)
    sign_in(there, api.username)
    page = here.page
    page.get_by_role("link", name="Settings").click()
    page.get_by_text("Sign out everywhere").first.click()  # opens the disclosure
    page.locator("details", has_text="Sign out everywhere").get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign out everywhere").click()
    page.get_by_role("button", name="Sign in").wait_for()
    there.page.evaluate("() => { location.hash = '#/bookmarks'; }")
    there.page.get_by_role("button", name="Sign in").wait_for()

    sign_in(here, api.username)
    token = page.evaluate("() => sessionStorage.getItem('airwave.authToken')")
    page.get_by_role("link", name="Settings").click()
    # (Settings asks for the app passwords: signed out before the answer, that asking is a 401)
    page.get_by_text("No app passwords yet.").wait_for()
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.get_by_role("button", name="Sign in").wait_for()
    expect(page.get_by_role("navigation", name="Main")).to_be_hidden()
    assert page.evaluate("() => sessionStorage.getItem('airwave.authToken')") is None
    assert client(site).call("v1/station/getStations", token=token).status_code == 401


@pytest.mark.http_only
def test_create_an_account_and_listen_without_one(tabs: Callable[..., Tab], site: Server) -> None:
    tab = tabs()
    page = tab.page
    page.goto("/")
    name = "fresh" + secrets.token_hex(3)
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create an account with this username and password").click()
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    assert client(site).login(name, PASSWORD)["username"] == name
    page.evaluate("() => { sessionStorage.clear(); localStorage.clear(); }")

    page.goto("/")
    page.get_by_role("button", name="Listen without an account").click()
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    token = page.evaluate("() => sessionStorage.getItem('airwave.authToken')")
    assert client(site).call("v1/station/getStations", token=token).status_code == 200


@pytest.mark.http_only
def test_password_reset_link_opens_the_reset_screen(
    tabs: Callable[..., Tab], site: Server, mailbox: Mailbox
) -> None:
    api = new_listener(site)
    address = f"{api.username}@example.org"
    tab = tabs()
    tab.expected = {404}
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("textbox", name="Email (for password reset links)").fill(address)
    page.get_by_role("button", name="Save profile").click()
    expect(page.get_by_text("Profile saved.")).to_be_visible()
    page.get_by_role("button", name="Sign out", exact=True).click()

    page.get_by_role("link", name="Forgot your password?").click()
    # the sign-in form has a Username field too: fill the reset form's once it is drawn
    expect(page.get_by_role("heading", name="Reset your password")).to_be_visible()
    page.get_by_label("Username").fill(api.username)
    page.get_by_role("button", name="Send reset link").click()
    expect(page.get_by_text("a reset link is on its way")).to_be_visible()
    token = mailbox.reset_token(address)

    page.goto("/#/reset?token=not-a-real-token")
    expect(page.get_by_text("This reset link is invalid or has expired.")).to_be_visible()
    page.goto(f"/#/reset?token={token}")
    page.get_by_label("New password").fill("a brand new passphrase")
    page.get_by_label("Repeat it").fill("a brand new passphrase")
    page.get_by_role("button", name="Set password").click()
    page.get_by_role("button", name="Sign in").wait_for()
    sign_in(tab, api.username, password="a brand new passphrase")


@pytest.mark.http_only
def test_screens_and_keyboard(tabs: Callable[..., Tab], site: Server) -> None:
    """Every main screen renders at desktop and phone size, with no axe-core violation (the phone
    in the dark theme)."""
    for size, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        api = new_listener(
            site
        )  # one account per size: two devices of one account would take turns
        station = _station(api, site)
        api.ok("v1/station/createStation", {"musicId": _artist(site, last=True)["musicId"]})
        tab = tabs(viewport=viewport, color_scheme="dark" if size == "phone" else "light")
        page = tab.page
        page.goto("/")
        page.get_by_role("button", name="Sign in").wait_for()
        accessible(page)
        sign_in(tab, api.username)
        accessible(page)
        _play(tab, station)
        page.keyboard.press("Space")  # pause
        page.wait_for_function("() => [...document.querySelectorAll('audio')].every(a => a.paused)")
        volume = page.evaluate("() => Number(localStorage.getItem('airwave.volume') || 0.8)")
        page.keyboard.press("-")
        assert page.evaluate("() => Number(localStorage.getItem('airwave.volume'))") < volume
        page.keyboard.press("+")
        accessible(page)
        now = page.locator("#now")
        now.get_by_role("button", name="Thumbs up").click()
        expect(now.get_by_role("button", name="Thumbs up")).to_have_attribute(
            "aria-pressed", "true"
        )
        now.get_by_role("button", name="Bookmark track").click()
        now.get_by_role("button", name="Bookmarked").wait_for()
        now.get_by_role("button", name="Bookmark artist").click()
        page.get_by_role("link", name=station["name"]).first.click()
        page.get_by_role("heading", name="Seeds").wait_for()
        accessible(page)
        expect(page.get_by_role("region", name="Thumbs up").get_by_role("listitem")).to_have_count(
            1
        )
        page.goto("/#/bookmarks")
        expect(
            page.get_by_role("list", name="Bookmarked artists").get_by_role("listitem")
        ).to_have_count(1)
        accessible(page)
        page.goto("/#/settings")
        page.get_by_role("heading", name="Settings", exact=True).wait_for()
        accessible(page)
        page.goto("/#/stations")
        page.keyboard.press("Space")  # resume playing
        wait_playing(page)


@pytest.mark.http_only
def test_browse_genres_artist_album_and_settings(tabs: Callable[..., Tab], site: Server) -> None:
    api = new_listener(site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("link", name="Browse genres").click()
    categories = page.get_by_role("list", name="Genre categories")
    categories.get_by_role("link").first.wait_for()
    categories.get_by_role("link", name="Jazz").click()
    expect(categories.get_by_role("link", name="Jazz")).to_have_attribute("aria-current", "page")
    page.get_by_role("button", name="Start Jazz").click()
    wait_playing(page)
    now = page.locator("#now")
    now.get_by_role("button", name="Pause").click()
    now.get_by_role("button", name="Why this track?").click()
    expect(
        page.get_by_role("region", name="Why this track").get_by_role("listitem").first
    ).to_be_visible()
    artist = now.locator(".track-artist a").inner_text()
    now.locator(".track-artist a").click()
    page.get_by_role("heading", name=artist, level=1).wait_for()
    expect(page.get_by_role("heading", name="Discography")).to_be_visible()
    expect(page.get_by_role("heading", name="Similar artists")).to_be_visible()
    page.locator(".tiles a").first.click()
    expect(page.get_by_role("list", name="Tracks").get_by_role("listitem").first).to_be_visible()
    page.get_by_role("link", name=artist).click()
    page.get_by_role("heading", name=artist, level=1).wait_for()

    tab.expected = {403}
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    page.get_by_role("textbox", name="Display name").fill("Night Owl")
    page.get_by_role("button", name="Save profile").click()
    expect(page.get_by_text("Profile saved.")).to_be_visible()
    assert api.ok("v1/listener/getProfile")["displayName"] == "Night Owl"
    page.get_by_label("PIN (needed").fill("4321")
    page.get_by_role("button", name="Set this PIN").click()
    expect(page.get_by_text("PIN set.")).to_be_visible()
    page.get_by_label("Filter out explicit tracks").check()
    page.get_by_role("button", name="Save filter").click()
    expect(page.get_by_text("Explicit tracks are filtered out.")).to_be_visible()
    page.get_by_label("Filter out explicit tracks").uncheck()
    page.get_by_label("PIN (needed").fill("0000")
    page.get_by_role("button", name="Save filter").click()
    expect(page.get_by_text("Enter the right PIN")).to_be_visible()
    page.get_by_label("PIN (needed").fill("4321")
    page.get_by_role("button", name="Save filter").click()
    expect(page.get_by_text("Explicit tracks may play.")).to_be_visible()
    assert api.ok("v1/listener/updateSettings")["explicitContentFilterEnabled"] is False


@pytest.mark.http_only
def test_ads_play_for_free_listeners_with_impressions(
    tabs: Callable[..., Tab], site: Server, small_demo_library: Path
) -> None:
    """Last in the module: once a campaign exists, free listeners hear an ad every ~1 s of music."""
    spot = sorted(small_demo_library.rglob("*.mp3"))[0]
    added = site.cli(
        "ads",
        "add",
        str(spot),
        "--title",
        "Spring sale",
        "--click-url",
        "https://shop.example/spring",
    )
    assert added.returncode == 0, added.stderr
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.goto("/#/stations")
    with page.expect_response(
        lambda r: r.url.endswith("/api/v1/ad/registerImpression"), timeout=30_000
    ) as seen:
        page.get_by_role("button", name=f"Play {station['name']}").click()
    assert seen.value.status == 200
    assert seen.value.request.post_data_json["adTokens"]
    now = page.locator("#now")
    expect(now.locator(".track-artist a")).to_have_text("Advertisement")
    # plain text during an ad, not a link to nowhere (the click-through link is the ad's own)
    expect(now.get_by_role("link", name="Advertisement")).to_have_count(0)
    expect(now.locator(".track-title")).to_have_text("Spring sale")
    expect(now.get_by_role("link", name="Learn more about this ad")).to_have_attribute(
        "href", "https://shop.example/spring"
    )
    expect(now.get_by_role("button", name="Skip")).to_be_disabled()
    expect(now.get_by_role("button", name="Thumbs down")).to_be_disabled()
    assert audio_state(page)["playing"]
    expect(now.locator(".track-artist a")).not_to_have_text("Advertisement", timeout=15_000)
    expect(now.locator(".track-artist").get_by_role("link")).to_have_count(1)


@pytest.mark.http_only
def test_app_passwords_for_subsonic_apps_in_settings(
    tabs: Callable[..., Tab], site: Server
) -> None:
    api = new_listener(site)
    tab = tabs()
    sign_in(tab, api.username)
    page = tab.page
    page.get_by_role("link", name="Settings").click()
    card = page.get_by_role("region", name="Subsonic apps")
    expect(card.get_by_text("No app passwords yet.")).to_be_visible()
    expect(card).to_contain_text(f"{site.url}/")

    card.get_by_text("New app password").click()  # opens the disclosure
    card.get_by_label("Name it after the app").fill("Symfonium")
    card.get_by_label("Your password").fill(PASSWORD)
    card.get_by_role("button", name="Make an app password").click()
    secret = card.get_by_label("The new app password").input_value()
    expect(card.get_by_role("listitem").filter(has_text="Symfonium")).to_contain_text("never used")

    ping = {"u": api.username, "p": secret, "v": "1.16.1", "c": "web-test", "f": "json"}
    answer = httpx.get(f"{site.url}/rest/ping.view", params=ping).json()["subsonic-response"]
    assert answer["status"] == "ok"

    card.get_by_role("button", name="Revoke Symfonium").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(card.get_by_role("status")).to_have_text("Revoked “Symfonium”.")
    expect(card.get_by_text("No app passwords yet.")).to_be_visible()
    answer = httpx.get(f"{site.url}/rest/ping.view", params=ping).json()["subsonic-response"]
    assert answer["status"] == "failed" and answer["error"]["code"] == 40


# Which size each loaded cover took, against what the page draws it at on this screen.
_COVER_SIZES = """() => [...document.querySelectorAll('img.cover')]
    .filter((img) => img.complete && img.currentSrc && img.getBoundingClientRect().width > 0)
    .map((img) => ({
        drawn: img.getBoundingClientRect().width * devicePixelRatio,
        took: Number(img.currentSrc.match(/\\/(\\d+)\\.jpg$/)[1]),
        offered: img.srcset.split(',').map((c) => Number(c.trim().split(' ')[1].slice(0, -1))),
    }))"""


@pytest.mark.http_only
@pytest.mark.parametrize("density", [1, 2])
def test_covers_come_in_the_size_the_screen_draws(
    tabs: Callable[..., Tab], site: Server, density: int
) -> None:
    api = new_listener(site)
    for _ in range(3):
        _station(api, site)
    tab = tabs(device_scale_factor=density)
    page = tab.page
    sign_in(tab, api.username)
    page.goto("/#/stations")
    station = api.ok("v1/station/getStations", {})["stations"][0]
    _play(tab, station)
    page.locator("#now img.cover.big:not([hidden])").wait_for()
    page.wait_for_function("() => document.querySelector('#now img.cover.big').complete")
    seen = page.evaluate(_COVER_SIZES)
    assert seen, "no cover loaded"
    for cover in seen:
        _fits(cover)
    page.goto("/#/stations")
    page.locator(".stations img.cover").first.wait_for()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.stations img.cover')].every((i) => i.complete)"
    )
    for cover in page.evaluate(_COVER_SIZES):
        _fits(cover)


def _fits(cover: dict[str, Any]) -> None:
    """Not upscaled while a bigger size exists (a bigger one the browser already holds in its
    cache may serve a small cover: that costs no download)."""
    assert cover["took"] >= min(cover["drawn"] - 1, max(cover["offered"])), cover


@pytest.mark.http_only
def test_the_player_recovers_by_itself_after_a_server_restart(
    browser: Any, start_server: Callable[..., Server], small_demo_library: Path
) -> None:
    with socket.socket() as probe:  # the page's origin must stay: the same port after restart
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["--open-registration", "--library", str(small_demo_library), "--port", str(port)]
    env = {
        "AIRWAVE_FRAGMENT_LIMIT": "100000",
        "AIRWAVE_RADIO_RULES": "relaxed",
        "AIRWAVE_ANALYZE_AUDIO": "false",  # tags make a station; sound profiles add nothing here
    }
    server = start_server(*args, env=env)
    wait_ready(server)
    api = new_listener(server)
    station = _station(api, server)
    tab = open_tab(browser, server.url)
    try:
        page = tab.page
        sign_in(tab, api.username)
        _play(tab, station)
        assert server.stop() == 0
        now = page.locator("#now")
        expect(now.get_by_text("Trying again")).to_be_visible(timeout=20_000)
        assert not audio_state(page)["playing"]

        start_server(*args, env=env, backend=server.backend)
        # nobody touches the page: it comes back with a fresh fragment and plays
        with page.expect_response(
            lambda r: r.url.endswith("/api/v1/playlist/getFragment") and r.status == 200,
            timeout=30_000,
        ):
            pass
        wait_playing(page, past=0.5)
        expect(now.get_by_text("Trying again")).to_be_hidden()
    finally:
        tab.close()
        close_clients()


@pytest.mark.http_only
def test_the_stations_screens_buttons_stay_put_when_its_answers_arrive(
    tabs: Callable[..., Tab], site: Server
) -> None:
    """The Thumbprint hint came in the buttons' row, which is right-aligned: its text slid Shuffle
    some 240 px to the left under a pointer about to click it (seen in CI: a new listener's click
    on Shuffle right after signing in made no request)."""
    api = new_listener(site)
    tab = tabs()
    page = tab.page
    held: list[Any] = []
    page.route("**/api/v1/listener/getProfile", lambda route: held.append(route))
    sign_in(tab, api.username)
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert held, "the profile was not asked for"
    buttons = [
        page.get_by_role("button", name=name, exact=True)
        for name in ("Shuffle", "Thumbprint Radio")
    ] + [page.get_by_role("link", name="Browse genres")]
    before = [b.bounding_box() for b in buttons]
    held[0].continue_()
    thumbprint = page.get_by_role("button", name="Thumbprint Radio", exact=True)
    expect(thumbprint).to_have_accessible_description("Thumbprint Radio: 0/15 thumbs-up")
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => done()))")
    assert [b.bounding_box() for b in buttons] == before


def test_a_new_listeners_first_shuffle_plays_the_library_and_makes_no_station(
    tabs: Callable[..., Tab], site: Server
) -> None:
    api = new_listener(site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    page.get_by_role("button", name="Shuffle", exact=True).click()
    wait_playing(page)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Stations").click()
    expect(page.get_by_text("No stations yet: search above to create one.")).to_be_visible()
    expect(page.get_by_role("list", name="Your stations").get_by_role("listitem")).to_have_count(0)
    assert api.ok("v1/station/getStations", {})["stations"] == []


@pytest.mark.http_only
def test_tab_title_volume_mute_shortcuts_and_media_session(
    tabs: Callable[..., Tab], site: Server
) -> None:
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    expect(page).to_have_title("Stations · Airwave")
    _play(tab, station)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Stations").click()
    title = page.locator(".playerbar .bar-title")
    artist = page.locator(".playerbar .bar-sub")
    expect(page).to_have_title(re.compile(r"^▶ .+ – .+ · Airwave$"))
    assert page.title() == f"▶ {title.inner_text()} – {artist.inner_text()} · Airwave"
    session = page.evaluate(
        "() => ({title: navigator.mediaSession.metadata && navigator.mediaSession.metadata.title,"
        " state: navigator.mediaSession.playbackState})"
    )
    assert session == {"title": title.inner_text(), "state": "playing"}

    bar = page.get_by_role("region", name="Player")
    bar.get_by_role("button", name="Pause").click()
    expect(page).to_have_title(re.compile(r"^[^▶].+ · Airwave$"))

    # volume and mute live in the player bar; m mutes from anywhere, the slider remembers
    volume = bar.get_by_role("slider", name="Volume")
    volume.fill("30")
    mute = bar.get_by_role("button", name="Mute")
    expect(mute).to_have_attribute("aria-pressed", "false")
    mute.click()
    expect(mute).to_have_attribute("aria-pressed", "true")
    expect(volume).to_have_attribute("aria-valuetext", "muted")
    page.locator("main h1").first.click()  # focus off the button: shortcuts are page-wide
    page.keyboard.press("m")
    expect(mute).to_have_attribute("aria-pressed", "false")
    expect(volume).to_have_value("30")
    page.reload()
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    assert page.evaluate("() => localStorage.getItem('airwave.volume')") == "0.3"

    # ? lists every shortcut; Escape closes it
    page.keyboard.press("?")
    help_ = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(help_).to_be_visible()
    for key in ("Space", "n", "m", "?"):
        expect(help_.locator("kbd", has_text=key).first).to_be_visible()
    page.keyboard.press("Escape")
    expect(help_).to_be_hidden()


@pytest.mark.http_only
def test_synced_lyrics_follow_the_music(tabs: Callable[..., Tab], site: Server) -> None:
    song, lyrics = _track_with_lyrics(site, timed=True)
    timed = lyrics["syncedLines"]
    api = new_listener(site)
    station = api.ok("v1/station/createStation", {"musicId": song})  # opens with the song
    tab = tabs()
    page = tab.page
    sign_in(tab, api.username)
    assert _play(tab, station) == song
    # the demo's songs last 2 s: slowed 10x, their lines come every couple of seconds
    page.evaluate(
        "() => document.querySelectorAll('audio').forEach((a) => { a.playbackRate = 0.1; })"
    )
    page.locator("#now").get_by_role("button", name="Lyrics").click()
    panel = page.get_by_role("region", name="Lyrics")
    expect(panel.locator(".lyrics p")).to_have_count(len(timed))
    current = panel.locator(".lyrics p[aria-current='true']")
    expect(current).to_have_count(1)
    seen: list[int] = []
    deadline = time.monotonic() + 12
    while time.monotonic() < deadline and len(set(seen)) < 3:
        index = page.evaluate(
            "() => [...document.querySelectorAll('#lyrics .lyrics p')]"
            ".findIndex((p) => p.getAttribute('aria-current') === 'true')"
        )
        position = page.evaluate(
            "() => [...document.querySelectorAll('audio')].find((a) => !a.paused).currentTime"
        )
        # the highlighted line is the last one whose time has come
        due = [i for i, line in enumerate(timed) if line["time"] <= position + 0.05]
        assert index in (due[-1], due[-1] - 1) if due else index == -1, (index, position)
        seen.append(index)
        time.sleep(0.3)
    assert len(set(seen)) >= 3 and seen == sorted(seen), seen


# ---- installable: manifest, icons, service worker, phone layout ---------------------------------

_NEVER_CACHED = re.compile(r"^/(?:api|audio|art|rest|services)(?:/|$)")


def test_manifest_icons_and_service_worker_over_the_wire(site: Server) -> None:
    """The page links a valid manifest whose icons are what they say; /sw.js comes from the root,
    never cached, listing the app shell and a version made from its contents."""
    import io
    import json

    from PIL import Image

    with httpx.Client(base_url=site.url, verify=False) as http:
        head = http.get("/").text
        assert '<link rel="manifest" href="/web/manifest.webmanifest">' in head
        assert '<link rel="apple-touch-icon" href="/web/icons/apple-touch-icon.png">' in head
        assert re.search(r'<meta name="theme-color" content="#[0-9a-f]{6}"', head)

        manifest = http.get("/web/manifest.webmanifest")
        assert manifest.status_code == 200
        assert manifest.headers["content-type"] == "application/manifest+json"
        assert manifest.headers["cache-control"] == "no-cache" and manifest.headers["etag"]
        data = manifest.json()
        assert data["name"] == "Airwave" and data["short_name"]
        assert (data["start_url"], data["scope"], data["display"]) == ("/", "/", "standalone")
        css = http.get("/web/app.css").text
        for colour in (data["background_color"], data["theme_color"]):
            assert re.fullmatch(r"#[0-9a-f]{6}", colour) and colour in css, colour
        purposes = set()
        for entry in [
            *data["icons"],
            {"src": "/web/icons/apple-touch-icon.png", "sizes": "180x180"},
        ]:
            icon = http.get(entry["src"])
            assert icon.status_code == 200, entry
            if entry["src"].endswith(".svg"):
                assert icon.headers["content-type"] == entry["type"] == "image/svg+xml"
                continue
            assert icon.headers["content-type"] == entry.get("type", "image/png") == "image/png"
            with Image.open(io.BytesIO(icon.content)) as image:
                assert image.format == "PNG" and "x".join(map(str, image.size)) == entry["sizes"]
                if entry.get("purpose") == "maskable" or "apple" in entry["src"]:
                    # full bleed: no transparent corner for a launcher's mask to show
                    assert image.convert("RGBA").getpixel((0, 0))[3] == 255, entry
            purposes.add((entry.get("purpose"), entry["sizes"]))
        assert {("any", "192x192"), ("any", "512x512"), ("maskable", "512x512")} <= purposes

        worker = http.get("/sw.js", headers={"Accept-Encoding": "gzip"})
        assert worker.status_code == 200
        assert worker.headers["content-type"] == "text/javascript; charset=utf-8"
        assert worker.headers["cache-control"] == "no-cache"
        assert worker.headers["content-encoding"] == "gzip"
        assert (
            http.get("/sw.js", headers={"If-None-Match": worker.headers["etag"]}).status_code == 304
        )
        build = json.loads(re.search(r"^const BUILD = (\{.*\});$", worker.text, re.M).group(1))
        assert re.fullmatch(r"[0-9a-f]{16}", build["version"])
        shell = build["shell"]
        assert {"/", "/web/js/app.js", "/web/app.css", "/web/manifest.webmanifest"} <= set(shell)
        assert "/web/icons/icon-192.png" in shell and not any(_NEVER_CACHED.match(u) for u in shell)
        for url in shell:
            assert http.get(url).status_code == 200, url
        assert http.get("/web/sw.js").status_code == 404  # the template is not served as is
        assert http.post("/sw.js").json()["errorString"] == "METHOD_NOT_ALLOWED"


def _wait_service_worker(tab: Tab) -> None:
    """Until the page's service worker is active (over HTTPS too: CHROMIUM_ARGS lets Chromium
    fetch the script despite the self-signed certificate)."""
    state = tab.page.evaluate("""() => Promise.race([
        new Promise((resolve) => setTimeout(() => resolve('timed out'), 10000)),
        navigator.serviceWorker.ready.then(({ active }) => active.state === 'activated'
            ? 'activated' : new Promise((resolve) => active.addEventListener('statechange', () => {
                if (active.state === 'activated') resolve(active.state); }))),
    ])""")
    assert state == "activated", state


def test_installable_and_opens_offline(tabs: Callable[..., Tab], site: Server) -> None:
    """Chromium finds the player installable; after one visit the service worker serves the shell,
    so a reload without a network shows the player, and nothing of the API, audio or art is kept."""
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs(viewport=PHONE)
    page = tab.page
    page.goto("/")
    page.get_by_role("button", name="Sign in").wait_for()
    _wait_service_worker(tab)
    cdp = tab.context.new_cdp_session(page)
    manifest = cdp.send("Page.getAppManifest")
    assert manifest["url"].endswith("/web/manifest.webmanifest") and not manifest["errors"]
    refusals = cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
    # a Playwright context is an incognito profile, which never installs anything
    assert [r["errorId"] for r in refusals if r["errorId"] != "in-incognito"] == [], refusals

    page.reload()
    page.get_by_role("button", name="Sign in").wait_for()
    assert page.evaluate("() => !!navigator.serviceWorker.controller")
    sign_in(tab, api.username)
    _play(tab, station)  # API calls, cover art and audio all go by under the worker

    kept = page.evaluate("""async () => { const out = {};
        for (const name of await caches.keys()) {
            const cache = await caches.open(name);
            out[name] = (await cache.keys()).map((r) => new URL(r.url).pathname);
        } return out; }""")
    assert len(kept) == 1 and next(iter(kept)).startswith("airwave-shell-"), kept
    paths = next(iter(kept.values()))
    assert {"/", "/web/js/app.js", "/web/app.css", "/web/icon.svg"} <= set(paths), paths
    assert all(p == "/" or p.startswith("/web/") for p in paths), paths
    assert not any(_NEVER_CACHED.match(p) for p in paths), paths

    page.locator("#now").get_by_role("button", name="Pause").click()
    online_errors = len(tab.errors)
    tab.context.set_offline(True)
    try:
        assert (
            page.evaluate("() => fetch('/healthz').then(() => 'online', () => 'offline')")
            == "offline"
        )
        response = page.reload()
        assert response is not None and response.from_service_worker
        # the stored session cannot be checked offline: the player asks to sign in again
        page.get_by_role("button", name="Sign in").wait_for()
        expect(page.get_by_role("banner").get_by_role("link", name="Airwave home")).to_be_visible()
    finally:
        tab.context.set_offline(False)
    # what going offline cut: requests refused, and the paused track's audio, which the browser
    # may still have been buffering (a transcode's chunked body, cut mid-way on a busy machine)
    tab.errors[online_errors:] = [
        e
        for e in tab.errors[online_errors:]
        if "ERR_INTERNET_DISCONNECTED" not in e
        and not ("ERR_INCOMPLETE_CHUNKED_ENCODING" in e and "/audio/" in e)
    ]


@pytest.mark.http_only
def test_phone_layout_keeps_the_controls_in_sight(tabs: Callable[..., Tab], site: Server) -> None:
    """On a 390x844 phone with a station playing, play/pause, skip and the thumbs show without
    scrolling, on the now-playing screen and in the player bar of every other screen."""
    api = new_listener(site)
    station = _station(api, site)
    tab = tabs(viewport=PHONE)
    page = tab.page
    sign_in(tab, api.username)
    _play(tab, station)

    def in_sight(scope: str) -> None:
        boxes = page.evaluate(
            """(scope) => { const root = document.querySelector(scope);
            return { scrollY, width: document.documentElement.scrollWidth,
              buttons: [...root.querySelectorAll('.controls button')].map((b) => {
                const r = b.getBoundingClientRect();
                return { name: b.getAttribute('aria-label'), top: r.top, bottom: r.bottom,
                         left: r.left, right: r.right, width: r.width }; }) }; }""",
            scope,
        )
        assert boxes["scrollY"] == 0 and boxes["width"] <= PHONE["width"], boxes
        names = {b["name"] for b in boxes["buttons"]}
        assert {"Pause", "Skip", "Thumbs up", "Thumbs down"} <= names, (scope, names)
        for b in boxes["buttons"]:
            assert b["width"] >= 40, (scope, b)  # a thumb's target
            assert 0 <= b["top"] and b["bottom"] <= PHONE["height"], (scope, b)
            assert 0 <= b["left"] and b["right"] <= PHONE["width"], (scope, b)

    page.wait_for_function("() => location.hash === '#/now'")
    in_sight("#now")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Stations").click()
    page.get_by_role("heading", name="Stations", exact=True).wait_for()
    expect(page.locator(".playerbar")).to_be_visible()
    in_sight(".playerbar")
    page.locator(".playerbar").get_by_role("button", name="Thumbs up").click()
    expect(page.locator(".playerbar").get_by_role("button", name="Thumbs up")).to_have_attribute(
        "aria-pressed", "true"
    )
