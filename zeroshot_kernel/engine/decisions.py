"""What the reducer tells the controller to do next.

The controller acts on ``voids`` first, then on ``terminal`` once nothing is in flight, then
on ``dispatches``; ``progress`` is the walk's trace (which nodes completed and which values
flowed out of them) for views and tests, never needed to drive the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from zeroshot_kernel.ledger.events import Occurrence, TerminalResult, VoidReason


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Start one execution: attempt ``attempt`` of the occurrence ``node_instance``."""

    node_instance: str
    execution: str
    occurrence: Occurrence
    attempt: int
    worker: str
    node_kind: Literal["step", "verifier"]
    input: Any


@dataclass(frozen=True, slots=True)
class VoidLoser:
    """Cancel an active execution whose result can no longer matter, then record the void."""

    execution: str
    reason: VoidReason


@dataclass(frozen=True, slots=True)
class TerminalDecision:
    """The run's result; record it once no execution is active."""

    result: TerminalResult


@dataclass(frozen=True, slots=True)
class Continue:
    """``node`` completed (fell through its end) in this walk."""

    node: str


@dataclass(frozen=True, slots=True)
class PromotedValue:
    path: tuple[str, ...]
    value: Any


@dataclass(frozen=True, slots=True)
class Promote:
    """Values that flowed out of ``node`` into its enclosing state: an executable's writes or
    a group's promoted paths."""

    node: str
    map_indices: tuple[int, ...]
    values: tuple[PromotedValue, ...]


Progress = Continue | Promote


@dataclass(frozen=True, slots=True)
class Decisions:
    """Everything one reduction decided.

    ``waiting`` lists the active executions the run still waits on (those not being voided),
    in dispatch order.
    """

    dispatches: tuple[Dispatch, ...]
    voids: tuple[VoidLoser, ...]
    terminal: TerminalDecision | None
    waiting: tuple[str, ...]
    progress: tuple[Progress, ...]

    @property
    def finished(self) -> bool:
        """A terminal is decided and nothing is in flight: the run can be closed."""
        return self.terminal is not None and not self.voids and not self.waiting
