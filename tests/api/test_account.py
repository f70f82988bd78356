"""The account over HTTP: profile, settings, explicit PIN, updateAccount, deleteListener (and
what it leaves)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from support import Api, Server, assert_error, unique, wait_indexed

PASSWORD = "correct horse battery"
SETTINGS_FIELDS = {
    "explicitContentFilterEnabled",
    "explicitPinSet",
    "highQualityStreamingEnabled",
    "highQualityStreamingAvailable",
    "emailOptOut",
    "artistAudioMessagesEnabled",
    "zipCode",
    "birthYear",
    "gender",
    "email",
    "minor",
}
PROFILE_FIELDS = {
    "webname",
    "displayName",
    "bio",
    "stationCount",
    "thumbsUpCount",
    "bookmarkCount",
    "profilePrivate",
    "dateCreated",
}


@pytest.fixture(scope="module")
def radio(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    # a mail server nobody answers at: reset tokens are issued, the mails fail in the background
    server = start_server(
        "--open-registration",
        "--library",
        str(small_demo_library),
        env={
            "AIRWAVE_FRAGMENT_LIMIT": "100000",
            "AIRWAVE_ENGINE_SEED": "5",
            "AIRWAVE_LOGIN_MAX_ACCOUNTS_PER_ADDRESS": "100000",
            "AIRWAVE_LOGIN_BACKOFF_BASE": "600",
            "AIRWAVE_PASSWORD_RESET_LIMIT": "1000",
            "AIRWAVE_SMTP_HOST": "127.0.0.1",
            "AIRWAVE_SMTP_PORT": "9",
            "AIRWAVE_SMTP_TIMEOUT": "1",
        },
    )
    wait_indexed(server)
    return server


def listener(server: Server, tier: str = "free", **extra: Any) -> Api:
    api = server.client()
    name = unique("acct")
    data = api.register(name, **extra)
    api.username = name  # type: ignore[attr-defined]
    api.data = data  # type: ignore[attr-defined]
    if tier != "free":
        assert server.admin("user", "tier", name, tier).returncode == 0
    return api


def station_of_genre(api: Api, genre: str) -> str:
    items = api.ok("v1/search/fullSearch", {"query": genre, "types": ["GE"]})["items"]
    pandora_id = next(i for i in items if i["name"] == genre)["pandoraId"]
    return api.ok("v1/station/createStation", {"pandoraId": pandora_id})["stationId"]


def fragment(api: Api, station_id: str, **extra: Any) -> list[dict[str, Any]]:
    return api.ok("v1/playlist/getFragment", {"stationId": station_id, **extra})["tracks"]


# --- profile
# ------------------------------------------------------------------------------------------------


def test_own_profile_and_another_listeners_public_profile(radio: Server) -> None:
    alice, bob = listener(radio), listener(radio)
    own = alice.ok("v1/listener/getProfile", {})
    assert set(own) == PROFILE_FIELDS
    assert own["webname"] == alice.data["webname"] and own["displayName"] == own["webname"]
    assert (own["stationCount"], own["thumbsUpCount"], own["bookmarkCount"], own["bio"]) == (
        0,
        0,
        0,
        "",
    )
    assert own["profilePrivate"] is False and own["dateCreated"].endswith(("Z", "+00:00"))
    assert alice.ok("v1/listener/getProfile", {"webname": own["webname"]}) == own

    assert bob.ok("v1/listener/getProfile", {"webname": own["webname"]}) == own
    assert_error(
        bob.call("v1/listener/getProfile", {"webname": unique("nobody")}), 404, "NOT_FOUND"
    )
    assert_error(bob.call("v1/listener/getProfile", {"webname": 7}), 400, "INVALID_REQUEST")
    assert_error(radio.client().call("v1/listener/getProfile", {}), 401, "AUTH_INVALID_TOKEN")


def test_private_profile_is_refused_to_others(radio: Server) -> None:
    alice, bob = listener(radio), listener(radio)
    changed = alice.ok("v1/listener/setProfile", {"profilePrivate": True})
    assert changed["profilePrivate"] is True
    webname = changed["webname"]
    assert_error(
        bob.call("v1/listener/getProfile", {"webname": webname}), 403, "USER_NOT_AUTHORIZED"
    )
    assert (
        alice.ok("v1/listener/getProfile", {})["profilePrivate"] is True
    )  # the owner still sees it
    alice.ok("v1/listener/setProfile", {"profilePrivate": False})
    assert bob.ok("v1/listener/getProfile", {"webname": webname})["webname"] == webname


def test_set_profile_changes_only_given_fields_and_checks_lengths(radio: Server) -> None:
    api = listener(radio)
    profile = api.ok(
        "v1/listener/setProfile", {"displayName": "  DJ Ünïcode  ", "bio": "line one\nline two"}
    )
    assert (profile["displayName"], profile["bio"]) == ("DJ Ünïcode", "line one\nline two")
    profile = api.ok("v1/listener/setProfile", {"profilePrivate": True})
    assert (profile["displayName"], profile["bio"], profile["profilePrivate"]) == (
        "DJ Ünïcode",
        "line one\nline two",
        True,
    )
    for body, field in (
        ({"displayName": "x" * 65}, "displayName"),
        ({"bio": "b" * 2001}, "bio"),
        ({"displayName": "tab\there"}, "displayName"),
        ({"bio": "bell\x07"}, "bio"),
        ({"profilePrivate": "yes"}, "profilePrivate"),
        ({"displayName": 5}, "displayName"),
    ):
        error = assert_error(api.call("v1/listener/setProfile", body), 400, "INVALID_REQUEST")
        assert field in error["message"], error
    assert (
        api.ok("v1/listener/setProfile", {"displayName": "y" * 64, "bio": "z" * 2000})[
            "displayName"
        ]
        == "y" * 64
    )
    cleared = api.ok("v1/listener/setProfile", {"displayName": "", "bio": None})
    assert (cleared["displayName"], cleared["bio"]) == (cleared["webname"], "")


# --- settings
# ---------------------------------------------------------------------------------------------


def test_update_settings_reads_with_an_empty_body_and_writes_any_subset(radio: Server) -> None:
    api = listener(radio, birthYear=1980, zipCode="94612", gender="female")
    settings = api.ok("v1/listener/updateSettings", {})
    assert set(settings) == SETTINGS_FIELDS
    assert settings == {
        "explicitContentFilterEnabled": False,
        "explicitPinSet": False,
        "highQualityStreamingEnabled": True,
        "highQualityStreamingAvailable": False,
        "emailOptOut": False,
        "artistAudioMessagesEnabled": True,
        "zipCode": "94612",
        "birthYear": 1980,
        "gender": "female",
        "email": None,
        "minor": False,
    }
    changed = api.ok(
        "v1/listener/updateSettings",
        {
            "emailOptOut": True,
            "artistAudioMessagesEnabled": False,
            "zipCode": "sw1a 1aa",
            "gender": "Non-Binary",
            "email": "me@example.org",
        },
    )
    assert changed == {
        **settings,
        "emailOptOut": True,
        "artistAudioMessagesEnabled": False,
        "zipCode": "SW1A 1AA",
        "gender": "nonbinary",
        "email": "me@example.org",
    }
    assert api.ok("v1/listener/updateSettings", {}) == changed
    cleared = api.ok(
        "v1/listener/updateSettings",
        {"zipCode": None, "birthYear": None, "gender": "", "email": None},
    )
    assert (cleared["zipCode"], cleared["birthYear"], cleared["gender"], cleared["email"]) == (
        None,
        None,
        None,
        None,
    )
    teen = datetime.now().year - 15
    assert api.ok("v1/listener/updateSettings", {"birthYear": teen})["minor"] is True
    again = api.login(api.username, PASSWORD)  # type: ignore[attr-defined]
    assert (again["birthYear"], again["emailOptOut"], again["minor"]) == (teen, True, True)


def test_update_settings_validation_errors_change_nothing(radio: Server) -> None:
    api = listener(radio, zipCode="94612")
    before = api.ok("v1/listener/updateSettings", {})
    year = datetime.now().year
    cases = [
        ({"zipCode": "!!"}, 400, "ZIP_CODE_INVALID"),
        ({"zipCode": "ABCDE"}, 400, "ZIP_CODE_INVALID"),
        ({"birthYear": 1850}, 400, "BIRTH_YEAR_INVALID"),
        ({"birthYear": year + 1}, 400, "BIRTH_YEAR_INVALID"),
        ({"birthYear": year - 5}, 400, "BIRTH_YEAR_TOO_YOUNG"),
        ({"gender": "robot"}, 400, "INVALID_GENDER"),
        ({"email": "not-an-address"}, 400, "INVALID_REQUEST"),
        ({"emailOptOut": None}, 400, "INVALID_REQUEST"),
        ({"highQualityStreamingEnabled": "no"}, 400, "INVALID_REQUEST"),
        ({"birthYear": "1990"}, 400, "INVALID_REQUEST"),
    ]
    for body, status, error in cases:
        # a valid change alongside is not applied either
        assert_error(
            api.call("v1/listener/updateSettings", {"emailOptOut": True, **body}), status, error
        )
    assert api.ok("v1/listener/updateSettings", {}) == before


def test_explicit_pin_guards_turning_the_filter_off(radio: Server) -> None:
    api = listener(radio)
    assert_error(
        api.call("v1/listener/setExplicitPIN", {"pin": "12a4"}), 400, "EXPLICIT_PIN_MALFORMED"
    )
    assert_error(
        api.call("v1/listener/setExplicitPIN", {"pin": "12345"}), 400, "EXPLICIT_PIN_MALFORMED"
    )
    assert_error(
        api.call("v1/listener/setExplicitPIN", {"pin": "١٢٣٤"}), 400, "EXPLICIT_PIN_MALFORMED"
    )
    assert_error(api.call("v1/listener/setExplicitPIN", {}), 400, "INVALID_REQUEST")
    assert api.ok("v1/listener/setExplicitPIN", {"pin": "2468"}) == {}
    settings = api.ok("v1/listener/updateSettings", {})
    assert settings["explicitPinSet"] is True and settings["explicitContentFilterEnabled"] is True

    off = {"explicitContentFilterEnabled": False}
    assert_error(api.call("v1/listener/updateSettings", off), 403, "EXPLICIT_PIN_INCORRECT")
    assert_error(
        api.call("v1/listener/updateSettings", {**off, "pin": "24"}), 400, "EXPLICIT_PIN_MALFORMED"
    )
    assert_error(
        api.call("v1/listener/updateSettings", {**off, "pin": "1357"}),
        403,
        "EXPLICIT_PIN_INCORRECT",
    )
    # other settings change without the PIN; so does turning the filter on
    assert (
        api.ok("v1/listener/updateSettings", {"emailOptOut": True})["explicitContentFilterEnabled"]
        is True
    )
    assert (
        api.ok("v1/listener/updateSettings", {**off, "pin": "2468"})["explicitContentFilterEnabled"]
        is False
    )
    assert api.ok("v1/listener/updateSettings", {"explicitContentFilterEnabled": True})[
        "explicitContentFilterEnabled"
    ]

    # changing the PIN needs the current one (or the account password)
    assert_error(
        api.call("v1/listener/setExplicitPIN", {"pin": "1111"}), 403, "EXPLICIT_PIN_INCORRECT"
    )
    assert_error(
        api.call("v1/listener/setExplicitPIN", {"pin": "1111", "currentPin": "9999"}),
        403,
        "EXPLICIT_PIN_INCORRECT",
    )
    assert_error(
        api.call(
            "v1/listener/setExplicitPIN", {"pin": "1111", "currentPassword": "wrong password"}
        ),
        400,
        "INVALID_PASSWORD",
    )
    assert api.ok("v1/listener/setExplicitPIN", {"pin": "1111", "currentPin": "2468"}) == {}
    assert_error(
        api.call("v1/listener/updateSettings", {**off, "pin": "2468"}),
        403,
        "EXPLICIT_PIN_INCORRECT",
    )
    assert api.ok("v1/listener/setExplicitPIN", {"pin": "3333", "currentPassword": PASSWORD}) == {}
    assert (
        api.ok("v1/listener/updateSettings", {**off, "pin": "3333"})["explicitContentFilterEnabled"]
        is False
    )


def test_wrong_pins_are_throttled(radio: Server) -> None:
    api = listener(radio)
    api.ok("v1/listener/setExplicitPIN", {"pin": "4321"})
    off = {"explicitContentFilterEnabled": False}
    for _ in range(5):  # login_free_failures
        assert_error(
            api.call("v1/listener/updateSettings", {**off, "pin": "0000"}),
            403,
            "EXPLICIT_PIN_INCORRECT",
        )
    limited = api.call("v1/listener/updateSettings", {**off, "pin": "4321"})
    assert_error(limited, 429, "RATE_LIMITED")
    assert int(limited.headers["Retry-After"]) > 0
    assert_error(
        api.call("v1/listener/setExplicitPIN", {"pin": "1111", "currentPin": "4321"}),
        429,
        "RATE_LIMITED",
    )
    # another listener's PIN is not affected
    other = listener(radio)
    other.ok("v1/listener/setExplicitPIN", {"pin": "4321"})
    assert (
        other.ok("v1/listener/updateSettings", {**off, "pin": "4321"})[
            "explicitContentFilterEnabled"
        ]
        is False
    )


def test_explicit_filter_applies_to_the_next_fragment(radio: Server) -> None:
    api = listener(radio)
    sid = station_of_genre(api, "Hip-Hop")
    seen = [t for _ in range(5) for t in fragment(api, sid)]
    explicit = {
        t["musicId"] for t in seen if api.ok("v1/music/track", {"token": t["musicId"]})["explicit"]
    }
    assert explicit, "the demo library's hip-hop has explicit tracks"
    assert api.ok("v1/listener/updateSettings", {"explicitContentFilterEnabled": True})[
        "explicitContentFilterEnabled"
    ]
    for _ in range(5):
        for track in fragment(api, sid):
            assert not api.ok("v1/music/track", {"token": track["musicId"]})["explicit"], track[
                "songTitle"
            ]


def test_high_quality_setting_decides_mp3_hifi(radio: Server) -> None:
    plus = listener(radio, "plus")
    assert plus.ok("v1/listener/updateSettings", {})["highQualityStreamingAvailable"] is True
    sid = station_of_genre(plus, "Jazz")
    assert {t["audioEncoding"] for t in fragment(plus, sid, audioFormat="mp3-hifi")} == {"mp3-hifi"}
    assert (
        plus.ok("v1/listener/updateSettings", {"highQualityStreamingEnabled": False})[
            "highQualityStreamingEnabled"
        ]
        is False
    )
    assert {t["audioEncoding"] for t in fragment(plus, sid, audioFormat="mp3-hifi")} == {"mp3"}
    assert {t["audioEncoding"] for t in fragment(plus, sid, audioFormat="opus")} == {
        "opus"
    }  # others unchanged
    plus.ok("v1/listener/updateSettings", {"highQualityStreamingEnabled": True})
    assert {t["audioEncoding"] for t in fragment(plus, sid, audioFormat="mp3-hifi")} == {"mp3-hifi"}
    # a tier without high quality gets standard quality whatever the setting says
    free = listener(radio)
    assert (
        free.ok("v1/listener/updateSettings", {"highQualityStreamingEnabled": True})[
            "highQualityStreamingAvailable"
        ]
        is False
    )
    assert {
        t["audioEncoding"]
        for t in fragment(free, station_of_genre(free, "Jazz"), audioFormat="mp3-hifi")
    } == {"mp3"}


# --- updateAccount
# ---------------------------------------------------------------------------------------------


def account_change(api: Api, **fields: Any) -> Any:
    return api.call(
        "v1/listener/updateAccount",
        {
            "currentUsername": api.username,  # type: ignore[attr-defined]
            "currentPassword": PASSWORD,
            **fields,
        },
    )


def test_update_account_errors_change_nothing(radio: Server) -> None:
    api, other = listener(radio), listener(radio)
    name = api.username  # type: ignore[attr-defined]
    body = {"currentUsername": name, "currentPassword": PASSWORD}
    assert_error(
        api.call("v1/listener/updateAccount", {**body, "currentPassword": "not the password"}),
        400,
        "INVALID_PASSWORD",
    )
    assert_error(
        api.call("v1/listener/updateAccount", {**body, "currentUsername": other.username}),  # type: ignore
        403,
        "USER_NOT_AUTHORIZED",
    )
    assert_error(
        api.call("v1/listener/updateAccount", {**body, "currentUsername": unique("ghost")}),
        403,
        "USER_NOT_AUTHORIZED",
    )
    assert_error(
        api.call("v1/listener/updateAccount", {"currentUsername": name}), 400, "INVALID_REQUEST"
    )
    assert_error(account_change(api, newUsername="has space"), 400, "INVALID_USERNAME")
    assert_error(account_change(api, newUsername="x"), 400, "INVALID_USERNAME")
    assert_error(
        account_change(api, newUsername=other.username.upper()),
        409,  # type: ignore[attr-defined]
        "USERNAME_ALREADY_EXISTS",
    )
    for weak in ("short", "password123", name, "aaaaaaaaaaaa"):
        assert_error(account_change(api, newPassword=weak), 400, "INVALID_PASSWORD")
    # a valid new name next to a weak password: neither is applied
    assert_error(
        account_change(api, newUsername=unique("renamed"), newPassword="short"),
        400,
        "INVALID_PASSWORD",
    )
    assert api.ok("v1/auth/login", {"username": name, "password": PASSWORD})["username"] == name
    assert_error(radio.client().call("v1/listener/updateAccount", body), 401, "AUTH_INVALID_TOKEN")


def test_update_account_renames_and_sets_the_filter(radio: Server) -> None:
    api = listener(radio)
    old_token, new_name = api.token, unique("Renamed")
    response = account_change(api, newUsername=new_name, enableExplicitContentFilter=True)
    assert response.status_code == 200, response.text
    data = response.json()
    assert "airwave_session=" in response.headers["set-cookie"]
    assert data["username"] == new_name and data["explicitContentFilterEnabled"] is True
    assert data["webname"] == api.data["webname"]  # type: ignore[attr-defined]
    assert data["listenerId"] == api.data["listenerId"]  # type: ignore[attr-defined]
    # the caller's session continues with the same token; the answer's new session cookie replaces
    # the old one
    assert data["authToken"] == old_token
    assert api.ok("v1/listener/getProfile", {})["webname"] == data["webname"]
    header_only = radio.client()
    header_only.token = old_token
    assert header_only.ok("v1/listener/getProfile", {})["webname"] == data["webname"]
    assert radio.client().login(new_name.lower(), PASSWORD)["username"] == new_name
    assert_error(
        radio.client().call("v1/auth/login", {"username": api.username, "password": PASSWORD}),  # type: ignore
        401,
        "AUTH_INVALID_USERNAME_PASSWORD",
    )
    # changing only the case of the name is allowed
    api.username = new_name  # type: ignore[attr-defined]
    assert account_change(api, newUsername=new_name.upper()).json()["username"] == new_name.upper()


def test_new_password_ends_every_other_session(radio: Server) -> None:
    api = listener(radio)
    phone, tablet = radio.client(), radio.client()
    phone.login(api.username, PASSWORD)  # type: ignore[attr-defined]
    tablet.login(api.username, PASSWORD)  # type: ignore[attr-defined]
    response = account_change(api, newPassword="a much better secret")
    assert response.status_code == 200, response.text
    assert response.json()["authToken"] == api.token
    assert api.ok("v1/listener/getProfile", {})  # the caller stays logged in
    for other in (phone, tablet):
        assert_error(other.call("v1/listener/getProfile", {}), 401, "AUTH_INVALID_TOKEN")
    assert_error(
        radio.client().call("v1/auth/login", {"username": api.username, "password": PASSWORD}),  # type: ignore
        401,
        "AUTH_INVALID_USERNAME_PASSWORD",
    )
    assert radio.client().login(api.username, "a much better secret")  # type: ignore[attr-defined]


def test_wrong_current_passwords_are_throttled_like_logins(
    start_server: Callable[..., Server],
) -> None:
    server = start_server(
        "--open-registration",
        env={
            "AIRWAVE_LOGIN_MAX_FAILURES_PER_USER": "3",  # old name
            "AIRWAVE_LOGIN_BACKOFF_BASE": "600",
        },
    )
    api = listener(server)
    for _ in range(3):
        assert_error(
            api.call(
                "v1/listener/updateAccount",
                {
                    "currentUsername": api.username,  # type: ignore
                    "currentPassword": "guess guess",
                },
            ),
            400,
            "INVALID_PASSWORD",
        )
    limited = account_change(api, newPassword="another good secret")
    assert_error(limited, 429, "RATE_LIMITED")
    assert int(limited.headers["Retry-After"]) > 0
    assert_error(
        api.call("v1/listener/deleteListener", {"currentPassword": PASSWORD}), 429, "RATE_LIMITED"
    )
    # they count as failed logins from this device, which a stolen session cannot turn against other
    # devices
    assert_error(
        api.call("v1/auth/login", {"username": api.username, "password": PASSWORD}),  # type: ignore
        429,
        "RATE_LIMITED",
    )
    assert server.client().login(api.username, PASSWORD)  # type: ignore[attr-defined]


# --- deleteListener
# ----------------------------------------------------------------------------------------------


def test_delete_listener(radio: Server) -> None:
    api, phone = listener(radio), radio.client()
    phone.login(api.username, PASSWORD)  # type: ignore[attr-defined]
    assert_error(
        api.call("v1/listener/deleteListener", {"currentPassword": "not it at all"}),
        400,
        "INVALID_PASSWORD",
    )
    assert_error(api.call("v1/listener/deleteListener", {}), 400, "INVALID_REQUEST")
    response = api.call("v1/listener/deleteListener", {"currentPassword": PASSWORD})
    assert response.status_code == 200 and response.json() == {}
    assert "airwave_session=;" in response.headers["set-cookie"]
    for client in (api, phone):
        assert_error(client.call("v1/listener/getProfile", {}), 401, "AUTH_INVALID_TOKEN")
    assert_error(
        radio.client().call("v1/auth/login", {"username": api.username, "password": PASSWORD}),  # type: ignore
        401,
        "AUTH_INVALID_USERNAME_PASSWORD",
    )
    radio.client().register(api.username)  # type: ignore[attr-defined]  # the name is free again


def _engine(server: Server) -> sa.Engine:
    backend = server.backend
    url = (
        backend.pg.url if backend.pg is not None else f"sqlite:///{backend.data_dir / 'airwave.db'}"
    )
    return sa.create_engine(url)


def _station_ids(engine: sa.Engine, listener_id: int) -> list[int]:
    with engine.connect() as conn:
        return [
            r[0]
            for r in conn.execute(
                sa.text("SELECT id FROM stations WHERE listener_id = :l"), {"l": listener_id}
            )
        ]


def _rows_by_table(engine: sa.Engine, listener_id: int, stations: list[int]) -> dict[str, int]:
    """Rows naming the listener, per table: every table with a listener_id column, and their
    stations' children."""
    counts: dict[str, int] = {}
    inspector = sa.inspect(engine)
    assert stations
    with engine.connect() as conn:
        for table in inspector.get_table_names():
            columns = {c["name"] for c in inspector.get_columns(table)}
            t = sa.table(table, *[sa.column(c) for c in columns])
            where = []
            if "listener_id" in columns:
                where.append(t.c.listener_id == listener_id)
            if table == "listeners":
                where.append(t.c.id == listener_id)
            for column in ("station_id", "shuffle_id", "origin_station_id"):
                if column in columns and stations:
                    where.append(t.c[column].in_(stations))
            if where:  # every table but the catalogue's and the operator's
                counts[table] = conn.execute(
                    sa.select(sa.func.count()).select_from(t).where(sa.or_(*where))
                ).scalar()
    return counts


