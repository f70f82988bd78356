"""What the scale-out tests share: clients that open a new connection per request (so that a
server's workers, or a balancer's servers, each get some), and who answered."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from support import Api, Server

ONE_SHOT = httpx.Limits(max_keepalive_connections=0)  # every request on a new connection


def scattered(url: str) -> Api:
    """A protocol client whose requests may land on any worker or server."""
    return Api(url, limits=ONE_SHOT)


def health(url: str, **kwargs: Any) -> dict[str, Any]:
    response = httpx.get(f"{url}/healthz", timeout=5, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def pids_answering(url: str, attempts: int = 40) -> set[int]:
    """The worker pids that answered /healthz over fresh connections."""
    return {health(url)["pid"] for _ in range(attempts)}


def api_pids(server: Server) -> set[int]:
    """The pids of the worker processes that logged an /api/ request."""
    found = set()
    for line in server.log_lines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("msg") == "request" and str(entry.get("path", "")).startswith("/api/"):
            found.add(entry["pid"])
    return found


def wait_for(predicate: Any, timeout: float, what: str, step: float = 0.2) -> Any:
    """The first truthy value of predicate() within `timeout` seconds, else AssertionError."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (httpx.TransportError, AssertionError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(step)
    raise AssertionError(f"{what} not within {timeout} s (last: {last!r})")
