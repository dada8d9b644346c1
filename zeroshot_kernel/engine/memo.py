"""What one reduction leaves for the next reduction of the same run.

A run's reductions repeat the same walk over an ever longer history, so the walk of a
sequence's finished children is done again and again. A :class:`Point` records where a
sequence stood before its first unfinished child: its local context, the walker's books,
and every history lookup made on the way (its :data:`Reads`). The walk is a deterministic
function of the graph, the run id, the initial input and those lookups, so when the next
reduction's history answers every recorded lookup with the same entry, resuming at the
point gives exactly what walking the finished children again would. Points chain down
nested sequences and loops along the path the walk is waiting on.

Checking the lookups costs one dictionary probe each, unless the history is a
:class:`~zeroshot_kernel.engine.history.History` made from the one the memo was left with
(a controller's ``HistoryBook`` makes them so): then only the entries that changed are
looked at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zeroshot_kernel.contract.canonical import dump_canonical
from zeroshot_kernel.contract.graph import GraphNode
from zeroshot_kernel.engine.decisions import Progress
from zeroshot_kernel.engine.graph_cache import IdentityCache
from zeroshot_kernel.engine.history import Active, History, HistoryEntry, Settled, Voided
from zeroshot_kernel.engine.walk_context import Context
from zeroshot_kernel.ledger.events import VoidReason

Reads = dict[tuple[str, int], HistoryEntry | None]
"""The lookups a walk made: (node instance, attempt) and the entry the history held."""


@dataclass(frozen=True, slots=True)
class Point:
    """A sequence before child ``index`` (a loop before iteration ``index``), every earlier
    one done. Never mutated: a walk resuming here works on copies."""

    index: int
    context: Context
    position: int
    consumed: frozenset[str]
    progress: tuple[Progress, ...]
    void_cutoffs: Mapping[str, tuple[int, VoidReason]]
    reads: Mapping[tuple[str, int], HistoryEntry | None]
    inner: Track | None = None
    """The track of child ``index`` (the loop's body) when it is a sequence or a loop."""


@dataclass(frozen=True, slots=True)
class Track:
    """A sequence's resume point, if any, and the child it waited on last time (where the
    next walk takes a new point)."""

    point: Point | None = None
    frontier: int | None = None


NO_TRACK = Track()


@dataclass(frozen=True, slots=True)
class Memo:
    """The root sequence's track for one (graph, run, initial input)."""

    run_id: str
    initial_input: bytes
    """Canonical form, so that an input changed in place is not mistaken for the same."""
    track: Track
    history: History | None
    """The history reduced, when it was a ``History``: every point agrees with it."""


@dataclass(frozen=True, slots=True)
class Recalled:
    """What a reduction starts from: the root's track, and which lookups may have changed
    since (None: any of them)."""

    track: Track
    changed: frozenset[tuple[str, int]] | None

    def holds(self, point: Point, lookup: Mapping[tuple[str, int], HistoryEntry]) -> bool:
        """Whether ``lookup`` answers every read of ``point`` with the same entry."""
        reads = point.reads
        if self.changed is not None:
            return not any(key in reads for key in self.changed)
        for key, entry in reads.items():
            now = lookup.get(key)
            if now is not entry and (now is None or entry is None or not same_entry(now, entry)):
                return False
        return True


FORGOTTEN = Recalled(NO_TRACK, None)


_MEMOS: IdentityCache[GraphNode, Memo] = IdentityCache(16)
"""A memo holds a copy of its run's books (O(executions)); a process drives few runs at once."""


def recall(
    root: GraphNode, run_id: str, initial_input: Any, history: Sequence[HistoryEntry]
) -> Recalled:
    """The root's track left by the last reduction of this graph and run, if it reduced
    the same initial input, and what changed in ``history`` since, when that is known."""
    memo = _MEMOS.get(root)
    if memo is None or memo.run_id != run_id or memo.initial_input != _canonical(initial_input):
        return FORGOTTEN
    if memo.history is not None and history is memo.history:
        return Recalled(memo.track, frozenset())
    if isinstance(history, History) and memo.history is not None and (history.base is memo.history):
        return Recalled(memo.track, history.changed)
    return Recalled(memo.track, None)


def remember(
    root: GraphNode,
    run_id: str,
    initial_input: Any,
    track: Track,
    history: Sequence[HistoryEntry],
) -> None:
    known = history if isinstance(history, History) else None
    _MEMOS.put(root, Memo(run_id, _canonical(initial_input), track, known))


def same_entry(a: HistoryEntry, b: HistoryEntry) -> bool:
    """Whether the walk would treat the two entries identically (strictly: values that
    only compare equal across types, like 1 and 1.0, are different)."""
    return (
        a.dispatch_position == b.dispatch_position
        and a.execution == b.execution
        and a.node_instance == b.node_instance
        and a.attempt == b.attempt
        and (a.occurrence is b.occurrence or a.occurrence == b.occurrence)
        and same_json(a.input, b.input)
        and _same_state(a.state, b.state)
    )


def _same_state(a: Active | Settled | Voided, b: Active | Settled | Voided) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, Settled) and isinstance(b, Settled):
        return a.position == b.position and (
            a.outcome is b.outcome
            or (
                type(a.outcome) is type(b.outcome)
                and same_json(a.outcome.model_dump(), b.outcome.model_dump())
            )
        )
    return a == b


_PLAIN = (str, int, bool, type(None))


def same_json(a: Any, b: Any) -> bool:
    """``dump_canonical(a) == dump_canonical(b)``, without writing either out: plain JSON
    values are compared in place, anything else is written canonically."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        if kind in _JSON_TYPES and type(b) in _JSON_TYPES:
            return False
        return _canonical(a) == _canonical(b)
    if kind in _PLAIN:
        return bool(a == b)
    if kind is float:
        return float.__repr__(a) == float.__repr__(b)
    if kind is list:
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if kind is dict:
        if len(a) != len(b):
            return False
        for key, value in a.items():
            if type(key) is not str or key not in b:
                return _canonical(a) == _canonical(b)
            if not same_json(value, b[key]):
                return False
        return True
    return _canonical(a) == _canonical(b)


_JSON_TYPES = frozenset({str, int, bool, type(None), float, list, dict})


def _canonical(value: Any) -> bytes:
    return dump_canonical(value, allow_floats=True)
