"""The throttling rules in-process with a fixed clock, on both databases (core/throttle.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import func, select
from support import Backend

from airwave.config import Settings
from airwave.core.accounts import throttle
from airwave.core.clock import FixedClock
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database
from airwave.store.models import ThrottleCounter

START = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def database(make_backend: Callable[[], Backend]) -> Iterator[Database]:
    backend = make_backend()
    url = backend.pg.url if backend.pg else f"sqlite:///{backend.data_dir / 'airwave.db'}"
    db = Database(url)
    db.migrate()
    yield db
    db.dispose()


def _settings(tmp_path: Path, **values: object) -> Settings:
    base: dict[str, object] = {
        "data_dir": tmp_path,
        "login_free_failures": 3,
        "login_backoff_base": 1.0,
        "login_backoff_max": 60,
        "login_window": 900,
        "login_max_accounts_per_address": 2,
    }
    return Settings(**{**base, **values})


def _login(
    database: Database,
    settings: Settings,
    clock: FixedClock,
    name: str,
    address: str | None = "10.0.0.1",
    device: tuple[int, str] | None = None,
) -> int | None:
    """Reserve a login attempt: None when allowed (and counted), else RATE_LIMITED's retry_after."""
    try:
        with database.write() as db:
            throttle.reserve_login(db, settings, clock.now(), name, address, device)
    except ApiError as error:
        assert error.error is ErrorCode.RATE_LIMITED
        return error.retry_after
    return None


def test_backoff_delays_double_after_the_free_failures_up_to_the_cap(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert [throttle.backoff_delay(settings, n) for n in range(1, 11)] == [
        0,
        0,
        1,
        2,
        4,
        8,
        16,
        32,
        60,
        60,
    ]
    assert throttle.backoff_delay(settings, 10**6) == 60  # no overflow for absurd counts


def test_unknown_devices_back_off_and_a_success_resets(database: Database, tmp_path: Path) -> None:
    settings, clock = _settings(tmp_path), FixedClock(START)
    assert [_login(database, settings, clock, "ann") for _ in range(3)] == [None, None, None]
    assert _login(database, settings, clock, "ann") == 1
    clock.advance(1)
    assert _login(database, settings, clock, "ann") is None  # the 4th check; now 2 s
    assert _login(database, settings, clock, "ann") == 2
    clock.advance(2)
    with database.write() as db:
        attempt = throttle.reserve_login(db, settings, clock.now(), "ann", "10.0.0.1", None)
    with database.write() as db:
        throttle.release(db, attempt)  # that one was right
    assert [_login(database, settings, clock, "ann") for _ in range(4)] == [None, None, None, 1]


def test_counts_are_forgotten_a_window_after_the_last_delay(
    database: Database, tmp_path: Path
) -> None:
    settings, clock = _settings(tmp_path), FixedClock(START)
    for _ in range(3):
        _login(database, settings, clock, "bob")
    clock.advance(1 + 899)
    assert _login(database, settings, clock, "bob") is None  # still remembered: the 4th failure
    assert _login(database, settings, clock, "bob") == 2
    clock.advance(2 + 900)
    assert [_login(database, settings, clock, "bob") for _ in range(4)] == [None, None, None, 1]


def test_a_known_device_has_its_own_bucket(database: Database, tmp_path: Path) -> None:
    settings, clock = _settings(tmp_path), FixedClock(START)
    for _ in range(3):
        _login(database, settings, clock, "cat")
    assert _login(database, settings, clock, "cat") == 1
    phone, laptop = (7, "phone"), (7, "laptop")
    assert [_login(database, settings, clock, "cat", device=phone) for _ in range(3)] == [None] * 3
    assert _login(database, settings, clock, "cat", device=phone) == 1
    assert _login(database, settings, clock, "cat", device=laptop) is None


def test_the_address_limit_counts_distinct_accounts(database: Database, tmp_path: Path) -> None:
    settings, clock = _settings(tmp_path, login_free_failures=100), FixedClock(START)
    for _ in range(10):
        assert (
            _login(database, settings, clock, "dan") is None
        )  # one account: the address stays open
    assert _login(database, settings, clock, "eve") is None
    assert _login(database, settings, clock, "fay") == 900  # a third account from the same address
    assert _login(database, settings, clock, "fay", address="10.0.0.2") is None
    assert _login(database, settings, clock, "dan") is None  # accounts already counted go on
    assert (
        _login(database, settings, clock, "fay", address=None) is None
    )  # no address known: no limit
    clock.advance(900)
    assert _login(database, settings, clock, "fay") is None


def test_fixed_windows_for_reset_mails(database: Database, tmp_path: Path) -> None:
    clock = FixedClock(START)
    limits = [("reset-name:x", 2), ("reset-addr:y", 3)]

    def request() -> int | None:
        try:
            with database.write() as db:
                throttle.count_in_window(db, clock.now(), limits, 3600, "reset mails")
        except ApiError as error:
            return error.retry_after
        return None

    assert [request(), request(), request()] == [None, None, 3600]
    clock.advance(600)
    assert request() == 3000
    clock.advance(3000)
    assert request() is None


def test_purge_drops_expired_counters(database: Database, tmp_path: Path) -> None:
    settings, clock = _settings(tmp_path), FixedClock(START)
    _login(database, settings, clock, "gus")
    clock.advance(901)
    with database.write() as db:
        throttle.purge(db, clock.now())
    with database.read() as db:
        assert db.scalar(select(func.count()).select_from(ThrottleCounter)) == 0


def test_device_cookies(tmp_path: Path) -> None:
    settings = _settings(tmp_path, device_cookie_lifetime=3600)
    value = throttle.device_cookie(settings, START, 7, None)
    device = throttle.known_device(settings, START, value, 7)
    assert device is not None
    assert throttle.known_device(settings, START, value, 8) is None  # another account's cookie
    assert (
        throttle.known_device(settings, START.replace(hour=13, second=1), value, 7) is None
    )  # expired
    forged = value[:-2] + ("BB" if value.endswith("AA") else "AA")
    assert throttle.known_device(settings, START, forged, 7) is None  # forged MAC
    assert (
        throttle.known_device(_settings(tmp_path / "other"), START, value, 7) is None
    )  # another server's key
    both = throttle.device_cookie(settings, START, 8, value + "~junk;")
    assert both.count("~") == 1 and both.endswith(value)  # the newest first; junk is dropped
    assert throttle.known_device(settings, START, both, 7) == device
    assert throttle.known_device(settings, START, both, 8) not in (None, device)
    many = None
    for listener_id in range(1, 20):
        many = throttle.device_cookie(settings, START, listener_id, many)
    assert many is not None and many.count("~") == throttle.DEVICE_TOKENS_KEPT - 1
    assert (tmp_path / throttle.DEVICE_KEY_FILE).stat().st_mode & 0o077 == 0
