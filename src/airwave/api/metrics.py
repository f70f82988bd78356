"""/metrics in Prometheus's text format, and the request counts and latencies behind it.

Each request is counted under its interface (rest, tuner, subsonic, audio, art, web, health)
and endpoint: a declared endpoint or method by name, anything else as `other`, so that no
request can add a label value. With `serve --workers N` every worker counts into the shared
directory and a scrape of any one adds them up; the instance-wide gauges (active listeners,
scan progress, members) are read from the database at scrape time.

Access: a request with `Authorization: Bearer <metrics_token>` when that setting is set;
otherwise only clients on the loopback address (after trusted proxies' X-Forwarded-For).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import Scope, Send

from airwave import metrics
from airwave.api.endpoints import registry
from airwave.api.http.headers import request_headers
from airwave.api.protocol import send_error
from airwave.api.subsonic.dispatch import METHODS as SUBSONIC_METHODS
from airwave.api.subsonic.dispatch import PREFIX as SUBSONIC_PREFIX
from airwave.api.tuner.dispatch import METHODS as TUNER_METHODS
from airwave.core import cluster
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode

_REST = re.compile(r"^/api/v(\d{1,2})/(.{1,120})$")
_AUDIO = re.compile(r"^/audio/(receipt|skip)/")


def route_of(scope: Scope) -> tuple[str, str]:
    """(interface, endpoint) of a request, from a bounded set of names."""
    path: str = scope["path"]
    if path.startswith("/api/"):
        match = _REST.match(path)
        found = registry.resolve(int(match.group(1)), match.group(2)) if match else None
        return "rest", f"v{match.group(1)}/{found.path}" if match and found else "other"
    if path.startswith("/services/json"):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        name = (query.get("method") or [""])[0]
        return "tuner", name if name in TUNER_METHODS else "other"
    if path.startswith(SUBSONIC_PREFIX):
        name = path[len(SUBSONIC_PREFIX) :].removesuffix(".view")
        return "subsonic", name if name in SUBSONIC_METHODS else "other"
    if path.startswith("/audio/"):
        match = _AUDIO.match(path)
        return "audio", match.group(1) if match else "audio"
    if path.startswith("/art/"):
        return "art", "art"
    if path in ("/healthz", "/livez", "/metrics"):
        return "health", path[1:]
    return "web", "web"


# (interface, endpoint, status) -> its counter and histogram: labels() is looked up once per
# label set rather than on every request (the set is bounded, see route_of)
_SERIES: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def observe(scope: Scope, status: int, seconds: float) -> None:
    interface, endpoint = route_of(scope)
    key = (interface, endpoint, status)
    series = _SERIES.get(key)
    if series is None:
        series = _SERIES[key] = (
            metrics.REQUESTS.labels(interface, endpoint, str(status)),
            metrics.LATENCY.labels(interface, endpoint),
        )
    series[0].inc()
    series[1].observe(seconds)


class _InstanceGauges:
    """Instance-wide figures from the database, collected at each scrape."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def collect(self):  # noqa: ANN201  # prometheus_client's collector protocol
        figures = cluster.gauges(self.services)
        described = {
            "active_listeners": "Listeners whose player holds its claim now (whole instance)",
            "members": "Server processes alive in the instance (all hosts)",
            "scanning": "1 while the library is being scanned or indexed",
            "scan_done": "Files (or tracks) the current scan stage has done",
            "scan_total": "Files (or tracks) the current scan stage has in all",
            "scans": "Scans completed by the library's current holder",
        }
        for name, text in described.items():
            yield GaugeMetricFamily(f"airwave_{name}", text, value=figures[name])


def allowed(services: Services, scope: Scope) -> bool:
    token = services.settings.metrics_token
    if token:
        given = request_headers(scope).get("authorization") or ""
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())
    client = scope.get("client")
    try:
        return client is not None and ipaddress.ip_address(client[0]).is_loopback
    except ValueError:
        return False


def exposition(services: Services) -> bytes:
    directory = metrics.directory()
    target = CollectorRegistry()
    if directory is None:
        target.register(_Everything())
    else:
        MultiProcessCollector(target, path=directory)
    target.register(_InstanceGauges(services))
    return generate_latest(target)


class _Everything:
    """The process's own registry, when no worker directory is in use."""

    def collect(self):  # noqa: ANN201
        yield from REGISTRY.collect()


async def serve(services: Services, scope: Scope, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await send_error(send, ApiError(ErrorCode.METHOD_NOT_ALLOWED, "/metrics answers GET"))
        return
    if not allowed(services, scope):
        await send_error(
            send,
            ApiError(
                ErrorCode.USER_NOT_AUTHORIZED,
                "/metrics answers loopback clients, or a bearer token (setting metrics_token)",
            ),
        )
        return
    body = await anyio.to_thread.run_sync(exposition, services)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", CONTENT_TYPE_LATEST.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
