"""Replay of Pieratora, a Chrome extension (manifest v2) that plays Pandora radio in the toolbar.

Client: github.com/jonah-andermin/Pieratora at e5dfa3d ("Version 1.9018 icluding CHANGES.txt
file"; the newest snapshot keeps the extension under `_Backup/`). Files followed:
`_Backup/background.js` (every request: `startBackend`, `getCookie`, `httpPostAsync`, `login`,
`anonLogin`, `getStations`, `addSongs`, `nextSong`, `createAccount`, `add_thumb`,
`remove_thumb`, `do_download`), `_Backup/popup.js` (what the popup reads of stations and songs),
`_Backup/options.js` (sign-in from the options page, its error message, and the new-account
form) and `_Backup/manifest.json` (host permissions, `cookies`).

What the client does, in order:
- `startBackend` loads the site root with `GET` (XHR; it waits for status 200) and then reads
  the `csrftoken` cookie from the browser's jar (`chrome.cookies.get`): `cookie.value`, which
  throws when the cookie is missing. Every later POST sends that value as `X-CsrfToken`; the
  browser sends its cookie jar with each XHR (host permission), so the session cookie set by
  login travels too.
- Each POST is an XHR with `Content-Type: application/json`,
  `Accept: application/json, text/plain, */*`, `X-CsrfToken` and (after login) `X-AuthToken`;
  the body is `JSON.stringify(...)`. Only status 200 counts as success; the answer is
  `JSON.parse`d.
- `login`: `auth/login` with `{"existingAuthToken": <last token or null>, "username",
  "password", "keepLoggedIn": true}`, then `station/getStations` with `{"pageSize": 250}` and
  keeps `.stations`. The options page signs in again (new `GET /`, then login with the
  previous authToken as `existingAuthToken` *and* the password). A failed login shows
  `JSON.parse(responseText).errorString` and `.message`.
- Playing: the first station is `_stations[0]`; a station id that `isNaN` would send the
  client back to `_stations[0]` on every change. `addSongs` posts `playlist/getFragment` with
  `String(stationId)` and nulls for the on-demand fields, takes `.tracks` (`.length`, each
  `.songTitle`), and sets `audioURL` as the `src` of an `<audio>` element (Chrome's media
  request: `GET` with `Range: bytes=0-`). Optional download: `chrome.downloads` fetches the
  `audioURL` whole.
- Thumbs: `station/addFeedback` `{trackToken, isPositive}`; pressing the same thumb again calls
  `station/deleteFeedback` with the same two fields (by trackToken, no feedbackId).
- New account (options page): `auth/anonymousLogin` `{}` first, then `listener/register` with
  the anonymous listener's `X-AuthToken` and `{"username", "password", "zipcode", "gender":
  "FEMALE"|"MALE", "birthYear": <int>, "birthMonth": 1, "birthDay": 1, "keepLoggedIn": true}`;
  its answer is used as the login answer (`.authToken`).

Left out: `Search` posts to `/api/v3/sod/search` but nothing calls it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest
from readers import ClientBroke, js_get
from support import Api, Server

XHR_ACCEPT = "application/json, text/plain, */*"
# Chrome's media stack asks for the whole resource as an open range on the first request.
MEDIA_HEADERS = {"Range": "bytes=0-", "Accept": "*/*", "Accept-Encoding": "identity;q=1, *;q=0"}


# --- JavaScript semantics the client relies on ------------------------------------------------


def js_array(value: Any, where: str) -> list[Any]:
    """`value.length` / `value.concat` / `value.find` / `value.shift()`: a TypeError unless an
    array (a string has `.length` but no `.find`/`.shift`, which the client calls)."""
    if not isinstance(value, list):
        raise ClientBroke(f"JavaScript: TypeError: {where} is not an array ({value!r:.80})")
    return value


def js_length(value: Any, where: str) -> int:
    """`value.length` on a string or array; reading it through undefined/null throws."""
    if value is None:
        raise ClientBroke(f"JavaScript: TypeError: cannot read properties of undefined ({where})")
    if isinstance(value, str | list):
        return len(value)
    return 0  # undefined: `undefined > 30` is false, nothing breaks


def js_is_nan(value: Any) -> bool:
    """The global `isNaN(value)`: true unless `Number(value)` is a number."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return isinstance(value, float) and math.isnan(value)
    if value is None:
        return True  # undefined (null converts to 0, but JSON null reads here as None too)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return False
        try:
            float(text) if not text.lower().startswith("0x") else int(text, 16)
        except ValueError:
            return True
        return text.lower() in ("nan", "+nan", "-nan") or text.lower().lstrip("+-") == "inf"
    return True


