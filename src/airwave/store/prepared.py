"""Statements that run on every call (the session lookup), compiled once per backend and run on
the driver's cursor of the caller's transaction.

SQLAlchemy's own execution looks the statement up in its cache, builds an execution context and
a result object for each run; for a one-row read by a unique key that costs more than the query.
Here the SQL text, the parameters' order and the columns' result conversions (aware UTC
datetimes and the like) are worked out once; a driver error falls back to the ordinary
execution, so errors reach callers exactly as they always did. A list parameter (an IN) is
expanded as SQLAlchemy expands it, once for each power of two its length is rounded up to.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Delete, Select, Update, inspect
from sqlalchemy.engine import Compiled, Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, configure_mappers, make_transient_to_detached

from airwave.store.db import READ_ONLY, transaction_block

_CURSORS = itertools.count()
_UNKNOWN = object()


@dataclass
class _Form:
    sql: str
    names: tuple[str, ...] | None  # the parameters' order for positional drivers; None: by name
    defaults: dict[str, Any]  # the values written into the statement (`column == 3`), by name
    binds: dict[str, Callable[[Any], Any]]  # parameter name -> conversion, where one is needed
    # lists (`column.in_(bindparam(name, expanding=True))`): their names, and the statement as
    # SQLAlchemy expands it for each combination of the lists' lengths (see _Expanded)
    lists: tuple[str, ...] = ()
    compiled: Compiled | None = None
    expanded: dict[tuple[int, ...], _Expanded] = field(default_factory=dict)
    # (position, conversion) where needed; known at the first run, from the driver's column types
    # (PostgreSQL's numeric conversions depend on them)
    converts: tuple[tuple[int, Callable[[Any], Any]], ...] | None = None


@dataclass(frozen=True)
class _Expanded:
    """The statement with its lists' lengths fixed: one placeholder per item."""

    sql: str
    names: tuple[str, ...] | None
    items: tuple[tuple[str, str, int], ...]  # (placeholder, list, index in the list)


class _Item:
    """Stands for an item of a list while SQLAlchemy expands the statement."""

    __slots__ = ("index", "name")

    def __init__(self, name: str, index: int) -> None:
        self.name, self.index = name, index


