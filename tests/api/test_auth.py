"""Accounts and sessions over HTTP: login, resume, logout, cookies, expiry, throttling, register."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx
import pytest
from support import Server, assert_error, unique

# The wire contract of sessions and throttling; their storage runs on both backends in
# tests/core/test_throttle.py and the storage tests.
pytestmark = pytest.mark.sqlite_only

PASSWORD = "correct horse battery"


def test_login_returns_the_full_listener_object(server: Server) -> None:
    name = unique("full")
    server.client().register(name, birthYear=1990, zipCode="94612", gender="female")
    data = server.client().login(name, PASSWORD)
    assert set(data) >= {
        "authToken",
        "listenerId",
        "username",
        "webname",
        "stationCount",
        "isNew",
        "birthYear",
        "gender",
        "zipCode",
        "explicitContentFilterEnabled",
        "highQualityStreamingEnabled",
        "profilePrivate",
        "emailOptOut",
        "minor",
        "config",
    }
    assert data["username"] == name and data["stationCount"] == 0
    assert (data["birthYear"], data["zipCode"], data["gender"], data["minor"]) == (
        1990,
        "94612",
        "female",
        False,
    )
    assert data["isNew"] is False  # registration was the first login
    config = data["config"]
    assert set(config) >= {
        "branding",
        "dailySkipLimit",
        "stationSkipLimit",
        "inactivityTimeout",
        "monthlyListeningCapHours",
        "flags",
        "experiments",
    }
    assert config["inactivityTimeout"] == 8 * 3600
    # the default tier is free: ads, skip limits, no replays or high quality
    assert config["flags"] == []  # a list of the names of what the tier allows (spec §6.6)
    assert (config["stationSkipLimit"], config["dailySkipLimit"]) == (6, 24)
    assert len(data["authToken"]) >= 22  # at least 128 random bits


def test_register_logs_in_and_marks_new(server: Server) -> None:
    response = server.client().call(
        "v1/listener/register", {"username": unique("reg"), "password": PASSWORD}
    )
    assert response.status_code == 200
    assert response.json()["isNew"] is True
    assert "airwave_session=" in response.headers["set-cookie"]


def test_minor_flag_from_birth_year(server: Server) -> None:
    year = datetime.now().year - 15
    assert server.client().register(unique("teen"), birthYear=year)["minor"] is True


def test_wrong_credentials_get_the_same_answer_whether_or_not_the_user_exists(
    server: Server,
) -> None:
    name = unique("known")
    server.client().register(name)
    wrong = server.client().call("v1/auth/login", {"username": name, "password": "not it at all"})
    missing = server.client().call(
        "v1/auth/login", {"username": unique("ghost"), "password": "not it at all"}
    )
    assert assert_error(wrong, 401, "AUTH_INVALID_USERNAME_PASSWORD") == assert_error(
        missing, 401, "AUTH_INVALID_USERNAME_PASSWORD"
    )


def test_usernames_are_case_insensitive_at_login(server: Server) -> None:
    name = unique("Case")
    server.client().register(name)
    assert server.client().login(name.upper(), PASSWORD)["username"] == name


def test_api_sets_no_cookie_before_authentication(server: Server) -> None:
    api = server.client()
    for response in (
        api.call("v1/meta/getEndpoints"),
        api.call("v1/station/getStations"),
        api.call("v1/auth/login", {"username": unique("nobody"), "password": "whatever1"}),
        api.call("v1/nowhere/atAll"),
        api.call("v1/station/getStations", content=b"[]"),
    ):
        assert "set-cookie" not in response.headers, response.text


def test_login_sets_session_cookie_and_logout_clears_it(server: Server) -> None:
    name = unique("cookie")
    server.client().register(name)
    api = server.client()
    response = api.call("v1/auth/login", {"username": name, "password": PASSWORD})
    cookie = next(
        c for c in response.headers.get_list("set-cookie") if c.startswith("airwave_session=")
    )
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Max-Age" not in cookie  # a browser-session cookie without keepLoggedIn
    api.token = response.json()["authToken"]
    assert (
        api.ok("v1/station/getStations")["totalStations"] == 0
    )  # cookie + header of the same session
    out = api.call("v1/auth/logout")
    assert out.status_code == 200 and out.json() == {}
    assert (
        "airwave_session=;" in out.headers["set-cookie"]
        and "Max-Age=0" in out.headers["set-cookie"]
    )
    assert_error(api.call("v1/station/getStations"), 401, "AUTH_INVALID_TOKEN")


def test_logout_invalidates_the_token_for_header_only_clients(server: Server) -> None:
    name = unique("hdr")
    server.client().register(name)
    token = server.client().login(name, PASSWORD)["authToken"]
    bare = server.client()  # fresh client: never saw the session cookie
    assert bare.call("v1/station/getStations", token=token).status_code == 200
    assert bare.call("v1/auth/logout", token=token).status_code == 200
    body = assert_error(bare.call("v1/station/getStations", token=token), 401, "AUTH_INVALID_TOKEN")
    assert body["errorCode"] == 1001
    assert_error(bare.call("v1/auth/logout", token=token), 401, "AUTH_INVALID_TOKEN")


@pytest.mark.parametrize("token", [None, "", "nonsense", "x" * 300])
def test_missing_or_unknown_tokens_answer_401(server: Server, token: str | None) -> None:
    headers = {} if token is None else {"X-AuthToken": token}
    response = server.client().call("v1/station/getStations", headers=headers)
    assert_error(response, 401, "AUTH_INVALID_TOKEN")


def test_session_cookie_of_another_session_is_rejected(server: Server) -> None:
    name = unique("two")
    server.client().register(name)
    first, second = server.client(), server.client()
    first.login(name, PASSWORD)
    second.login(name, PASSWORD)
    # first's token with second's session cookie: different sessions
    mixed = server.client()
    mixed.http.cookies.set("airwave_session", second.http.cookies["airwave_session"])
    assert_error(mixed.call("v1/station/getStations", token=first.token), 401, "AUTH_INVALID_TOKEN")
    assert second.ok("v1/station/getStations")["totalStations"] == 0


def test_existing_auth_token_resumes_the_session(server: Server) -> None:
    name = unique("resume")
    server.client().register(name)
    token = server.client().login(name, PASSWORD)["authToken"]
    resumed = server.client().call("v1/auth/login", {"existingAuthToken": token})
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["authToken"] == token and resumed.json()["username"] == name
    assert "airwave_session=" in resumed.headers["set-cookie"]
    with_name = server.client().call(
        "v1/auth/login", {"username": name, "existingAuthToken": token}
    )
    assert with_name.status_code == 200
    other = unique("other")
    server.client().register(other)
    assert_error(
        server.client().call("v1/auth/login", {"username": other, "existingAuthToken": token}),
        401,
        "AUTH_INVALID_TOKEN",
    )
    assert_error(
        server.client().call("v1/auth/login", {"existingAuthToken": "stale"}),
        401,
        "AUTH_INVALID_TOKEN",
    )


def test_keep_logged_in_extends_the_lifetime(server: Server) -> None:
    name = unique("keep")
    server.client().register(name)
    response = server.client().call(
        "v1/auth/login", {"username": name, "password": PASSWORD, "keepLoggedIn": True}
    )
    assert response.json()["config"]["inactivityTimeout"] == 30 * 86400
    assert f"Max-Age={30 * 86400}" in response.headers["set-cookie"]


@pytest.mark.parametrize(
    "body, error",
    [
        ({"username": "a"}, "INVALID_USERNAME"),
        ({"username": "has space"}, "INVALID_USERNAME"),
        ({"username": "x" * 65}, "INVALID_USERNAME"),
        ({"password": "short"}, "INVALID_PASSWORD"),
        ({"password": "password123"}, "INVALID_PASSWORD"),
        ({"password": "aaaaaaaaaaaa"}, "INVALID_PASSWORD"),
        ({"birthYear": 1850}, "BIRTH_YEAR_INVALID"),
        ({"birthYear": 3000}, "BIRTH_YEAR_INVALID"),
        ({"birthYear": datetime.now().year - 5}, "BIRTH_YEAR_TOO_YOUNG"),
        ({"zipCode": "!!!"}, "ZIP_CODE_INVALID"),
        ({"zipCode": "abcde"}, "ZIP_CODE_INVALID"),
        ({"gender": "robot"}, "INVALID_GENDER"),
        ({"birthYear": "1990"}, "INVALID_REQUEST"),
        ({"emailOptOut": "yes"}, "INVALID_REQUEST"),
    ],
)
def test_register_validation_errors(server: Server, body: dict, error: str) -> None:
    request = {"username": unique("val"), "password": PASSWORD, **body}
    response = server.client().call("v1/listener/register", request)
    from airwave.errors import ErrorCode

    assert_error(response, ErrorCode[error].http_status, error)
    assert "set-cookie" not in response.headers


def test_register_refuses_a_taken_username_in_any_case(server: Server) -> None:
    name = unique("dup")
    server.client().register(name)
    response = server.client().call(
        "v1/listener/register", {"username": name.upper(), "password": PASSWORD}
    )
    assert_error(response, 409, "USERNAME_ALREADY_EXISTS")


def test_password_equal_to_username_is_refused(server: Server) -> None:
    name = unique("same")
    response = server.client().call(
        "v1/listener/register", {"username": name, "password": name.upper()}
    )
    assert_error(response, 400, "INVALID_PASSWORD")


def test_register_is_refused_when_registration_is_closed(start_server) -> None:
    closed = start_server()
    response = closed.client().call(
        "v1/listener/register", {"username": unique(), "password": PASSWORD}
    )
    assert_error(response, 403, "CALL_NOT_ALLOWED")


def test_readonly_mode_refuses_writes_but_allows_login(start_server) -> None:
    server = start_server("--readonly", "--open-registration")
    assert (
        server.cli("user", "add", "reader", "--password-stdin", input="readerpass\n").returncode
        == 0
    )
    response = server.client().call(
        "v1/listener/register", {"username": unique(), "password": PASSWORD}
    )
    assert_error(response, 503, "READONLY_MODE")
    api = server.client()
    api.login("reader", "readerpass")
    assert api.ok("v1/station/getStations")["totalStations"] == 0


def test_tokens_expire_after_inactivity(start_server) -> None:
    server = start_server("--open-registration", env={"AIRWAVE_SESSION_TIMEOUT": "2"})
    api = server.client()
    data = api.register(unique("exp"))
    assert data["config"]["inactivityTimeout"] == 2
    assert api.call("v1/station/getStations").status_code == 200
    time.sleep(2.5)
    assert_error(api.call("v1/station/getStations"), 401, "AUTH_INVALID_TOKEN")


def _login(api, name: str, password: str) -> httpx.Response:
    return api.call("v1/auth/login", {"username": name, "password": password})


def test_attackers_failures_never_lock_out_a_known_device(start_server) -> None:
    server = start_server(
        "--open-registration",
        env={"AIRWAVE_LOGIN_FREE_FAILURES": "3", "AIRWAVE_LOGIN_BACKOFF_BASE": "600"},
    )
    victim = server.client()
    name = unique("victim")
    victim.register(name)  # a successful login: this client now carries a device cookie
    device = [c for c in victim.http.cookies.jar if c.name == "airwave_device"]
    assert len(device) == 1 and device[0].has_nonstandard_attr("HttpOnly")
    attacker = server.client()
    for _ in range(3):
        assert_error(_login(attacker, name, "guess"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    limited = _login(
        attacker, name, PASSWORD
    )  # unknown device in back-off: even the right password waits
    assert_error(limited, 429, "RATE_LIMITED")
    assert 590 <= int(limited.headers["retry-after"]) <= 600
    # the real user on their device is not affected, and logging in there lifts nothing for the
    # attacker
    assert _login(victim, name, PASSWORD).status_code == 200
    assert_error(_login(attacker, name, PASSWORD), 429, "RATE_LIMITED")
    # a forged device cookie, or a valid one of another account, is an unknown device
    forged = server.client()
    real = device[0].value
    forged.http.cookies.set(
        "airwave_device", real[:-4] + ("BBBB" if real.endswith("AAAA") else "AAAA")
    )
    assert_error(_login(forged, name, PASSWORD), 429, "RATE_LIMITED")
    attacker.register(unique("mallory"))
    assert_error(_login(attacker, name, PASSWORD), 429, "RATE_LIMITED")
    # one browser remembers several accounts: the victim's device also logs in a second account
    second = unique("second")
    server.client().register(second)
    assert _login(victim, second, PASSWORD).status_code == 200
    assert _login(victim, name, PASSWORD).status_code == 200
    # a known device's own failures are counted in its own bucket
    for _ in range(3):
        assert_error(_login(victim, name, "typo"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    assert_error(_login(victim, name, PASSWORD), 429, "RATE_LIMITED")


def test_unknown_devices_back_off_exponentially(start_server) -> None:
    # a first delay of 3 s: the right password must arrive while the wrong one's delay holds,
    # and on a loaded machine one Argon2 check took more than the default 1 s
    server = start_server(
        "--open-registration",
        env={"AIRWAVE_LOGIN_FREE_FAILURES": "1", "AIRWAVE_LOGIN_BACKOFF_BASE": "3"},
    )
    name = unique("backoff")
    server.client().register(name)
    api = server.client()  # never logged in: no device cookie
    delays = []
    for _ in range(3):
        assert_error(_login(api, name, "wrong"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
        limited = _login(api, name, PASSWORD)
        assert_error(limited, 429, "RATE_LIMITED")
        delays.append(int(limited.headers["retry-after"]))
        time.sleep(delays[-1] + 0.1)
    # Retry-After is what is left of each delay when the right password arrives: a second may
    # have gone on the way on a loaded machine
    assert all(full - 1 <= left <= full for left, full in zip(delays, [3, 6, 12])), delays
    assert _login(api, name, PASSWORD).status_code == 200  # a success resets the count
    assert_error(_login(api, name, "wrong"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    assert_error(_login(api, name, "wrong"), 429, "RATE_LIMITED")


def test_the_address_limit_counts_accounts_not_failures(start_server) -> None:
    server = start_server(
        "--open-registration",
        env={"AIRWAVE_LOGIN_MAX_ACCOUNTS_PER_ADDRESS": "3", "AIRWAVE_LOGIN_FREE_FAILURES": "100"},
    )
    own, other = unique("nat"), unique("nat")
    server.client().register(own)
    server.client().register(other)
    api = server.client()
    # one user behind a NAT mistyping their own password many times does not lock the address
    for _ in range(6):
        assert_error(_login(api, own, "typo"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    assert _login(server.client(), other, PASSWORD).status_code == 200
    assert _login(api, own, PASSWORD).status_code == 200  # and this client is now a known device
    # many accounts failing from one address do
    for _ in range(3):
        assert_error(_login(api, unique("spray"), "x"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    limited = _login(api, other, PASSWORD)
    assert_error(limited, 429, "RATE_LIMITED")
    assert 1 <= int(limited.headers["retry-after"]) <= 900
    # a device that logged in before is not held up by the address
    assert _login(api, own, PASSWORD).status_code == 200


def test_concurrent_wrong_passwords_get_at_most_the_free_checks(start_server) -> None:
    server = start_server(
        "--open-registration",
        env={"AIRWAVE_LOGIN_FREE_FAILURES": "5", "AIRWAVE_LOGIN_BACKOFF_BASE": "600"},
    )
    name = unique("race")
    server.client().register(name)
    clients = [server.client() for _ in range(48)]
    barrier = threading.Barrier(len(clients))

    def attempt(api) -> int:
        barrier.wait()
        return _login(api, name, "wrong guess").status_code

    with ThreadPoolExecutor(len(clients)) as pool:
        answers = sorted(pool.map(attempt, clients))
    for api in clients:
        api.http.close()
    assert answers.count(401) == 5 and answers.count(429) == 43, answers


def test_disabled_listeners_are_suspended(start_server) -> None:
    server = start_server()
    assert (
        server.admin("user", "add", "mallory", "--password-stdin", input="mallorypw\n").returncode
        == 0
    )
    api = server.client()
    api.login("mallory", "mallorypw")
    assert server.admin("user", "disable", "mallory").returncode == 0
    assert_error(api.call("v1/station/getStations"), 403, "LISTENER_SUSPENDED")
    assert_error(
        server.client().call("v1/auth/login", {"username": "mallory", "password": "mallorypw"}),
        403,
        "LISTENER_SUSPENDED",
    )
    # a wrong password reveals nothing about the suspension
    assert_error(
        server.client().call("v1/auth/login", {"username": "mallory", "password": "nope"}),
        401,
        "AUTH_INVALID_USERNAME_PASSWORD",
    )
    assert server.admin("user", "enable", "mallory").returncode == 0
    assert api.ok("v1/station/getStations")["totalStations"] == 0


def test_unexpected_failures_answer_500_envelope_without_internals(start_server) -> None:
    server = start_server("--open-registration")
    api = server.client()
    api.register(unique("boom"))
    # the database breaks under the running server (PostgreSQL needs CASCADE: other tables point at
    # stations)
    server.backend.execute(
        "DROP TABLE stations" + (" CASCADE" if server.backend.pg is not None else "")
    )
    response = api.call("v1/station/getStations", headers={"X-Request-Id": "boom-1"})
    body = assert_error(response, 500, "SERVER_ERROR")
    assert (
        "boom-1" in body["message"]
        and "Traceback" not in response.text
        and "stations" not in body["message"]
    )
    assert server.wait_for_log(lambda line: "boom-1" in line and "Traceback" in line)


def test_login_over_tls_free_http_marks_no_secure_cookie(server: Server) -> None:
    name = unique("plain")
    server.client().register(name)
    response = server.client().call("v1/auth/login", {"username": name, "password": PASSWORD})
    assert "Secure" not in response.headers["set-cookie"]
    assert "Secure" not in httpx.head(server.url + "/").headers["set-cookie"]
