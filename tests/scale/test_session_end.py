"""A session that ends on one process stops working at once on every other: logout, suspension,
deletion and a password change, with `serve --workers 2` (SQLite and PostgreSQL) and with two
hosts on one PostgreSQL. Each client holds one keep-alive connection, so it knows which process
answers it; both processes serve the session before it ends, then the other one is asked."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from scale_support import wait_for
from support import Api, Backend, Server, assert_error, unique
from support.cluster import copy_keys

PASSWORD = "correct horse battery"
# Idle keep-alive connections stay open for this long, so a pinned client keeps its process.
KEEP_ALIVE = {"AIRWAVE_KEEP_ALIVE_TIMEOUT": "120"}


@pytest.fixture(scope="module")
def workers(start_server: Callable[..., Server]) -> Server:
    server = start_server("--open-registration", "--workers", "2", env=KEEP_ALIVE)
    wait_for(lambda: len(_pids(server.url)) == 2, 30, "both workers answering")
    return server


def _pid(api: Api) -> int:
    return api.http.get("/livez", timeout=5).json()["pid"]


def _pids(url: str) -> set[int]:
    found = set()
    for _ in range(20):
        with httpx.Client(base_url=url, timeout=5) as http:
            found.add(http.get("/livez").json()["pid"])
    return found


def _pinned(url: str) -> Iterator[Api]:
    """Clients of one keep-alive connection each, on processes not met before (up to two)."""
    seen: set[int] = set()
    for _ in range(80):
        api = Api(url, limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
        pid = _pid(api)
        if pid in seen:
            api.http.close()
            continue
        seen.add(pid)
        yield api
        if len(seen) == 2:
            return
    raise AssertionError("no connection reached a second process")


class Pair:
    """One listener's session used through two processes: `here` ends it, `there` is asked."""

    def __init__(self, here: Api, there: Api) -> None:
        self.here, self.there = here, there
        self.pids = (_pid(here), _pid(there))
        assert self.pids[0] != self.pids[1]

    def share(self, token: str | None = None) -> None:
        """Both clients use one token, by it alone (a client's session cookie names one session
        and would refuse another's token)."""
        self.there.token = token or self.here.token
        for api in (self.here, self.there):
            api.http.cookies.delete("airwave_session")

    def both_serve(self) -> None:
        for api in (self.here, self.there):
            assert api.ok("v1/station/getStations")["totalStations"] == 0

    def still_pinned(self) -> None:
        assert (_pid(self.here), _pid(self.there)) == self.pids  # the test met both processes


@pytest.fixture
def pair(workers: Server) -> Iterator[Pair]:
    here, there = _pinned(workers.url)
    yield Pair(here, there)
    here.http.close()
    there.http.close()


def _ended(api: Api) -> None:
    assert_error(api.call("v1/station/getStations"), 401, "AUTH_INVALID_TOKEN")


def test_logout_ends_the_session_on_every_process(pair: Pair) -> None:
    pair.here.register(unique("logout"))
    pair.share()
    pair.both_serve()
    pair.here.ok("v1/auth/logout")
    _ended(pair.there)
    _ended(pair.here)
    pair.still_pinned()


def test_suspension_and_reinstatement_apply_at_once_on_every_process(
    workers: Server, pair: Pair
) -> None:
    name = unique("suspend")
    pair.here.register(name)
    pair.share()
    pair.both_serve()
    assert workers.admin("user", "disable", name).returncode == 0
    for api in (pair.there, pair.here):
        assert_error(api.call("v1/station/getStations"), 403, "LISTENER_SUSPENDED")
    assert workers.admin("user", "enable", name).returncode == 0
    pair.both_serve()
    pair.still_pinned()


def test_deletion_ends_every_session_at_once(workers: Server, pair: Pair) -> None:
    name = unique("deleted")
    pair.here.register(name)
    pair.share()
    pair.both_serve()
    pair.here.ok("v1/listener/deleteListener", {"currentPassword": PASSWORD})
    _ended(pair.there)
    _ended(pair.here)
    pair.still_pinned()

    again = unique("removed")  # the operator's deletion, from outside the servers
    pair.here.register(again)
    pair.share()
    pair.both_serve()
    assert workers.admin("user", "delete", again, "--yes").returncode == 0
    _ended(pair.there)
    _ended(pair.here)


