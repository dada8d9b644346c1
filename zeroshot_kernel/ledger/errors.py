"""Every way the ledger refuses, as one exception family.

Callers (CLI, controller, widgets) catch :class:`LedgerError` once and map the subclasses
to their own vocabulary (``NOT_FOUND``, ``IDEMPOTENCY_REUSE``, ...).
"""

from __future__ import annotations


class LedgerError(Exception):
    """Base of every error the ledger raises on purpose."""


class RunNotFound(LedgerError):
    """No run has this id."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} was not found in the ledger")
        self.run_id = run_id


class IdempotencyConflict(LedgerError):
    """The submission key already names a run admitted from a different submission."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"the submission key already identifies run {run_id!r}, "
            "which was admitted from a different submission"
        )
        self.run_id = run_id


class EventRejected(LedgerError):
    """An event breaks a rule of the run's history; nothing of its batch was appended."""

    def __init__(self, kind: str, rule: str, position: int | None = None) -> None:
        where = "" if position is None else f" (batch position {position})"
        super().__init__(f"{kind} rejected{where}: {rule}")
        self.kind = kind
        self.rule = rule
        self.position = position


class PayloadRejected(LedgerError, ValueError):
    """An admitted submission or event is not storable: too large, or not plain JSON."""


class InvalidArgument(LedgerError, ValueError):
    """A call's arguments are malformed (empty batch, bad limit, unknown kind, bad title)."""


class InvalidCursor(LedgerError, ValueError):
    """The string is not a ledger cursor (``v2:<seq>``)."""

    def __init__(self, cursor: object) -> None:
        super().__init__(f"{cursor!r} is not a run cursor; cursors look like 'v2:<sequence>'")
        self.cursor = cursor


class CursorAhead(LedgerError):
    """The cursor points past the run's last event (it came from another run or ledger)."""

    def __init__(self, cursor: str, end: str) -> None:
        super().__init__(f"cursor {cursor} is ahead of the run, which ends at {end}")
        self.cursor = cursor
        self.end = end


class LedgerVersionError(LedgerError):
    """The database was written by a ledger schema this code does not know."""
