"""The durable run ledger: every run's facts, appended once and read through cursors.

``Ledger`` is the store (SQLite file by default, any SQLAlchemy URL); ``RunSnapshot`` and
``apply`` are the projection and the rules a run's history obeys; events live in
``zeroshot_kernel.ledger.events``.
"""

from zeroshot_kernel.ledger.cursor import INITIAL_CURSOR, format_cursor, parse_cursor
from zeroshot_kernel.ledger.errors import (
    CursorAhead,
    EventRejected,
    IdempotencyConflict,
    InvalidArgument,
    InvalidCursor,
    LeaseNotHeld,
    LedgerError,
    LedgerUnavailable,
    LedgerVersionError,
    PayloadRejected,
    RunNotFound,
)
from zeroshot_kernel.ledger.state import (
    EVENT_KINDS,
    Active,
    Completed,
    ExecutionSnapshot,
    ExecutionState,
    RunSnapshot,
    Voided,
    admitted_snapshot,
    apply,
    replay,
)
from zeroshot_kernel.ledger.store import Ledger
from zeroshot_kernel.ledger.summaries import Lease, RunSummary
from zeroshot_kernel.ledger.tables import SCHEMA_VERSION

__all__ = [
    "EVENT_KINDS",
    "INITIAL_CURSOR",
    "SCHEMA_VERSION",
    "Active",
    "Completed",
    "CursorAhead",
    "EventRejected",
    "ExecutionSnapshot",
    "ExecutionState",
    "IdempotencyConflict",
    "InvalidArgument",
    "InvalidCursor",
    "Lease",
    "LeaseNotHeld",
    "Ledger",
    "LedgerError",
    "LedgerUnavailable",
    "LedgerVersionError",
    "PayloadRejected",
    "RunNotFound",
    "RunSnapshot",
    "RunSummary",
    "Voided",
    "admitted_snapshot",
    "apply",
    "format_cursor",
    "parse_cursor",
    "replay",
]
