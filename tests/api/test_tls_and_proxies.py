"""Spec §1-3 on the wire: native TLS (`--tls-cert/--tls-key`), and X-Forwarded-* honoured only
from configured trusted proxies (cookie `Secure` flag, per-address login throttling).

All traffic stays on 127.0.0.1; forwarded addresses are only header values.
"""

from __future__ import annotations

import os
import re
import ssl
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import trustme
from support import Api, Backend, Server, assert_error, unique

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only

PASSWORD = "correct horse battery"
PROXIES = '["127.0.0.1/32"]'


@dataclass
class Pki:
    ca: trustme.CA
    cert: Path  # server certificate chain, PEM
    key: Path  # its private key, PEM
    ca_cert: Path  # the CA certificate, PEM

    def context(self) -> ssl.SSLContext:
        """A client context that trusts only this CA."""
        ctx = ssl.create_default_context()
        self.ca.configure_trust(ctx)
        return ctx


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    directory = tmp_path_factory.mktemp("tls")
    cert, key, ca_cert = directory / "cert.pem", directory / "key.pem", directory / "ca.pem"
    cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_cert))
    return Pki(ca, cert, key, ca_cert)


@pytest.fixture(scope="module")
def tls_server(start_server: Callable[..., Server], pki: Pki) -> Server:
    return start_server(
        "--open-registration", "--tls-cert", str(pki.cert), "--tls-key", str(pki.key)
    )


def _cookie_attributes(set_cookie: str) -> tuple[str, str, set[str]]:
    """('name', 'value', {'path=/', 'samesite=lax', 'secure', ...}) of one Set-Cookie header."""
    first, *attributes = [part.strip() for part in set_cookie.split(";")]
    name, _, value = first.partition("=")
    return name, value, {a.lower() for a in attributes}


def _set_cookies(response: httpx.Response, name: str) -> list[set[str]]:
    found = []
    for header in response.headers.get_list("set-cookie"):
        cookie, _, attributes = _cookie_attributes(header)
        if cookie == name:
            found.append(attributes)
    return found


# --------------------------------------------------------------------------------------
# Native TLS


def test_tls_server_announces_https(tls_server: Server) -> None:
    assert re.fullmatch(r"https://127\.0\.0\.1:\d+", tls_server.url), tls_server.url


def test_root_sets_secure_csrf_cookie_over_tls(tls_server: Server, pki: Pki) -> None:
    response = httpx.head(tls_server.url + "/", verify=pki.context())
    assert response.status_code == 200
    assert re.fullmatch(
        r"csrftoken=[0-9a-f]{16}; Path=/; SameSite=Lax; Secure", response.headers["set-cookie"]
    ), response.headers["set-cookie"]


def test_session_cookie_is_httponly_and_secure_over_tls(tls_server: Server, pki: Pki) -> None:
    name = unique("tls")
    registering = tls_server.client(verify=pki.context())
    response = registering.call("v1/listener/register", {"username": name, "password": PASSWORD})
    assert response.status_code == 200, response.text
    assert _set_cookies(response, "airwave_session") and all(
        {"httponly", "secure", "samesite=lax", "path=/"} <= attrs
        for attrs in _set_cookies(response, "airwave_session")
    )

    api = tls_server.client(verify=pki.context())
    response = api.call("v1/auth/login", {"username": name, "password": PASSWORD})
    assert response.status_code == 200, response.text
    session = _set_cookies(response, "airwave_session")
    assert len(session) == 1 and {"httponly", "secure", "samesite=lax", "path=/"} <= session[0], (
        response.headers.get_list("set-cookie")
    )
    token = response.json()["authToken"]

    # The client's jar sends the Secure cookie back over TLS; the session works.
    stations = api.call("v1/station/getStations", token=token)
    assert stations.status_code == 200, stations.text
    assert stations.json() == {
        "totalStations": 0,
        "sortedBy": "lastPlayedTime",
        "index": 0,
        "stations": [],
    }

    logout = api.call("v1/auth/logout", token=token)
    assert logout.status_code == 200, logout.text
    cleared = _set_cookies(logout, "airwave_session")
    assert len(cleared) == 1 and {"max-age=0", "httponly", "secure"} <= cleared[0]