# --- the browser the extension runs in ---------------------------------------------------------


class Pieratora:
    """The extension's background page: one XHR stack with the browser's cookie jar."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url
        self.http = httpx.Client(timeout=30)  # the browser's cookie jar lives here
        self.csrf: str | None = None  # `_csrf`
        self.login_data: dict[str, Any] = {}  # `_loginData`
        self.stations: list[Any] = []  # `_stations`

    def start_backend(self) -> None:
        """`startBackend`: XHR `GET https://www.pandora.com`, then on status 200
        `chrome.cookies.get({name: 'csrftoken'})` and `_csrf = cookie.value`."""
        response = self.http.get(self.base + "/")
        assert response.status_code == 200, response.text  # the callback runs only on 200
        cookie = self.http.cookies.get("csrftoken")
        if cookie is None:
            raise ClientBroke("JavaScript: TypeError: cannot read properties of null (value)")
        self.csrf = cookie

    def get_cookie(self) -> str:
        """`getCookie()`: `_csrf`, else the jar's cookie, else COOKIE_NOT_FOUND."""
        value = self.csrf or self.http.cookies.get("csrftoken")
        assert value, "COOKIE_NOT_FOUND"
        return value

    def post(
        self, path: str, body: Any, *, auth: str | None = None, csrf: str | None = None
    ) -> httpx.Response:
        """`httpPostAsync(url, body, requestHeaderAttributes, ...)`: the headers in the order
        the client sets them, the body as `JSON.stringify` writes it."""
        headers = {
            "Content-Type": "application/json",
            "Accept": XHR_ACCEPT,
            "X-CsrfToken": csrf or self.get_cookie(),
        }
        if auth is not None:
            headers["X-AuthToken"] = auth
        content = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return self.http.post(f"{self.base}/api/{path}", headers=headers, content=content)

    def ok(self, path: str, body: Any, *, auth: str | None = None) -> Any:
        """The success callback runs only on status 200, and `JSON.parse`s the text."""
        response = self.post(path, body, auth=auth)
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text}"
        return json.loads(response.text)

    # --- the flows, each as the client sends it ---

    def login(self, username: str, password: str) -> None:
        """`login()`: the cookie read again from the jar, then `auth/login`; on success
        `_loginData = JSON.parse(response)` and `getStations`."""
        cookie = self.http.cookies.get("csrftoken")
        body = {
            "existingAuthToken": js_get(self.login_data, "authToken") or None,
            "username": username,
            "password": password,
            "keepLoggedIn": True,
        }
        # `'X-CsrfToken': cookie && cookie.value || getCookie()`
        response = self.post("v1/auth/login", body, csrf=cookie or self.get_cookie())
        assert response.status_code == 200, response.text
        self.login_data = json.loads(response.text)
        self.get_stations()

    def get_stations(self) -> None:
        """`getStations()`: `{"pageSize": 250}`; `_stations = JSON.parse(response).stations`."""
        answer = self.ok(
            "v1/station/getStations", {"pageSize": 250}, auth=js_get(self.login_data, "authToken")
        )
        self.stations = js_get(answer, "stations")
        # popup.js `station_selector`: `response.stations.length`, `station.name` for each.
        for i in range(js_length(self.stations, "stations.length")):
            js_get(self.stations, i, "name")

    def get_fragment(self, station_id: Any) -> list[Any]:
        """`addSongs(stationID)`: getFragment, `.tracks`, then `cureSongs` (`songList.length`,
        `songList[i].songTitle`) and `_songLists[id].concat(tracks)`."""
        body = {
            "stationId": js_string(station_id),
            "isStationStart": False,
            "fragmentRequestReason": "Normal",
            "audioFormat": "aacplus",
            "onDemandArtistMessageArtistUidHex": None,
            "startingAtTrackId": None,
            "onDemandArtistMessageIdHex": None,
        }
        answer = self.ok("v1/playlist/getFragment", body, auth=js_get(self.login_data, "authToken"))
        tracks = js_array(js_get(answer, "tracks"), "tracks")
        for i in range(len(tracks)):
            js_get(tracks, i, "songTitle")
        return tracks


