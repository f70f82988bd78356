"""SQL building blocks that read the same on both backends but run better written per backend."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, Integer, any_, bindparam, false
from sqlalchemy.dialects.postgresql import ARRAY
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
        return column == any_(bindparam(None, wanted, type_=ARRAY(Integer)))
    return column.in_(wanted)
