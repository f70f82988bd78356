"""The JSON tuner interface on the wire: its envelope, partners, encryption and errors. The real
clients (pianobar, pydora) drive it end to end in tests/clients/; these are the edges a client can
hit by mistake or on purpose, each answered with the record's `stat: fail` shape at HTTP 200."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from Crypto.Cipher import Blowfish
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import Server, unique, wait_indexed

from airwave.api.tuner import methods as _methods  # noqa: F401 - declares them
from airwave.api.tuner.dispatch import METHODS

pytestmark = pytest.mark.sqlite_only  # the edge's shapes; its storage is the REST API's

ANDROID = {
    "username": "android",
    "password": "AC7IBG09A3DTSYM4R41UJWL07VLN8JI7",
    "deviceModel": "android-generic",
    "version": "5",
}
ENCRYPT, DECRYPT = "6#26FRL$ZWD", "R=U!LH$O2B#"


def encrypt(body: dict[str, Any], pkcs5: bool = False) -> bytes:
    plain = json.dumps(body).encode()
    pad = 8 - len(plain) % 8 if pkcs5 else -len(plain) % 8
    plain += bytes([pad]) * pad if pkcs5 else b"\0" * pad
    return Blowfish.new(ENCRYPT.encode(), Blowfish.MODE_ECB).encrypt(plain).hex().encode()


class Tuner:
    def __init__(self, server: Server) -> None:
        self.url = server.url + "/services/json/"
        self.partner_id: str | None = None
        self.token: str | None = None
        self.user_id: str | None = None

    def post(self, method: str, body: bytes, **params: str) -> dict[str, Any]:
        response = httpx.post(self.url, params={"method": method, **params}, content=body)
        assert response.status_code == 200, response.text  # errors too: clients read it first
        return response.json()

    def partner_login(self) -> dict[str, Any]:
        answer = self.post("auth.partnerLogin", json.dumps(ANDROID).encode())
        self.partner_id = answer["result"]["partnerId"]
        return answer

    def login(self, username: str, password: str, pkcs5: bool = False) -> dict[str, Any]:
        partner = self.partner_login()["result"]
        answer = self.post(
            "auth.userLogin",
            encrypt(
                {
                    "loginType": "user",
                    "username": username,
                    "password": password,
                    "partnerAuthToken": partner["partnerAuthToken"],
                    "syncTime": 1,
                },
                pkcs5,
            ),
            auth_token=partner["partnerAuthToken"],
            partner_id=partner["partnerId"],
        )
        if answer["stat"] == "ok":
            self.token, self.user_id = answer["result"]["userAuthToken"], answer["result"]["userId"]
        return answer

    def call(self, method: str, body: dict[str, Any] | None = None, **params: str) -> dict:
        query = {"auth_token": self.token or "", "partner_id": self.partner_id or "1"}
        query |= {"user_id": self.user_id} if self.user_id else {}
        return self.post(method, encrypt(body or {}), **(query | params))


def fail(answer: dict[str, Any], code: int) -> str:
    assert answer["stat"] == "fail" and answer["code"] == code, answer
    assert isinstance(answer["message"], str) and answer["message"]
    return answer["message"]


@pytest.fixture(scope="module")
def radio(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server("--open-registration", "--library", str(small_demo_library))
    wait_indexed(server)
    return server


def listener(server: Server) -> tuple[str, str]:
    name = unique("tuner")
    server.client().register(name, "correct horse battery")
    return name, "correct horse battery"


def test_partner_login_answers_an_encrypted_sync_time(radio: Server) -> None:
    result = Tuner(radio).partner_login()["result"]
    assert int(result["partnerId"]) >= 1 and result["partnerAuthToken"]
    plain = Blowfish.new(DECRYPT.encode(), Blowfish.MODE_ECB).decrypt(
        bytes.fromhex(result["syncTime"])
    )
    assert abs(int(plain[4:-2]) - __import__("time").time()) < 60  # 4 bytes, seconds, 2 bytes
    wrong = dict(ANDROID, password="guess")
    fail(Tuner(radio).post("auth.partnerLogin", json.dumps(wrong).encode()), 1002)


def test_user_login_takes_nul_and_pkcs5_padding_and_refuses_wrong_passwords(
    radio: Server,
) -> None:
    name, password = listener(radio)
    assert Tuner(radio).login(name, password)["stat"] == "ok"
    pydora_style = Tuner(radio).login(name, password, pkcs5=True)["result"]
    assert pydora_style["userId"] and pydora_style["userAuthToken"]
    fail(Tuner(radio).login(name, "not the password"), 1002)
    fail(Tuner(radio).login(unique("ghost"), password), 1002)


def test_a_tuner_session_is_a_rest_session(radio: Server) -> None:
    name, password = listener(radio)
    tuner = Tuner(radio)
    tuner.login(name, password)
    listed = tuner.call("user.getStationList")["result"]
    assert [s["isQuickMix"] for s in listed["stations"]] == [True]  # QuickMix is always there
    quickmix = listed["stations"][0]["stationToken"]  # and plays the library before any station
    assert tuner.call("station.getPlaylist", {"stationToken": quickmix})["result"]["items"]
    genre = tuner.call("station.getGenreStations")["result"]["categories"][0]["stations"][0]
    made = tuner.call("station.createStation", {"musicToken": genre["stationToken"]})["result"]
    assert made["stationToken"] == made["stationId"]
    items = tuner.call("station.getPlaylist", {"stationToken": made["stationToken"]})["result"]
    track = items["items"][0]
    assert track["stationId"] == made["stationToken"]  # pianobar rates only through this
    assert {"highQuality", "mediumQuality", "lowQuality"} <= set(track["audioUrlMap"])
    assert httpx.get(track["audioUrlMap"]["mediumQuality"]["audioUrl"]).status_code == 200
    # logging out over REST ends it for the tuner too
    api = radio.client()
    api.login(name, password)
    api.ok("v1/auth/logoutAll", {"currentPassword": password})
    fail(tuner.call("user.getStationList"), 1001)


@pytest.mark.parametrize(
    ("params", "body", "code"),
    [
        ({}, b"", 2),  # no method
        ({"method": "no.suchMethod"}, b"", 14),
        ({"method": "user.purchaseGoogleSubscription", "partner_id": "1"}, b"", 1008),
        ({"method": "user.getStationList"}, b"00", 4),  # no partner_id
        ({"method": "user.getStationList", "partner_id": "99"}, b"00", 1010),
        ({"method": "user.getStationList", "partner_id": "x"}, b"00", 1010),
        ({"method": "user.getStationList", "partner_id": "1"}, b"not hex", 10),
        ({"method": "user.getStationList", "partner_id": "1"}, b"abc", 10),
        ({"method": "user.getStationList", "partner_id": "1"}, encrypt({}), 3),  # no token
        ({"method": "auth.partnerLogin"}, b"{", 10),
        ({"method": "auth.partnerLogin"}, b"[1]", 10),
        ({"method": "auth.partnerLogin"}, b'{"username": ["android"]}', 8),
        ({"method": "auth.partnerLogin"}, b'{"username": "android"}', 9),
    ],
)
def test_bad_calls_get_the_records_error(
    radio: Server, params: dict[str, str], body: bytes, code: int
) -> None:
    response = httpx.post(radio.url + "/services/json/", params=params, content=body)
    assert response.status_code == 200
    fail(response.json(), code)


def test_bad_parameters_of_a_signed_in_caller(radio: Server) -> None:
    tuner = Tuner(radio)
    tuner.login(*listener(radio))
    fail(tuner.call("station.getPlaylist", {}), 9)
    fail(tuner.call("station.getPlaylist", {"stationToken": ["1"]}), 8)
    fail(tuner.call("station.getPlaylist", {"stationToken": "999999"}), 1006)
    fail(tuner.call("station.addFeedback", {"trackToken": "nope", "isPositive": True}), 10)
    fail(tuner.call("station.addFeedback", {"trackToken": "x", "isPositive": "maybe"}), 8)
    fail(tuner.call("user.setQuickMix", {"quickMixStationIds": "1"}), 8)
    fail(tuner.call("station.deleteMusic", {"seedId": "garbage"}), 10)
    fail(tuner.call("user.getStationList", user_id="999999"), 1001)
    fail(tuner.call("station.createStation", {"musicToken": "X1"}), 10)
    assert tuner.call("test.checkLicensing")["result"] == {"isAllowed": True}


def test_settings_change_after_the_password_and_the_filter_keeps_its_pin(radio: Server) -> None:
    name, password = listener(radio)
    tuner = Tuner(radio)
    tuner.login(name, password)
    wrong = {"currentUsername": name, "currentPassword": "nope", "zipCode": "94110"}
    fail(tuner.call("user.changeSettings", wrong), 1012)  # INVALID_PASSWORD
    right = dict(wrong, currentPassword=password, isExplicitContentFilterEnabled=True)
    assert tuner.call("user.changeSettings", right)["stat"] == "ok"
    settings = tuner.call("user.getSettings")["result"]
    assert settings["zipCode"] == "94110" and settings["isExplicitContentFilterEnabled"] is True
    api = radio.client()
    api.login(name, password)
    api.ok("v1/listener/setExplicitPIN", {"pin": "1234", "currentPassword": password})
    off = {"isExplicitContentFilterEnabled": False}
    fail(tuner.call("user.setExplicitContentFilter", off), 1018)
    pinned = dict(off, explicitContentFilterPIN="1234")
    assert tuner.call("user.setExplicitContentFilter", pinned)["stat"] == "ok"
    assert tuner.call("user.getSettings")["result"]["isExplicitContentFilterEnabled"] is False


def test_get_is_refused_and_the_interface_can_be_turned_off(
    radio: Server, start_server: Callable[..., Server]
) -> None:
    fail(httpx.get(radio.url + "/services/json/?method=test.echo").json(), 10)
    off = start_server(env={"AIRWAVE_TUNER_ENABLED": "false"})
    answer = httpx.post(off.url + "/services/json/", params={"method": "auth.partnerLogin"})
    fail(answer.json(), 1008)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=8,
)
FIELDS = [
    "stationToken", "trackToken", "musicToken", "musicType", "feedbackId", "seedId",
    "stationName", "searchText", "isPositive", "quickMixStationIds", "adToken",
    "adTrackingTokens", "bookmarkToken", "additionalAudioUrl", "includeExtendedAttributes",
    "currentUsername", "currentPassword", "zipCode", "birthYear", "gender",
    "isExplicitContentFilterEnabled", "explicitContentFilterPIN", "emailOptIn",
]  # fmt: skip


@pytest.fixture(scope="module")
def signed_in(radio: Server) -> Tuner:
    tuner = Tuner(radio)
    tuner.login(*listener(radio))
    genre = tuner.call("station.getGenreStations")["result"]["categories"][0]["stations"][0]
    tuner.call("station.createStation", {"musicToken": genre["stationToken"]})
    return tuner


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(sorted(METHODS)),
    body=st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=4),
)
def test_no_body_a_client_can_send_breaks_a_method(
    signed_in: Tuner, method: str, body: dict[str, Any]
) -> None:
    if method in ("auth.partnerLogin", "auth.userLogin", "user.changeSettings"):
        return  # they would end or throttle the session; their input checks are tested above
    answer = signed_in.call(method, body)
    if answer["stat"] == "fail":
        assert answer["code"] != 0 or "internal error" not in answer["message"], answer
        assert isinstance(answer["code"], int) and answer["message"]
    else:
        assert answer["stat"] == "ok" and isinstance(answer["result"], dict)
