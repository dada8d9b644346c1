"""What the ledger reports about runs and leases, besides snapshots and events."""

from __future__ import annotations

from datetime import UTC, datetime

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.ledger.events import RunPhase, TerminalResult


def utc(seconds: float) -> datetime:
    """A UNIX timestamp from the ledger's clock as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC)


class RunSummary(ContractModel):
    """One line of a run list: cheap to read (no snapshot is parsed)."""

    run_id: str
    title: str
    phase: RunPhase
    cursor: str
    created_at: datetime
    updated_at: datetime
    terminal: TerminalResult | None = None


class Lease(ContractModel):
    """Who controls a run, until when, and when it last said so.

    A lease past ``expiresAt`` is still reported: it names the controller that lapsed.
    """

    owner: str
    expires_at: datetime
    heartbeat_at: datetime
