"""Control values: the finite labels a guard can route on, and how a guard reads them.

A *control assignment* fixes, for every control a set of guards reads, how many times each
label was reported (one report per execution; a map reports once per item). Guards are
pure functions of an assignment, which is what makes exhaustiveness decidable.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from enum import IntEnum
from typing import NamedTuple

from zeroshot_kernel.contract.graph import (
    WORKER_ERROR_CODES,
    AllGuard,
    AnyGuard,
    ControlSelector,
    FirstJoin,
    GraphNode,
    Guard,
    InGuard,
    KOfMapGuard,
    KOfNGuard,
    LoopNode,
    MapNode,
    NotGuard,
    ParNode,
    StepNode,
    VerifierNode,
)


class Source(IntEnum):
    """What a control reports; ``EXECUTION`` is internal (whether a map item ran a node)."""

    SIGNAL = 0
    ERROR = 1
    GROUP = 2
    EXECUTION = 3


class ControlKey(NamedTuple):
    """One control of one node; ``field`` is ``""`` when the selector has none."""

    node: str
    source: Source
    field: str


Counts = tuple[tuple[str, int], ...]
"""Occurrences per label, sorted by label; only positive counts are kept, so a control
that reported nothing is ``()``."""
Assignment = dict[ControlKey, Counts]

NOTHING: Counts = ()
EXECUTED = "executed"
GROUP_DOMAINS: dict[str, tuple[str, ...]] = {
    "terminated": ("converged", "exhausted"),
    "overflow": ("ok", "overflow"),
    "joined": ("reached", "quorum_unreachable"),
    "raced": ("satisfied", "no_satisfier"),
}
JOIN_FIELDS = frozenset({"joined", "raced"})
JOIN_FAILURES = frozenset({"quorum_unreachable", "no_satisfier"})

_SOURCES = {"signal": Source.SIGNAL, "error": Source.ERROR, "group": Source.GROUP}


def key_of(selector: ControlSelector) -> ControlKey:
    return ControlKey(selector.name, _SOURCES[selector.source], selector.field or "")


def once(label: str) -> Counts:
    return ((label, 1),)


def selectors_of(guard: Guard) -> list[ControlSelector]:
    """Every selector a guard reads, in authored order (repeats kept)."""
    return [selector for selector, _ in selector_uses(guard)]


def selector_uses(guard: Guard) -> list[tuple[ControlSelector, bool]]:
    """Every selector with whether it is read as a per-item count (``k_of_map``)."""
    return list(_uses(guard))


def _uses(guard: Guard) -> Iterator[tuple[ControlSelector, bool]]:
    if isinstance(guard, InGuard):
        yield guard.value, False
    elif isinstance(guard, KOfMapGuard):
        yield guard.value, True
    elif isinstance(guard, KOfNGuard):
        for value in guard.values:
            yield value, False
    elif isinstance(guard, AllGuard | AnyGuard):
        for inner in guard.guards:
            yield from _uses(inner)
    elif isinstance(guard, NotGuard):
        yield from _uses(guard.guard)


def group_domain(node: GraphNode, field: str | None) -> tuple[str, ...] | None:
    """Labels of a group outcome, or ``None`` when ``node`` has no such outcome."""
    if field == "terminated" and isinstance(node, LoopNode):
        return GROUP_DOMAINS[field]
    if field == "overflow" and isinstance(node, MapNode):
        return GROUP_DOMAINS[field]
    if isinstance(node, ParNode) and field == (
        "raced" if isinstance(node.join, FirstJoin) else "joined"
    ):
        return GROUP_DOMAINS[field]
    return None


def selector_domain(node: GraphNode | None, selector: ControlSelector) -> tuple[str, ...] | None:
    """The closed label set a selector reads, or ``None`` when the selector is illegal."""
    if node is None:
        return None
    if selector.source == "signal":
        if not isinstance(node, VerifierNode) or selector.field is None:
            return None
        labels = node.signals.get(selector.field)
        return tuple(labels) if labels is not None else None
    if selector.source == "error":
        if selector.field is not None or not isinstance(node, StepNode | VerifierNode):
            return None
        return WORKER_ERROR_CODES
    return group_domain(node, selector.field)


def key_domain(key: ControlKey, node: GraphNode) -> tuple[str, ...]:
    """Labels a control can report; empty when the node cannot report it."""
    if key.source == Source.SIGNAL:
        labels = node.signals.get(key.field) if isinstance(node, VerifierNode) else None
        return tuple(labels) if labels is not None else ()
    if key.source == Source.ERROR:
        return WORKER_ERROR_CODES
    if key.source == Source.GROUP:
        return group_domain(node, key.field) or ()
    return (EXECUTED,)


def reports(counts: Counts, labels: Collection[str]) -> bool:
    """Whether any of ``labels`` was reported at least once."""
    return any(label in labels for label, _ in counts)


def occurrences(counts: Counts, labels: Collection[str]) -> int:
    return sum(count for label, count in counts if label in labels)


def is_silent(counts: Counts) -> bool:
    return not counts


def guard_holds(guard: Guard, assignment: Mapping[ControlKey, Counts]) -> bool:
    """Evaluate a guard under one control assignment (an absent control matches nothing)."""
    if isinstance(guard, InGuard):
        return reports(assignment.get(key_of(guard.value), NOTHING), guard.labels)
    if isinstance(guard, AllGuard):
        return all(guard_holds(inner, assignment) for inner in guard.guards)
    if isinstance(guard, AnyGuard):
        return any(guard_holds(inner, assignment) for inner in guard.guards)
    if isinstance(guard, NotGuard):
        return not guard_holds(guard.guard, assignment)
    if isinstance(guard, KOfNGuard):
        matched = sum(
            reports(assignment.get(key_of(value), NOTHING), guard.labels) for value in guard.values
        )
        return matched >= guard.count
    return occurrences(assignment.get(key_of(guard.value), NOTHING), guard.labels) >= guard.count
