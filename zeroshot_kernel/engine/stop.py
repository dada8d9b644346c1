"""Stopping a run: a ledger request the live controller honours, or, when no controller
holds the run, an atomic close done by the caller itself."""

from __future__ import annotations

from typing import Literal

from zeroshot_kernel.contract.outcome import error
from zeroshot_kernel.engine.controller import LEASE_TTL_S
from zeroshot_kernel.engine.owner import new_owner_id, owner_gone
from zeroshot_kernel.ledger import Ledger
from zeroshot_kernel.ledger.events import (
    Completion,
    FailedResult,
    NodeCompleted,
    RunEvent,
    Terminal,
)

StopResult = Literal["already_finished", "requested", "closed"]


def stop_run(ledger: Ledger, run_id: str) -> StopResult:
    """Request a force stop; close the run here if no live controller holds it.

    A run that never started closes as ``force_stopped``; one whose controller died
    closes as ``runtime_lost`` (its in-flight executions recorded as crashes).
    """
    before = ledger.snapshot(run_id)
    if before.terminal is not None:
        return "already_finished"
    holder = ledger.lease(run_id)
    dead = holder.owner if holder is not None and owner_gone(holder.owner) else None
    ledger.request_force_stop(run_id)
    owner = f"stop:{new_owner_id()}"
    if not ledger.acquire_lease(run_id, owner, LEASE_TTL_S, replacing=dead):
        return "requested"
    try:
        snapshot = ledger.snapshot(run_id)
        if snapshot.terminal is not None:  # it ended meanwhile: by this request, or by itself
            stopped = (
                isinstance(snapshot.terminal, FailedResult)
                and snapshot.terminal.reason == "force_stopped"
            )
            return "requested" if stopped else "already_finished"
        reason = "force_stopped" if before.phase == "admitted" else "runtime_lost"
        events: list[RunEvent] = [
            NodeCompleted(
                completion=Completion(reference=execution.reference, outcome=error("crash")),
                detail="runtime_lost: no controller was running this execution",
            )
            for execution in snapshot.active()
        ]
        events.append(Terminal(result=FailedResult(status="failed", reason=reason)))
        ledger.append(run_id, events, owner=owner)
        return "closed"
    finally:
        ledger.release_lease(run_id, owner)
