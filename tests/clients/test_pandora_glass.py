"""Replay of Pandora Glass ("Panedora"), an Electron desktop client of the Pandora REST API.

Client: github.com/MitchellBrovarnik/Panedora (package.json names its repository
MitchellBrovarnik/Pandora-Glass; the code headers still say "Pandora Glass"), at 7c5ad1f
(2026-05-05). Files followed: `pandora-api.js` (every REST call: `_buildHeaders`, `request`,
`login`, `_checkLoginSubscription`, `getStations`, `getShuffleStation`, `createStation`,
`getPlaylist`, `addFeedback`, `deleteFeedback`, `trackStarted`, `playbackPaused`,
`removeStation`, `search`, `getHighResArt`), `main.js` (the order of calls: `login`,
`loadStations`, `sendStations`, `playStation`, `skipTrack`, `thumbUp`/`thumbDown`, the IPC
handlers `NAV:PLAY_URI`, `CONTENT:PLAY_SHUFFLE`, `CONTENT:SEARCH`, `CONTENT:REMOVE_STATION`,
`PLAYER:UNDO_FEEDBACK`, `AUTH:LOGOUT`), `renderer.js` (the `<audio>` element that plays
`audioURL`) and `visualizer.js` (which turns that element into a CORS media element).

What the client does:
- It makes up its own CSRF token (16 random bytes as hex), puts it in Chromium's cookie jar as
  `csrftoken` and sends it as `X-CsrfToken`; a `csrftoken` in any answer's `Set-Cookie`
  replaces it. Requests go through `net.fetch` with `credentials: 'include'`, so the session
  cookie set by login travels with every later call.
- Every call is a POST with `Content-Type: application/json`, a desktop Chrome User-Agent,
  `Accept: application/json, text/plain, */*`, `Accept-Language`, `Origin` and `Referer` fixed
  to https://www.pandora.com (only the base URL `www.pandora.com` is swapped for the server),
  the `sec-ch-ua*`/`Sec-Fetch-*` headers, and `X-AuthToken` (the empty string before login),
  except on `auth/login`, which sends none. The body is `JSON.stringify(data)`; every answer
  is `JSON.parse`d, errors included (a body that is not JSON throws "Invalid JSON").
- Login `{username, password, existingAuthToken: null, keepLoggedIn: true}`; it keeps the
  answer only when `_checkLoginSubscription` finds a paid signal: `config.branding` other than
  "Pandora", or `config.flags.includes('onDemand' | 'adFreeSkip' | ...)` (flags read as an
  array), `highQualityStreamingEnabled === true`, `adkv.iat === '0'`.
- Stations `{pageSize: 250, startIndex: 0}` → `.stations.map(...)` (stationId, name, art,
  lastPlayed || lastUpdated || dateCreated). Search `search/fullSearch` `{query, types: ['TR',
  'AR', 'SF', 'AL', 'PL'], listener: null, start: 0, count: 50}` → `.items`, split by `type`.
  Playing an artist or song found there: `station/createStation` `{musicToken: id, pandoraId:
  id}` → `.stationId`, the stations again, then `playStation`: `station/playbackPaused`
  `{stationId, trackToken}` for the station that was playing, `playlist/getFragment`
  `{stationId, isStationStart: true, fragmentRequestReason: 'Normal', audioFormat: 'aacplus',
  startingAtTrackId, onDemandArtistMessageArtistUidHex: null, onDemandArtistMessageIdHex:
  null}` (a song passes its pandoraId as startingAtTrackId), `station/trackStarted`
  `{stationId, trackToken}`. Skipping fetches the next fragment with `isStationStart: false`
  when two tracks remain, and reports trackStarted. Thumbs: `station/addFeedback`
  `{trackToken, isPositive}` → `.feedbackId`; undo `station/deleteFeedback` `{feedbackId}`.
  Shuffle: `station/shuffle` `{}` → `.stationId`, then `playStation`. Remove:
  `station/removeStation` `{stationId}`. Sign-out: `station/playbackPaused`, then only local
  state is cleared (a new CSRF token), no server call.
- The renderer plays `audioURL` in one `<audio>` element (Chromium media request:
  `GET`, `Range: bytes=0-`). After the first successful `play()`, `visualizer.init` sets
  `crossOrigin = "anonymous"` on that element and routes it through a Web Audio
  `MediaElementSource`: from then on every track is a CORS request from the `file://` page
  (`Origin: null`, no cookies), and an answer without `Access-Control-Allow-Origin` fails to
  load (and cross-origin audio without CORS would be silenced by Web Audio anyway).

Left out: lyrics come from lrclib.net (`CONTENT:FETCH_LYRICS`), not from the API;
`verifySubscription` (a second login) is never called.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx
import pytest
from readers import ClientBroke, js_get, js_includes
from support import Server

CHROME = "126.0.6478.234"  # process.versions.chrome of the Electron it ships with; any will do
MEDIA_HEADERS = {"Range": "bytes=0-", "Accept": "*/*", "Accept-Encoding": "identity;q=1, *;q=0"}


# --- JavaScript semantics the client relies on ------------------------------------------------


def js_array(value: Any, where: str) -> list[Any]:
    """`.map` / `.filter` / `.find` / spread into an array: a TypeError unless an array."""
    if not isinstance(value, list):
        raise ClientBroke(f"JavaScript: TypeError: {where}.map is not a function ({value!r:.80})")
    return value


def get_high_res_art(art: Any) -> Any:
    """`PandoraAPI.getHighResArt`: null unless a non-empty array; else the `.url` of the
    element with the largest `.size` (reading `.size` of a null element throws)."""
    if not isinstance(art, list) or not art:
        return None
    best = art[0]
    for item in art[1:]:
        if (js_get(item, "size") or 0) > (js_get(best, "size") or 0):
            best = item
    return js_get(best, "url") if best is not None else None


# --- the client ---------------------------------------------------------------------------------


class PandoraGlass:
    """`PandoraAPI` in the main process, with Chromium's cookie jar (`net.fetch`)."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url
        self.http = httpx.Client(timeout=30)  # session.defaultSession's cookie jar
        self.auth_token: str | None = None
        self.csrf = secrets.token_hex(16)  # `generateCsrfToken()` in the constructor
        self.stations: list[Any] = []  # main.js `currentStations`

    def headers(self, endpoint: str) -> dict[str, str]:
        """`_buildHeaders(endpoint)`."""
        major = CHROME.split(".")[0]
        headers = {
            "Content-Type": "application/json",
            "X-CsrfToken": self.csrf or "",
            "User-Agent": (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                f"Chrome/{CHROME} Safari/537.36"
            ),
            "Accept": "application/json, text/plain, */*",
            "Accept-Language": "en-US,en;q=0.9",
            "Origin": "https://www.pandora.com",
            "Referer": "https://www.pandora.com/",
            "sec-ch-ua": (
                f'"Not_A Brand";v="8", "Chromium";v="{major}", "Google Chrome";v="{major}"'
            ),
            "sec-ch-ua-mobile": "?0",
            "sec-ch-ua-platform": '"Windows"',
            "Sec-Fetch-Dest": "empty",
            "Sec-Fetch-Mode": "cors",
            "Sec-Fetch-Site": "same-origin",
        }
        if endpoint != "/v1/auth/login":
            headers["X-AuthToken"] = self.auth_token or ""
        return headers

    def send(self, endpoint: str, data: Any) -> tuple[int, Any]:
        """`request(endpoint, data)`: the csrftoken cookie set in the jar, POST, a csrftoken in
        `Set-Cookie` adopted, the body `JSON.parse`d whatever the status."""
        if self.csrf:
            self.http.cookies.set("csrftoken", self.csrf)
        response = self.http.post(
            f"{self.base}/api{endpoint}",
            headers=self.headers(endpoint),
            content=json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode(),
        )
        for cookie in response.headers.get_list("set-cookie"):
            if cookie.startswith("csrftoken="):
                self.csrf = cookie.split(";")[0].split("=", 1)[1]
        try:
            body = json.loads(response.text)
        except ValueError:
            raise ClientBroke(f"{endpoint}: Invalid JSON ({response.status_code})") from None
        return response.status_code, body

    def request(self, endpoint: str, data: Any) -> Any:
        """`request` resolves only on `response.ok`; otherwise it throws and the caller's
        catch turns the call into a failure (an empty list, null, `success: false`)."""
        status, body = self.send(endpoint, data)
        assert 200 <= status < 300, f"{endpoint}: {status} {body}"
        return body

    # --- pandora-api.js, one method each ---

    def login(self, username: str, password: str) -> dict[str, Any]:
        """`login`: `response.authToken`, then `_checkLoginSubscription(response)` must find a
        paid signal, else the sign-in is refused ("requires a Pandora Premium or Plus")."""
        response = self.request(
            "/v1/auth/login",
            {
                "username": username,
                "password": password,
                "existingAuthToken": None,
                "keepLoggedIn": True,
            },
        )
        assert js_get(response, "authToken"), response
        assert check_login_subscription(response), "Free-tier accounts are not supported"
        self.auth_token = js_get(response, "authToken")
        assert js_get(response, "listenerId") is not None
        return response

    def load_stations(self) -> list[Any]:
        """main.js `loadStations` → `getStations` → `sendStations` (`stations.map(...)`)."""
        response = self.request("/v1/station/getStations", {"pageSize": 250, "startIndex": 0})
        stations = js_get(response, "stations") or []
        for s in js_array(stations, "stations"):
            js_get(s, "stationId")
            js_get(s, "name")
            get_high_res_art(js_get(s, "art"))
            js_get(s, "lastPlayed") or js_get(s, "lastUpdated") or js_get(s, "dateCreated")
        self.stations = stations
        return stations

    def get_playlist(
        self, station_id: Any, is_station_start: bool, starting_at: Any = None
    ) -> list[Any]:
        """`getPlaylist`: `response.tracks?.length`, `tracks[0].trackType`, `response.tracks
        || []`; main.js then reads each track (`songTitle`, `albumArt`, `trackToken`, ...)."""
        response = self.request(
            "/v1/playlist/getFragment",
            {
                "stationId": station_id,
                "isStationStart": is_station_start,
                "fragmentRequestReason": "Normal",
                "audioFormat": "aacplus",
                "startingAtTrackId": starting_at or None,
                "onDemandArtistMessageArtistUidHex": None,
                "onDemandArtistMessageIdHex": None,
            },
        )
        tracks = js_get(response, "tracks") or []
        tracks = js_array(tracks, "tracks")
        if tracks:
            assert js_get(tracks, 0, "trackType") != "SimStreamViolation"
        for t in tracks:
            for field in ("songTitle", "artistName", "albumTitle", "trackLength", "audioURL"):
                js_get(t, field)
            get_high_res_art(js_get(t, "albumArt"))
            assert js_get(t, "trackToken"), t  # thumbs and trackStarted need it
        return tracks

    def play_station(
        self, station_id: Any, starting_at: Any = None, playing: tuple[Any, Any] | None = None
    ) -> list[Any]:
        """main.js `playStation`: pause the station that was playing, find the station in
        `currentStations` (strict `===` on stationId), fetch, report trackStarted."""
        if playing is not None:
            # pandora-api.js `playbackPaused(stationId, trackToken)`
            self.request(
                "/v1/station/playbackPaused", {"stationId": playing[0], "trackToken": playing[1]}
            )
        current = next((s for s in self.stations if js_get(s, "stationId") == station_id), None)
        assert current is not None, f"{station_id!r} is not in currentStations"
        tracks = self.get_playlist(station_id, True, starting_at)
        assert tracks, "No tracks available."
        # pandora-api.js `trackStarted(stationId, trackToken)`
        self.request(
            "/v1/station/trackStarted",
            {"stationId": station_id, "trackToken": js_get(tracks, 0, "trackToken")},
        )
        return tracks

    def search(self, query: str) -> dict[str, list[dict[str, Any]]]:
        """`search(query)`: `.items`, split by `type`, each mapped to what the UI shows."""
        response = self.request(
            "/v1/search/fullSearch",
            {
                "query": query,
                "types": ["TR", "AR", "SF", "AL", "PL"],
                "listener": None,
                "start": 0,
                "count": 50,
            },
        )
        items = js_get(response, "items")
        if items is None:
            items = []
        items = js_array(items, "items")
        songs = [
            {
                "id": js_get(t, "pandoraId") or js_get(t, "musicId"),
                "title": js_get(t, "songTitle") or js_get(t, "name"),
                "artist": js_get(t, "artistName"),
                "image": get_high_res_art(js_get(t, "albumArt") or js_get(t, "art")),
                "pandoraId": js_get(t, "pandoraId"),
                "type": "song",
            }
            for t in items
            if js_get(t, "type") in ("song", "TR", "track")
        ]
        artists = [
            {
                "id": js_get(a, "pandoraId") or js_get(a, "musicId"),
                "name": js_get(a, "name"),
                "image": get_high_res_art(js_get(a, "art")),
                "type": "artist",
            }
            for a in items
            if js_get(a, "type") in ("artist", "AR")
        ]
        return {"songs": songs, "artists": artists}