def js_string(value: Any) -> str:
    """`String(value)`."""
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def show_song(song: Any) -> None:
    """popup.js `_INFO`: title and artist (`.length` > 30 for the marquee), then the album art:
    `album.length`, `album.find(obj => obj.size === 500)` or the last one, and its `.url`."""
    if js_get(song, "songTitle") and js_get(song, "artistName"):
        js_length(js_get(song, "songTitle"), "songTitle.length")
        js_length(js_get(song, "artistName"), "artistName.length")
    album = js_get(song, "albumArt")
    if album is None:
        return  # the popup logs ALBUMUNDEFINEDERROR and returns
    if js_length(album, "albumArt.length") < 1:
        return
    art = js_array(album, "albumArt")
    chosen = next((a for a in art if js_get(a, "size") == 500), None) or art[-1]
    assert isinstance(js_get(chosen, "url"), str), chosen


def play(client: Pieratora, song: Any) -> None:
    """`_audio.setAttribute('src', _currentSong.audioURL)` when `audioURL != ""`, `play()`."""
    url = js_get(song, "audioURL")
    assert url != "" and isinstance(url, str), song
    audio = client.http.get(url, headers=MEDIA_HEADERS)
    assert audio.status_code in (200, 206), audio.text
    assert audio.headers["content-type"].startswith("audio/"), audio.headers
    assert audio.content, "the audio element got no bytes"


# --- fixtures -----------------------------------------------------------------------------------


def give_stations(server: Server, account: Any, count: int = 2) -> list[str]:
    """The listener made their stations elsewhere (Pieratora cannot create one): two stations
    from artists found by search, as the web site would have made them."""
    api = Api(server.url)
    api.login(account.username, account.password)
    items = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AR"], "count": 20})["items"]
    made = []
    for item in items:
        station = api.ok("v1/station/createStation", {"pandoraId": item["pandoraId"]})
        if station["stationId"] not in made:
            made.append(station["stationId"])
        if len(made) == count:
            break
    assert len(made) == count, items
    return made


@pytest.fixture
def listener(airwave: Server, account: Any) -> Any:
    give_stations(airwave, account)
    return account


# --- the flows ----------------------------------------------------------------------------------


def test_sign_in_lists_stations_plays_and_rates(airwave: Server, listener: Any) -> None:
    client = Pieratora(airwave.url)

    # background.js `startBackend` (run when the background page loads): GET the site root,
    # then the csrftoken cookie from the jar.
    client.start_backend()

    # background.js `login` (popup.js `login` → `_LOGIN`): auth/login with a null
    # existingAuthToken, then `getStations` with {"pageSize": 250}.
    client.login(listener.username, listener.password)
    assert js_get(client.login_data, "authToken"), client.login_data
    assert js_length(client.stations, "stations.length") >= 2

    # background.js `nextSong` (first play, `_stationId` is "NaN"): `isNaN(stationID)` picks
    # `_stations[0]`; a station id that is not numeric would make every station change fall
    # back to the first station.
    first = js_get(client.stations, 0)
    station_id = js_get(first, "stationId")
    assert not js_is_nan(station_id), f"isNaN({station_id!r}): station changes would not work"

    # background.js `addSongs` → `_utility_AddNextSong`: getFragment, first track into <audio>.
    tracks = client.get_fragment(station_id)
    assert tracks, "getFragment gave no tracks: `_currentSong.audioURL` of undefined"
    song = tracks[0]
    play(client, song)
    show_song(song)

    # background.js `do_download` (download shortcut / context menu): chrome.downloads fetches
    # the audioURL whole (no Range).
    download = client.http.get(js_get(song, "audioURL"))
    assert download.status_code == 200 and download.content

    # background.js `toggle_thumb_up` → `add_thumb(true)`: addFeedback; only status 200 counts.
    client.ok(
        "v1/station/addFeedback",
        {"trackToken": js_get(song, "trackToken"), "isPositive": True},
        auth=js_get(client.login_data, "authToken"),
    )
    # Pressed again (rating is now 1): `remove_thumb(true)` → deleteFeedback by trackToken,
    # with isPositive as well.
    client.ok(
        "v1/station/deleteFeedback",
        {"trackToken": js_get(song, "trackToken"), "isPositive": True},
        auth=js_get(client.login_data, "authToken"),
    )

    # background.js `toggle_thumb_down` → `add_thumb(false)`, then `nextSong` plays the next
    # track of the fragment already fetched.
    client.ok(
        "v1/station/addFeedback",
        {"trackToken": js_get(song, "trackToken"), "isPositive": False},
        auth=js_get(client.login_data, "authToken"),
    )
    if len(tracks) > 1:
        play(client, tracks[1])
        show_song(tracks[1])


