"""Controller leases: at most one live controller per run, proven by heartbeats.

These run inside the ledger's write transaction after the run row is locked, so two
controllers racing for one run are serialised by the database, not by timing.
"""

from __future__ import annotations

from sqlmodel import Session

from zeroshot_kernel.ledger.tables import LeaseRow


def acquire(
    session: Session,
    run_id: str,
    owner: str,
    now: float,
    ttl_s: float,
    *,
    replacing: str | None = None,
) -> bool:
    """Take the lease if nobody holds it, it lapsed, ``owner`` already holds it, or its
    holder is ``replacing`` (a controller the caller proved dead)."""
    lease = session.get(LeaseRow, run_id)
    if lease is None:
        session.add(LeaseRow(run_id=run_id, owner=owner, expires_at=now + ttl_s, heartbeat_at=now))
        return True
    if lease.owner not in (owner, replacing) and lease.expires_at > now:
        return False
    _extend(lease, owner, now, ttl_s)
    return True


def renew(session: Session, run_id: str, owner: str, now: float, ttl_s: float) -> bool:
    """Extend a live lease held by ``owner``; a lapsed one is lost, even if still unclaimed,
    so a controller that missed its heartbeat must re-acquire (and re-read the run)."""
    lease = session.get(LeaseRow, run_id)
    if lease is None or lease.owner != owner or lease.expires_at <= now:
        return False
    _extend(lease, owner, now, ttl_s)
    return True


def release(session: Session, run_id: str, owner: str) -> None:
    """Drop the lease if ``owner`` holds it; releasing someone else's lease does nothing."""
    lease = session.get(LeaseRow, run_id)
    if lease is not None and lease.owner == owner:
        session.delete(lease)


def _extend(lease: LeaseRow, owner: str, now: float, ttl_s: float) -> None:
    lease.owner = owner
    lease.expires_at = now + ttl_s
    lease.heartbeat_at = now
