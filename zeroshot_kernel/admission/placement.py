"""Which executables can run at the same time as a given node.

Only delivery is an exclusive writer: it must not overlap any other executable (par
siblings), nor itself (a map body with more than one possible item).
"""

from __future__ import annotations

from collections.abc import Iterator

from zeroshot_kernel.contract.graph import (
    GraphNode,
    GraphSpec,
    MapNode,
    ParNode,
    StepNode,
    VerifierNode,
)


def executables(node: GraphNode) -> Iterator[StepNode | VerifierNode]:
    for inner in node.walk():
        if isinstance(inner, StepNode | VerifierNode):
            yield inner


def overlapping_executables(graph: GraphSpec, name: str) -> set[str]:
    """Executables that may run concurrently with node ``name`` (itself included when
    it sits in a map body that can have several items)."""
    overlapping: set[str] = set()
    _collect(graph.root, name, overlapping)
    return overlapping


def _collect(node: GraphNode, name: str, out: set[str]) -> bool:
    """Adds overlaps found under ``node``; returns whether ``name`` is under it."""
    if node.name == name:
        return True
    children = node.child_nodes()
    holders = [child for child in children if _collect(child, name, out)]
    if not holders:
        return False
    if isinstance(node, ParNode):
        for sibling in children:
            if sibling is not holders[0]:
                out.update(e.name for e in executables(sibling))
    if isinstance(node, MapNode) and node.max_items > 1:
        out.update(e.name for e in executables(node.body))
    return True
