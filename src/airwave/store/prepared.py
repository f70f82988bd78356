"""Statements that run on every call (the session lookup), compiled once per backend and run on
the driver's cursor of the caller's transaction.

SQLAlchemy's own execution looks the statement up in its cache, builds an execution context and
a result object for each run; for a one-row read by a unique key that costs more than the query.
Here the SQL text, the parameters' order and the columns' result conversions (aware UTC
datetimes and the like) are worked out once; a driver error falls back to the ordinary
execution, so errors reach callers exactly as they always did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session


@dataclass(frozen=True)
class _Form:
    sql: str
    names: tuple[str, ...] | None  # the parameters' order for positional drivers; None: by name
    binds: dict[str, Callable[[Any], Any]]  # parameter name -> conversion, where one is needed
    results: tuple[Callable[[Any], Any] | None, ...]


class Prepared:
    """A SELECT with named bind parameters, compiled once per backend."""

    def __init__(self, statement: Select[Any]) -> None:
        self.statement = statement
        self._forms: dict[str, _Form] = {}

    def _form(self, dialect: Dialect) -> _Form:
        form = self._forms.get(dialect.name)
        if form is None:
            compiled = self.statement.compile(dialect=dialect)
            binds = {}
            for name, bind in compiled.binds.items():
                convert = bind.type.dialect_impl(dialect).bind_processor(dialect)
                if convert is not None:
                    binds[name] = convert
            results = tuple(
                column.type.dialect_impl(dialect).result_processor(dialect, None)
                for column in self.statement.selected_columns
            )
            names = tuple(compiled.positiontup) if compiled.positional else None  # type: ignore[arg-type]
            form = self._forms[dialect.name] = _Form(compiled.string, names, binds, results)
        return form

    def first(self, db: Session, **params: Any) -> Sequence[Any] | None:  # noqa: ANN401
        """The first row, its columns converted as SQLAlchemy would, or None."""
        connection = db.connection()
        form = self._form(connection.dialect)
        values = {**params, **{n: convert(params[n]) for n, convert in form.binds.items()}}
        cursor = connection.connection.cursor()
        try:
            cursor.execute(
                form.sql, [values[n] for n in form.names] if form.names is not None else values
            )
            row = cursor.fetchone()
        except Exception:  # the driver's error, told the way every other statement tells it
            cursor.close()
            found = connection.execute(self.statement, params).first()
            return tuple(found) if found is not None else None
        cursor.close()
        if row is None:
            return None
        return tuple(
            value if convert is None or value is None else convert(value)
            for convert, value in zip(form.results, row, strict=True)
        )

    def scalar(self, db: Session, **params: Any) -> Any:  # noqa: ANN401
        row = self.first(db, **params)
        return None if row is None else row[0]
