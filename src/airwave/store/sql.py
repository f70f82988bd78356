"""SQL building blocks that read the same on both backends but run better written per backend."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, any_, bindparam, false, func, select
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session


def among(db: Session, column: Any, values: Iterable[int]) -> ColumnElement[bool]:  # noqa: ANN401
    """`column` is one of these integer ids.

    PostgreSQL gets `column = ANY(:ids)`, one array parameter: the statement's text is the same
    whatever the number of ids, so the driver prepares it once and the server plans it once,
    where `IN (...)` is a new statement for every length. SQLite keeps `IN (...)`.
    """
    wanted = sorted(set(values))
    if not wanted:
        return false()
    if db.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY  # see insert_for

        return column == any_(bindparam(None, wanted, type_=ARRAY(Integer)))
    return column.in_(wanted)


def bounds(column: Any, *where: Any) -> Select[Any]:  # noqa: ANN401
    """The least and the greatest value of an indexed column, each its own scalar subquery:
    SQLite reads one end of the index for a lone min() or max(), and the whole table (or the
    whole of a genre's rows) for both in one select (0.13-0.22 s at 1M tracks)."""
    return select(
        select(func.min(column)).where(*where).scalar_subquery(),
        select(func.max(column)).where(*where).scalar_subquery(),
    )


def among_rows(db: Session, column: Any, rows: Select[Any]) -> ColumnElement[bool]:  # noqa: ANN401
    """`column` is one of the ids a one-column select returns.

    PostgreSQL gets `column = ANY(ARRAY(select))`: the ids are read first, then looked up one by
    one in `column`'s index. As `IN (select)` it hashed them and read the whole of `column`'s
    table when it expected thousands (a genre's tracks in album order: 25 ms at 100k tracks,
    against 3-6 ms; at 1M, 99 against 108 ms). Where the whole table is worth reading (the albums
    of a genre's tracks at 1M), `IN` stays. SQLite keeps `IN (select)`, which it runs that way.
    """
    if db.get_bind().dialect.name == "postgresql":
        return column == any_(func.array(rows.scalar_subquery()))
    return column.in_(rows)


def insert_for(db: Session, table: Any) -> Any:  # noqa: ANN401
    """The INSERT of the session's database, which has ON CONFLICT (`on_conflict_do_nothing`,
    `on_conflict_do_update`). PostgreSQL's is imported only when used: its dialect loads its
    drivers' modules, ~15 ms of every process's start, SQLite ones too."""
    if db.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    return sqlite.insert(table)