def test_station_change_fetches_the_chosen_station(airwave: Server, listener: Any) -> None:
    client = Pieratora(airwave.url)
    client.start_backend()
    client.login(listener.username, listener.password)

    # popup.js `stationSelected(response.stations[i])` → background.js `_STATION_CHANGE`:
    # `_stationId = request.station.stationId`, `nextSong(_stationId, oldID, true)`; with
    # nothing cached it fetches `String(stationId)`.
    chosen = js_get(client.stations, 1)
    station_id = js_get(chosen, "stationId")
    assert not js_is_nan(station_id), f"isNaN({station_id!r}) sends the client to station 0"
    tracks = client.get_fragment(station_id)
    assert tracks
    assert js_get(tracks[0], "stationId") == station_id
    play(client, tracks[0])
    show_song(tracks[0])


def test_sign_in_again_from_the_options_page(airwave: Server, listener: Any) -> None:
    client = Pieratora(airwave.url)
    client.start_backend()
    client.login(listener.username, listener.password)

    # options.js `login` → `_LOGIN` with `options: true`: `startBackend()` again (a new GET of
    # the root), then `login` sends the previous authToken as existingAuthToken *together with*
    # username and password, with the jar still holding the first login's session cookie.
    client.start_backend()
    client.login(listener.username, listener.password)
    assert js_get(client.login_data, "authToken"), client.login_data
    tracks = client.get_fragment(js_get(client.stations, 0, "stationId"))
    assert tracks


def test_failed_sign_in_shows_the_error(airwave: Server, listener: Any) -> None:
    client = Pieratora(airwave.url)
    client.start_backend()

    # background.js `login` fail callback: `STATUS_.message = responseText`; options.js
    # `login` then `JSON.parse(response.message.replace(...))` and shows `.errorString` and
    # `.message`.
    response = client.post(
        "v1/auth/login",
        {
            "existingAuthToken": None,
            "username": listener.username,
            "password": "not the password",
            "keepLoggedIn": True,
        },
    )
    assert response.status_code != 200
    message = json.loads(response.text.replace("\n", "<br>", 1))
    assert isinstance(js_get(message, "errorString"), str) and js_get(message, "errorString")
    assert isinstance(js_get(message, "message"), str) and js_get(message, "message")


@pytest.fixture(scope="module")
def sign_up_server(start_server: Any, small_demo_library: Any) -> Server:
    """An operator who lets people sign up: open registration, and anonymous listening (the
    extension only registers after `auth/anonymousLogin` has succeeded)."""
    from support import wait_indexed

    server = start_server(
        "--library",
        str(small_demo_library),
        "--open-registration",
        env={"AIRWAVE_ANONYMOUS_LOGIN": "true"},
    )
    wait_indexed(server)
    return server


def test_create_account_from_the_options_page(sign_up_server: Server) -> None:
    from support import unique

    client = Pieratora(sign_up_server.url)
    client.start_backend()

    # background.js `createAccount` → `anonLogin`: auth/anonymousLogin with `{}`;
    # `_anonData = JSON.parse(response)`. Its fail callback does nothing, so without this
    # answer the registration is never sent.
    anon = client.ok("v1/auth/anonymousLogin", {})
    anon_token = js_get(anon, "authToken")
    assert anon_token

    # background.js `createAccount`: listener/register with the anonymous X-AuthToken and the
    # options.js `sendNewAccount` body (`zipcode` spelled so, gender from the select,
    # birthYear `parseInt` of the select, birthMonth/birthDay 1).
    username = unique("pieratora")
    body = {
        "username": username,
        "password": "a long listener password",
        "zipcode": "94110",
        "gender": "FEMALE",
        "birthYear": 1990,
        "birthMonth": 1,
        "birthDay": 1,
        "keepLoggedIn": True,
    }
    response = client.post("v1/listener/register", body, auth=anon_token)
    assert response.status_code == 200, response.text

    # `_utility_loginNew`: `_loginData = JSON.parse(response)`, then `getStations`.
    client.login_data = json.loads(response.text)
    assert js_get(client.login_data, "authToken")
    client.get_stations()
    assert js_length(client.stations, "stations.length") == 0  # a new account has none yet

    # options.js `setLoginFromNew` then signs in with the new account.
    client.login_data = {}
    client.start_backend()
    client.login(username, "a long listener password")
