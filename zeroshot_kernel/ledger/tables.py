"""The ledger's tables, in portable SQL types (SQLite by default, PostgreSQL by URL).

JSON documents are stored as text the ledger serialises itself, so both databases hold
byte-identical documents and the size bounds are checked on exactly what is stored.
Timestamps are UNIX seconds from the application clock, never the database's.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Index, String, Text, text
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

from zeroshot_kernel.ledger.events import RunPhase

SCHEMA_VERSION = 2
"""Bump with every schema change, together with a migration from the previous version
(``schema.py``). Version 2 moved executions out of a per-run snapshot document, which every
append rewrote whole, into rows of their own, and made events an ordinary table."""


class LedgerTable(SQLModel, registry=registry()):
    """Base of the ledger's tables: their own metadata, apart from any other SQLModel."""


# Every column is an ordinary Field. Its DDL must stay exactly that of SCHEMA_VERSION on both
# databases (tests/ledger/test_ledger_tables_ddl.py compares it with the recorded fixture): ``str``
# fields carry ``max_length`` (VARCHAR(n)) or ``sa_type=Text``, ``int`` ones ``sa_type=BigInteger``.


class MetaRow(LedgerTable, table=True):
    """Key/value facts about the database itself (``schema_version``)."""

    __tablename__ = "ledger_meta"

    key: str = Field(primary_key=True, max_length=64)
    value: str = Field(sa_type=Text)


class RunRow(LedgerTable, table=True):
    """One run and the scalar part of its snapshot, updated with each append; read on
    every poll. Its executions are ``ExecutionRow`` rows, their facts the events they name."""

    __tablename__ = "ledger_runs"

    run_id: str = Field(primary_key=True, max_length=64)
    submission_key: str | None = Field(default=None, max_length=256, unique=True)
    submission_digest: str = Field(max_length=64)
    title: str = Field(max_length=256)
    # A Literal, which SQLModel cannot type by itself: the column is a VARCHAR(16).
    phase: RunPhase = Field(sa_type=String(16))
    sequence: int = Field(sa_type=BigInteger)
    force_stop_requested: bool = Field(default=False)
    terminal_json: str | None = Field(default=None, sa_type=Text)
    created_at: float = Field(index=True)
    updated_at: float


class AdmittedRow(LedgerTable, table=True):
    """The admitted submission (up to 2 MiB), apart so that polling a run never loads it."""

    __tablename__ = "ledger_admitted"

    run_id: str = Field(primary_key=True, max_length=64, foreign_key="ledger_runs.run_id")
    document: str = Field(sa_type=Text)


class EventRow(LedgerTable, table=True):
    """One appended event; the primary key (run_id, sequence) is the tail index.

    An ordinary (rowid) table on SQLite: an index-organised one keeps at most about 1 KB
    of a row in its page and spills the rest to an overflow page of its own, so an event
    with a 1 KB input would take 5 KB on disk."""

    __tablename__ = "ledger_events"

    run_id: str = Field(primary_key=True, max_length=64, foreign_key="ledger_runs.run_id")
    sequence: int = Field(
        primary_key=True, sa_type=BigInteger, sa_column_kwargs={"autoincrement": False}
    )
    kind: str = Field(max_length=32)
    event_json: str = Field(sa_type=Text)


class LeaseRow(LedgerTable, table=True):
    """The controller lease of a run, if any controller ever held one."""

    __tablename__ = "ledger_leases"

    run_id: str = Field(primary_key=True, max_length=64, foreign_key="ledger_runs.run_id")
    owner: str = Field(max_length=256)
    expires_at: float
    heartbeat_at: float


class ExecutionRow(LedgerTable, table=True):
    """One dispatched execution: where its ``node_started`` event is and, once it settled,
    where its ``node_completed`` or ``execution_voided`` is. Indexes only (a few dozen
    bytes): the input and outcome live in those events, stored once."""

    __tablename__ = "ledger_executions"
    __table_args__ = (
        Index(
            "ledger_executions_active",
            "run_id",
            "started_sequence",
            sqlite_where=text("settled_sequence IS NULL"),
            postgresql_where=text("settled_sequence IS NULL"),
        ),
        {"sqlite_with_rowid": False},
    )

    run_id: str = Field(primary_key=True, max_length=64, foreign_key="ledger_runs.run_id")
    execution: str = Field(primary_key=True, sa_type=Text)
    started_sequence: int = Field(sa_type=BigInteger)
    settled_sequence: int | None = Field(default=None, sa_type=BigInteger)
