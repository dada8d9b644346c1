"""Creating the ledger's tables and refusing databases from a newer ledger.

A ledger file outlives the code that wrote it. Opening one written by a newer schema
fails loudly before anything is touched: this code neither migrates down nor guesses.
"""

from __future__ import annotations

from sqlmodel import Session

from zeroshot_kernel.ledger.dialects import lock_schema
from zeroshot_kernel.ledger.errors import LedgerVersionError
from zeroshot_kernel.ledger.tables import SCHEMA_VERSION, LedgerTable, MetaRow

VERSION_KEY = "schema_version"


def ensure_schema(session: Session) -> None:
    """Create missing tables and record the schema version, in the caller's transaction."""
    lock_schema(session)
    connection = session.connection()
    metadata = LedgerTable.metadata
    metadata.tables[MetaRow.__tablename__].create(connection, checkfirst=True)
    stored = session.get(MetaRow, VERSION_KEY)
    if stored is not None:
        _check_version(stored.value)
    metadata.create_all(connection)
    if stored is None:
        session.add(MetaRow(key=VERSION_KEY, value=str(SCHEMA_VERSION)))


def _check_version(value: str) -> None:
    version = int(value) if value.isdecimal() else None
    if version == SCHEMA_VERSION:
        return
    if version is not None and version > SCHEMA_VERSION:
        raise LedgerVersionError(
            f"this ledger was written with schema version {version}, but this zeroshot "
            f"knows versions up to {SCHEMA_VERSION}; upgrade zeroshot to open it"
        )
    raise LedgerVersionError(
        f"this ledger records schema version {value!r}, which this zeroshot "
        f"(schema version {SCHEMA_VERSION}) cannot read"
    )
