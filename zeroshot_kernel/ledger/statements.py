"""The hot statements (append, snapshot, tail) on the pooled DBAPI connection.

Each poll and each append is a short transaction of one to four tiny statements; run
through a SQLAlchemy ``Session`` (or even a Core ``Connection``) the library's bookkeeping
costs five to ten times the database work. So these statements are compiled once for the
engine's dialect (portable SQL still comes from SQLAlchemy) and executed on the raw
connection checked out of the same pool.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from zeroshot_kernel.ledger.dialects import begin_raw, ledger_failure

Row = tuple[Any, ...]


class Statement:
    """One statement compiled for a dialect; parameters are passed by name."""

    def __init__(self, engine: Engine, statement: ClauseElement) -> None:
        compiled = statement.compile(dialect=engine.dialect)
        assert isinstance(compiled, SQLCompiler)
        self.sql = str(compiled)
        self._defaults = compiled.params  # values fixed at construction (an OFFSET 0)
        self._order: list[str] | None = (
            list(compiled.positiontup or []) if engine.dialect.positional else None
        )

    def parameters(self, values: Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
        values = {**self._defaults, **values}
        if self._order is None:
            return values
        return [values[name] for name in self._order]


class Cursor:
    """A DBAPI cursor inside one transaction, running :class:`Statement` objects."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def rows(self, statement: Statement, **values: Any) -> list[Row]:
        self._cursor.execute(statement.sql, statement.parameters(values))
        return [tuple(row) for row in self._cursor.fetchall()]

    def first(self, statement: Statement, **values: Any) -> Row | None:
        self._cursor.execute(statement.sql, statement.parameters(values))
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)

    def run(self, statement: Statement, **values: Any) -> None:
        self._cursor.execute(statement.sql, statement.parameters(values))

    def run_many(self, statement: Statement, values: Sequence[Mapping[str, Any]]) -> None:
        if values:
            self._cursor.executemany(statement.sql, [statement.parameters(v) for v in values])


@contextmanager
def raw_transaction(engine: Engine, *, write: bool) -> Iterator[Cursor]:
    """A transaction on a pooled DBAPI connection, begun as the engine's sessions begin
    (``write`` takes the write lock up front on SQLite); committed, or rolled back on error.
    A failure of the database is raised as the ledger's :class:`LedgerUnavailable`."""
    try:
        connection = engine.raw_connection()
    except BaseException as failure:
        original = failure.orig if isinstance(failure, DBAPIError) else failure
        if original is not None and _is_database_failure(engine, original):
            raise ledger_failure(engine.url, original) from failure
        raise
    try:
        cursor = connection.cursor()
        try:
            begin_raw(cursor, engine.dialect.name, write=write)
            yield Cursor(cursor)
            connection.commit()
        except BaseException as failure:
            with contextlib.suppress(Exception):
                connection.rollback()
            if _is_database_failure(engine, failure):
                raise ledger_failure(engine.url, failure) from failure
            raise
        finally:
            cursor.close()
    finally:
        connection.close()


def _is_database_failure(engine: Engine, failure: BaseException) -> bool:
    """Every error of the driver but its integrity errors (a duplicate key the store
    expects and handles)."""
    dbapi = engine.dialect.loaded_dbapi
    return isinstance(failure, dbapi.DatabaseError) and not isinstance(
        failure, dbapi.IntegrityError
    )
