"""Every way the ledger refuses, each under :class:`LedgerError` and a family of
:mod:`zeroshot_kernel.exceptions`.

Callers that name the ledger as the problem (the CLI, the controller, the widgets) catch
:class:`LedgerError` once; callers that care about the kind of problem, not where it came
from, catch its family (a missing run is a ``NotFound`` like any other missing thing).
"""

from __future__ import annotations

from typing import Literal

from zeroshot_kernel.contract.reading import shorten
from zeroshot_kernel.exceptions import (
    InvalidInput,
    NotFound,
    Refused,
    Unavailable,
    ZeroshotError,
)


class LedgerError(ZeroshotError):
    """Marks an error as the ledger's (never raised itself): each subclass also derives from
    the family that says what kind of problem it is."""


class RunNotFound(LedgerError, NotFound):
    """No run has this id."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} was not found in the ledger")
        self.run_id = run_id


class IdempotencyConflict(LedgerError, InvalidInput):
    """The submission key already names a run admitted from a different submission."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"the submission key already identifies run {run_id!r}, "
            "which was admitted from a different submission"
        )
        self.run_id = run_id


class EventRejected(LedgerError, Refused):
    """An event breaks a rule of the run's history; nothing of its batch was appended."""

    def __init__(self, kind: str, rule: str, position: int | None = None) -> None:
        where = "" if position is None else f" (batch position {position})"
        super().__init__(f"{kind} rejected{where}: {rule}")
        self.kind = kind
        self.rule = rule
        self.position = position


class PayloadRejected(LedgerError, InvalidInput):
    """An admitted submission or event is not storable: too large, or not plain JSON."""


class InvalidArgument(LedgerError, InvalidInput):
    """A call's arguments are malformed (empty batch, bad limit, unknown kind, bad title)."""


class InvalidCursor(LedgerError, InvalidInput):
    """The string is not a ledger cursor (``v2:<seq>``)."""

    def __init__(self, cursor: object) -> None:
        super().__init__(f"{cursor!r} is not a run cursor; cursors look like 'v2:<sequence>'")
        self.cursor = cursor


class CursorAhead(LedgerError, InvalidInput):
    """The cursor points past the run's last event (it came from another run or ledger)."""

    def __init__(self, cursor: str, end: str) -> None:
        super().__init__(f"cursor {cursor} is ahead of the run, which ends at {end}")
        self.cursor = cursor
        self.end = end


class LedgerVersionError(LedgerError, Unavailable):
    """The database was written by a ledger schema this code does not know."""


class LeaseNotHeld(LedgerError, Refused):
    """A controller wrote without holding the run's lease (it was paused or cut off past
    its lease and another controller may have taken over): nothing was written."""

    def __init__(self, run_id: str, owner: str) -> None:
        super().__init__(f"controller {owner} no longer holds the lease on run {run_id}")
        self.run_id = run_id
        self.owner = owner


LedgerProblem = Literal["corrupt", "full", "read_only", "busy", "unreachable", "failed"]

_PROBLEMS: tuple[tuple[LedgerProblem, tuple[str, ...], str], ...] = (
    (
        "corrupt",
        ("file is not a database", "malformed", "database corruption"),
        "the database file is damaged (not a database, or malformed)",
    ),
    (
        "full",
        ("database or disk is full", "disk i/o error", "file too large"),
        "writing failed: the disk is full or a file-size limit was hit",
    ),
    (
        "read_only",
        ("readonly database", "read-only", "read only"),
        "the database is read-only here",
    ),
    (
        "busy",
        ("database is locked", "database table is locked", "lock timeout", "could not obtain lock"),
        "the database stayed locked by another process past the busy timeout",
    ),
    (
        "unreachable",
        ("unable to open database file",),
        "the database file cannot be opened or created (no permission, a read-only file "
        "system or folder, or a missing folder)",
    ),
    (
        "unreachable",
        (
            "could not connect",
            "connection refused",
            "connection timed out",
            "could not translate host",
            "server closed the connection",
            "password authentication failed",
            "no such host",
            "timeout expired",
            "name or service not known",
        ),
        "the database cannot be reached or opened",
    ),
)


class LedgerUnavailable(LedgerError, Unavailable):
    """The database under the ledger failed: damaged, full, read-only, locked too long or
    unreachable. ``problem`` says which; the message is one line naming the ledger."""

    def __init__(self, ledger: str, problem: LedgerProblem, reason: str) -> None:
        super().__init__(f"ledger {shorten(ledger)}: {reason}")
        self.ledger = ledger
        self.problem = problem
        self.reason = reason


def classify(ledger: str, driver_message: str, secret: str | None = None) -> LedgerUnavailable:
    """The :class:`LedgerUnavailable` for a database driver's message (its first line, any
    ``secret`` such as a password hidden)."""
    first = (driver_message.strip().splitlines() or ["unknown error"])[0][:300]
    if secret:
        first = first.replace(secret, "***")
    lowered = first.lower()
    for problem, needles, meaning in _PROBLEMS:
        if any(needle in lowered for needle in needles):
            return LedgerUnavailable(ledger, problem, f"{meaning} ({first})")
    return LedgerUnavailable(ledger, "failed", f"database error: {first}")
