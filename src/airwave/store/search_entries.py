"""Adding entries to the search index (the one place that does).

On PostgreSQL the trigram index over `search_entries.key` follows by itself. On SQLite the word
and trigram full-text tables (`search_fts`, `search_tri`, migration 0002) follow deletes and
updates through triggers, and inserts here: one INSERT ... SELECT per batch of new entries. A
per-row trigger made a first scan's full-text indexing about four times as costly (migration
0019).
"""

from __future__ import annotations

from sqlalchemy import Connection, func, select

from airwave.store.bulk import insert_rows
from airwave.store.models import SearchEntry

_TABLE = SearchEntry.__table__


def add(connection: Connection, rows: list[dict]) -> None:
    """Insert search entries (column name -> value) and index them, in the caller's
    transaction."""
    if not rows:
        return
    if connection.dialect.name != "sqlite":
        insert_rows(connection, _TABLE, rows)  # SQLAlchemy's executemany there
        return
    # New rows take ids above the largest one (SQLite's rowid rule, and the write transaction
    # holds the database's only write lock), so the range below is exactly this batch.
    last = connection.execute(select(func.max(_TABLE.c.id))).scalar() or 0
    insert_rows(connection, _TABLE, rows)
    for fts in ("search_fts", "search_tri"):
        connection.exec_driver_sql(
            f"INSERT INTO {fts}(rowid, key) SELECT id, key FROM search_entries WHERE id > ?",
            (last,),
        )
