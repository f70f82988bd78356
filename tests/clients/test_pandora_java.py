"""Replay of Pandora-Java-Rest-Client (github.com/Zeejfps/Pandora-Java-Rest-Client), a small
Java library over OkHttp 3.9.1 and Gson 2.8.2.

Follows commit 710c675d7427ff349308b433687230d8dbef4a46 (2017-11-26):
- `src/me/zeejfps/paw/PandoraClient.java`: `login` (`syncCookies`, `authenticate`),
  `syncStations` (`fetchStations`), `fetchPlaylistFragment`, `setupDefaultHeaders`,
  `setHeader`, the `MyCookieJar` cookie jar;
- `src/me/zeejfps/paw/models/{Account,Station,Track,Art,APIError}.java`: the classes Gson
  fills (Gson, not org.json: `com.google.gson.Gson`, `JsonObject`).

What the client does: `login` sends `HEAD` to the site root with no headers of its own (OkHttp
adds `User-Agent: okhttp/3.9.1`, `Accept-Encoding: gzip`), its cookie jar keeps every cookie of
every answer (by name, never expiring, sent back on every request whatever the path), then
reads `cookies.get("csrftoken").value()` into the `X-CsrfToken` header. Every API call is a
`POST` with the default headers `Content-Type: application/json`, `Accept: application/json`,
`X-CsrfToken` and `X-AuthToken` (the empty string until signed in), a body formatted by
`String.format` and typed `application/json; charset=utf-8` (OkHttp's bridge puts the body's
media type in `Content-Type`). A non-2xx answer is read as an `APIError` and thrown. A 2xx
answer is parsed by Gson: the login answer into `Account`, the others into a `JsonObject` whose
`stations`/`tracks` array (`getAsJsonArray`, a NullPointerException when absent) is then read
into `Station[]` / `Track[]`.

The library plays nothing: `fetchPlaylistFragment` hands `Track.getAudioUrl()` to its caller.
The listener's station already exists (the library cannot create one): the fixture makes it
through the API, outside the replay.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from clients.conftest import Account
from clients.readers import ClientBroke, gson
from support import Api, Server, artists

JSON_MEDIA_TYPE = "application/json; charset=utf-8"  # MediaType.parse(...) in PandoraClient

# --- the classes Gson fills (only their fields) ------------------------------------------------
ACCOUNT = {"authToken": str}  # models/Account.java
STATION = {"stationId": str, "name": str}  # models/Station.java (@SerializedName("stationId"))
ART = {"url": str, "size": int}  # models/Art.java
TRACK = {  # models/Track.java
    "amazonUrl": str,
    "itunesUrl": str,
    "audioURL": str,  # @SerializedName("audioURL")
    "songTitle": str,
    "artistName": str,
    "albumArt": [ART],
}
API_ERROR = {"message": str, "errorCode": int, "errorString": str}  # models/APIError.java


class PandoraClient:
    """What `new PandoraClient()` sends, in Python."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url  # BASE_URL
        self.api_url = f"{base_url}/api"  # API_URL
        self.cookies: dict[str, str] = {}  # MyCookieJar: name -> cookie, all kept, all sent
        # setupDefaultHeaders(), in order; setHeader replaces a value in place.
        self.headers: dict[str, str] = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "X-CsrfToken": "",
            "X-AuthToken": "",
        }

    def _send(self, method: str, url: str, headers: dict[str, str], **kw: Any) -> httpx.Response:
        with httpx.Client(timeout=60) as http:
            request = http.build_request(method, url, **kw)
            for name in list(request.headers):  # only what OkHttp would put on the wire
                if name.lower() not in ("host", "content-length"):
                    del request.headers[name]
            for name, value in headers.items():
                request.headers[name] = value
            # OkHttp's BridgeInterceptor: body media type, cookies from the jar, gzip, agent.
            if "content" in kw:
                request.headers["Content-Type"] = JSON_MEDIA_TYPE
            request.headers["Connection"] = "Keep-Alive"
            request.headers["Accept-Encoding"] = "gzip"
            if self.cookies:
                request.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
            request.headers["User-Agent"] = "okhttp/3.9.1"
            response = http.send(request, follow_redirects=True)
        # MyCookieJar.saveFromResponse: every Set-Cookie, whatever its expiry or path.
        for line in response.headers.get_list("set-cookie"):
            pair = line.split(";", 1)[0]
            name, _, value = pair.partition("=")
            self.cookies[name.strip()] = value.strip()
        return response

    def _post(self, path: str, body: str) -> httpx.Response:
        return self._send(
            "POST", f"{self.api_url}{path}", dict(self.headers), content=body.encode()
        )

    @staticmethod
    def _fail_unless_successful(response: httpx.Response) -> None:
        """`if (!response.isSuccessful())`: read the APIError and throw IOException."""
        if 200 <= response.status_code < 300:
            return
        try:
            error = gson(json.loads(response.content), API_ERROR)
        except (ValueError, ClientBroke) as exc:
            raise ClientBroke(f"Gson: APIError of a {response.status_code}: {exc}") from None
        raise ClientBroke(
            f"Java: IOException({error['message']!r}) on HTTP {response.status_code}: "
            f"{response.text}"
        )

    @staticmethod
    def _json_object(response: httpx.Response) -> dict[str, Any]:
        """`gson.fromJson(response.body().charStream(), JsonObject.class)`."""
        try:
            value = json.loads(response.content)
        except ValueError:
            raise ClientBroke("Gson: JsonSyntaxException: the body is not JSON") from None
        if not isinstance(value, dict):
            raise ClientBroke("Gson: JsonSyntaxException: expected a JsonObject")
        return value

    @staticmethod
    def _array(obj: dict[str, Any], name: str) -> list[Any]:
        """`obj.getAsJsonArray(name).toString()`."""
        if obj.get(name) is None:
            raise ClientBroke(f"Java: NullPointerException: getAsJsonArray({name!r}) is null")
        if not isinstance(obj[name], list):
            raise ClientBroke(f"Java: ClassCastException: {name!r} is not a JsonArray")
        return obj[name]

    # PandoraClient.login
    def login(self, username: str, password: str) -> dict[str, Any]:
        # syncCookies(): HEAD BASE_URL, no headers of the client's own.
        self._send("HEAD", self.base_url, {})
        if "csrftoken" not in self.cookies:
            raise ClientBroke('Java: NullPointerException: cookies.get("csrftoken") is null')
        self.headers["X-CsrfToken"] = self.cookies["csrftoken"]
        account = self.authenticate(username, password)
        if account["authToken"] is None:
            raise ClientBroke('Java: NullPointerException: setHeader("X-AuthToken", null)')
        self.headers["X-AuthToken"] = account["authToken"]
        return account

    # PandoraClient.authenticate
    def authenticate(self, username: str, password: str) -> dict[str, Any]:
        response = self._post(
            "/v1/auth/login",
            '{ "username" : "%s", "password" : "%s" }' % (username, password),  # noqa: UP031
        )
        self._fail_unless_successful(response)
        try:
            value = json.loads(response.content)
        except ValueError:
            raise ClientBroke("Gson: JsonSyntaxException: the body is not JSON") from None
        return gson(value, ACCOUNT)

    # PandoraClient.syncStations -> fetchStations
    def sync_stations(self) -> list[dict[str, Any]]:
        response = self._post("/v1/station/getStations", '{ "pageSize" : 250 }')
        self._fail_unless_successful(response)
        stations = self._array(self._json_object(response), "stations")
        return gson(stations, [STATION])

    # PandoraClient.fetchPlaylistFragment
    def fetch_playlist_fragment(self, station: dict[str, Any]) -> list[dict[str, Any]]:
        response = self._post(
            "/v1/playlist/getFragment",
            '{ "isStationStart" : true, "stationId" : "%s"}' % station["stationId"],  # noqa: UP031
        )
        self._fail_unless_successful(response)
        tracks = self._array(self._json_object(response), "tracks")
        return gson(tracks, [TRACK])


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def station(airwave: Server, account: Account) -> dict[str, Any]:
    """The station the listener made elsewhere before using the library (not replayed)."""
    web = Api(airwave.url)
    web.login(account.username, account.password)
    artist = sorted(artists(web).values(), key=lambda a: a["name"])[-1]
    made = web.ok("v1/station/createStation", {"musicId": artist["musicId"]})
    return {"stationId": made["stationId"], "name": made["name"]}


