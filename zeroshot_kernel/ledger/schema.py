"""Creating the ledger's tables, migrating older ledgers, refusing newer ones.

Tables are created by the first write, never by opening or reading: reading a database
that holds no ledger yet finds no runs. A ledger file outlives the code that wrote it.
Opening one written by a newer schema fails loudly before anything is touched: this code
neither migrates down nor guesses. One written by an older schema is migrated forward, in
one transaction, before it is first read or written.
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy import inspect, text
from sqlmodel import Session

from zeroshot_kernel.ledger.cursor import parse_cursor
from zeroshot_kernel.ledger.dialects import lock_schema
from zeroshot_kernel.ledger.errors import LedgerVersionError
from zeroshot_kernel.ledger.state import Active, RunSnapshot
from zeroshot_kernel.ledger.tables import (
    SCHEMA_VERSION,
    EventRow,
    ExecutionRow,
    LedgerTable,
    MetaRow,
)

VERSION_KEY = "schema_version"
OLDEST_MIGRATED = 1


def ensure_schema(session: Session) -> None:
    """Create missing tables, migrate an older schema and record the schema version, in
    the caller's transaction."""
    lock_schema(session)
    connection = session.connection()
    metadata = LedgerTable.metadata
    metadata.tables[MetaRow.__tablename__].create(connection, checkfirst=True)
    stored = session.get(MetaRow, VERSION_KEY)
    if stored is not None and _check_version(stored.value) == 1:
        _migrate_from_1(session)
        stored.value = str(SCHEMA_VERSION)
    metadata.create_all(connection)
    if stored is None:
        session.add(MetaRow(key=VERSION_KEY, value=str(SCHEMA_VERSION)))


def schema_state(session: Session) -> Literal["absent", "current", "outdated"]:
    """What a read finds, without writing: no ledger yet (``absent``), this code's schema
    (``current``) or one :func:`ensure_schema` must migrate first (``outdated``). A schema
    newer than this code raises :class:`LedgerVersionError`, as opening it always has."""
    if not inspect(session.connection()).has_table(MetaRow.__tablename__):
        return "absent"
    stored = session.get(MetaRow, VERSION_KEY)
    if stored is None or _check_version(stored.value) != SCHEMA_VERSION:
        return "outdated"
    return "current"


def _check_version(value: str) -> int:
    version = int(value) if value.isdecimal() else None
    if version is not None and OLDEST_MIGRATED <= version <= SCHEMA_VERSION:
        return version
    if version is not None and version > SCHEMA_VERSION:
        raise LedgerVersionError(
            f"this ledger was written with schema version {version}, but this zeroshot "
            f"knows versions up to {SCHEMA_VERSION}; upgrade zeroshot to open it"
        )
    raise LedgerVersionError(
        f"this ledger records schema version {value!r}, which this zeroshot "
        f"(schema version {SCHEMA_VERSION}) cannot read"
    )


def _migrate_from_1(session: Session) -> None:
    """Version 1 kept each run's whole snapshot as one document: split it into the run
    row's ``force_stop_requested`` and one execution row per execution, then drop it. On
    SQLite its events table was index-organised: copy it into an ordinary one."""
    connection = session.connection()
    if connection.dialect.name == "sqlite":
        session.execute(text("ALTER TABLE ledger_events RENAME TO ledger_events_v1"))
        EventRow.__table__.create(connection)  # type: ignore[attr-defined]
        session.execute(
            text(
                "INSERT INTO ledger_events (run_id, sequence, kind, event_json) "
                "SELECT run_id, sequence, kind, event_json FROM ledger_events_v1"
            )
        )
        session.execute(text("DROP TABLE ledger_events_v1"))
    ExecutionRow.__table__.create(connection)  # type: ignore[attr-defined]
    session.execute(
        text(
            "ALTER TABLE ledger_runs ADD COLUMN force_stop_requested BOOLEAN NOT NULL DEFAULT false"
        )
    )
    documents = session.execute(text("SELECT snapshot_json FROM ledger_runs")).scalars().all()
    for document in documents:
        snapshot = RunSnapshot.model_validate_json(document)
        session.execute(
            text("UPDATE ledger_runs SET force_stop_requested = :stop WHERE run_id = :run"),
            {"stop": snapshot.force_stop_requested, "run": snapshot.run_id},
        )
        session.add_all(
            ExecutionRow(
                run_id=snapshot.run_id,
                execution=execution,
                started_sequence=parse_cursor(entry.started_at),
                settled_sequence=(
                    None if isinstance(entry.state, Active) else parse_cursor(entry.state.at)
                ),
            )
            for execution, entry in snapshot.executions.items()
        )
    session.flush()
    session.execute(text("ALTER TABLE ledger_runs DROP COLUMN snapshot_json"))
