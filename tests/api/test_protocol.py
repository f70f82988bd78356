"""Spec §1-5 over a real socket: transport, CSRF, errors, versions, registry outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from support import Api, Server, assert_error, unique

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only


@pytest.fixture(scope="module")
def listener(server: Server) -> Api:
    api = server.client()
    api.register(unique("proto"))
    return api


def test_root_sets_csrf_cookie_and_keeps_an_existing_one(server: Server) -> None:
    for method in ("HEAD", "GET"):
        response = httpx.request(method, server.url + "/")
        assert response.status_code == 200
        cookie = response.headers["set-cookie"]
        assert re.fullmatch(r"csrftoken=[0-9a-f]{16}; Path=/; SameSite=Lax", cookie), cookie
    kept = httpx.head(server.url + "/", cookies={"csrftoken": "mine"})
    assert "set-cookie" not in kept.headers


def test_documented_two_call_flow(server: Server) -> None:
    """HEAD / for the cookie, login with it, then getStations with the token (spec §2-3)."""
    name = unique("flow")
    server.client().register(name)
    with httpx.Client(base_url=server.url) as http:
        csrf = http.head("/").cookies["csrftoken"]
        headers = {"X-CsrfToken": csrf, "Content-Type": "application/json"}
        login = http.post(
            "/api/v1/auth/login",
            headers=headers,
            json={"username": name, "password": "correct horse battery"},
        )
        assert login.status_code == 200, login.text
        token = login.json()["authToken"]
        stations = http.post(
            "/api/v1/station/getStations", headers={**headers, "X-AuthToken": token}, json={}
        )
    assert stations.status_code == 200
    assert stations.json() == {
        "totalStations": 0,
        "sortedBy": "lastPlayedTime",
        "index": 0,
        "stations": [],
    }


def test_any_client_chosen_csrf_pair_is_accepted(server: Server, listener: Api) -> None:
    api = server.client(csrf="whatever-value")
    assert api.ok("v1/station/getStations", token=listener.token)["totalStations"] == 0


@pytest.mark.parametrize(
    "cookie, header",
    [(None, "lol"), ("lol", None), ("lol", "lo1"), ("", ""), ("lol", "")],
)
def test_csrf_missing_or_unequal_is_refused_before_auth(
    server: Server, cookie: str | None, header: str | None
) -> None:
    cookies = {"csrftoken": cookie} if cookie is not None else {}
    headers = {"Content-Type": "application/json"}
    if header is not None:
        headers["X-CsrfToken"] = header
    with httpx.Client(base_url=server.url, cookies=cookies) as http:
        # No auth token either: CSRF is checked first.
        response = http.post("/api/v1/station/getStations", headers=headers, json={})
    assert_error(response, 403, "INVALID_CSRF_TOKEN")


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
@pytest.mark.parametrize(
    "path", ["/api/v1/auth/login", "/api/v1/no/where", "/api/v7/station/getStations"]
)
def test_other_methods_answer_405(server: Server, method: str, path: str) -> None:
    response = httpx.request(method, server.url + path)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    if method != "HEAD":
        assert_error(response, 405, "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize(
    "path",
    [
        "v2/auth/login",
        "v0/station/getStations",
        "v99/station/getStations",
        "v1/station/nope",
        "v1/nope/getStations",
        "v1/station/getStations/",
        "v1",
        "",
        "v1/auth/login/extra",
        "vx/auth/login",
    ],
)
def test_unknown_versions_and_endpoints_answer_404(
    server: Server, listener: Api, path: str
) -> None:
    assert_error(listener.call(path), 404, "NOT_FOUND")


def test_unknown_site_paths_answer_404_envelope(server: Server) -> None:
    assert_error(httpx.get(server.url + "/nothing/here"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json;charset=utf-8", "Application/JSON; charset=UTF-8"],
)
def test_json_content_types_are_accepted(listener: Api, content_type: str) -> None:
    response = listener.call(
        "v1/station/getStations", content=b"{}", headers={"Content-Type": content_type}
    )
    assert response.status_code == 200


def test_empty_body_counts_as_empty_object(listener: Api) -> None:
    response = listener.call("v1/station/getStations", content=b"")
    assert response.status_code == 200
    assert response.json()["index"] == 0


@pytest.mark.parametrize(
    "content_type, body, fragment",
    [
        ("text/plain", b"{}", "Content-Type"),
        ("application/x-www-form-urlencoded", b"a=b", "Content-Type"),
        ("application/json", b"{not json", "not valid"),
        ("application/json", b"\xff\xfe{}", "not valid"),
        ("application/json", b"[1, 2]", "JSON object"),
        ("application/json", b'"text"', "JSON object"),
        ("application/json", b"null", "JSON object"),
        ("application/json", b'{"pageSize": "5"}', "pageSize"),
        ("application/json", b'{"pageSize": 1001}', "pageSize"),
        ("application/json", b'{"pageSize": 0}', "pageSize"),
        ("application/json", b'{"pageSize": 2.5}', "pageSize"),
        ("application/json", b'{"startIndex": -1}', "startIndex"),
        ("application/json", b'{"startIndex": true}', "startIndex"),
        ("application/json", b'{"pageSize": 10000000000000000000000}', "pageSize"),
    ],
)
def test_bad_requests_answer_400_naming_the_problem(
    listener: Api, content_type: str, body: bytes, fragment: str
) -> None:
    response = listener.call(
        "v1/station/getStations", content=body, headers={"Content-Type": content_type}
    )
    error = assert_error(response, 400, "INVALID_REQUEST")
    assert fragment in error["message"]


def test_missing_required_field_is_named(server: Server) -> None:
    error = assert_error(
        server.client().call("v1/auth/login", {"username": "someone"}), 400, "INVALID_REQUEST"
    )
    assert "password" in error["message"]
    error = assert_error(
        server.client().call("v1/listener/register", {"password": "x" * 10}), 400, "INVALID_REQUEST"
    )
    assert "username" in error["message"]


def test_unknown_fields_are_ignored(listener: Api) -> None:
    body = {"pageSize": 5, "creationSource": "x", "nested": {"a": [1]}, "isCurrentStation": True}
    assert listener.ok("v1/station/getStations", body)["totalStations"] == 0


def test_nul_characters_are_refused(server: Server) -> None:
    response = server.client().call("v1/auth/login", {"username": "a\u0000b", "password": "x"})
    assert_error(response, 400, "INVALID_REQUEST")


def test_bodies_over_one_mib_answer_413(listener: Api) -> None:
    big = b'{"pad": "' + b"x" * (1024 * 1024) + b'"}'
    assert_error(listener.call("v1/station/getStations", content=big), 413, "INVALID_REQUEST")

    def chunks():  # no Content-Length: the limit holds for streamed bodies too
        yield b'{"pad": "'
        for _ in range(40):
            yield b"y" * 32768
        yield b'"}'

    assert_error(listener.call("v1/station/getStations", content=chunks()), 413, "INVALID_REQUEST")


def test_paging_fields_are_validated_and_echoed(listener: Api) -> None:
    page = listener.ok("v1/station/getStations", {"pageSize": 1000, "startIndex": 40})
    assert page == {"totalStations": 0, "sortedBy": "lastPlayedTime", "index": 40, "stations": []}


def test_api_responses_are_json_with_request_ids(server: Server, listener: Api) -> None:
    response = listener.call("v1/station/getStations", headers={"X-Request-Id": "trace-123"})
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"] == "trace-123"
    other = listener.call("v1/station/getStations", headers={"X-Request-Id": "bad id with spaces"})
    assert re.fullmatch(r"[0-9a-f]{16}", other.headers["x-request-id"])

    def logged(line: str) -> bool:
        entry = json.loads(line) if line.startswith("{") else {}
        return (
            entry.get("request_id") == "trace-123"
            and entry.get("path") == "/api/v1/station/getStations"
            and entry.get("status") == 200
        )

    assert server.wait_for_log(logged)


def test_meta_get_endpoints_lists_registry_and_error_table(server: Server) -> None:
    from airwave.errors import ErrorCode

    api = server.client()
    data = api.ok("v1/meta/getEndpoints")
    paths = {e["path"]: e for e in data["endpoints"]}
    assert paths["auth/login"] == {
        "path": "auth/login",
        "versions": [1],
        "auth": False,
        "enabled": True,
    }
    assert paths["station/getStations"]["auth"] is True
    # switched-off endpoints are listed as such (the `server` fixture has open registration, no
    # anonymous login)
    assert (
        paths["listener/register"]["enabled"] is True
        and paths["auth/anonymousLogin"]["enabled"] is False
    )
    assert {e["errorString"]: (e["errorCode"], e["httpStatus"]) for e in data["errors"]} == {
        e.name: (e.code, e.http_status) for e in ErrorCode
    }
    assert len(data["errors"]) == 36


def test_openapi_document_describes_every_endpoint(server: Server) -> None:
    doc = httpx.get(server.url + "/openapi.json").json()
    listed = server.client().ok("v1/meta/getEndpoints")["endpoints"]
    expected = {f"/api/v{v}/{e['path']}" for e in listed for v in e["versions"]}
    assert set(doc["paths"]) == expected
    login = doc["paths"]["/api/v1/auth/login"]["post"]
    assert {"200", "400", "401", "429"} <= set(login["responses"])
    schema_name = login["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit(
        "/", 1
    )[-1]
    assert {"username", "password", "keepLoggedIn", "existingAuthToken"} <= set(
        doc["components"]["schemas"][schema_name]["properties"]
    )


def test_generated_api_reference_is_current() -> None:
    from airwave.api.docs import render_markdown
    from airwave.api.endpoints import registry

    committed = Path(__file__).parents[2] / "docs" / "api.md"
    assert committed.read_text() == render_markdown(registry), (
        "run `make docs` and commit docs/api.md"
    )


def test_health_endpoint(server: Server) -> None:
    response = httpx.get(server.url + "/healthz")
    assert response.status_code == 200
    health = response.json()
    assert {k: health[k] for k in ("status", "database")} == {"status": "ok", "database": "ok"}
    assert health["pid"] > 0 and health["host"]  # who answered, behind a balancer
    live = httpx.get(server.url + "/livez").json()
    assert live["status"] == "ok" and live["pid"] == health["pid"]
