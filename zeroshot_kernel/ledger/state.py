"""A run's projection and the rules its history must obey.

:func:`apply` is pure: the ledger folds each appended event into the stored snapshot with
it, inside the append transaction, so a batch that breaks a rule is never written. The
same function replays a history from :func:`admitted_snapshot`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, NoReturn, get_args

from pydantic import Field

from zeroshot_kernel.contract.model import ContractModel
from zeroshot_kernel.contract.outcome import WorkerOutcome
from zeroshot_kernel.contract.values import PositiveInteger
from zeroshot_kernel.ledger.cursor import INITIAL_CURSOR, format_cursor, parse_cursor
from zeroshot_kernel.ledger.errors import EventRejected
from zeroshot_kernel.ledger.events import (
    ControllerAttached,
    ExecutionReference,
    ExecutionVoided,
    ForceStopRequested,
    NodeCompleted,
    NodeStarted,
    Occurrence,
    RunEvent,
    RunPhase,
    RunStarted,
    SafeLog,
    Terminal,
    TerminalResult,
    VoidReason,
)

EVENT_KINDS: frozenset[str] = frozenset(
    model.model_fields["kind"].default for model in get_args(get_args(RunEvent)[0])
)


class Active(ContractModel):
    status: Literal["active"] = "active"


class Completed(ContractModel):
    status: Literal["completed"] = "completed"
    at: str
    outcome: WorkerOutcome


class Voided(ContractModel):
    status: Literal["voided"] = "voided"
    at: str
    reason: VoidReason


ExecutionState = Annotated[Active | Completed | Voided, Field(discriminator="status")]


class ExecutionSnapshot(ContractModel):
    """One dispatch as the run sees it now; ``startedAt`` and ``at`` are cursors."""

    reference: ExecutionReference
    occurrence: Occurrence
    attempt: PositiveInteger
    input: Any
    started_at: str
    state: ExecutionState


class RunSnapshot(ContractModel):
    """Everything a reader needs about a run at ``cursor``, without replaying events."""

    run_id: str
    title: str
    cursor: str = INITIAL_CURSOR
    phase: RunPhase = "admitted"
    force_stop_requested: bool = False
    executions: dict[str, ExecutionSnapshot] = Field(default_factory=dict)
    terminal: TerminalResult | None = None

    def active(self) -> list[ExecutionSnapshot]:
        """Executions dispatched and not yet completed or voided, in dispatch order."""
        return [e for e in self.executions.values() if isinstance(e.state, Active)]


def admitted_snapshot(run_id: str, title: str) -> RunSnapshot:
    """The projection of a run with no events yet."""
    return RunSnapshot(run_id=run_id, title=title)


def apply(snapshot: RunSnapshot, event: RunEvent, at: str) -> RunSnapshot:
    """The snapshot after ``event``, which lands at cursor ``at`` (the next position).

    Raises :class:`EventRejected` naming the rule the event breaks.
    """
    if parse_cursor(at) != parse_cursor(snapshot.cursor) + 1:
        raise ValueError(f"event cursor {at} does not follow the snapshot at {snapshot.cursor}")
    if snapshot.terminal is not None:
        _reject(event, "nothing may follow terminal")
    changes = _changes(snapshot, event, at)
    return snapshot.model_copy(update={**changes, "cursor": at})


def _changes(snapshot: RunSnapshot, event: RunEvent, at: str) -> dict[str, Any]:
    match event:
        case RunStarted():
            if snapshot.phase != "admitted":
                _reject(event, "run_started is valid only while the run is admitted")
            return {"phase": "running"}
        case NodeStarted():
            return {"executions": _started(snapshot, event, at)}
        case NodeCompleted():
            completed = Completed(at=at, outcome=event.completion.outcome)
            return {"executions": _settled(snapshot, event, event.completion.reference, completed)}
        case ExecutionVoided():
            voided = Voided(at=at, reason=event.reason)
            return {"executions": _settled(snapshot, event, event.reference, voided)}
        case SafeLog():
            if event.execution is not None and event.execution not in snapshot.executions:
                _reject(event, f"execution {event.execution!r} was never dispatched")
            return {}
        case ControllerAttached():
            return {}
        case ForceStopRequested():
            if snapshot.force_stop_requested:
                _reject(event, "a force stop was already requested")
            return {"force_stop_requested": True, "phase": "stopping"}
        case Terminal():
            if snapshot.active():
                _reject(event, "terminal requires that no execution is active")
            return {"terminal": event.result, "phase": "finished"}
    raise TypeError(f"not a run event: {event!r}")


def _started(snapshot: RunSnapshot, event: NodeStarted, at: str) -> dict[str, ExecutionSnapshot]:
    if snapshot.phase != "running":
        _reject(event, f"node_started requires a running run, but it is {snapshot.phase}")
    _require_this_run(snapshot, event, event.reference)
    execution = event.reference.execution
    if execution in snapshot.executions:
        _reject(event, f"execution {execution!r} was already dispatched")
    started = ExecutionSnapshot(
        reference=event.reference,
        occurrence=event.occurrence,
        attempt=event.attempt,
        input=event.input,
        started_at=at,
        state=Active(),
    )
    return {**snapshot.executions, execution: started}


def _settled(
    snapshot: RunSnapshot,
    event: NodeCompleted | ExecutionVoided,
    reference: ExecutionReference,
    state: Completed | Voided,
) -> dict[str, ExecutionSnapshot]:
    _require_this_run(snapshot, event, reference)
    current = snapshot.executions.get(reference.execution)
    if current is None:
        _reject(event, f"execution {reference.execution!r} was never dispatched")
    if current.reference != reference:
        _reject(event, "the reference does not match the one the execution was dispatched with")
    if not isinstance(current.state, Active):
        _reject(event, f"execution {reference.execution!r} is already {current.state.status}")
    return {**snapshot.executions, reference.execution: current.model_copy(update={"state": state})}


def _require_this_run(
    snapshot: RunSnapshot, event: RunEvent, reference: ExecutionReference
) -> None:
    if reference.run_id != snapshot.run_id:
        _reject(event, f"the execution belongs to run {reference.run_id!r}, not this run")


def _reject(event: RunEvent, rule: str) -> NoReturn:
    raise EventRejected(event.kind, rule)


def replay(snapshot: RunSnapshot, events: Sequence[RunEvent]) -> RunSnapshot:
    """Fold a batch into ``snapshot`` in order, the first event one past its cursor.

    A rejection names the event's position in the batch.
    """
    sequence = parse_cursor(snapshot.cursor)
    for position, event in enumerate(events):
        try:
            snapshot = apply(snapshot, event, format_cursor(sequence + position + 1))
        except EventRejected as rejected:
            raise EventRejected(rejected.kind, rejected.rule, position) from None
    return snapshot
