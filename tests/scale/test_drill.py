"""The scale-out drill (issue 18): three hosts on one PostgreSQL behind HAProxy, with listeners.

Every request of a listener may land on any host: sessions, fragments, thumbs, skips, receipts
and audio work wherever they land, and the rules that span requests (skip limits, login
back-off, the one active player) hold across hosts. A host killed in the middle of a stream
costs the listener nothing (the player resumes with a Range request that another host answers,
and no thumb or receipt is lost), and its roles pass to another host within the lease. A
rolling restart of every host, one at a time, fails no listener's request.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from scale_support import ONE_SHOT, wait_for
from support import Api, Backend, Server, assert_error, unique, wait_indexed
from support.cluster import Balancer, copy_keys, free_port, haproxy_available

pytestmark = [
    pytest.mark.postgresql_only,
    pytest.mark.skipif(not haproxy_available(), reason="no haproxy"),
]

PASSWORD = "correct horse battery"
LEASE_TTL = 2.0
DRAIN = 1.5  # above HAProxy's fall 2 x inter 300 ms: the check sees a stopping host go first
HOSTS = ("a", "b", "c")
SETTINGS = {
    "AIRWAVE_LEASE_TTL": str(LEASE_TTL),
    "AIRWAVE_SHUTDOWN_DRAIN": str(DRAIN),
    "AIRWAVE_SHUTDOWN_GRACE": "5",
    "AIRWAVE_FRAGMENT_LIMIT": "100000",
    "AIRWAVE_LOGIN_FREE_FAILURES": "3",
    "AIRWAVE_LOGIN_BACKOFF_BASE": "600",
    "AIRWAVE_TRUSTED_PROXIES": '["127.0.0.1"]',
    "AIRWAVE_ENGINE_SEED": "5",
    "AIRWAVE_RADIO_RULES": "relaxed",  # the small library would run out of playable tracks
}
# What the drill asks of HAProxy: quick checks; a request that could not reach a host (refused,
# reset before an answer) goes to another one. Only requests that are safe to repeat are
# replayed once sent: GET and HEAD, and receipts (the first report of a spin wins); any other
# POST (getFragment spends a skip, say) is replayed only when it never reached a host.
RETRIES = (
    "retries 3",
    "option redispatch 1",
    "retry-on conn-failure empty-response response-timeout",
    "timeout connect 500ms",
    "timeout server 10s",
    "option forwardfor",
)
SAFE_TO_REPLAY = (
    "http-request disable-l7-retry if METH_POST !{ path_beg /audio/receipt/ /audio/skip/ }",
)
# Small socket buffers between the hosts and the player, so that most of a stream is still on
# its host (not in the balancer's buffers) when that host dies.
SMALL_BUFFERS = ("tune.rcvbuf.server 8192", "tune.sndbuf.client 8192")


@dataclass
class Cluster:
    """The three hosts (by name) and the balancer in front of them."""

    hosts: dict[str, Server]
    balancer: Balancer

    @property
    def url(self) -> str:
        return self.balancer.url

    def host_of(self, member: str) -> str:
        """The host name of a `host/pid` member id."""
        return member.rsplit("/", 1)[0]

    def leaders(self) -> dict[str, str]:
        return httpx.get(f"{self.url}/healthz", timeout=5).json()["leaders"]

    def wait_state(self, host: str, state: str, timeout: float = 10) -> None:
        wait_for(
            lambda: self.balancer.states().get(host) == state,
            timeout,
            f"haproxy seeing {host} {state}",
            step=0.05,
        )

    def start(self, host: str) -> None:
        """Start a stopped host again on its port, and wait until HAProxy sends it requests."""
        self.hosts[host].start(timeout=60)
        self.wait_state(host, "UP")

    def heal(self) -> None:
        """Every host running and UP (after a test that failed half-way)."""
        for name, server in self.hosts.items():
            assert server.process is not None
            if server.process.poll() is not None:
                self.start(name)
            self.wait_state(name, "UP")


@pytest.fixture(scope="module")
def cluster(
    make_backend: Callable[[], Backend],
    start_server: Callable[..., Server],
    small_demo_library: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    first = make_backend()
    ports = {name: free_port() for name in HOSTS}

    def start(name: str, backend: Backend) -> Server:
        return start_server(
            "--library",
            str(small_demo_library),
            "--open-registration",
            "--port",
            str(ports[name]),
            env={**SETTINGS, "AIRWAVE_NODE_NAME": name},
            backend=backend,
        )

    hosts = {"a": start("a", first)}  # makes the key files the others copy
    others = {}
    for name in HOSTS[1:]:
        others[name] = Backend("postgresql", tmp_path_factory.mktemp(f"host-{name}"), first.pg)
        copy_keys(first.data_dir, others[name].data_dir)
    with ThreadPoolExecutor(2) as pool:
        started = {name: pool.submit(start, name, backend) for name, backend in others.items()}
        hosts.update({name: future.result() for name, future in started.items()})
    wait_indexed(hosts["a"])
    here = tmp_path_factory.mktemp("haproxy")
    balancer = Balancer(
        here / "haproxy.cfg",
        {name: server.url for name, server in hosts.items()},
        check="inter 300ms fall 2 rise 1",
        defaults=RETRIES,
        backend=SAFE_TO_REPLAY,
        tuning=SMALL_BUFFERS,
        stats=here / "stats.sock",
    ).start()
    drill = Cluster(hosts, balancer)
    for name in HOSTS:
        drill.wait_state(name, "UP")
    yield drill
    balancer.stop()
    for server in hosts.values():  # all at once, without the drain (no balancer to drain for)
        if server.process is not None and server.process.poll() is None:
            server.process.send_signal(signal.SIGINT)


@dataclass
class Listener:
    """One listener's app: an account, a station, every request on a new connection.

    `retry`: failed POSTs (no answer, or the balancer's 502-504) are sent again, as an app
    does; without it every failure counts. `failures` keeps what the listener saw fail.
    """

    url: str
    retry: bool = False
    api: Api = field(init=False)
    name: str = field(default_factory=lambda: unique("drill"))
    station: str = ""
    served_by: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    thumbs: set[str] = field(default_factory=set)
    receipts: dict[str, str] = field(default_factory=dict)  # receipt URL -> its outcome
    requests: int = 0

    def __post_init__(self) -> None:
        self.api = Api(self.url, limits=ONE_SHOT)

    def join(self) -> Listener:
        """Register, and make a station of the first artist the genre pages show."""
        body = {"username": self.name, "password": PASSWORD}
        self.api.token = self.post("v1/listener/register", body)["authToken"]
        music_id = _music_id(self.api)
        self.station = self.post("v1/station/createStation", {"musicId": music_id})["stationId"]
        return self

    def _send(self, send: Callable[[], httpx.Response], what: str) -> httpx.Response:
        for attempt in range(3 if self.retry else 1):
            self.requests += 1
            try:
                response = send()
            except httpx.TransportError as exc:
                self.failures.append(f"{what}: {exc!r}")
                continue
            if "x-airwave-server" in response.headers:
                self.served_by[response.headers["x-airwave-server"]] += 1
            if response.status_code in (502, 503, 504):
                self.failures.append(f"{what}: {response.status_code} (attempt {attempt + 1})")
                continue
            return response
        raise AssertionError(f"{self.name}: {what} failed: {self.failures[-3:]}")

    def post(self, path: str, body: dict[str, Any]) -> Any:
        response = self._send(lambda: self.api.call(path, body), path)
        assert response.status_code == 200, f"{path}: {response.text}"
        return response.json()

    def receipt(self, url: str, expected: str) -> None:
        response = self._send(lambda: self.api.http.post(url, json={}), "receipt")
        assert response.status_code == 200, response.text
        assert response.json()["outcome"] == expected, response.text
        self.receipts[url] = expected

    def listen(self) -> None:
        """One round of listening: a fragment; the first track played through (its audio
        fetched, its receipt sent) and thumbed up, the next one skipped."""
        tracks = self.post(
            "v1/playlist/getFragment", {"stationId": self.station, "audioFormat": "original"}
        )["tracks"]
        played = tracks[0]
        audio = self._send(lambda: self.api.http.get(played["audioURL"]), "audio")
        assert audio.status_code == 200 and audio.content, audio.text[:200]
        thumb = self.post(
            "v1/station/addFeedback", {"trackToken": played["trackToken"], "isPositive": True}
        )
        self.thumbs.add(thumb["feedbackId"])
        self.receipt(played["audioReceiptURL"], "completed")
        if len(tracks) > 1:
            self.receipt(tracks[1]["audioSkipUrl"], "skipped")

    def nothing_lost(self) -> None:
        """Every thumb is on the station and every receipt was recorded (reported again, the
        first report stands)."""
        listed = self.post(
            "v1/station/getStationFeedback",
            {"stationId": self.station, "positive": True, "pageSize": 100},
        )
        assert {f["feedbackId"] for f in listed["feedback"]} == self.thumbs
        for url, outcome in self.receipts.items():
            response = self._send(lambda u=url: self.api.http.post(u, json={}), "receipt")
            assert response.json()["outcome"] == outcome and response.json()["recorded"] is False


class Crowd:
    """Listeners listening in threads until stopped."""

    def __init__(self, listeners: list[Listener]) -> None:
        self.listeners = listeners
        self.stopping = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(one,)) for one in listeners]

    def _run(self, listener: Listener) -> None:
        while not self.stopping.is_set():
            try:
                listener.listen()
            except BaseException as exc:  # noqa: BLE001 - reported by stop()
                self.errors.append(exc)
                return

    def __enter__(self) -> Crowd:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(30)

    def rounds(self) -> int:
        return sum(one.requests for one in self.listeners)

    def going_on(self, more: int = 10, timeout: float = 20) -> None:
        """Wait until the listeners have made `more` requests; fail at once if one failed."""
        until = self.rounds() + more

        def made() -> bool:
            if self.errors:
                raise RuntimeError(f"a listener failed: {self.errors!r}")
            return self.rounds() >= until

        wait_for(made, timeout, "listeners going on", step=0.05)


def _music_id(api: Api) -> str:
    for category in api.ok("v1/music/genrecategories", {})["categories"]:
        for station in api.ok("v1/music/genres", {"token": category["token"]})["stations"]:
            for track in station["sampleTracks"]:
                return track["artistMusicId"]
    raise AssertionError("no artist in the library")


def test_every_host_serves_and_the_rules_hold_across_hosts(cluster: Cluster) -> None:
    cluster.heal()
    listeners = [Listener(cluster.url).join() for _ in range(3)]
    for _ in range(2):
        for listener in listeners:
            listener.listen()
    for listener in listeners:
        listener.nothing_lost()
        assert listener.failures == []
    assert set(sum((one.served_by for one in listeners), Counter())) == set(HOSTS)

    # skip limits: six skips an hour on a station, whichever host counts them
    phone = listeners[0]
    skips = Counter()
    for n in range(6):
        response = phone.api.call(
            "v1/playlist/getFragment", {"stationId": phone.station, "fragmentRequestReason": "Skip"}
        )
        assert response.status_code == 200, response.text
        assert response.json()["skipsRemaining"] == 5 - n
        skips[response.headers["x-airwave-server"]] += 1
    for _ in range(3):
        skip = {"stationId": phone.station, "fragmentRequestReason": "Skip"}
        refused = phone.api.call("v1/playlist/getFragment", skip)
        assert_error(refused, 429, "STATION_LIMIT_REACHED")
        skips[refused.headers["x-airwave-server"]] += 1
    assert set(skips) == set(HOSTS)

    # the one active player: the laptop of the listener whose phone plays is refused anywhere
    laptop = Api(cluster.url, limits=ONE_SHOT)
    laptop.login(phone.name, PASSWORD)
    refusals = set()
    for _ in range(3):
        refused = laptop.call("v1/playlist/getFragment", {"stationId": phone.station})
        assert_error(refused, 409, "STREAM_VIOLATION")
        refusals.add(refused.headers["x-airwave-server"])
    assert refusals == set(HOSTS)
    phone.post("v1/playlist/getFragment", {"stationId": phone.station})

    # login back-off: after three wrong passwords the account waits, on every host
    attacker = Api(cluster.url, limits=ONE_SHOT)
    target = listeners[1].name
    for _ in range(3):
        wrong = attacker.call("v1/auth/login", {"username": target, "password": "guess"})
        assert_error(wrong, 401, "AUTH_INVALID_USERNAME_PASSWORD")
    throttled = set()
    for _ in range(3):
        right = attacker.call("v1/auth/login", {"username": target, "password": PASSWORD})
        assert_error(right, 429, "RATE_LIMITED")
        throttled.add(right.headers["x-airwave-server"])
    assert throttled == set(HOSTS)


def _stream_from(cluster: Cluster, url: str, host: str) -> httpx.Response:
    """The audio at `url` as a player with a small receive buffer opens it, from `host`."""
    small = httpx.HTTPTransport(socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
    player = httpx.Client(transport=small, timeout=10)
    for _ in range(10):  # round robin, nobody else asking: within three tries
        response = player.send(player.build_request("GET", url), stream=True)
        if response.headers.get("x-airwave-server") == host:
            return response
        response.close()
    raise AssertionError(f"no stream from {host}")


def test_a_host_killed_mid_stream_costs_the_listener_nothing(cluster: Cluster) -> None:
    cluster.heal()
    player = Listener(cluster.url, retry=True).join()
    crowd_of = [Listener(cluster.url, retry=True).join() for _ in range(2)]
    leaders = cluster.leaders()
    victim = cluster.host_of(leaders["library"])
    sizes: dict[str, int] = {}
    receipts: dict[str, str] = {}
    for _ in range(6):  # the largest file of a few fragments: a stream worth breaking
        tracks = player.post(
            "v1/playlist/getFragment", {"stationId": player.station, "audioFormat": "original"}
        )["tracks"]
        for t in tracks:
            sizes[t["audioURL"]] = int(httpx.head(t["audioURL"]).headers["content-length"])
            receipts[t["audioURL"]] = t["audioReceiptURL"]
        if max(sizes.values()) > 200_000:
            break
    url = max(sizes, key=sizes.__getitem__)
    whole = sizes[url]
    assert whole > 60_000, sizes

    # opened before the crowd starts: its requests would shift the balancer's rotation
    stream = _stream_from(cluster, url, victim)
    etag = stream.headers["etag"]
    with Crowd(crowd_of) as crowd:
        got = bytearray()
        chunks = stream.iter_raw(4096)
        got += next(chunks)
        cluster.hosts[victim].process.kill()  # type: ignore[union-attr]
        killed_at = time.monotonic()
        # On one machine the kernel of a killed process still sends what the process had
        # queued; a host that dies takes that with it. Its connections die with it here too.
        cluster.balancer.command(f"shutdown sessions server servers/{victim}")
        resumed_from = []
        try:
            for chunk in chunks:
                got += chunk
        except httpx.TransportError:
            pass
        finally:
            stream.close()
        while len(got) < whole:  # as browsers do: the rest, if it is still the same file
            resumed_from.append(len(got))
            rest = httpx.get(
                url, headers={"Range": f"bytes={len(got)}-", "If-Range": etag}, timeout=10
            )
            assert rest.status_code == 206, rest.text[:200]
            assert rest.headers["x-airwave-server"] != victim
            got += rest.content
        assert resumed_from and resumed_from[0] < whole  # the stream really broke
        assert bytes(got) == httpx.get(url, timeout=10).content
        cluster.wait_state(victim, "DOWN")

        def taken_over() -> dict[str, str] | None:
            now = cluster.leaders()
            held = [now[role] for role, holder in leaders.items() if holder.startswith(victim)]
            return now if all(h and not h.startswith(f"{victim}/") for h in held) else None

        after = wait_for(taken_over, timeout=4 * LEASE_TTL, what="the roles taken over", step=0.1)
        took = time.monotonic() - killed_at
        crowd.going_on()
    assert not crowd.errors, crowd.errors
    # the lease runs out at most LEASE_TTL after the holder's last renewal; the next look of
    # another host (every quarter of it) takes it
    assert took < LEASE_TTL * 1.25 + 1.0, (took, after)
    player.receipt(receipts[url], "completed")
    for listener in [player, *crowd_of]:
        listener.nothing_lost()
        # what failed was in flight on the killed host, and the app's retry got it through
        assert len(listener.failures) <= 2, listener.failures
    cluster.start(victim)
    assert cluster.leaders()  # the restarted host joins without fuss


def test_a_rolling_restart_fails_no_request(cluster: Cluster) -> None:
    cluster.heal()
    listeners = [Listener(cluster.url).join() for _ in range(3)]
    with Crowd(listeners) as crowd:
        for name in HOSTS:
            server = cluster.hosts[name]
            assert server.process is not None
            server.process.terminate()  # SIGTERM: drain, then a graceful stop
            cluster.wait_state(name, "DOWN")
            assert server.process.poll() is None  # out of the balancer while still serving
            assert server.process.wait(15) == 0
            cluster.start(name)
            crowd.going_on()
    assert not crowd.errors, crowd.errors
    failures = [f for one in listeners for f in one.failures]
    assert failures == []
    served_by = sum((one.served_by for one in listeners), Counter())
    assert set(served_by) == set(HOSTS), served_by
    for listener in listeners:
        listener.nothing_lost()
