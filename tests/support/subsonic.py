"""A listener as Subsonic apps and the web player both reach them, for tests of the /rest/ edge."""

from __future__ import annotations

from typing import Any

import httpx

from support.api import unique
from support.server import Server


class Listener:
    """One account, reached as an app (app password) and as the web player (REST session)."""

    def __init__(self, server: Server, tier: str = "premium", *flags: str) -> None:
        self.server = server
        self.name = unique("radio")
        added = server.admin(
            "user", "add", self.name, "--tier", tier, *flags, "--password-stdin", input="account pw"
        )
        assert added.returncode == 0, added.stderr
        made = server.admin("user", "app-password", self.name, "--label", "phone")
        assert made.returncode == 0, made.stderr
        self.secret = made.stdout.strip().splitlines()[-1]
        self.rest = server.client()
        self.id = int(self.rest.login(self.name, "account pw")["listenerId"])

    @property
    def credentials(self) -> dict[str, str]:
        return {"u": self.name, "p": self.secret, "c": "tests", "v": "1.16.1"}

    def get(
        self, name: str, /, headers: dict[str, str] | None = None, **params: Any
    ) -> httpx.Response:
        """The raw answer of /rest/NAME (XML unless f=json is given)."""
        url = f"{self.server.url}/rest/{name}"
        return httpx.get(url, params={**self.credentials, **params}, headers=headers, timeout=60)

    def answer(self, name: str, /, **params: Any) -> dict[str, Any]:
        response = self.get(name, f="json", **params)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json"), response.text
        return response.json()["subsonic-response"]

    def ok(self, name: str, /, **params: Any) -> dict[str, Any]:
        answer = self.answer(name, **params)
        assert answer["status"] == "ok", (name, params, answer.get("error"))
        return answer

    def error(self, name: str, /, **params: Any) -> int:
        answer = self.answer(name, **params)
        assert answer["status"] == "failed", answer
        return answer["error"]["code"]
