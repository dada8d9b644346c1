"""The pure reducer: ``(compiled graph, initial input, history) -> decisions``.

Every call walks the graph from the start against the history, so resuming a run is
replaying its history: a recorded execution is found again by its deterministic identity
and never dispatched twice. The reducer reads no clock, does no I/O and has no randomness;
the same arguments always give the same decisions. It does remember, per graph object and
run, where the last walk's sequences stood (``memo``), and skips the finished children of
a sequence when the history answers every lookup they made with the same entries: a run's
reductions then cost what changed, not the whole history again. History entries and the
initial input are values; they must not be mutated in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zeroshot_kernel.contract.graph import FULL_PROFILE, CompiledGraphIr
from zeroshot_kernel.engine.decisions import Decisions, TerminalDecision, VoidLoser
from zeroshot_kernel.engine.graph_facts import index_of
from zeroshot_kernel.engine.history import Active, History, HistoryEntry, Settled, Voided
from zeroshot_kernel.engine.memo import recall, remember
from zeroshot_kernel.engine.reducer_errors import HistoryMismatch, ReducerError
from zeroshot_kernel.engine.traversal import Done, Ended, Traversal
from zeroshot_kernel.engine.walk_context import Context
from zeroshot_kernel.engine.walker import Walker, require_fits


def reduce(
    ir: CompiledGraphIr,
    initial_input: Any,
    history: Sequence[HistoryEntry],
    *,
    run_id: str,
) -> Decisions:
    """What the run does next, given everything it recorded so far.

    Raises ``HistoryMismatch`` when the history is not one this graph could have produced
    (every entry must be consumed by the walk, with the input the walk builds), and another
    ``ReducerError`` when the graph or input was not admitted as declared.
    """
    if ir.profile != FULL_PROFILE:
        raise ReducerError(f"only {FULL_PROFILE} graphs execute, not {ir.profile}")
    require_fits(initial_input, ir.initial_input, "the initial input")
    recalled = recall(ir.root, run_id, initial_input, history)
    walker = Walker(run_id, index_of(ir.root), history, recalled)
    walker.hand(ir.root, recalled.track)
    status = walker.walk(ir.root, Context(initial_input), Traversal())
    track = walker.take_back()
    if track is not None:
        remember(ir.root, run_id, initial_input, track, history)
    if isinstance(status, Done):
        raise ReducerError("the graph fell through its end without reaching succeed or fail")
    unsettled = (
        history.unsettled
        if isinstance(history, History)
        else [entry for entry in history if not isinstance(entry.state, Settled)]
    )
    _check_consumed(walker, history, unsettled)
    ordered = sorted(
        (entry for entry in unsettled if isinstance(entry.state, Active)),
        key=lambda entry: (entry.dispatch_position, entry.execution),
    )
    voids = tuple(
        VoidLoser(entry.execution, walker.void_cutoffs[entry.execution][1])
        for entry in ordered
        if entry.execution in walker.void_cutoffs
    )
    return Decisions(
        dispatches=tuple(walker.dispatches),
        voids=voids,
        terminal=TerminalDecision(status.result) if isinstance(status, Ended) else None,
        waiting=tuple(
            entry.execution for entry in ordered if entry.execution not in walker.void_cutoffs
        ),
        progress=tuple(walker.progress),
    )


def _check_consumed(
    walker: Walker, history: Sequence[HistoryEntry], unsettled: list[HistoryEntry]
) -> None:
    """Every entry was reached by the walk, and every void was one the walk decided, with
    its reason, after the position it was decided at. (The walk consumes only entries of
    the history, each once: when it consumed as many as there are, only voids can fail.)"""
    everything = len(walker.consumed) == len(history)
    for entry in unsettled if everything else history:
        if entry.execution not in walker.consumed:
            raise HistoryMismatch(
                f"execution {entry.execution} ({entry.node_instance} attempt {entry.attempt}) "
                "is not one this graph would have dispatched"
            )
        if isinstance(entry.state, Voided):
            owner = walker.void_cutoffs.get(entry.execution)
            if owner is None or owner[1] != entry.state.reason or entry.state.position <= owner[0]:
                raise HistoryMismatch(
                    f"execution {entry.execution} was voided ({entry.state.reason} at "
                    f"{entry.state.position}) without losing a join or a map terminal before"
                )
