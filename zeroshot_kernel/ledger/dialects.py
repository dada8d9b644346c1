"""Per-database behaviour, kept here so the rest of the ledger is portable SQL.

SQLite: WAL (readers never block the writer), a 30 s busy timeout, and writes that take
the write lock up front with ``BEGIN IMMEDIATE`` so two writers queue instead of failing
with "database is locked" halfway through a transaction. PostgreSQL: READ COMMITTED on every
connection, row locks (``SELECT ... FOR UPDATE``, portable in the store) and an advisory
lock for schema setup.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, exc, text
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from zeroshot_kernel.ledger.errors import LedgerUnavailable, classify

BUSY_TIMEOUT_MS = 30_000
BUSY_TIMEOUT_ENV = "ZEROSHOT_LEDGER_BUSY_TIMEOUT_S"
"""How long a SQLite ledger waits for another process's write lock before it reports the
ledger busy (seconds; default 30)."""
_WRITE_OPTION = "zeroshot_ledger_write"
_SCHEMA_LOCK_KEY = 0x7A65726F73686F74  # "zeroshot"


@dataclass(frozen=True)
class Engines:
    """One connection pool seen two ways: sessions on ``write`` take the write lock."""

    read: Engine
    write: Engine

    def dispose(self) -> None:
        self.read.dispose()


def open_engines(url: str | URL) -> Engines:
    """Engines for ``url`` with the database's concurrency settings applied; a URL that
    does not parse or names a database without an installed driver is a
    :class:`LedgerUnavailable`."""
    try:
        return _open_engines(url)
    except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as problem:
        shown = url if isinstance(url, str) and "://" not in url else _shown(url)
        raise LedgerUnavailable(shown, "unreachable", f"cannot be opened: {problem}") from None


def _shown(url: str | URL) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except exc.ArgumentError:
        return "(a URL that does not parse)"


def _open_engines(url: str | URL) -> Engines:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        # READ COMMITTED whatever the server's default: a row locked FOR UPDATE and changed
        # meanwhile is then re-read, not a serialization failure, and every read is bounded
        # by the run row's sequence anyway (see store.py).
        engine = create_engine(parsed, pool_pre_ping=True, isolation_level="READ COMMITTED")
    elif parsed.database in (None, "", ":memory:"):
        engine = create_engine(
            parsed, poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
        _configure_sqlite(engine)
    else:
        engine = create_engine(parsed)
        _configure_sqlite(engine)
        _create_folder_on_connect(engine, Path(parsed.database))
    _translate_errors(engine, parsed)
    return Engines(read=engine, write=engine.execution_options(**{_WRITE_OPTION: True}))


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite ``url`` (None for other databases and in-memory SQLite)."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    if url.database.startswith("file:"):
        return None  # a URI filename: let SQLite interpret it
    return Path(url.database)


def _translate_errors(engine: Engine, url: URL) -> None:
    """Every failure of the database (damaged, full, read-only, locked too long,
    unreachable, or a statement it refused) leaves the ledger as one
    :class:`LedgerUnavailable` naming the ledger, in whichever store or command it happens:
    SQLAlchemy's own exceptions never reach callers. Integrity errors (a duplicate key) stay
    the store's to handle."""

    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> None:
        failure = context.sqlalchemy_exception
        if isinstance(failure, exc.IntegrityError):
            return
        if isinstance(failure, exc.DBAPIError):
            raise ledger_failure(url, context.original_exception) from (context.original_exception)


def ledger_failure(url: URL, error: BaseException) -> LedgerUnavailable:
    """The ledger's own error for a database driver's ``error`` (also for statements run on
    a raw DBAPI connection, which SQLAlchemy's hook does not see)."""
    shown = (
        url.database or ""
        if url.get_backend_name() == "sqlite"
        else (url.render_as_string(hide_password=True))
    )
    return classify(shown, str(error), url.password)


def lock_schema(session: Session) -> None:
    """Serialise schema setup between processes opening the same database at once."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK_KEY})


def begin_raw(cursor: Any, dialect: str, *, write: bool) -> None:
    """Open a transaction on a raw DBAPI cursor the way ``_on_begin`` opens sessions':
    SQLite connections are in autocommit mode, so BEGIN is explicit; PostgreSQL begins
    implicitly and locks rows with ``FOR UPDATE``."""
    if dialect == "sqlite":
        cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")


def _create_folder_on_connect(engine: Engine, database: Path) -> None:
    """SQLite creates a missing database file but not its folder: make the folder when a
    connection is first opened (a ledger opens one only to write, or to read a file that
    exists), so that merely naming a ledger creates nothing."""

    @event.listens_for(engine, "do_connect")
    def _on_do_connect(*_: Any) -> None:
        with contextlib.suppress(OSError):  # SQLite then says why it cannot open the file
            database.parent.mkdir(parents=True, exist_ok=True)


def _busy_timeout_ms() -> int:
    try:
        seconds = float(os.environ.get(BUSY_TIMEOUT_ENV, BUSY_TIMEOUT_MS / 1000))
    except ValueError:
        return BUSY_TIMEOUT_MS
    return int(seconds * 1000) if 0 <= seconds <= 3600 else BUSY_TIMEOUT_MS


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN away from the sqlite3 module; _on_begin emits it below.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {_busy_timeout_ms()}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        writing = connection.get_execution_options().get(_WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writing else "BEGIN")