def _throttle_keys(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return [r[0] for r in conn.execute(sa.text("SELECT key FROM throttle_counters"))]


def _fill_account(server: Server, api: Api) -> None:
    """Give a listener a row in every table a listener can reach over the API."""
    sid = station_of_genre(api, "Jazz")
    artist = fragment(api, sid)[0]["artistMusicId"]
    second = api.ok("v1/station/createStation", {"musicId": artist})["stationId"]
    api.ok("v1/station/shuffle", {})
    tracks = fragment(api, sid) + fragment(api, second, fragmentRequestReason="Skip")
    api.ok("v1/station/trackStarted", {"trackToken": tracks[0]["trackToken"]})
    api.ok("v1/station/addFeedback", {"trackToken": tracks[1]["trackToken"], "isPositive": True})
    api.ok("v1/station/addFeedback", {"trackToken": tracks[2]["trackToken"], "isPositive": False})
    api.ok("v1/listener/addTiredSong", {"trackToken": tracks[3]["trackToken"]})
    api.ok("v1/bookmark/add", {"musicId": tracks[0]["musicId"]})
    api.ok("v1/bookmark/add", {"musicId": artist})
    api.ok("v1/listener/setExplicitPIN", {"pin": "1234"})
    api.call(
        "v1/listener/updateSettings", {"explicitContentFilterEnabled": False, "pin": "9999"}
    )  # a wrong PIN
    api.ok("v1/listener/updateSettings", {"email": f"{api.username}@example.org"})  # type: ignore[attr-defined]
    assert server.client().ok("v1/listener/emailPassword", {"username": api.username}) == {}  # type: ignore
    server.client().call("v1/auth/login", {"username": api.username, "password": "wrong wrong"})  # type: ignore


def test_deleting_a_listener_leaves_no_row_of_theirs_in_any_table(radio: Server) -> None:
    victim, bystander = listener(radio), listener(radio)
    _fill_account(radio, victim)
    _fill_account(radio, bystander)
    victim_id, bystander_id = int(victim.data["listenerId"]), int(bystander.data["listenerId"])  # type: ignore
    engine = _engine(radio)
    try:
        victim_stations, bystander_stations = (
            _station_ids(engine, victim_id),
            _station_ids(engine, bystander_id),
        )
        before = _rows_by_table(engine, victim_id, victim_stations)
        reachable = {
            "listeners",
            "auth_sessions",
            "stations",
            "station_seeds",
            "shuffle_members",
            "feedback",
            "spins",
            "skip_events",
            "tired_tracks",
            "bookmarks",
            "password_resets",
        }
        assert reachable <= {t for t, n in before.items() if n > 0}, before
        keys = _throttle_keys(engine)
        assert any(victim.username.lower() in k for k in keys)  # type: ignore[attr-defined]
        assert any(k == f"pin:{victim_id}" for k in keys)
        others_before = _rows_by_table(engine, bystander_id, bystander_stations)

        assert victim.ok("v1/listener/deleteListener", {"currentPassword": PASSWORD}) == {}

        after = _rows_by_table(engine, victim_id, victim_stations)
        assert set(after) == set(before)  # every table was looked at again
        assert {t: n for t, n in after.items() if n} == {}
        keys = _throttle_keys(engine)
        assert not [
            k
            for k in keys
            if victim.username.lower() in k  # type: ignore[attr-defined]
            or k in (f"pin:{victim_id}", f"device:{victim_id}")
        ]
        assert _rows_by_table(engine, bystander_id, bystander_stations) == others_before
        assert any(bystander.username.lower() in k for k in keys)  # type: ignore[attr-defined]
    finally:
        engine.dispose()
    # their two stations (the shuffle station is not listed)
    assert bystander.ok("v1/station/getStations", {})["totalStations"] == 2


def test_operator_cli_deletes_everything_too(radio: Server) -> None:
    api = listener(radio)
    _fill_account(radio, api)
    listener_id = int(api.data["listenerId"])  # type: ignore[attr-defined]
    engine = _engine(radio)
    stations = _station_ids(engine, listener_id)
    result = radio.cli("user", "delete", api.username, "--yes")  # type: ignore[attr-defined]
    assert result.returncode == 0, result.stderr
    try:
        assert {t: n for t, n in _rows_by_table(engine, listener_id, stations).items() if n} == {}
    finally:
        engine.dispose()
    assert_error(api.call("v1/station/getStations", {}), 401, "AUTH_INVALID_TOKEN")


def test_logout_all_ends_every_session_and_keeps_the_password(radio: Server) -> None:
    api = listener(radio)
    phone = radio.client()
    phone.login(api.username, PASSWORD)  # type: ignore[attr-defined]
    assert_error(
        api.call("v1/auth/logoutAll", {"currentPassword": "not it"}), 400, "INVALID_PASSWORD"
    )
    assert phone.ok("v1/station/getStations", {})  # a wrong password ends nothing
    response = api.call("v1/auth/logoutAll", {"currentPassword": PASSWORD})
    assert response.status_code == 200 and response.json() == {}
    assert (
        "Max-Age=0" in response.headers["set-cookie"]
        or "expires=" in response.headers["set-cookie"].lower()
    )
    for device in (api, phone):
        assert_error(device.call("v1/station/getStations", {}), 401, "AUTH_INVALID_TOKEN")
    assert radio.client().login(api.username, PASSWORD)  # type: ignore[attr-defined]


# --- app passwords for Subsonic apps
# ------------------------------------------------------------------------------------------------


def _subsonic_ping(server: Server, username: str, secret: str) -> dict[str, Any]:
    params = {"u": username, "p": secret, "v": "1.16.1", "c": "test", "f": "json"}
    response = httpx.get(f"{server.url}/rest/ping.view", params=params)
    assert response.status_code == 200
    return response.json()["subsonic-response"]


def test_app_passwords_are_made_listed_and_revoked_over_rest(radio: Server) -> None:
    api, other = listener(radio), listener(radio)
    assert api.ok("v1/listener/getAppPasswords", {}) == {"appPasswords": []}
    # the account's password again, counted like a login; nothing is made without it
    wrong = {"label": "phone", "currentPassword": "not it"}
    assert_error(api.call("v1/listener/createAppPassword", wrong), 400, "INVALID_PASSWORD")
    assert api.ok("v1/listener/getAppPasswords", {}) == {"appPasswords": []}
    long_label = {"label": "x" * 65, "currentPassword": PASSWORD}
    assert_error(api.call("v1/listener/createAppPassword", long_label), 400, "INVALID_REQUEST")

    made = api.ok("v1/listener/createAppPassword", {"label": "phone", "currentPassword": PASSWORD})
    secret, made_id = made["secret"], made["appPassword"]["appPasswordId"]
    assert made["appPassword"]["label"] == "phone" and made["appPassword"]["lastUsed"] is None
    assert _subsonic_ping(radio, api.username, secret)["status"] == "ok"  # type: ignore[attr-defined]
    assert _subsonic_ping(radio, other.username, secret)["status"] == "failed"  # type: ignore[attr-defined]

    listed = api.ok("v1/listener/getAppPasswords", {})["appPasswords"]
    assert [p["appPasswordId"] for p in listed] == [made_id]
    assert listed[0]["lastUsed"] is not None  # the ping above used it
    assert secret not in str(listed)  # shown once, never again
    assert other.ok("v1/listener/getAppPasswords", {}) == {"appPasswords": []}

    # someone else's id is not found and revokes nothing
    gone = {"appPasswordId": made_id}
    assert_error(other.call("v1/listener/revokeAppPassword", gone), 404, "NOT_FOUND")
    assert _subsonic_ping(radio, api.username, secret)["status"] == "ok"  # type: ignore[attr-defined]
    assert api.ok("v1/listener/revokeAppPassword", gone)["appPasswordId"] == made_id
    refused = _subsonic_ping(radio, api.username, secret)  # type: ignore[attr-defined]
    assert refused["status"] == "failed" and refused["error"]["code"] == 40
    assert_error(api.call("v1/listener/revokeAppPassword", gone), 404, "NOT_FOUND")
    for bad in (2**70, 0, -1, "3"):  # no server error for an id no database holds
        answer = api.call("v1/listener/revokeAppPassword", {"appPasswordId": bad})
        assert_error(answer, 400, "INVALID_REQUEST")