def check_login_subscription(response: Any) -> bool:
    """`_checkLoginSubscription`: `cfg.flags.includes(...)` needs an array (or string)."""
    cfg = js_get(response, "config") or {}
    flags = js_get(cfg, "flags") or []
    adkv = js_get(response, "adkv") or {}
    paid = []
    branding = js_get(cfg, "branding")
    if branding and branding != "Pandora":
        paid.append("branding")
    for flag in ("onDemand", "adFreeSkip", "adFreeReplay", "highQualityStreamingAvailable"):
        if js_includes(flags, flag, "config.flags"):
            paid.append(flag)
    for flag in ("adSupportedSkip", "adSupportedReplay"):
        js_includes(flags, flag, "config.flags")
    if js_get(response, "highQualityStreamingEnabled") is True:
        paid.append("highQualityStreaming")
    if js_get(adkv, "iat") == "0":
        paid.append("noInteractiveAds")
    if js_get(response, "smartConversionDisabled") is True:
        paid.append("smartConversionDisabled")
    return bool(paid)


def media_get(url: Any, *, cors: bool) -> httpx.Response:
    """The renderer's `<audio>`: `currentAudio.src = state.audioURL; play()`. With
    `crossOrigin = "anonymous"` (set by `visualizer.init` after the first play) the request
    is CORS mode from the file:// page: `Origin: null`, no credentials."""
    assert isinstance(url, str) and url, url
    headers = dict(MEDIA_HEADERS)
    if cors:
        headers.update({"Origin": "null", "Sec-Fetch-Mode": "cors"})
    response = httpx.get(url, headers=headers, timeout=30)
    assert response.status_code in (200, 206), response.text
    assert response.headers["content-type"].startswith("audio/"), response.headers
    assert response.content
    if cors:
        allowed = response.headers.get("access-control-allow-origin")
        assert allowed in ("*", "null"), (
            f"CORS media request answered without Access-Control-Allow-Origin ({allowed!r}): "
            "the <audio> element fails to load it"
        )
    return response


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def glass(airwave: Server, premium_account: Any) -> PandoraGlass:
    """Signed in as Pandora Glass is used: a Premium listener (main.js `login` then
    `loadStations`)."""
    client = PandoraGlass(airwave.url)
    client.login(premium_account.username, premium_account.password)
    client.load_stations()
    return client


