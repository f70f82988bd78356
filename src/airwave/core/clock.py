"""Time comes in through a Clock so that tests and benchmarks can control it."""

from __future__ import annotations

from datetime import UTC, datetime


class Clock:
    """Wall-clock time in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock(Clock):
    """A clock that only moves when told to."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        self._now += timedelta(seconds=seconds)


def iso_timestamp(value: datetime) -> str:
    """Spec §1 format: ISO 8601 with milliseconds and a UTC offset."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.isoformat(timespec="milliseconds")
