"""The durable run ledger: every run's facts, appended once and read through cursors.

``Ledger`` is the store (SQLite file by default, any SQLAlchemy URL); ``RunSnapshot`` and
``apply`` are the projection and the rules a run's history obeys; events live in
``zeroshot_kernel.ledger.events``.

Importing this package is cheap: each name is imported on first use, so reading an error
class (``zeroshot --help``, the CLI's error handling) does not load the database layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zeroshot_kernel.lazy_exports import load_export as _load_export

if TYPE_CHECKING:
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

# Public name -> the module that defines it, imported on first use.
_LAZY: dict[str, str] = {
    "INITIAL_CURSOR": "zeroshot_kernel.ledger.cursor",
    "format_cursor": "zeroshot_kernel.ledger.cursor",
    "parse_cursor": "zeroshot_kernel.ledger.cursor",
    "CursorAhead": "zeroshot_kernel.ledger.errors",
    "EventRejected": "zeroshot_kernel.ledger.errors",
    "IdempotencyConflict": "zeroshot_kernel.ledger.errors",
    "InvalidArgument": "zeroshot_kernel.ledger.errors",
    "InvalidCursor": "zeroshot_kernel.ledger.errors",
    "LeaseNotHeld": "zeroshot_kernel.ledger.errors",
    "LedgerError": "zeroshot_kernel.ledger.errors",
    "LedgerUnavailable": "zeroshot_kernel.ledger.errors",
    "LedgerVersionError": "zeroshot_kernel.ledger.errors",
    "PayloadRejected": "zeroshot_kernel.ledger.errors",
    "RunNotFound": "zeroshot_kernel.ledger.errors",
    "EVENT_KINDS": "zeroshot_kernel.ledger.state",
    "Active": "zeroshot_kernel.ledger.state",
    "Completed": "zeroshot_kernel.ledger.state",
    "ExecutionSnapshot": "zeroshot_kernel.ledger.state",
    "ExecutionState": "zeroshot_kernel.ledger.state",
    "RunSnapshot": "zeroshot_kernel.ledger.state",
    "Voided": "zeroshot_kernel.ledger.state",
    "admitted_snapshot": "zeroshot_kernel.ledger.state",
    "apply": "zeroshot_kernel.ledger.state",
    "replay": "zeroshot_kernel.ledger.state",
    "Ledger": "zeroshot_kernel.ledger.store",
    "Lease": "zeroshot_kernel.ledger.summaries",
    "RunSummary": "zeroshot_kernel.ledger.summaries",
    "SCHEMA_VERSION": "zeroshot_kernel.ledger.tables",
}

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


def __getattr__(name: str) -> Any:
    return _load_export(globals(), _LAZY, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
