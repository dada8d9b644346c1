"""What the reducer reads: one entry per dispatched execution, in the state the ledger
recorded for it. The controller derives these from ``node_started``, ``node_completed`` and
``execution_voided`` events (as folded into a ledger snapshot, see :class:`HistoryBook`);
positions are ledger positions (any strictly increasing order)."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from itertools import compress
from typing import Any

from zeroshot_kernel.contract.outcome import WorkerOutcome
from zeroshot_kernel.ledger import state as ledger_state
from zeroshot_kernel.ledger.cursor import parse_cursor
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


def history_entry(recorded: ledger_state.ExecutionSnapshot) -> HistoryEntry:
    """The reducer's entry for one execution of a ledger snapshot."""
    state: ExecutionState
    if isinstance(recorded.state, ledger_state.Completed):
        state = Settled(parse_cursor(recorded.state.at), recorded.state.outcome)
    elif isinstance(recorded.state, ledger_state.Voided):
        state = Voided(parse_cursor(recorded.state.at), recorded.state.reason)
    else:
        state = Active()
    return HistoryEntry(
        dispatch_position=parse_cursor(recorded.started_at),
        node_instance=recorded.reference.node_instance,
        execution=recorded.reference.execution,
        occurrence=recorded.occurrence,
        attempt=recorded.attempt,
        input=recorded.input,
        state=state,
    )


class History(tuple[HistoryEntry, ...]):
    """An immutable history that carries what a reduction would otherwise recompute from
    every entry: lookup tables, the unsettled entries, and what changed since the history
    it was made from. Made by :class:`HistoryBook`; ``reduce`` takes any sequence."""

    by_execution: dict[str, HistoryEntry]
    by_attempt: dict[tuple[str, int], HistoryEntry]
    unsettled: list[HistoryEntry]
    """The entries not settled (active or voided), in history order."""
    base: History | None
    """The history this one was made from, while this one is its book's latest."""
    changed: frozenset[tuple[str, int]]
    """(node instance, attempt) of every entry that is not ``base``'s very own."""


def _history(
    entries: list[HistoryEntry],
    by_execution: dict[str, HistoryEntry],
    by_attempt: dict[tuple[str, int], HistoryEntry],
    unsettled: list[HistoryEntry],
    base: History | None,
    changed: frozenset[tuple[str, int]],
) -> History:
    history = History(entries)
    history.by_execution, history.by_attempt = by_execution, by_attempt
    history.unsettled, history.base, history.changed = unsettled, base, changed
    return history


EMPTY_HISTORY = _history([], {}, {}, [], None, frozenset())


class HistoryBook:
    """One run's history across its snapshots, for a controller that reduces it each cycle.

    The ledger shares unchanged execution objects between snapshots, and snapshots keep
    executions in dispatch order, so an entry is rebuilt only where the execution object
    at its position changed: unchanged entries stay the very same objects, which the
    reducer's memo recognises without looking at them. Finding the changes and copying the
    tables run in C, one pointer comparison per execution; only changed entries cost more.
    """

    def __init__(self) -> None:
        self._recorded: list[ledger_state.ExecutionSnapshot] = []
        self._history = EMPTY_HISTORY
        self._unsettled: dict[str, HistoryEntry] = {}

    def entries(self, snapshot: ledger_state.RunSnapshot) -> History:
        """The history of ``snapshot``, in dispatch order."""
        recorded = list(snapshot.executions.values())
        before, previous = self._recorded, self._history
        if len(recorded) < len(before):
            return self._rebuilt(recorded)
        entries = list(previous)
        by_execution = dict(previous.by_execution)
        by_attempt = dict(previous.by_attempt)
        changed = []
        moved = compress(range(len(before)), map(operator.is_not, before, recorded))
        for position in (*moved, *range(len(before), len(recorded))):
            entry = history_entry(recorded[position])
            key = (entry.node_instance, entry.attempt)
            if position < len(before):
                old = entries[position]
                if (old.execution, old.node_instance, old.attempt) != (entry.execution, *key):
                    return self._rebuilt(recorded)
                entries[position] = entry
            elif entry.execution in by_execution or key in by_attempt:
                return self._rebuilt(recorded)
            else:
                entries.append(entry)
            by_execution[entry.execution] = by_attempt[key] = entry
            self._track(entry)
            changed.append(key)
        history = _history(
            entries,
            by_execution,
            by_attempt,
            list(self._unsettled.values()),
            previous,
            frozenset(changed),
        )
        previous.base = None  # only the latest history keeps its base: no chain builds up
        return self._keep(recorded, history)

    def _track(self, entry: HistoryEntry) -> None:
        if isinstance(entry.state, Settled):
            self._unsettled.pop(entry.execution, None)
        else:
            self._unsettled[entry.execution] = entry

    def _rebuilt(self, recorded: list[ledger_state.ExecutionSnapshot]) -> History:
        """From scratch, when executions moved or two claim one attempt (then the tables are
        shorter than the history, and the reducer reports the mismatch)."""
        entries = [history_entry(execution) for execution in recorded]
        self._unsettled = {}
        for entry in entries:
            self._track(entry)
        history = _history(
            entries,
            {entry.execution: entry for entry in entries},
            {(entry.node_instance, entry.attempt): entry for entry in entries},
            list(self._unsettled.values()),
            None,
            frozenset(),
        )
        return self._keep(recorded, history)

    def _keep(self, recorded: list[ledger_state.ExecutionSnapshot], history: History) -> History:
        self._recorded, self._history = recorded, history
        return history
