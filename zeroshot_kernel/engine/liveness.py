"""Is anyone driving this run? Read from its lease, its phase and the lease holder's process.

A run that has not finished is driven by the controller holding its live lease. The
controller is gone when its lease lapsed, when no lease is held although the run started
(it was interrupted, or died before it could say so), or, on this host, when the holder's
process no longer exists (no need to wait out the lease then).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from zeroshot_kernel.engine.owner import parse_owner
from zeroshot_kernel.ledger import Ledger

ControllerPhase = Literal["finished", "live", "starting", "gone"]


@dataclass(frozen=True)
class ControllerState:
    """``phase``: the run finished; a controller holds it; none yet (just admitted); or the
    controller is gone (``why`` says how it is known)."""

    phase: ControllerPhase
    owner: str | None = None
    why: str | None = None


def controller_state(ledger: Ledger, run_id: str) -> ControllerState:
    snapshot = ledger.snapshot(run_id)
    if snapshot.terminal is not None:
        return ControllerState("finished")
    lease = ledger.lease(run_id)
    if lease is None:
        if snapshot.phase == "admitted":
            return ControllerState("starting")
        return ControllerState("gone", why="no controller holds the run")
    owner = parse_owner(lease.owner)
    if owner is not None and owner.gone():
        return ControllerState("gone", lease.owner, f"its controller process {owner.pid} is gone")
    if lease.expires_at.timestamp() <= time.time():
        return ControllerState(
            "gone", lease.owner, f"its controller's lease lapsed at {lease.expires_at:%H:%M:%S}"
        )
    return ControllerState("live", lease.owner)
