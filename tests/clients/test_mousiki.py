"""Replay of mousiki, a terminal Pandora player in Go (github.com/nlowe/mousiki).

Follows commit 33edafcc14b04df33620a6a383b0d964ff585816 (2021-04-03):
- `pandora/api/client.go`: the REST client (`NewClient`, `updateCSRF`, `prepare`, `post`,
  `Login`, `GetStations`, `GetMoreTracks`, `AddFeedback`, `AddTired`, `GetNarrative`,
  `checkHttpCode`);
- `pandora/api/{login,station,playlist,feedback,narrative}.go` and
  `pandora/{station,track,art,narrative,audio}.go`: the request and response structs that
  `encoding/json` marshals and decodes into;
- `mousiki/station_controller.go` (`Play`, `ProvideFeedback`, `ExplainCurrentTrack`),
  `mousiki/ui/main.go` (keys `+`, `-`, `t`, `e`) and `audio/ffmpeg.go` (`transcode`: a plain
  `http.Get(audioURL)` piped into `ffmpeg -i pipe:0`).
- `cmd/root.go` at 7e6e721 (2020-08-31) signs in with `Login` (the REST call replayed here);
  at the head commit it signs in through the legacy tuner.pandora.com JSON API instead
  (`pandora/api/legacy.go`), which is not this API and is not replayed.

What the client does: before its first call it sends `HEAD` to the site root and keeps the
`csrftoken` cookie (no cookie jar: that one cookie, by name and value, is all it ever sends);
every call is a `POST` of `json.Marshal` of a struct (all fields, zero values included) with
`Content-Type` and `Accept: application/json`, its browser User-Agent, `X-CsrfToken` and, once
signed in, `X-AuthToken`. Any status other than 200 is an error; answers are decoded with
`encoding/json` into typed structs (`time.Time` fields need RFC 3339 strings, `fileGain` is a
`float64` with the `,string` option so it must be a quoted number).

The listener's station already exists (mousiki has no way to create one; its user made it on
the web site): the fixture makes it through the API, outside the replay.
"""

from __future__ import annotations

import json
import re
from typing import Any

import audiokit
import httpx
import pytest
from clients.conftest import Account
from clients.readers import ClientBroke, go
from support import Api, Server, artists

USER_AGENT = (
    "Mozilla/5.0 (X11; Datanyze; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/81.0.4044.92 Safari/537.36"
)

# --- Go types the client decodes into ----------------------------------------------------------
# Two Go types that readers.go does not know: `time.Time` (RFC 3339 string or null) and a
# float64 with the `,string` tag option (a JSON string holding a number, or null).
TIME = "time.Time"
FLOAT_STRING = "float64,string"

ART = {"url": str, "size": int}  # pandora/art.go Art

STATION = {  # pandora/station.go Station
    "stationId": str,
    "sstationFactoryPandoraId": str,  # sic: the client's tag
    "pandoraId": str,
    "artId": str,
    "name": str,
    "creatorWebname": str,
    "art": [ART],
    "dateCreated": TIME,
    "lastPlayed": TIME,
}

STATION_RESPONSE = {  # pandora/api/station.go StationResponse
    "totalStations": int,
    "sortedBy": str,
    "index": int,
    "stations": [STATION],
}

LOGIN_RESPONSE = {  # pandora/api/login.go LoginResponse
    "authToken": str,
    "listenerToken": str,
    "username": str,
    "webname": str,
    "highQualityStreamingEnabled": bool,
}

TRACK = {  # pandora/track.go Track
    "musicId": str,
    "pandoraId": str,
    "stationId": str,
    "audioTokenId": str,
    "artistMusicId": str,
    "trackToken": str,
    "identity": str,
    "userSeed": str,
    "trackType": str,
    "fileGain": FLOAT_STRING,
    "audioURL": str,
    "audioEncoding": str,
    "trackLength": int,
    "rating": int,
    "allowStartStationFromTrack": bool,
    "allowShareTrack": bool,
    "allowTiredOfTrack": bool,
    "allowSkipTrackWithoutLimit": bool,
    "allowSkip": bool,
    "allowFeedback": bool,
    "rights": [str],
    "audioReceiptURL": str,
    "audioSkipUrl": str,
    "ArtistName": str,  # sic: Go matches it to `artistName` case-insensitively
    "albumTitle": str,
    "songTitle": str,
    "composerName": str,
    "artistArt": [ART],
    "albumArt": [ART],
    "genre": [str],
    "isCompilation": bool,
    "isFeatured": bool,
    "isBookmarked": bool,
    "trackKey": {"trackId": str, "trackType": str, "spinId": str},
}

