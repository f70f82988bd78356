"""What a process keeps of the catalogue between calls, valid while the catalogue stamp stays the
one read before it: every transaction that changes the catalogue (a scan's, in whichever process
or host it runs) sets a new stamp (store/stamps.py), so what is kept is never older than the
database. A call costs one primary-key lookup of the stamp instead of the statements it saves."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from sqlalchemy.orm import Session

from airwave.store import stamps

K = TypeVar("K")
V = TypeVar("V")


class Kept(Generic[K, V]):
    """Values by key, dropped together when the catalogue stamp changes, or when more than
    `limit` are kept (then they are read again)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._stamp: Hashable | None = None
        self._values: dict[K, V] = {}

    def current(self, db: Session) -> dict[K, V] | None:
        """The values valid now, to read and to add to; None: keep nothing (no stamp). Call it
        before reading the catalogue: a change committed in between is then seen as a new stamp
        by the next call, never kept under the old one."""
        return self.at(stamps.catalog_stamp(db))

    def at(self, stamp: Hashable | None) -> dict[K, V] | None:
        """The values valid under `stamp`, read with stamp() before the catalogue (so that one
        read serves several Kept in one call); None: keep nothing."""
        if stamp is None:
            return None
        with self._lock:
            if stamp != self._stamp or len(self._values) > self._limit:
                self._stamp, self._values = stamp, {}
            return self._values

    def get(self, stamp: Hashable | None, key: K, make: Callable[[], V]) -> V:
        """The value kept under `key` while `stamp` holds, made (and kept) when there is none."""
        values = self.at(stamp)
        if values is not None and key in values:
            return values[key]
        value = make()
        if values is not None:
            values[key] = value
        return value


def stamp(db: Session) -> tuple[Hashable, int] | None:
    """The catalogue stamp now, with the database it is of (its URL), for Kept.at(): values read
    from one database are never taken for another's (tests open many in one process)."""
    found = stamps.catalog_stamp(db)
    return None if found is None else (db.get_bind().engine.url, found)
