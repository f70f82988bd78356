"""Which of a token's quick calls (getStations) leave the event loop for a worker thread: those
that cost the loop CPU time, and on PostgreSQL those that hold it waiting for the database; not
those the machine or other threads merely paused."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

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
) -> Iterator[tuple[Callable[[int], list[bool]], list[float]]]:
    """An app on a fresh instance of the module's backend, and `calls(n)`: n getStations of one
    token one after another, whether each ran on the event loop's thread; the station page
    first sleeps (off the CPU) as long as the list's one number says."""
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
    pause = [0.0]
    on_loop: list[bool] = []
    page = station.stations.station_page

    def paused_page(*args: object, **kwargs: object) -> object:
        on_loop.append(threading.current_thread() is threading.main_thread())
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
    quick_app: tuple[Callable[[int], list[bool]], list[float]], backend_kind: str
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