def artist_station(client: PandoraGlass) -> tuple[str, list[Any]]:
    """Search, pick an artist, `NAV:PLAY_URI` `artist:<id>`: createStation, loadStations,
    playStation. Returns the stationId and its first fragment."""
    # main.js `CONTENT:SEARCH` → pandora-api.js `search` (the UI searches from 2 characters):
    # the listener types a word, sees songs, then searches the name of one of their artists.
    songs = client.search("an")["songs"]
    assert songs and songs[0]["artist"], songs
    results = client.search(songs[0]["artist"])
    assert results["artists"], results
    artist_id = results["artists"][0]["id"]
    # main.js `NAV:PLAY_URI` (type artist) → pandora-api.js `createStation(id)`.
    station = client.request(
        "/v1/station/createStation", {"musicToken": artist_id, "pandoraId": artist_id}
    )
    station_id = js_get(station, "stationId")
    assert station_id, station
    client.load_stations()  # main.js `loadStations()` so it shows in the sidebar
    return station_id, client.play_station(station_id)


# --- the flows ----------------------------------------------------------------------------------


def test_sign_in_checks_the_subscription_and_lists_stations(
    airwave: Server, premium_account: Any
) -> None:
    client = PandoraGlass(airwave.url)
    # main.js `APP:INIT` → `restoreSavedSession` / `AUTH:LOGIN` → pandora-api.js `login`:
    # no X-AuthToken, the client's own csrftoken; then `_checkLoginSubscription`.
    answer = client.login(premium_account.username, premium_account.password)
    assert client.auth_token == js_get(answer, "authToken")
    # main.js `loadStations` → `getStations` → `sendStations`.
    assert client.load_stations() == []