def test_documented_flow_over_tls(tls_server: Server, pki: Pki) -> None:
    """HEAD / for the csrf cookie, log in, getStations: the §2 flow with certificate verification
    on."""
    name = unique("tlsflow")
    tls_server.client(verify=pki.context()).register(name)
    with httpx.Client(base_url=tls_server.url, verify=pki.context()) as http:
        csrf = http.head("/").cookies["csrftoken"]
        headers = {"X-CsrfToken": csrf, "Content-Type": "application/json"}
        login = http.post(
            "/api/v1/auth/login", headers=headers, json={"username": name, "password": PASSWORD}
        )
        assert login.status_code == 200, login.text
        stations = http.post(
            "/api/v1/station/getStations",
            headers={**headers, "X-AuthToken": login.json()["authToken"]},
            json={},
        )
    assert stations.status_code == 200, stations.text
    assert stations.json()["totalStations"] == 0


def test_errors_over_tls_are_envelopes(tls_server: Server, pki: Pki) -> None:
    api = tls_server.client(verify=pki.context())
    assert_error(api.call("v1/station/getStations"), 401, "AUTH_INVALID_TOKEN")
    assert_error(
        httpx.get(tls_server.url + "/api/v1/auth/login", verify=pki.context()),
        405,
        "METHOD_NOT_ALLOWED",
    )


def test_certificate_is_checked_by_clients(tls_server: Server) -> None:
    """The server presents the configured certificate: a client trusting only the system CAs
    refuses it."""
    with pytest.raises(httpx.ConnectError):
        httpx.get(tls_server.url + "/healthz")


def test_plain_http_to_the_tls_port_fails(tls_server: Server) -> None:
    plain = tls_server.url.replace("https://", "http://", 1)
    try:
        response = httpx.post(
            plain + "/api/v1/meta/getEndpoints",
            headers={"X-CsrfToken": "lol"},
            cookies={"csrftoken": "lol"},
            json={},
            timeout=10,
        )
    except httpx.TransportError:
        return  # the TLS listener drops a plaintext request
    assert response.status_code != 200, response.text
    # The server keeps serving TLS afterwards.
    assert httpx.get(tls_server.url + "/healthz", verify=False).status_code == 200