FRAGMENT_RESPONSE = {"tracks": [TRACK], "isBingeSkipping": bool}  # GetPlaylistFragmentResponse

FEEDBACK_RESPONSE = {  # pandora/api/feedback.go AddFeedbackResponse
    "feedbackId": str,
    "stationId": str,
    "musicId": str,
    "pandoraId": str,
    "isPositive": bool,
}

TIRED_RESPONSE: dict[str, Any] = {}  # AddTiredResponse struct{}: any JSON object (or null)

NARRATIVE = {"intro": str, "focusTraits": [str], "paragraph": str}  # pandora/narrative.go

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_JSON_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")


def _field(value: dict[str, Any], name: str) -> str | None:
    """The key encoding/json fills a field from: the exact name, else a case-insensitive one."""
    if name in value:
        return name
    return next((key for key in value if key.lower() == name.lower()), None)


def _check_go_extras(value: Any, schema: Any, where: str) -> None:
    """Fail where `time.Time` or a `,string` float64 would refuse the value."""
    if value is None:
        return
    if schema == TIME:
        if not isinstance(value, str) or not _RFC3339.fullmatch(value):
            raise ClientBroke(
                f'Go: parsing time {json.dumps(value)} as ""2006-01-02T15:04:05Z07:00"" failed '
                f"at {where}"
            )
    elif schema == FLOAT_STRING:
        if not isinstance(value, str):
            raise ClientBroke(
                "Go: json: invalid use of ,string struct tag, trying to unmarshal unquoted "
                f"value into float64 at {where}"
            )
        if not _JSON_NUMBER.fullmatch(value):
            raise ClientBroke(
                f"Go: json: invalid use of ,string struct tag, trying to unmarshal {value!r} "
                f"into float64 at {where}"
            )
    elif isinstance(schema, list) and isinstance(value, list):
        for i, item in enumerate(value):
            _check_go_extras(item, schema[0], f"{where}[{i}]")
    elif isinstance(schema, dict) and isinstance(value, dict):
        for name, field_type in schema.items():
            key = _field(value, name)
            if key is not None:
                _check_go_extras(value[key], field_type, f"{where}.{name}")


def _plain(schema: Any) -> Any:
    if schema in (TIME, FLOAT_STRING):
        return Any
    if isinstance(schema, list):
        return [_plain(schema[0])]
    if isinstance(schema, dict):
        return {name: _plain(t) for name, t in schema.items()}
    return schema


def decode(response: httpx.Response, schema: Any) -> Any:
    """`checkHttpCode` (200 only) then `json.NewDecoder(resp.Body).Decode(&payload)`."""
    if response.status_code != 200:
        raise ClientBroke(f"Go: unexpected result {response.status_code}:\n{response.text}")
    try:
        value = json.loads(response.content)
    except ValueError:
        raise ClientBroke(f"Go: read response: not JSON: {response.content[:200]!r}") from None
    _check_go_extras(value, schema, "$")
    return go(value, _plain(schema))


# --- the client --------------------------------------------------------------------------------