def test_search_play_an_artist_station_skip_and_rate(glass: PandoraGlass) -> None:
    station_id, tracks = artist_station(glass)

    # renderer.js: the first track plays through a plain media request.
    media_get(js_get(tracks, 0, "audioURL"), cors=False)

    # main.js `thumbUp` → pandora-api.js `addFeedback(trackToken, true)`; keeps
    # `result.feedbackId` for undo.
    feedback = glass.request(
        "/v1/station/addFeedback",
        {"trackToken": js_get(tracks, 0, "trackToken"), "isPositive": True},
    )
    feedback_id = js_get(feedback, "feedbackId")
    assert feedback_id, feedback

    # main.js `PLAYER:UNDO_FEEDBACK` → pandora-api.js `deleteFeedback(feedbackId)`.
    glass.request("/v1/station/deleteFeedback", {"feedbackId": feedback_id})

    # main.js `skipTrack`: index 1; with two tracks or fewer left it prefetches
    # (`getPlaylist(stationId, false, null, {skipRetry: true})`), then trackStarted.
    index = 1
    if index >= len(tracks) - 2:
        tracks = tracks + glass.get_playlist(station_id, False)
    assert index < len(tracks), "Another device is streaming. Playback stopped."
    glass.request(
        "/v1/station/trackStarted",
        {"stationId": station_id, "trackToken": js_get(tracks, index, "trackToken")},
    )

    # main.js `thumbDown` → `addFeedback(trackToken, false)`, then `skipTrack()`.
    glass.request(
        "/v1/station/addFeedback",
        {"trackToken": js_get(tracks, index, "trackToken"), "isPositive": False},
    )
    index += 1
    if index >= len(tracks) - 2:
        tracks = tracks + glass.get_playlist(station_id, False)
    assert index < len(tracks)
    glass.request(
        "/v1/station/trackStarted",
        {"stationId": station_id, "trackToken": js_get(tracks, index, "trackToken")},
    )


