"""Many rows into one table in one go, for bulk writers (the scanner's batches).

The columns' order and their bind conversions (UTC datetimes and the like) are worked out once
per backend, table and set of columns, and the rows go to the driver as tuples: SQLAlchemy's own
executemany prepares every row's parameters in Python first, a fifth of a large first scan's
writing on SQLite. SQLite takes them through the driver's `executemany`; PostgreSQL through one
COPY, where an executemany ran one INSERT per row (PostgreSQL's own work for a first scan of
20,000 files was mostly those). Where SQLAlchemy must fill a column (a callable default), its
path is taken. Errors reach callers as SQLAlchemy's exceptions either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, insert
from sqlalchemy.exc import DBAPIError


@dataclass(frozen=True)
class _Form:
    sql: str  # the INSERT (SQLite) or the COPY (PostgreSQL)
    keys: tuple[str, ...]  # read from each row, in the statement's order
    names: tuple[str, ...]  # the statement's columns: the keys, then those with a default
    defaults: tuple[Any, ...]  # then these, for columns with a constant default the rows omit
    convert: tuple[tuple[int, Callable[[Any], Any]], ...]  # (key's position, conversion) if any


_FORMS: dict[tuple[str, int, tuple[str, ...]], _Form | None] = {}
_FAST = ("sqlite", "postgresql")


def _form(connection: Connection, table: Table, keys: tuple[str, ...]) -> _Form | None:
    """The prepared insert, or None where SQLAlchemy must fill a column (a callable default)."""
    dialect = connection.dialect
    cache_key = (dialect.name, id(table), keys)
    if cache_key in _FORMS:
        return _FORMS[cache_key]
    defaulted: list[tuple[str, Any]] = []
    form: _Form | None = None
    for column in table.columns:
        if column.name in keys or column.default is None:
            continue
        if not column.default.is_scalar:
            break
        defaulted.append((column.name, column.default.arg))  # type: ignore[attr-defined]
    else:
        names = [*keys, *(name for name, _ in defaulted)]
        convert = tuple(
            (i, fn)
            for i, name in enumerate(keys)
            if (fn := table.c[name].type.dialect_impl(dialect).bind_processor(dialect)) is not None
        )
        quote = dialect.identifier_preparer
        columns = ", ".join(quote.quote(name) for name in names)
        if dialect.name == "postgresql":
            sql = f"COPY {quote.format_table(table)} ({columns}) FROM STDIN"
        else:
            marks = ", ".join("?" for _ in names)
            sql = f"INSERT INTO {quote.format_table(table)} ({columns}) VALUES ({marks})"
        form = _Form(sql, keys, tuple(names), tuple(value for _, value in defaulted), convert)
    _FORMS[cache_key] = form
    return form


def _values(form: _Form, row: dict[str, Any]) -> list[Any]:
    """A row's values for the statement's keys, converted for the driver."""
    values = [row[k] for k in form.keys]
    for i, fn in form.convert:
        if values[i] is not None:
            values[i] = fn(values[i])
    return values


def insert_rows(connection: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows that all name the same columns, in the connection's transaction."""
    if not rows:
        return
    form = _form(connection, table, tuple(rows[0])) if connection.dialect.name in _FAST else None
    if form is None:
        connection.execute(insert(table), list(rows))
        return
    params = [(*_values(form, row), *form.defaults) for row in rows]
    cursor = connection.connection.cursor()
    try:
        if connection.dialect.name == "postgresql":
            with cursor.copy(form.sql) as copy:
                for values in params:
                    copy.write_row(values)
        else:
            cursor.executemany(form.sql, params)
    except connection.dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            form.sql, params[:1], exc, connection.dialect.loaded_dbapi.Error
        ) from exc
    finally:
        cursor.close()


# bound parameters a statement may carry: SQLite's limit, PostgreSQL's protocol's
_MAX_PARAMS = {"sqlite": 32766, "postgresql": 65535}
_RETURNING: dict[tuple[str, int, tuple[str, ...], int, tuple[str, ...]], str] = {}


def insert_returning(
    connection: Connection, table: Table, rows: Sequence[dict[str, Any]], returning: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    """Insert a few rows that all name the same columns in one statement, and read back these
    columns of each as the driver gives them (plain columns: ids, text), in no particular order:
    for the small inserts a request makes (a fragment's spins), without SQLAlchemy's
    per-statement execution. Where SQLAlchemy must fill a column, or the rows are too many for
    one statement, its own path is taken."""
    if not rows:
        return []
    dialect = connection.dialect
    form = _form(connection, table, tuple(rows[0])) if dialect.name in _FAST else None
    if form is None or len(form.names) * len(rows) > _MAX_PARAMS[dialect.name]:
        statement = insert(table).returning(*(table.c[name] for name in returning))
        return [tuple(r) for r in connection.execute(statement, list(rows))]
    key = (dialect.name, id(table), form.keys, len(rows), returning)
    sql = _RETURNING.get(key)
    if sql is None:
        quote = dialect.identifier_preparer
        columns = ", ".join(quote.quote(name) for name in form.names)
        width = len(form.names)
        if dialect.name == "postgresql":  # numbered: see _cursor
            marks = [f"${n + 1}" for n in range(width * len(rows))]
        else:
            marks = ["?"] * (width * len(rows))
        sql = (
            f"INSERT INTO {quote.format_table(table)} ({columns}) VALUES "
            + ", ".join(
                "(" + ", ".join(marks[i : i + width]) + ")" for i in range(0, len(marks), width)
            )
            + " RETURNING "
            + ", ".join(quote.quote(name) for name in returning)
        )
        if len(_RETURNING) >= 256:  # a few row counts per table in practice
            _RETURNING.clear()
        _RETURNING[key] = sql
    params: list[Any] = []
    for row in rows:
        params += _values(form, row)
        params += form.defaults
    error = dialect.loaded_dbapi.Error
    cursor = _cursor(connection)
    try:
        cursor.execute(sql, params)
        return [tuple(r) for r in cursor.fetchall()]
    except error as exc:
        raise DBAPIError.instance(sql, params, exc, error) from exc
    finally:
        cursor.close()


def _cursor(connection: Connection) -> Any:  # noqa: ANN401 - the driver's own cursor
    """The driver's cursor for insert_returning's statement. On PostgreSQL a raw cursor, which
    takes the statement's numbered parameters as they are: psycopg's ordinary cursor parses a
    statement's placeholders out of its text on every execution once it has more than 50
    parameters (its cache of parsed statements leaves those out), and a fragment's four spins
    have 68."""
    if connection.dialect.name == "postgresql":
        from psycopg import RawCursor  # loaded with the dialect: never on a SQLite server

        return RawCursor(connection.connection.driver_connection)
    return connection.connection.cursor()
