"""What a process keeps of the catalogue between calls, valid while the catalogue stamp stays the
one read before it: every transaction that changes the catalogue (a scan's, in whichever process
or host it runs) sets a new stamp (store/stamps.py), so what is kept is never older than the
database. A call costs one primary-key lookup of the stamp instead of the statements it saves."""

from __future__ import annotations

import threading
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
        self._stamp: int | None = None
        self._values: dict[K, V] = {}

    def current(self, db: Session) -> dict[K, V] | None:
        """The values valid now, to read and to add to; None: keep nothing (no stamp). Call it
        before reading the catalogue: a change committed in between is then seen as a new stamp
        by the next call, never kept under the old one."""
        stamp = stamps.catalog_stamp(db)
        if stamp is None:
            return None
        with self._lock:
            if stamp != self._stamp or len(self._values) > self._limit:
                self._stamp, self._values = stamp, {}
            return self._values
