"""Guard evaluation over finite control labels.

A selector names a node; when the walk is outside a map that encloses that node, the selector
aggregates over every item occurrence under the current indices (``in`` is then true if any
item has a listed label, ``k_of_map`` counts items). A control that was never set matches
nothing.
"""

from __future__ import annotations

from zeroshot_kernel.contract.graph import (
    AllGuard,
    AnyGuard,
    ControlSelector,
    Guard,
    InGuard,
    KOfMapGuard,
    KOfNGuard,
    NotGuard,
)
from zeroshot_kernel.engine.graph_facts import GraphIndex
from zeroshot_kernel.engine.walk_context import ControlKey


def holds(
    guard: Guard,
    controls: dict[ControlKey, str],
    map_indices: tuple[int, ...],
    index: GraphIndex,
) -> bool:
    def labels_of(selector: ControlSelector) -> list[str]:
        return control_values(selector, controls, map_indices, index)

    match guard:
        case InGuard():
            return any(label in guard.labels for label in labels_of(guard.value))
        case AllGuard():
            return all(holds(inner, controls, map_indices, index) for inner in guard.guards)
        case AnyGuard():
            return any(holds(inner, controls, map_indices, index) for inner in guard.guards)
        case NotGuard():
            return not holds(guard.guard, controls, map_indices, index)
        case KOfNGuard():
            matching = sum(
                any(label in guard.labels for label in labels_of(selector))
                for selector in guard.values
            )
            return matching >= guard.count
        case KOfMapGuard():
            matching = sum(label in guard.labels for label in labels_of(guard.value))
            return matching >= guard.count
    raise AssertionError(f"unknown guard {guard!r}")


def control_values(
    selector: ControlSelector,
    controls: dict[ControlKey, str],
    map_indices: tuple[int, ...],
    index: GraphIndex,
) -> list[str]:
    """The labels the selector reads from a walk at ``map_indices``: one occurrence when the
    walk is inside every map enclosing the node, else every item under the walk's indices."""
    depth = index.map_depth.get(selector.name, 0)
    aggregate = depth > len(map_indices)
    wanted = map_indices[:depth]
    found = []
    for (node, source, field, indices), label in controls.items():
        if node != selector.name or source != selector.source or field != selector.field:
            continue
        if aggregate:
            if len(indices) == depth and indices[: len(map_indices)] == map_indices:
                found.append(label)
        elif indices == wanted:
            found.append(label)
    return found