def test_a_new_password_ends_the_other_sessions_on_every_process(pair: Pair) -> None:
    name = unique("newpass")
    pair.here.register(name)
    old_token = pair.here.token
    pair.there.login(name, PASSWORD)  # a second session, through the other process
    changer = pair.there.token
    pair.share(old_token)  # `there` now uses the first session too
    pair.both_serve()
    pair.here.ok(
        "v1/listener/updateAccount",
        {"currentUsername": name, "currentPassword": PASSWORD, "newPassword": "a new password 2"},
        token=changer,
    )
    _ended(pair.there)
    _ended(pair.here)
    for api in (pair.here, pair.there):  # the changing session lives on, on both
        assert api.ok("v1/station/getStations", token=changer)["totalStations"] == 0
    pair.still_pinned()


@pytest.mark.postgresql_only
def test_two_hosts_on_one_postgresql_end_sessions_for_each_other(
    workers: Server, start_server: Callable[..., Server], tmp_path: Path
) -> None:
    other = Backend("postgresql", tmp_path / "second-host", workers.backend.pg)
    copy_keys(workers.backend.data_dir, other.data_dir)
    second = start_server(
        "--open-registration", backend=other, env={**KEEP_ALIVE, "AIRWAVE_NODE_NAME": "second"}
    )
    here = Api(workers.url)
    there = Api(second.url)
    name = unique("hosts")
    here.register(name)
    there.token = here.token
    for api in (here, there):
        api.ok("v1/station/getStations")
    there.ok("v1/auth/logout")
    _ended(here)
    _ended(there)

    here.register(unique("hosts"))
    there.token = here.token
    there.ok("v1/station/getStations")
    here.ok("v1/listener/deleteListener", {"currentPassword": PASSWORD})
    _ended(there)


def test_metrics_and_access_log_count_every_call_on_every_process(
    workers: Server, pair: Pair
) -> None:
    """/metrics adds up each worker's counts exactly, and each call logs one line naming its
    listener, whichever way the call was served."""

    def counts() -> dict[str, float]:
        found: dict[str, float] = {}
        text = httpx.get(f"{workers.url}/metrics", timeout=5).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = sample.labels
                if (
                    sample.name == "airwave_requests_total"
                    and labels["endpoint"] == "v1/station/getStations"
                ):
                    found[labels["status"]] = found.get(labels["status"], 0) + sample.value
        return found

    listener = pair.here.register(unique("counted"))
    pair.share()
    before = counts()
    ids = [f"counted-{n}-{secrets.token_hex(4)}" for n in range(6)]
    for n, request_id in enumerate(ids):
        api = (pair.here, pair.there)[n % 2]
        api.ok("v1/station/getStations", headers={"X-Request-Id": request_id})
    for api in (pair.here, pair.there, pair.here):
        assert_error(
            api.call("v1/station/getStations", token="not-a-token"), 401, "AUTH_INVALID_TOKEN"
        )
    after = counts()
    assert after.get("200", 0) - before.get("200", 0) == 6
    assert after.get("401", 0) - before.get("401", 0) == 3

    def logged() -> dict[str, dict]:
        lines = {}
        for line in workers.log_lines():
            if '"request_id"' in line and "counted-" in line:
                entry = json.loads(line)
                if entry.get("request_id") in ids:
                    lines[entry["request_id"]] = entry
        return lines if len(lines) == len(ids) else {}

    entries = wait_for(logged, 10, "an access log line for every call")
    assert {str(e["listener_id"]) for e in entries.values()} == {listener["listenerId"]}
    assert {e["pid"] for e in entries.values()} == set(pair.pids)
    assert {e["status"] for e in entries.values()} == {200}
    pair.still_pinned()


def test_request_ids_the_server_gives_are_unique_across_its_processes(pair: Pair) -> None:
    """Each process draws its own half of the ids it gives (the workers are forked)."""
    given = [
        api.http.get("/livez", timeout=5).headers["x-request-id"]
        for _ in range(5)
        for api in (pair.here, pair.there)
    ]
    assert all(re.fullmatch(r"[0-9a-f]{16}", i) for i in given)
    assert len(set(given)) == len(given)
    assert given[0][:8] != given[1][:8]  # here's and there's
    pair.still_pinned()