def test_audio_after_the_visualizer_starts_is_a_cors_request(glass: PandoraGlass) -> None:
    station_id, tracks = artist_station(glass)
    # renderer.js `onState`: first track, plain request; `play()` resolves and
    # `window.visualizer.init(currentAudio)` sets crossOrigin = "anonymous".
    media_get(js_get(tracks, 0, "audioURL"), cors=False)
    # The next track (`ended` → `player.next()` → a new `src`) is fetched in CORS mode.
    if len(tracks) < 2:
        tracks = tracks + glass.get_playlist(station_id, False)
    media_get(js_get(tracks, 1, "audioURL"), cors=True)


def test_play_a_song_starts_a_song_station(glass: PandoraGlass) -> None:
    playing_station, tracks = artist_station(glass)

    # main.js `NAV:PLAY_URI` (type song): createStation from the song's pandoraId, then
    # `playStation(stationId, pandoraId)` which first pauses the station that was playing.
    results = glass.search("an")
    assert results["songs"], results
    song = results["songs"][0]
    station = glass.request(
        "/v1/station/createStation", {"musicToken": song["id"], "pandoraId": song["id"]}
    )
    station_id = js_get(station, "stationId")
    assert station_id, station
    glass.load_stations()
    song_tracks = glass.play_station(
        station_id,
        starting_at=song["pandoraId"] or song["id"],
        playing=(playing_station, js_get(tracks, 0, "trackToken")),
    )
    media_get(js_get(song_tracks, 0, "audioURL"), cors=False)


