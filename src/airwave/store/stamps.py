"""The catalogue stamp: a value that changes in every transaction that changes what the
catalogue shows or the files a scan compares with (library_files), so that any process (or host)
may keep what it read of them for as long as the stamp it read first is still the stamp."""

from __future__ import annotations

import secrets

from sqlalchemy import Connection, select, update
from sqlalchemy.orm import Session

from airwave.store.models import CatalogStamp
from airwave.store.prepared import Prepared


def bump_catalog(db: Session | Connection) -> None:
    """Inside the transaction that changes the catalogue: a new stamp, seen with its changes.
    Random rather than counted, so a restored backup never brings back a stamp a process
    still holds."""
    db.execute(
        update(CatalogStamp).where(CatalogStamp.id == 1).values(stamp=secrets.randbits(62) + 1)
    )


# Read by most calls (every list that keeps what it shows): on a SQLite thread's reader, read
# once between changes of the database (Prepared's `remember`: any other connection's commit,
# a scan's in another process say, is seen at the next read).
_STAMP = Prepared(
    select(CatalogStamp.__table__.c.stamp).where(CatalogStamp.__table__.c.id == 1), remember=1
)


def catalog_stamp(db: Session) -> int | None:
    """The stamp now (None: no stamp row, so nothing may be kept)."""
    return _STAMP.scalar(db)
