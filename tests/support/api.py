"""A protocol client as third-party clients speak it, and assertions on the API's answers."""

from __future__ import annotations

import secrets
from typing import Any

import httpx


class Api:
    """A client that speaks the protocol the way third-party clients do."""

    def __init__(self, base_url: str, csrf: str | None = "lol", **kwargs: Any) -> None:
        kwargs.setdefault("timeout", 30)
        # an idle connection is not reused near the server's keep-alive timeout (5 s): a request
        # sent on one as the server closes it gets no answer ("Server disconnected without
        # sending a response"), and a POST is not retried
        kwargs.setdefault("limits", httpx.Limits(keepalive_expiry=2.0))
        self.http = httpx.Client(base_url=base_url, **kwargs)
        self.csrf = csrf
        self.token: str | None = None
        if csrf is not None:
            self.http.cookies.set("csrftoken", csrf)

    def call(
        self,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        hdrs = {"Content-Type": "application/json"}
        if self.csrf is not None:
            hdrs["X-CsrfToken"] = self.csrf
        auth = token if token is not None else self.token
        if auth:
            hdrs["X-AuthToken"] = auth
        hdrs.update(headers or {})
        if "content" not in kwargs:
            kwargs["json"] = {} if body is None else body
        return self.http.post(f"/api/{path}", headers=hdrs, **kwargs)

    def ok(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        response = self.call(path, body, **kwargs)
        assert response.status_code == 200, response.text
        return response.json()

    def login(self, username: str, password: str, **extra: Any) -> dict[str, Any]:
        data = self.ok("v1/auth/login", {"username": username, "password": password, **extra})
        self.token = data["authToken"]
        return data

    def register(
        self, username: str, password: str = "correct horse battery", **extra: Any
    ) -> dict[str, Any]:
        data = self.ok(
            "v1/listener/register", {"username": username, "password": password, **extra}
        )
        self.token = data["authToken"]
        return data


def assert_error(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    """The response is exactly the §4 envelope for `error` with HTTP `status`."""
    from airwave.errors import ErrorCode

    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"errorCode", "errorString", "message"}, body
    assert body["errorString"] == error
    assert body["errorCode"] == ErrorCode[error].code
    assert ErrorCode[error].http_status == status or error == "INVALID_REQUEST"
    assert isinstance(body["message"], str) and body["message"]
    return body


def unique(prefix: str = "user") -> str:
    return f"{prefix}{secrets.token_hex(4)}"


def artists(api: Api) -> dict[str, dict[str, Any]]:
    """Artists of the library, reached as a client browses: categories, genres, sample tracks."""
    found: dict[str, dict[str, Any]] = {}
    for category in api.ok("v1/music/genrecategories", {})["categories"]:
        for station in api.ok("v1/music/genres", {"token": category["token"]})["stations"]:
            for track in station["sampleTracks"]:
                found[track["artistName"]] = {
                    "musicId": track["artistMusicId"],
                    "name": track["artistName"],
                }
    return found
