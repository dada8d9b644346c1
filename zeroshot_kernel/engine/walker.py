"""The walk: re-evaluates the graph against the recorded history, node by node.

Executables either find their recorded executions (and apply the final outcome) or ask for a
dispatch; groups live in ``groups``, ``par`` and ``map``. The walker also keeps the
reduction's books: which executions the walk consumed, which it voided and from which
position, the decisions it emitted, and every history lookup it made, so that a sequence
can resume at a :class:`~zeroshot_kernel.engine.memo.Point` the last reduction left.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from zeroshot_kernel.contract.graph import (
    ChoiceNode,
    ExecutableNode,
    FailNode,
    GraphNode,
    LoopNode,
    MapNode,
    ParNode,
    SeqNode,
    StepNode,
    SucceedNode,
    VerifierNode,
)
from zeroshot_kernel.contract.outcome import (
    ErrorOutcome,
    VerifiedOutcome,
    VerifierOutcome,
    WorkerOutcome,
)
from zeroshot_kernel.contract.payload import PayloadType, check_value
from zeroshot_kernel.engine.bindings import build_payload, channel_value, with_path
from zeroshot_kernel.engine.decisions import (
    Continue,
    Dispatch,
    Progress,
    Promote,
    PromotedValue,
)
from zeroshot_kernel.engine.graph_facts import GraphIndex
from zeroshot_kernel.engine.groups import eval_choice, eval_loop, eval_seq
from zeroshot_kernel.engine.history import History, HistoryEntry, Settled
from zeroshot_kernel.engine.identity import execution_id, node_instance_id
from zeroshot_kernel.engine.map import eval_map
from zeroshot_kernel.engine.memo import FORGOTTEN, Point, Reads, Recalled, Track, same_json
from zeroshot_kernel.engine.outcomes import is_retryable
from zeroshot_kernel.engine.par import eval_par
from zeroshot_kernel.engine.reducer_errors import HistoryMismatch, PayloadTypeError, ReducerError
from zeroshot_kernel.engine.traversal import PENDING, Done, Ended, Status, Traversal
from zeroshot_kernel.engine.walk_context import Channels, Context
from zeroshot_kernel.ledger.events import FailedResult, Occurrence, SucceededResult, VoidReason


@dataclass(frozen=True, slots=True)
class Walked:
    """A subtree walked on its own clone of a context, with the executions it touched."""

    status: Status
    context: Context
    touched: frozenset[str]


class Walker:
    """One reduction: the walk itself plus its books (consumed executions, void cutoffs,
    emitted dispatches and progress)."""

    def __init__(
        self,
        run_id: str,
        index: GraphIndex,
        history: Sequence[HistoryEntry],
        recalled: Recalled = FORGOTTEN,
    ) -> None:
        self.run_id = run_id
        self.recalled = recalled
        self.index = index
        self.entries: Mapping[str, HistoryEntry]
        self._attempts: Mapping[tuple[str, int], HistoryEntry]
        if isinstance(history, History):
            self.entries, self._attempts = history.by_execution, history.by_attempt
        else:
            self.entries = {entry.execution: entry for entry in history}
            self._attempts = {(entry.node_instance, entry.attempt): entry for entry in history}
        if not len(self.entries) == len(self._attempts) == len(history):
            _reject_duplicates(history)
        self.consumed: set[str] = set()
        self.void_cutoffs: dict[str, tuple[int, VoidReason]] = {}
        self.dispatches: list[Dispatch] = []
        self.progress: list[Progress] = []
        self.reads: Reads = {}
        self._touching: list[set[str]] = []
        self._handed: tuple[GraphNode, Track] | None = None
        self._returned: Track | None = None

    # --- the walk -----------------------------------------------------------------------

    def walk(self, node: GraphNode, ctx: Context, tr: Traversal) -> Status:
        """Walk ``node`` in ``ctx`` (which it updates as the node completes)."""
        match node:
            case StepNode() | VerifierNode():
                return self._eval_executable(node, ctx, tr)
            case SeqNode():
                return eval_seq(self, node, ctx, tr)
            case ChoiceNode():
                return eval_choice(self, node, ctx, tr)
            case LoopNode():
                return eval_loop(self, node, ctx, tr)
            case ParNode():
                return eval_par(self, node, ctx, tr)
            case MapNode():
                return eval_map(self, node, ctx, tr)
            case SucceedNode():
                output = build_payload(node.bindings, ctx.state, tr.item)
                require_fits(output, node.output, f"the output of succeed node {node.name}")
                return Ended(0, SucceededResult(status="succeeded", output=output))
            case FailNode():
                return Ended(0, FailedResult(status="failed", reason=node.reason))
        raise AssertionError(f"unknown node {node!r}")

    def walk_clone(self, node: GraphNode, parent: Context, tr: Traversal) -> Walked:
        """Walk ``node`` on a fresh clone of ``parent`` (writes counted from zero)."""
        ctx = parent.clone(fresh_writes=True)
        touched: set[str] = set()
        with self._collecting(touched):
            status = self.walk(node, ctx, tr)
        return Walked(status, ctx, frozenset(touched))

    # --- executables --------------------------------------------------------------------

    def _eval_executable(self, node: ExecutableNode, ctx: Context, tr: Traversal) -> Status:
        """Attempts 1..n of this occurrence: a retryable error that leaves attempts moves on
        to the next attempt; the first other outcome (or the last attempt's) is the node's."""
        visit = ctx.visit((node.name, tr.map_indices))
        instance = node_instance_id(node.name, tr.map_indices, visit)
        payload = build_payload(node.input_bindings, ctx.state, tr.item)
        require_fits(payload, node.input, f"the input of {node.name}")
        occurrence = _occurrence(node.name, tr.map_indices)
        attempt = 1
        while True:
            execution = execution_id(self.run_id, node.name, instance, attempt)
            key = (instance, attempt)
            entry = self._attempts.get(key)
            self.reads[key] = entry
            if entry is None:
                if tr.decide and tr.cutoff is None:
                    self.dispatches.append(
                        Dispatch(
                            node_instance=instance,
                            execution=execution,
                            occurrence=occurrence,
                            attempt=attempt,
                            worker=node.worker,
                            node_kind=node.kind,
                            input=payload,
                        )
                    )
                return PENDING
            self._consume(entry, execution, occurrence, payload)
            state = entry.state
            if not (
                tr.sees(entry.dispatch_position)
                and isinstance(state, Settled)
                and tr.sees(state.position)
            ):
                return PENDING
            if is_retryable(state.outcome) and attempt < node.attempts:
                attempt += 1
                continue
            self._apply_outcome(node, state.outcome, ctx, tr)
            self.emit_continue(node.name, tr)
            return Done(state.position)

    def _consume(
        self, entry: HistoryEntry, execution: str, occurrence: Occurrence, payload: Any
    ) -> None:
        if entry.execution != execution or not (
            entry.occurrence is occurrence or entry.occurrence == occurrence
        ):
            raise HistoryMismatch(
                f"{entry.node_instance} attempt {entry.attempt} was recorded as execution "
                f"{entry.execution} of {entry.occurrence}, expected {execution} of {occurrence}"
            )
        if not same_json(entry.input, payload):
            raise HistoryMismatch(
                f"execution {entry.execution} ({entry.node_instance}) was dispatched with a "
                "different input than the graph builds now"
            )
        self.consumed.add(entry.execution)
        for touched in self._touching:
            touched.add(entry.execution)

    def _apply_outcome(
        self, node: ExecutableNode, outcome: WorkerOutcome, ctx: Context, tr: Traversal
    ) -> None:
        """An error sets the node's error control and writes nothing; a verifier's signals
        become controls before its writes apply. Either replaces the controls of the node's
        previous outcome (an earlier loop iteration), so guards read its last outcome."""
        scope = self.index.scope(node.name, tr.map_indices)
        ctx.controls.pop((node.name, "error", None, scope), None)
        for name in node.signals if isinstance(node, VerifierNode) else ():
            ctx.controls.pop((node.name, "signal", name, scope), None)
        if isinstance(outcome, ErrorOutcome):
            self.set_control(ctx, node.name, "error", None, outcome.code, tr)
            return
        if isinstance(node, StepNode) and isinstance(outcome, VerifiedOutcome):
            channels = Channels(outcome.output, {}, None)
        elif isinstance(node, VerifierNode) and isinstance(outcome, VerifierOutcome):
            for name, label in sorted(outcome.signals.items()):
                self.set_control(ctx, node.name, "signal", name, label, tr)
            channels = Channels(outcome.output, dict(outcome.signals), outcome.diagnostic)
        else:
            raise HistoryMismatch(f"{node.kind} {node.name} recorded a {outcome.status} outcome")
        ctx.channels[(node.name, tr.map_indices)] = channels
        values = []
        for binding in node.write_bindings:
            source = binding.value.node
            read = ctx.channels.get((source, self.index.scope(source, tr.map_indices)))
            if read is None:
                raise ReducerError(f"{node.name} writes from {source}, which has no outcome")
            value = channel_value(read, binding.value)
            ctx.state = with_path(ctx.state, binding.target, value)
            ctx.written.add(tuple(binding.target))
            values.append(PromotedValue(tuple(binding.target), value))
        self.emit_promote(node.name, tr, tuple(values))

    # --- books --------------------------------------------------------------------------

    def set_control(
        self,
        ctx: Context,
        node: str,
        source: str,
        field: str | None,
        label: str,
        tr: Traversal,
    ) -> None:
        ctx.controls[(node, source, field, self.index.scope(node, tr.map_indices))] = label

    def void(self, executions: Iterable[str], cutoff: int, reason: VoidReason) -> None:
        """Mark the unsettled ``executions`` as losers from ``cutoff`` on. An execution that
        several scopes void keeps the earliest cutoff (and its reason)."""
        for execution in executions:
            if isinstance(self.entries[execution].state, Settled):
                continue
            known = self.void_cutoffs.get(execution)
            if known is None or cutoff < known[0]:
                self.void_cutoffs[execution] = (cutoff, reason)

    def emit_continue(self, node: str, tr: Traversal) -> None:
        if tr.decide:
            self.progress.append(Continue(node))

    def emit_promote(self, node: str, tr: Traversal, values: tuple[PromotedValue, ...]) -> None:
        if tr.decide and values:
            self.progress.append(Promote(node, tr.map_indices, values))

    # --- resuming -----------------------------------------------------------------------

    def hand(self, node: GraphNode, track: Track) -> None:
        """Give the sequence ``node``, walked next, the track the last reduction left it."""
        self._handed = (node, track)

    def claim(self, node: GraphNode) -> Track | None:
        """The track handed to ``node``; None when it walks untracked."""
        handed, self._handed = self._handed, None
        return handed[1] if handed is not None and handed[0] is node else None

    def give_back(self, track: Track) -> None:
        """A tracked sequence's track for the next reduction."""
        self._returned = track

    def take_back(self) -> Track | None:
        returned, self._returned = self._returned, None
        return returned

    def resume(self, point: Point | None) -> Point | None:
        """Restore the books as they were at ``point`` if this history answers every lookup
        made on the way there the way it did then; else None."""
        if point is None or not self.recalled.holds(point, self._attempts):
            return None
        self.consumed = set(point.consumed)
        self.progress = list(point.progress)
        self.void_cutoffs = dict(point.void_cutoffs)
        self.reads = dict(point.reads)
        return point

    def point(self, index: int, local: Context, position: int) -> Point:
        """Where a sequence stands before child ``index``, every earlier one done (a walk
        that stands there has emitted no dispatch and collects no touched set)."""
        return Point(
            index=index,
            context=local.clone(),
            position=position,
            consumed=frozenset(self.consumed),
            progress=tuple(self.progress),
            void_cutoffs=dict(self.void_cutoffs),
            reads=dict(self.reads),
        )

    @contextmanager
    def _collecting(self, touched: set[str]) -> Iterator[None]:
        self._touching.append(touched)
        try:
            yield
        finally:
            self._touching.pop()


@lru_cache(maxsize=1 << 16, typed=True)
def _occurrence(node: str, map_indices: tuple[int, ...]) -> Occurrence:
    """Occurrences are immutable values, built once per (node, indices)."""
    return Occurrence(node=node, map_indices=list(map_indices))


def _reject_duplicates(history: Sequence[HistoryEntry]) -> None:
    """Raise for the first entry that repeats an execution or an (instance, attempt)."""
    executions: set[str] = set()
    attempts: set[tuple[str, int]] = set()
    for entry in history:
        if entry.execution in executions:
            raise HistoryMismatch(f"execution {entry.execution} is recorded twice")
        if (entry.node_instance, entry.attempt) in attempts:
            raise HistoryMismatch(
                f"{entry.node_instance} attempt {entry.attempt} is recorded twice"
            )
        executions.add(entry.execution)
        attempts.add((entry.node_instance, entry.attempt))


def require_fits(value: Any, declared: PayloadType, what: str) -> None:
    violations = check_value(value, declared)
    if violations:
        details = "; ".join(violation.describe() for violation in violations)
        raise PayloadTypeError(f"{what} does not fit its declared type: {details}")