# --- flows -------------------------------------------------------------------------------------


def test_login(airwave: Server, account: Account) -> None:
    """PandoraClient.login: syncCookies (HEAD /), then authenticate (v1/auth/login) with
    `X-AuthToken: ""` and `X-CsrfToken` taken from the cookie."""
    client = PandoraClient(airwave.url)
    account_object = client.login(account.username, account.password)
    assert account_object["authToken"]  # getAccount().getAuthToken(), sent from now on


def test_sync_stations(airwave: Server, account: Account, station: dict[str, Any]) -> None:
    """login, then syncStations -> fetchStations (v1/station/getStations); getStations()."""
    client = PandoraClient(airwave.url)
    client.login(account.username, account.password)
    # Step 2, fetchStations: { "pageSize" : 250 } with the jar's cookies (csrftoken and what
    # login set) and the new X-AuthToken; "stations" read into Station[].
    stations = client.sync_stations()
    by_id = {s["stationId"]: s for s in stations}
    assert station["stationId"] in by_id, stations
    assert by_id[station["stationId"]]["name"] == station["name"]  # Station.toString()


def test_fetch_playlist_fragment(
    airwave: Server, account: Account, station: dict[str, Any]
) -> None:
    """login, syncStations, then fetchPlaylistFragment(station) for one of getStations()."""
    client = PandoraClient(airwave.url)
    client.login(account.username, account.password)
    chosen = next(s for s in client.sync_stations() if s["stationId"] == station["stationId"])
    # Step 3, fetchPlaylistFragment: { "isStationStart" : true, "stationId" : "<id>"} (no
    # audioFormat, no fragmentRequestReason); "tracks" read into Track[].
    tracks = client.fetch_playlist_fragment(chosen)
    assert tracks
    for track in tracks:
        # What the library hands its caller to play: getAudioUrl(). The caller has no base URL
        # (BASE_URL is private), so only an absolute URL can be opened (new URL(...)).
        assert track["audioURL"] and re.match(r"https?://", track["audioURL"]), track
        assert track["songTitle"] and track["artistName"]
    # A second fragment on the same client, as a caller does when the first runs out.
    assert client.fetch_playlist_fragment(chosen)


def test_login_again(airwave: Server, account: Account, station: dict[str, Any]) -> None:
    """login() on a client already signed in (it resets the stations for this): the login call
    now carries the old `X-AuthToken` header and every cookie the jar kept (csrftoken, the
    session and device cookies of the first login)."""
    client = PandoraClient(airwave.url)
    client.login(account.username, account.password)
    again = client.login(account.username, account.password)
    assert again["authToken"]
    # The new token, with the jar's cookies as they now are, works for the next call.
    assert station["stationId"] in [s["stationId"] for s in client.sync_stations()]