def _serve_and_expect_exit(backend: Backend, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **backend.env, "AIRWAVE_LOG_FORMAT": "json"}
    return subprocess.run(
        [sys.executable, "-m", "airwave", "serve", "--port", "0", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("which", ["cert-only", "key-only"])
def test_half_a_tls_configuration_is_refused(
    make_backend: Callable[[], Backend], pki: Pki, which: str
) -> None:
    args = ["--tls-cert", str(pki.cert)] if which == "cert-only" else ["--tls-key", str(pki.key)]
    result = _serve_and_expect_exit(make_backend(), *args)
    assert result.returncode != 0, result.stdout + result.stderr
    message = "".join(result.stderr.split())  # rich may wrap the line anywhere
    assert "--tls-cert" in message and "--tls-key" in message, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "listening on" not in result.stdout, result.stdout


@pytest.mark.parametrize("problem", ["missing", "not-pem"])
def test_unusable_certificate_is_refused_before_announcing(
    make_backend: Callable[[], Backend], pki: Pki, tmp_path: Path, problem: str
) -> None:
    """A certificate that cannot be loaded: exit non-zero, name the file, never claim to be
    listening."""
    cert = tmp_path / "server-cert.pem"
    if problem == "not-pem":
        cert.write_text("this is not a certificate\n")
    result = _serve_and_expect_exit(
        make_backend(), "--tls-cert", str(cert), "--tls-key", str(pki.key)
    )
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert str(cert) in "".join(result.stderr.split()), result.stderr  # rich may wrap long paths
    assert "listening on" not in result.stdout, result.stdout


# --------------------------------------------------------------------------------------
# Trusted proxies


@pytest.fixture(scope="module")
def proxied(start_server: Callable[..., Server]) -> Server:
    """Plain HTTP behind a (pretend) TLS proxy on 127.0.0.1, with a low per-address login limit."""
    return start_server(
        "--open-registration",
        env={"AIRWAVE_TRUSTED_PROXIES": PROXIES, "AIRWAVE_LOGIN_MAX_FAILURES_PER_ADDRESS": "3"},
    )


@pytest.fixture(scope="module")
def unproxied(start_server: Callable[..., Server]) -> Server:
    """The same, without trusted proxies: X-Forwarded-* must be ignored."""
    return start_server("--open-registration", env={"AIRWAVE_LOGIN_MAX_FAILURES_PER_ADDRESS": "3"})


def test_forwarded_https_from_a_trusted_proxy_makes_cookies_secure(proxied: Server) -> None:
    response = httpx.head(proxied.url + "/", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    assert re.fullmatch(
        r"csrftoken=[0-9a-f]{16}; Path=/; SameSite=Lax; Secure", response.headers["set-cookie"]
    )
    # Without the header the same server is plain HTTP.
    plain = httpx.head(proxied.url + "/")
    assert re.fullmatch(
        r"csrftoken=[0-9a-f]{16}; Path=/; SameSite=Lax", plain.headers["set-cookie"]
    )


def test_forwarded_https_sets_a_secure_session_cookie(proxied: Server) -> None:
    api = proxied.client()
    response = api.call(
        "v1/listener/register",
        {"username": unique("proxy"), "password": PASSWORD},
        headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.1"},
    )
    assert response.status_code == 200, response.text
    session = _set_cookies(response, "airwave_session")
    assert len(session) == 1 and {"httponly", "secure"} <= session[0], response.headers.get_list(
        "set-cookie"
    )


def test_forwarded_proto_is_ignored_without_trusted_proxies(unproxied: Server) -> None:
    response = httpx.head(unproxied.url + "/", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    assert re.fullmatch(
        r"csrftoken=[0-9a-f]{16}; Path=/; SameSite=Lax", response.headers["set-cookie"]
    ), response.headers["set-cookie"]
    api = unproxied.client()
    registered = api.call(
        "v1/listener/register",
        {"username": unique("noproxy"), "password": PASSWORD},
        headers={"X-Forwarded-Proto": "https"},
    )
    assert registered.status_code == 200, registered.text
    session = _set_cookies(registered, "airwave_session")
    assert len(session) == 1 and "httponly" in session[0] and "secure" not in session[0]


def _failed_login(api: Api, forwarded_for: str) -> httpx.Response:
    """A login for a username that does not exist (a new one each time: no per-user throttling)."""
    return api.call(
        "v1/auth/login",
        {"username": unique("nobody"), "password": "wrong password"},
        headers={"X-Forwarded-For": forwarded_for},
    )


def test_login_throttle_counts_the_forwarded_address_of_a_trusted_proxy(proxied: Server) -> None:
    api = proxied.client()
    for _ in range(3):
        assert_error(_failed_login(api, "203.0.113.7"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    throttled = _failed_login(api, "203.0.113.7")
    assert_error(throttled, 429, "RATE_LIMITED")
    assert re.fullmatch(r"[0-9]+", throttled.headers["retry-after"]), throttled.headers
    assert 1 <= int(throttled.headers["retry-after"]) <= 900
    # Another client behind the same proxy is not affected...
    assert_error(_failed_login(api, "203.0.113.8"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    # ...and the throttled address stays throttled, even with the right password.
    name = unique("victim")
    proxied.client().register(name)
    right = api.call(
        "v1/auth/login",
        {"username": name, "password": PASSWORD},
        headers={"X-Forwarded-For": "203.0.113.7"},
    )
    assert_error(right, 429, "RATE_LIMITED")
    assert (
        api.call(
            "v1/auth/login",
            {"username": name, "password": PASSWORD},
            headers={"X-Forwarded-For": "203.0.113.9"},
        ).status_code
        == 200
    )


def test_forwarded_for_is_ignored_without_trusted_proxies(unproxied: Server) -> None:
    """Without trusted proxies every request counts against the socket's address (127.0.0.1)."""
    api = unproxied.client()
    for _ in range(3):
        assert_error(_failed_login(api, "203.0.113.7"), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    throttled = _failed_login(api, "203.0.113.8")  # a different forwarded address changes nothing
    assert_error(throttled, 429, "RATE_LIMITED")
    assert throttled.headers["retry-after"].isdigit()


def test_tls_server_stops_promptly_with_idle_keep_alive_clients(
    start_server: Callable[..., Server], pki: Pki
) -> None:
    """An idle TLS client never sends close_notify; shutdown must not wait for it (SIGTERM ->
    exit 0)."""
    server = start_server("--tls-cert", str(pki.cert), "--tls-key", str(pki.key))
    idle = [httpx.Client(verify=pki.context()) for _ in range(3)]
    try:
        for client in idle:
            assert (
                client.get(server.url + "/healthz").status_code == 200
            )  # the connection stays open, idle
        # well under the 10 s graceful-shutdown limit, which only requests in flight may use
        assert server.stop(timeout=5) == 0
    finally:
        for client in idle:
            client.close()
