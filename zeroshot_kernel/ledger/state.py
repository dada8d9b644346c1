"""A run's projection and the rules its history must obey.

:func:`apply` is pure: the ledger folds each appended event into the run's snapshot with
it, inside the append transaction, so a batch that breaks a rule is never written. The
same rules replay a history from :func:`admitted_snapshot`; :class:`Fold` applies a whole
batch with one copy of the executions, so a batch costs what it holds, not the run's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
EXECUTION_KINDS: frozenset[str] = frozenset({"node_started", "node_completed", "execution_voided"})
"""Event kinds that change an execution's entry in the snapshot."""
SNAPSHOT_KINDS: frozenset[str] = EXECUTION_KINDS | {
    "run_started",
    "force_stop_requested",
    "terminal",
}
"""Event kinds that change anything in a snapshot besides its cursor."""


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
ACTIVE = Active()


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


def started_execution(event: NodeStarted, at: str) -> ExecutionSnapshot:
    """The entry a ``node_started`` event at cursor ``at`` creates."""
    return ExecutionSnapshot(
        reference=event.reference,
        occurrence=event.occurrence,
        attempt=event.attempt,
        input=event.input,
        started_at=at,
        state=ACTIVE,
    )


def settled_state(event: NodeCompleted | ExecutionVoided, at: str) -> Completed | Voided:
    """The state a completion or a void at cursor ``at`` leaves its execution in."""
    if isinstance(event, NodeCompleted):
        return Completed(at=at, outcome=event.completion.outcome)
    return Voided(at=at, reason=event.reason)


class Fold:
    """A snapshot being moved forward event by event, under the rules.

    The executions are copied on the first event that changes one, so snapshots handed
    out before stay as they were (they are shared, e.g. by the ledger's cache).
    """

    def __init__(self, snapshot: RunSnapshot) -> None:
        self._base = snapshot
        self.phase: RunPhase = snapshot.phase
        self.force_stop_requested = snapshot.force_stop_requested
        self.terminal: TerminalResult | None = snapshot.terminal
        self.executions = snapshot.executions
        self._copied = False
        self.changed: dict[str, ExecutionSnapshot] = {}
        """Executions created or settled by this fold, by id (what a store must write)."""

    def add(self, event: RunEvent, at: str) -> None:
        """Fold ``event``, recorded at cursor ``at``; raises :class:`EventRejected`."""
        if self.terminal is not None:
            _reject(event, "nothing may follow terminal")
        match event:
            case RunStarted():
                if self.phase != "admitted":
                    _reject(event, "run_started is valid only while the run is admitted")
                self.phase = "running"
            case NodeStarted():
                self._start(event, at)
            case NodeCompleted():
                self._settle(event, event.completion.reference, at)
            case ExecutionVoided():
                self._settle(event, event.reference, at)
            case SafeLog():
                if event.execution is not None and event.execution not in self.executions:
                    _reject(event, f"execution {event.execution!r} was never dispatched")
            case ControllerAttached():
                pass
            case ForceStopRequested():
                if self.force_stop_requested:
                    _reject(event, "a force stop was already requested")
                self.force_stop_requested = True
                self.phase = "stopping"
            case Terminal():
                if any(isinstance(e.state, Active) for e in self.executions.values()):
                    _reject(event, "terminal requires that no execution is active")
                self.terminal = event.result
                self.phase = "finished"
            case _:
                raise TypeError(f"not a run event: {event!r}")

    def snapshot(self, cursor: str) -> RunSnapshot:
        """The folded snapshot, at ``cursor``."""
        return self._base.model_copy(
            update={
                "cursor": cursor,
                "phase": self.phase,
                "force_stop_requested": self.force_stop_requested,
                "terminal": self.terminal,
                "executions": self.executions,
            }
        )

    def _start(self, event: NodeStarted, at: str) -> None:
        if self.phase != "running":
            _reject(event, f"node_started requires a running run, but it is {self.phase}")
        self._require_this_run(event, event.reference)
        execution = event.reference.execution
        if execution in self.executions:
            _reject(event, f"execution {execution!r} was already dispatched")
        self._put(execution, started_execution(event, at))

    def _settle(
        self, event: NodeCompleted | ExecutionVoided, reference: ExecutionReference, at: str
    ) -> None:
        self._require_this_run(event, reference)
        current = self.executions.get(reference.execution)
        if current is None:
            _reject(event, f"execution {reference.execution!r} was never dispatched")
        if current.reference != reference:
            _reject(event, "the reference does not match the one the execution was dispatched with")
        if not isinstance(current.state, Active):
            _reject(event, f"execution {reference.execution!r} is already {current.state.status}")
        self._put(
            reference.execution, current.model_copy(update={"state": settled_state(event, at)})
        )

    def _put(self, execution: str, entry: ExecutionSnapshot) -> None:
        if not self._copied:
            self.executions = dict(self.executions)
            self._copied = True
        self.executions[execution] = entry
        self.changed[execution] = entry

    def _require_this_run(self, event: RunEvent, reference: ExecutionReference) -> None:
        if reference.run_id != self._base.run_id:
            _reject(event, f"the execution belongs to run {reference.run_id!r}, not this run")


def apply(snapshot: RunSnapshot, event: RunEvent, at: str) -> RunSnapshot:
    """The snapshot after ``event``, which lands at cursor ``at`` (the next position).

    Raises :class:`EventRejected` naming the rule the event breaks.
    """
    if parse_cursor(at) != parse_cursor(snapshot.cursor) + 1:
        raise ValueError(f"event cursor {at} does not follow the snapshot at {snapshot.cursor}")
    fold = Fold(snapshot)
    fold.add(event, at)
    return fold.snapshot(at)


def replay(snapshot: RunSnapshot, events: Sequence[RunEvent]) -> RunSnapshot:
    """Fold a batch into ``snapshot`` in order, the first event one past its cursor.

    A rejection names the event's position in the batch.
    """
    return fold_batch(snapshot, events).snapshot(
        format_cursor(parse_cursor(snapshot.cursor) + len(events))
    )


def fold_batch(snapshot: RunSnapshot, events: Sequence[RunEvent]) -> Fold:
    """:func:`replay`, keeping the fold (its ``changed`` executions)."""
    fold = Fold(snapshot)
    sequence = parse_cursor(snapshot.cursor)
    for position, event in enumerate(events):
        try:
            fold.add(event, format_cursor(sequence + position + 1))
        except EventRejected as rejected:
            raise EventRejected(rejected.kind, rejected.rule, position) from None
    return fold


def fold_recorded(
    snapshot: RunSnapshot, recorded: Iterable[tuple[int, RunEvent]], sequence: int
) -> RunSnapshot:
    """Bring ``snapshot`` to ``sequence`` with already recorded events (any subset that
    holds every event of :data:`SNAPSHOT_KINDS` in between)."""
    fold = Fold(snapshot)
    for at, event in recorded:
        fold.add(event, format_cursor(at))
    return fold.snapshot(format_cursor(sequence))


def _reject(event: RunEvent, rule: str) -> NoReturn:
    raise EventRejected(event.kind, rule)