class Mousiki:
    """What `api.NewClient()` sends, in Python: no cookie jar, one csrftoken cookie."""

    def __init__(self, base_url: str) -> None:
        self.site = base_url  # csrfURL = pandoraBase
        self.api_url = f"{base_url}/api"  # apiURL = pandoraBase + "/api"
        self.auth_token = ""
        self.csrf: tuple[str, str] | None = None  # the csrftoken cookie: name, value

    def _send(self, method: str, url: str, strip: tuple[str, ...] = (), **kw: Any) -> Any:
        # A client per request: Go's cleanhttp client has no cookie jar, so no cookie the server
        # sets (the session cookie, the device cookie) is ever sent back.
        with httpx.Client(timeout=60) as http:
            request = http.build_request(method, url, **kw)
            for name in strip:  # headers httpx adds that Go's net/http does not send
                request.headers.pop(name, None)
            return http.send(request, follow_redirects=True)

    def update_csrf(self) -> None:
        """client.go `updateCSRF`: `HEAD pandoraBase`, keep the Set-Cookie named csrftoken."""
        response = self._send(
            "HEAD", self.site, strip=("accept",), headers={"User-Agent": "Go-http-client/1.1"}
        )
        cookie = response.cookies.get("csrftoken")
        if not cookie:
            raise ClientBroke("Go: prepare request: CSRF Cookie not found")
        self.csrf = ("csrftoken", cookie)

    def post(self, rel_path: str, payload: dict[str, Any]) -> httpx.Response:
        """client.go `post` + `prepare`: json.Marshal of the struct, headers, csrf cookie."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            "Accept-Encoding": "gzip",  # Go's transport adds it (and decompresses)
        }
        if self.auth_token:
            headers["X-AuthToken"] = self.auth_token
        else:
            assert rel_path.endswith("/v1/auth/login"), "not logged in"
        if self.csrf is None:
            self.update_csrf()
        assert self.csrf is not None
        headers["X-CsrfToken"] = self.csrf[1]
        headers["Cookie"] = f"{self.csrf[0]}={self.csrf[1]}"  # r.AddCookie(c.csrfToken)
        body = json.dumps(payload, separators=(",", ":")).encode()
        return self._send(
            "POST", f"{self.api_url}/{rel_path.lstrip('/')}", headers=headers, content=body
        )

    # client.go Login
    def login(self, username: str, password: str) -> dict[str, Any]:
        answer = decode(
            self.post(
                "/v1/auth/login",
                # LoginRequest in field order; existingAuthToken is "" (no omitempty)
                {
                    "existingAuthToken": "",
                    "keepLoggedIn": True,
                    "username": username,
                    "password": password,
                },
            ),
            LOGIN_RESPONSE,
        )
        self.auth_token = answer["authToken"]
        if not self.auth_token:
            raise ClientBroke('Go: authToken decoded to ""; every later call says not logged in')
        return answer

    # client.go GetStations
    def get_stations(self) -> list[dict[str, Any]]:
        answer = decode(
            self.post("/v1/station/getStations", {"pageSize": 250, "startIndex": 0}),
            STATION_RESPONSE,
        )
        return answer["stations"] or []

    # client.go GetMoreTracks
    def get_more_tracks(self, station_id: str) -> list[dict[str, Any]]:
        answer = decode(
            self.post(
                "/v1/playlist/getFragment",
                # GetPlaylistFragmentRequest: the *string fields are nil, marshalled as null;
                # audioFormat is viper's "audio-format", default "aacplus" (cmd/root.go)
                {
                    "stationId": station_id,
                    "isStationStart": True,
                    "fragmentRequestReason": "Normal",
                    "audioFormat": "aacplus",
                    "startingAtTrackId": None,
                    "onDemandArtistMessageArtistUidHex": None,
                    "onDemandArtistMessageIdHex": None,
                },
            ),
            FRAGMENT_RESPONSE,
        )
        return answer["tracks"] or []

    # client.go AddFeedback
    def add_feedback(self, track_token: str, is_positive: bool) -> dict[str, Any]:
        return decode(
            self.post(
                "/v1/station/addFeedback", {"trackToken": track_token, "isPositive": is_positive}
            ),
            FEEDBACK_RESPONSE,
        )

    # client.go AddTired
    def add_tired(self, track_token: str) -> None:
        response = self.post("/v1/listener/addTiredSong", {"trackToken": track_token})
        value = decode(response, TIRED_RESPONSE)
        if value is None and response.content.strip() != b"null":
            raise ClientBroke("Go: decoding an empty body: EOF")

    # client.go GetNarrative
    def get_narrative(self, station_id: str, music_id: str) -> dict[str, Any]:
        return decode(
            self.post("/v1/playlist/narrative", {"musicId": music_id, "stationId": station_id}),
            NARRATIVE,
        )

    # audio/ffmpeg.go transcode: http.Get(url) with the default client, body piped to ffmpeg
    def transcode(self, url: str) -> audiokit.Decoded:
        if not re.match(r"https?://", url):
            raise ClientBroke(f"Go: http.Get({url!r}): unsupported protocol scheme")
        response = self._send(
            "GET",
            url,
            strip=("accept",),
            headers={"User-Agent": "Go-http-client/1.1", "Accept-Encoding": "gzip"},
        )
        # transcode does not look at the status: whatever the body is goes into ffmpeg, which
        # must decode it (`ffmpeg -i pipe:0 -c:a pcm_s16le -f wav`), else "transcoding failed".
        try:
            return audiokit.decode(response.content)
        except Exception as exc:
            raise ClientBroke(
                f"ffmpeg: cannot decode {response.status_code} body of {len(response.content)} "
                f"bytes ({response.headers.get('content-type')}): {exc}"
            ) from None


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def station(airwave: Server, account: Account) -> dict[str, Any]:
    """The station the listener made on the web site before starting mousiki (not replayed)."""
    web = Api(airwave.url)
    web.login(account.username, account.password)
    artist = sorted(artists(web).values(), key=lambda a: a["name"])[0]
    made = web.ok("v1/station/createStation", {"musicId": artist["musicId"]})
    return {"stationId": made["stationId"], "name": made["name"], "artist": artist["name"]}


def signed_in(airwave: Server, account: Account) -> Mousiki:
    client = Mousiki(airwave.url)
    client.login(account.username, account.password)
    return client


# --- flows -------------------------------------------------------------------------------------


def test_sign_in(airwave: Server, account: Account) -> None:
    """cmd/root.go (7e6e721): `p.Login(un, pw)` before anything else."""
    client = Mousiki(airwave.url)
    # Step 1, client.go prepare -> updateCSRF: HEAD / and keep the csrftoken cookie.
    # Step 2, client.go Login: POST /api/v1/auth/login with the LoginRequest struct.
    answer = client.login(account.username, account.password)
    assert answer["username"] == account.username  # logged as "user"
    assert isinstance(answer["webname"], str)  # logged as "webname"


def test_list_stations(airwave: Server, account: Account, station: dict[str, Any]) -> None:
    """StationController.ListStations -> client.go GetStations (the station switcher)."""
    client = signed_in(airwave, account)
    # client.go GetStations: {"pageSize":250,"startIndex":0}, decoded into StationResponse
    # (dateCreated and lastPlayed are time.Time, art a []Art).
    stations = client.get_stations()
    ids = [s["stationId"] for s in stations]
    assert station["stationId"] in ids, ids  # the switcher shows `[ID] Name`
    mine = next(s for s in stations if s["stationId"] == station["stationId"])
    assert mine["name"] == station["name"]


def test_play_station(airwave: Server, account: Account, station: dict[str, Any]) -> None:
    """StationController.Play: fetch tracks when the queue runs low, play each audioURL."""
    client = signed_in(airwave, account)
    stations = client.get_stations()
    chosen = next(s for s in stations if s["stationId"] == station["stationId"])

    # Step 1, SwitchStations empties the queue; Play: len(queue) <= 1 -> client.go
    # GetMoreTracks.
    queue = client.get_more_tracks(chosen["stationId"])
    assert queue, "Play takes s.queue[0]: an empty fragment panics"
    played = 0
    while len(queue) > 1 or played == 0:
        playing, queue = queue[0], queue[1:]
        assert playing["trackToken"]
        # Step 2, player.UpdateStream(audioURL, fileGain) -> ffmpeg.go transcode: a plain GET
        # (no Range, no cookies, no auth header); the body goes through ffmpeg.
        assert client.transcode(playing["audioURL"]).seconds > 0
        played += 1

    # Step 3, the queue is down to one track: GetMoreTracks again (this client always sends
    # isStationStart: true), and play on.
    queue += client.get_more_tracks(chosen["stationId"])
    assert len(queue) > 1
    assert client.transcode(queue[0]["audioURL"]).seconds > 0

    # Step 4, the station switcher lists the stations again (the played one may now carry
    # lastPlayed, a time.Time).
    assert chosen["stationId"] in [s["stationId"] for s in client.get_stations()]


def test_explain_track(airwave: Server, account: Account, station: dict[str, Any]) -> None:
    """Key `e`: narrativePopup.Open -> ExplainCurrentTrack -> client.go GetNarrative."""
    client = signed_in(airwave, account)
    playing = client.get_more_tracks(station["stationId"])[0]
    # client.go GetNarrative: {"musicId": track.MusicId, "stationId": track.StationId}; the
    # popup shows narrative.Paragraph.
    narrative = client.get_narrative(playing["stationId"], playing["musicId"])
    assert narrative["paragraph"], "the explanation popup would be empty"


def test_rate_tracks(airwave: Server, account: Account, station: dict[str, Any]) -> None:
    """Keys `+`, `-`, `t`: StationController.ProvideFeedback on the playing track."""
    client = signed_in(airwave, account)
    tracks = client.get_more_tracks(station["stationId"])
    assert len(tracks) >= 3, tracks

    # Key `+` (rating 0 != Like): client.go AddFeedback(trackToken, true).
    loved = client.add_feedback(tracks[0]["trackToken"], True)
    assert loved["isPositive"] is True  # logged with feedbackId

    # Key `-` on the next track: AddFeedback(trackToken, false), then a local skip.
    banned = client.add_feedback(tracks[1]["trackToken"], False)
    assert banned["isPositive"] is False

    # Key `t` on the next track: client.go AddTired(trackToken), then a local skip.
    client.add_tired(tracks[2]["trackToken"])
