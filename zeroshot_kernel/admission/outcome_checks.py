"""What one execution of a node can report, and what a bounded number of map items can.

One execution either succeeds (every signal or group control it has reports one label)
or fails with one worker error (nothing else is reported). A map of at most ``n`` items
reports a multiset of at most ``n`` such outcomes; counting multisets first keeps the
enumeration under the assignment ceiling.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import combinations_with_replacement, product

from zeroshot_kernel.admission.controls import (
    EXECUTED,
    NOTHING,
    Assignment,
    ControlKey,
    Counts,
    Source,
    group_domain,
    key_domain,
    once,
)
from zeroshot_kernel.contract.graph import WORKER_ERROR_CODES, GraphNode, StepNode, VerifierNode

MAX_ASSIGNMENTS = 65_536


def execution_outcomes(node: GraphNode, keys: Sequence[ControlKey]) -> list[Assignment] | None:
    """Every outcome of one execution of ``node`` over ``keys``; ``None`` over the ceiling."""
    emitted = [k for k in keys if k.source in (Source.SIGNAL, Source.GROUP)]
    errors = [k for k in keys if k.source == Source.ERROR]
    executions = [k for k in keys if k.source == Source.EXECUTION]
    successes = 1
    for key in emitted:
        successes *= len(key_domain(key, node))
        if successes > MAX_ASSIGNMENTS:
            return None
    failures = WORKER_ERROR_CODES if isinstance(node, StepNode | VerifierNode) else ()
    if successes + len(failures) > MAX_ASSIGNMENTS:
        return None
    ran = {key: once(EXECUTED) for key in executions}
    outcomes: list[Assignment] = []
    for labels in product(*(key_domain(key, node) for key in emitted)):
        outcome: Assignment = {key: once(label) for key, label in zip(emitted, labels, strict=True)}
        outcome.update({key: NOTHING for key in errors})
        outcome.update(ran)
        outcomes.append(outcome)
    for error in failures:
        failed: Assignment = {key: NOTHING for key in emitted}
        failed.update(ran)
        failed.update({key: once(error) for key in errors})
        if not outcomes or outcomes[-1] != failed:
            outcomes.append(failed)
    return outcomes


def multiset_count(maximum: int, outcomes: int) -> int:
    """How many multisets of at most ``maximum`` items ``outcomes`` values give, that is
    C(maximum + outcomes, outcomes); stops growing once past the ceiling."""
    result = 1
    for divisor in range(1, outcomes + 1):
        result = result * (maximum + divisor) // divisor
        if result > MAX_ASSIGNMENTS:
            return result
    return result


def item_multisets(
    keys: Sequence[ControlKey], outcomes: Sequence[Assignment], maximum: int
) -> list[Assignment] | None:
    """The summed counts of every multiset of at most ``maximum`` item outcomes."""
    if multiset_count(maximum, len(outcomes)) > MAX_ASSIGNMENTS:
        return None
    combined: list[Assignment] = []
    for size in range(maximum + 1 if outcomes else 1):
        for chosen in combinations_with_replacement(range(len(outcomes)), size):
            totals: dict[ControlKey, dict[str, int]] = {key: {} for key in keys}
            for position in chosen:
                for key, counts in outcomes[position].items():
                    into = totals.setdefault(key, {})
                    for label, count in counts:
                        into[label] = into.get(label, 0) + count
            combined.append({key: _counts(into) for key, into in totals.items()})
    return combined


def _counts(totals: dict[str, int]) -> Counts:
    return tuple(sorted(totals.items()))


def scalar_dimensions(
    node: GraphNode, keys: set[ControlKey], aggregated: Collection[ControlKey]
) -> list[list[Assignment]] | None:
    """Dimensions for the controls of one node read once (not per map item): each group
    outcome on its own, the execution outcomes of the node as one dimension."""
    scalar = sorted(key for key in keys if key not in aggregated)
    dimensions = [
        [{key: once(label)} for label in group_domain(node, key.field) or ()]
        for key in scalar
        if key.source == Source.GROUP
    ]
    executed = [key for key in scalar if key.source != Source.GROUP]
    if executed:
        outcomes = execution_outcomes(node, executed)
        if outcomes is None:
            return None
        dimensions.append(outcomes)
    return dimensions


def product_is_bounded(dimensions: Sequence[Sequence[Assignment]]) -> bool:
    total = 1
    for dimension in dimensions:
        total *= len(dimension)
        if total > MAX_ASSIGNMENTS:
            return False
    return True


def combinations(
    dimensions: Sequence[Sequence[Assignment]], limit: int | None = None
) -> list[Assignment] | None:
    """Every consistent way to pick one entry per dimension (entries that fix the same
    control differently do not combine); ``None`` once more than ``limit`` arise."""
    current: list[Assignment] = [{}]
    fixed: set[ControlKey] = set()
    for dimension in dimensions:
        keys = {key for choice in dimension for key in choice}
        overlapping = not keys.isdisjoint(fixed)
        fixed |= keys
        following: list[Assignment] = []
        for prefix in current:
            for choice in dimension:
                if overlapping and any(
                    prefix.get(key, counts) != counts for key, counts in choice.items()
                ):
                    continue
                if limit is not None and len(following) >= limit:
                    return None
                following.append({**prefix, **choice})
        current = following
    return current