def test_shuffle_plays_the_shuffle_station(glass: PandoraGlass) -> None:
    artist_station(glass)
    # main.js `CONTENT:PLAY_SHUFFLE` → pandora-api.js `getShuffleStation` (`{}`).
    shuffle = glass.request("/v1/station/shuffle", {})
    shuffle_id = js_get(shuffle, "stationId")
    assert shuffle_id, shuffle
    # It is unshifted into `currentStations` when missing, then `playStation`.
    if not any(js_get(s, "stationId") == shuffle_id for s in glass.stations):
        glass.stations.insert(0, shuffle)
    tracks = glass.play_station(shuffle_id)
    media_get(js_get(tracks, 0, "audioURL"), cors=False)


def test_remove_a_station(glass: PandoraGlass) -> None:
    station_id, _ = artist_station(glass)
    # main.js `CONTENT:REMOVE_STATION` → pandora-api.js `removeStation(stationId)`, then
    # `loadStations()`.
    glass.request("/v1/station/removeStation", {"stationId": station_id})
    assert all(js_get(s, "stationId") != station_id for s in glass.load_stations())


def test_sign_out_and_in_again(glass: PandoraGlass, premium_account: Any) -> None:
    station_id, tracks = artist_station(glass)
    # main.js `AUTH:LOGOUT`: `playbackPaused(stationId, trackToken)`, then `api.logout()`
    # clears the token and makes a new CSRF token; nothing else is sent. The session cookie
    # stays in Chromium's jar.
    glass.request(
        "/v1/station/playbackPaused",
        {"stationId": station_id, "trackToken": js_get(tracks, 0, "trackToken")},
    )
    glass.auth_token = None
    glass.csrf = secrets.token_hex(16)

    # `AUTH:LOGIN` again, then `loadStations` and play.
    glass.login(premium_account.username, premium_account.password)
    stations = glass.load_stations()
    assert any(js_get(s, "stationId") == station_id for s in stations)
    glass.play_station(station_id)


def test_wrong_password_is_reported(airwave: Server, premium_account: Any) -> None:
    client = PandoraGlass(airwave.url)
    # pandora-api.js `request`: a non-ok answer is still `JSON.parse`d (else "Invalid JSON")
    # and thrown as `{status, ...json}`; `login` returns `{success: false}`.
    status, body = client.send(
        "/v1/auth/login",
        {
            "username": premium_account.username,
            "password": "not the password",
            "existingAuthToken": None,
            "keepLoggedIn": True,
        },
    )
    assert not 200 <= status < 300
    assert isinstance(body, dict) and js_get(body, "errorCode") is not None
