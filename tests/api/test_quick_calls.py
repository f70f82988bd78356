"""Which of a token's quick calls (getStations) leave the event loop for a worker thread: those
that cost the loop CPU time, and on PostgreSQL those that hold it waiting for the database; not
those the machine or other threads merely paused."""

from __future__ import annotations

import asyncio
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from support import Backend

from airwave.config import Settings
from airwave.core.accounts import accounts
from airwave.core.clock import FixedClock
from airwave.store.db import Database

START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def quick_app(
    make_backend: Callable[[], Backend], monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Callable[[int], list[bool]], list[Any]]]:
    """An app on a fresh instance of the module's backend, and `calls(n)`: n getStations of one
    token one after another, whether each ran on the event loop's thread; the station page
    first sleeps (off the CPU) as long as the list's one number says, or, when it holds a
    function instead, runs that."""
    from airwave.api.app import create_app
    from airwave.api.v1 import station
    from airwave.core.services import Services

    backend = make_backend()
    url = backend.pg.url if backend.pg else f"sqlite:///{backend.data_dir / 'airwave.db'}"
    database = Database(url)
    database.migrate()
    clock = FixedClock(START)
    settings = Settings(data_dir=backend.data_dir, database_url=url)
    with database.write() as db:  # a listener as the command line makes one; then a login
        accounts.create_listener(
            db,
            clock.now(),
            accounts.check_new_listener(
                settings,
                clock.now(),
                accounts.NewListener("quick", "quick calls password"),
                enforce_strength=False,
            ),
        )
    app = create_app(Services(settings, database, clock))
    pause: list[Any] = [0.0]
    on_loop: list[bool] = []
    page = station.stations.station_page

    def paused_page(*args: object, **kwargs: object) -> object:
        on_loop.append(threading.current_thread() is threading.main_thread())
        if callable(pause[0]):
            pause[0]()
        else:
            time.sleep(pause[0])
        return page(*args, **kwargs)

    monkeypatch.setattr(station.stations, "station_page", paused_page)

    def posts(path: str, body: dict[str, object], count: int, token: str = "") -> list[dict]:
        """`count` calls of the path one after another through the app; their answers."""

        async def run() -> list[dict]:
            transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))  # type: ignore[arg-type]
            headers = {"X-CsrfToken": "t", **({"X-AuthToken": token} if token else {})}
            async with httpx.AsyncClient(
                transport=transport, base_url="http://test", cookies={"csrftoken": "t"}
            ) as http:
                answers = []
                for _ in range(count):
                    answer = await http.post(path, json=body, headers=headers)
                    assert answer.status_code == 200, answer.text
                    answers.append(answer.json())
                return answers

        return asyncio.run(run())

    login = {"username": "quick", "password": "quick calls password"}
    token = posts("/api/v1/auth/login", login, 1)[0]["authToken"]

    def calls(count: int) -> list[bool]:
        on_loop.clear()
        posts("/api/v1/station/getStations", {}, count, token)
        return list(on_loop)

    try:
        yield calls, pause
    finally:
        database.dispose()


def test_a_pause_off_the_cpu_keeps_the_token_on_the_loop_but_a_wait_for_postgresql_does_not(
    quick_app: tuple[Callable[[int], list[bool]], list[Any]], backend_kind: str
) -> None:
    """Calls paused past the quick budget but not using the CPU (a busy machine, a thread holding
    the interpreter's lock) stay on the event loop however many come in a row. Past
    QUICK_WAIT_BUDGET off the CPU, SLOW_STRIKES calls in a row send the token's next ones to a
    worker thread on PostgreSQL, where such a wait is the database's, holding the loop; on
    SQLite, whose reads wait on no network, they stay."""
    from airwave.api import protocol

    calls, pause = quick_app
    strikes = protocol.SLOW_STRIKES
    assert calls(2) == [True, True]
    pause[0] = protocol.QUICK_BUDGET * 2
    assert pause[0] < protocol.QUICK_WAIT_BUDGET
    assert calls(strikes + 2) == [True] * (strikes + 2)
    pause[0] = protocol.QUICK_WAIT_BUDGET * 1.5
    if backend_kind == "postgresql":
        assert calls(strikes + 1) == [True] * strikes + [False]
    else:
        assert calls(strikes + 2) == [True] * (strikes + 2)


# A process at real-time priority on one processor: woken by a byte on its stdin, it keeps that
# processor for the given seconds, then answers a byte. Any ordinary thread of that processor
# meanwhile is ready to run but waits (the kernel counts it in /proc/thread-self/schedstat).
_HOG = """
import os, sys, time
cpu, seconds = int(sys.argv[1]), float(sys.argv[2])
os.sched_setaffinity(0, {cpu})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
except OSError:
    sys.stdout.buffer.write(b"n"); sys.stdout.flush(); sys.exit()
sys.stdout.buffer.write(b"y"); sys.stdout.flush()
while sys.stdin.buffer.read(1):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    sys.stdout.buffer.write(b"."); sys.stdout.flush()
"""


def _waited_for_cpu() -> float:
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


@pytest.fixture
def processor_hog(backend_kind: str) -> Iterator[Callable[[], None]]:
    """`hold()`: the calling thread, moved to one processor, waits ready to run for 30 ms while
    a real-time process keeps that processor (skips where none may be started). PostgreSQL
    only: on SQLite no time off the CPU counts (the test above)."""
    if backend_kind != "postgresql":
        pytest.skip("on SQLite no time off the CPU counts: the test above")
    cpu = min(os.sched_getaffinity(0))
    hog = subprocess.Popen(
        [sys.executable, "-c", _HOG, str(cpu), "0.03"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert hog.stdin is not None and hog.stdout is not None
    try:
        if hog.stdout.read(1) != b"y":
            pytest.skip("needs permission to run a real-time process (root, CAP_SYS_NICE)")

        def hold() -> None:
            allowed = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {cpu})  # this thread only
            try:
                hog.stdin.write(b"x")
                hog.stdin.flush()  # the hog takes the processor from here on
                deadline = time.monotonic() + 10
                while not select.select([hog.stdout], [], [], 0)[0]:  # ready to run, not running
                    assert time.monotonic() < deadline, "the real-time process never answered"
                hog.stdout.read(1)
            finally:
                os.sched_setaffinity(0, allowed)

        before = _waited_for_cpu()
        hold()
        if _waited_for_cpu() - before < 0.02:
            pytest.skip("the kernel does not count a thread's wait for a processor here")
        yield hold
    finally:
        hog.stdin.close()
        hog.wait(timeout=10)


def test_a_wait_for_a_busy_processor_keeps_the_token_on_the_loop(
    processor_hog: Callable[[], None], quick_app: tuple[Callable[[int], list[bool]], list[Any]]
) -> None:
    """On PostgreSQL a call's time off the CPU past QUICK_WAIT_BUDGET counts as a wait for the
    database (the test above), but not the part of it the thread spent ready to run while
    another process had the processor: a busy host's calls stay on the loop, where a worker
    thread would only add its own cost."""
    from airwave.api import protocol

    calls, pause = quick_app
    assert calls(2) == [True, True]
    pause[0] = processor_hog  # each call: 30 ms ready to run, past QUICK_WAIT_BUDGET
    assert 0.03 > protocol.QUICK_WAIT_BUDGET
    assert calls(protocol.SLOW_STRIKES + 2) == [True] * (protocol.SLOW_STRIKES + 2)
