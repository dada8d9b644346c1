"""What the reducer reads: one entry per dispatched execution, in the state the ledger
recorded for it. The controller derives these from ``node_started``, ``node_completed`` and
``execution_voided`` events; positions are ledger positions (any strictly increasing order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.contract.outcome import WorkerOutcome
from zeroshot_kernel.ledger.events import Occurrence, VoidReason


@dataclass(frozen=True, slots=True)
class Active:
    """Dispatched and not yet settled or voided."""


@dataclass(frozen=True, slots=True)
class Settled:
    """The execution finished at ``position`` with ``outcome`` (already type-checked)."""

    position: int
    outcome: WorkerOutcome


@dataclass(frozen=True, slots=True)
class Voided:
    """The execution was cancelled at ``position`` because it lost a join or a map terminal."""

    position: int
    reason: VoidReason


ExecutionState = Active | Settled | Voided


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One recorded dispatch: where it was dispatched, which occurrence and attempt it ran,
    the exact input it was given, and how it ended so far."""

    dispatch_position: int
    node_instance: str
    execution: str
    occurrence: Occurrence
    attempt: int
    input: Any
    state: ExecutionState