class Prepared:
    """A SELECT with named bind parameters (lists among them), compiled once per backend; or an
    UPDATE or DELETE, for `run`.

    With `remember` (SQLite only), `first` keeps up to that many rows per connection, by their
    parameters, for as long as the database is unchanged: SQLite's `PRAGMA data_version` moves
    when any other connection, of any process, commits a change, which drops them all. A check
    costs a fraction of the statement, so a lookup that runs on every call (the session) runs once
    between changes, and a change made anywhere (a logout, a suspension) counts from the next read
    on. A connection's own changes move no version, committed or not, so only a thread's own
    reading connection, which SQLite keeps from writing (`query_only`), keeps rows.
    """

    def __init__(self, statement: Select[Any] | Update | Delete, remember: int = 0) -> None:
        self.statement = statement
        self.remember = remember
        self._forms: dict[str, _Form] = {}

    def _form(self, dialect: Dialect) -> _Form:
        form = self._forms.get(dialect.name)
        if form is None:
            compiled = self.statement.compile(dialect=dialect)
            binds = {}
            defaults = {}
            later = compiled.post_compile_params
            if any(not bind.expanding for bind in later):
                raise ValueError("a Prepared statement takes no literal_execute parameter")
            lists = tuple(sorted({bind.key for bind in later}))
            for name, bind in compiled.binds.items():
                convert = bind.type.dialect_impl(dialect).bind_processor(dialect)
                if convert is not None:
                    binds[name] = convert
                if not bind.required:
                    defaults[name] = bind.effective_value
            names = tuple(compiled.positiontup) if compiled.positional else None  # type: ignore[arg-type]
            form = self._forms[dialect.name] = _Form(
                compiled.string, names, defaults, binds, lists, compiled if lists else None
            )
        return form

    def _converts(
        self,
        form: _Form,
        dialect: Dialect,
        cursor: Any,  # noqa: ANN401 - a DB-API cursor
    ) -> tuple[tuple[int, Callable[[Any], Any]], ...]:
        """The columns' result conversions, as SQLAlchemy chooses them for the driver's column
        types (the cursor's description) at the statement's first run. The description is read
        only then: psycopg makes an object per column for it, which was a fifth of an empty
        station list's CPU on PostgreSQL while it was read at every run."""
        converts = form.converts
        if converts is None:
            description = cursor.description
            columns = self.statement.selected_columns
            codes = [d[1] for d in description] if description else [None] * len(columns)
            results = (
                column.type.dialect_impl(dialect).result_processor(dialect, code)
                for column, code in zip(columns, codes, strict=True)
            )
            converts = form.converts = tuple((i, c) for i, c in enumerate(results) if c is not None)
        return converts

    @staticmethod
    def _driver_params(form: _Form, params: dict[str, Any]) -> tuple[str, Any]:
        """The SQL for these parameters (lists expanded), and the parameters converted and in the
        driver's style (a list, or a dict by name)."""
        if form.defaults:
            params = {**form.defaults, **params}
        binds = form.binds
        if not form.lists:
            values = {**params, **{n: convert(params[n]) for n, convert in binds.items()}}
            return form.sql, [values[n] for n in form.names] if form.names is not None else values
        # a list's length rounded up to a power of two, its last item repeated (the same IN, and
        # a dozen forms of the statement for every length a read can have, not one per length)
        lists = {n: _padded(params[n]) for n in form.lists}
        expanded = Prepared._expanded(form, tuple(len(items) for items in lists.values()))
        values = {
            **params,
            **{n: convert(params[n]) for n, convert in binds.items() if n not in lists},
        }
        for placeholder, name, index in expanded.items:
            item = lists[name][index]
            convert = binds.get(name)
            values[placeholder] = item if convert is None else convert(item)
        driver = [values[n] for n in expanded.names] if expanded.names is not None else values
        return expanded.sql, driver

    @staticmethod
    def _expanded(form: _Form, lengths: tuple[int, ...]) -> _Expanded:
        """The statement for lists of these lengths, as SQLAlchemy expands it (worked out once
        for each; an empty list gets SQLAlchemy's empty-set expression)."""
        found = form.expanded.get(lengths)
        if found is None:
            assert form.compiled is not None
            compiled = form.compiled
            values: dict[str, Any] = {b.key: None for b in compiled.binds.values() if b.required}
            for name, length in zip(form.lists, lengths, strict=True):
                values[name] = [_Item(name, i) for i in range(length)]
            state = compiled.construct_expanded_state(values)
            found = _Expanded(
                state.statement,
                tuple(state.positiontup) if state.positiontup is not None else None,
                tuple(
                    (placeholder, value.name, value.index)
                    for placeholder, value in state.parameters.items()
                    if isinstance(value, _Item)
                ),
            )
            form.expanded[lengths] = found
        return found

    def run(self, db: Session, **params: Any) -> int:  # noqa: ANN401
        """Run an UPDATE or DELETE (no RETURNING) on the driver's cursor; the rows it changed. A
        driver's error is told as SQLAlchemy tells it (IntegrityError and the like), the
        statement not run again."""
        connection = db.connection()
        sql, driver_params = self._driver_params(self._form(connection.dialect), params)
        error = connection.dialect.loaded_dbapi.Error
        cursor = connection.connection.cursor()
        try:
            cursor.execute(sql, driver_params)
            return cursor.rowcount
        except error as exc:
            raise DBAPIError.instance(sql, driver_params, exc, error) from exc
        finally:
            cursor.close()

    def first(self, db: Session, **params: Any) -> Sequence[Any] | None:  # noqa: ANN401
        """The first row, its columns converted as SQLAlchemy would, or None."""
        connection = db.connection()
        if self.remember and connection.dialect.name == "sqlite":
            return self._remembered(connection, params)
        return self._first(connection, params)

    def _remembered(self, connection: Connection, params: dict[str, Any]) -> Sequence[Any] | None:
        proxied = connection.connection
        driver = proxied.driver_connection
        if not proxied.info.get(READ_ONLY):  # its own changes would move no version
            return self._first(connection, params)
        try:
            (version,) = driver.execute("PRAGMA data_version").fetchone()
        except Exception:  # noqa: BLE001 - the statement itself tells the error, as always
            return self._first(connection, params)
        rows = proxied.info.get(self)
        if rows is None or rows[0] != version:
            rows = proxied.info[self] = (version, {})
        key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
        found = rows[1].get(key, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._first(connection, params)
            if len(rows[1]) >= self.remember:
                rows[1].clear()
            rows[1][key] = found
        return found

    def _first(self, connection: Connection, params: dict[str, Any]) -> Sequence[Any] | None:
        rows = self._rows(connection, params, every=False)
        return rows[0] if rows else None

    def all(self, db: Session, **params: Any) -> list[tuple[Any, ...]]:  # noqa: ANN401
        """Every row, its columns converted as SQLAlchemy would: for the few-row reads a call
        runs every time (a station's recent spins), without a Row object per row."""
        return self._rows(db.connection(), params, every=True)

    def _rows(
        self, connection: Connection, params: dict[str, Any], every: bool
    ) -> list[tuple[Any, ...]]:
        form = self._form(connection.dialect)
        cursor = connection.connection.cursor()
        try:
            sql, driver_params = self._driver_params(form, params)
            cursor.execute(sql, driver_params)
            rows = cursor.fetchall() if every else cursor.fetchmany(1)
            converts = self._converts(form, connection.dialect, cursor)
        except Exception:  # the driver's error, told the way every other statement tells it
            cursor.close()
            result = connection.execute(self.statement, params)
            if every:
                return [tuple(r) for r in result]
            found = result.first()
            return [tuple(found)] if found is not None else []
        cursor.close()
        return [_converted(r, converts) for r in rows]

    def scalars(self, db: Session, **params: Any) -> list[Any]:  # noqa: ANN401
        """The first column of every row."""
        return [r[0] for r in self.all(db, **params)]

    def scalar(self, db: Session, **params: Any) -> Any:  # noqa: ANN401
        row = self.first(db, **params)
        return None if row is None else row[0]

    def partitions(self, db: Session, size: int, **params: Any) -> Iterator[list[tuple[Any, ...]]]:  # noqa: ANN401
        """Every row, in lists of up to `size`, converted as SQLAlchemy would; for reads of a
        whole table (the similarity build's catalogue), without a Row object per row.

        PostgreSQL streams them from a server-side cursor in binary: as text, every byte of a
        sound profile came as two hex digits to parse (the similarity build's read of a 1M-track
        catalogue took 12.5 s, now 6.3 s)."""
        connection = db.connection()
        form = self._form(connection.dialect)
        sql, driver_params = self._driver_params(form, params)
        error = connection.dialect.loaded_dbapi.Error
        if connection.dialect.name == "postgresql":
            transaction_block(connection)
            name = f"airwave_partitions_{next(_CURSORS)}"  # several may be open at once
            cursor = connection.connection.cursor(name=name, binary=True)
            cursor.itersize = size
        else:
            cursor = connection.connection.cursor()
        try:
            try:
                cursor.execute(sql, driver_params)
                rows = cursor.fetchmany(size)
            except error as exc:
                raise DBAPIError.instance(sql, driver_params, exc, error) from exc
            converts = self._converts(form, connection.dialect, cursor)
            while rows:
                if converts:
                    rows = [_converted(row, converts) for row in rows]
                yield rows
                try:
                    rows = cursor.fetchmany(size)
                except error as exc:
                    raise DBAPIError.instance(sql, driver_params, exc, error) from exc
        finally:
            cursor.close()


def _padded(items: Sequence[Any]) -> Sequence[Any]:
    """A list for an IN, its last item repeated up to the next power of two."""
    length = len(items)
    if length & (length - 1) == 0:  # 0, 1, 2, 4 ...
        return items
    return [*items, *[items[-1]] * ((1 << length.bit_length()) - length)]


def _converted(
    row: Sequence[Any], converts: tuple[tuple[int, Callable[[Any], Any]], ...]
) -> tuple[Any, ...]:
    if not converts:
        return tuple(row)
    values = list(row)
    for i, convert in converts:
        value = values[i]
        if value is not None:
            values[i] = convert(value)
    return tuple(values)


class Columns:
    """How a mapped class's table columns, selected in their table's order (from the table or
    an alias of it), become an object of the class: the object a query would have loaded, then
    detached. For hot reads whose rows outlive their transaction, without the ORM's loading."""

    def __init__(self, cls: type) -> None:
        mapper = inspect(cls)
        self.table = cls.__table__  # type: ignore[attr-defined]
        self.keys = tuple(mapper.get_property_by_column(c).key for c in self.table.columns)
        self.width = len(self.keys)
        self._mapper = mapper
        self._new = mapper.class_manager.new_instance
        self._identity: tuple[type, tuple[int, ...]] | None = None  # the fast path's, when ready
        self._ready = False

    def _prepare(self) -> None:
        """At the first use (the mappers are configured by then): whether the values fill every
        attribute of the class (no relationships, no other attributes). Then an object's
        `make_transient_to_detached` would only set its identity key: everything else it does
        (commit the loaded values, expire what was not loaded) leaves a new object as it is, and
        the key is set directly (about 5 us less per object)."""
        configure_mappers()
        mapper = self._mapper
        if set(mapper.class_manager) == set(self.keys):
            positions = tuple(
                self.keys.index(mapper.get_property_by_column(c).key) for c in mapper.primary_key
            )
            self._identity = (mapper._identity_class, positions)
        self._ready = True

    def detached(self, values: Sequence[Any]) -> Any:  # noqa: ANN401
        if not self._ready:
            self._prepare()
        obj = self._new()
        obj.__dict__.update(zip(self.keys, values, strict=True))
        if self._identity is None:
            make_transient_to_detached(obj)
            return obj
        identity_class, positions = self._identity
        state = obj._sa_instance_state
        state.key = (identity_class, tuple(values[i] for i in positions), None)
        return obj
