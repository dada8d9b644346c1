"""Where every node is: diagnostic locations, lookup by name and enclosing maps.

Analyses refer to nodes by name (selectors and bindings do), so the index resolves a name
to its *first* node in pre-order, exactly as a reader of the graph would; later nodes with
the same name are reported by the shape check and otherwise shadowed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from zeroshot_kernel.contract.diagnostics import (
    FieldSegment,
    IndexSegment,
    NodeSegment,
)
from zeroshot_kernel.contract.diagnostics import field as field_segment
from zeroshot_kernel.contract.diagnostics import index as index_segment
from zeroshot_kernel.contract.diagnostics import node as node_segment
from zeroshot_kernel.contract.graph import (
    ChoiceNode,
    GraphNode,
    GraphSpec,
    LoopNode,
    MapNode,
    ParNode,
    SeqNode,
    StepNode,
    VerifierNode,
)

SegmentKind = Literal["field", "index", "node"]
Loc = tuple[tuple[SegmentKind, str | int], ...]
"""A diagnostic location as plain tuples; turned into wire segments only when reported."""

ROOT: Loc = (("field", "root"),)


def at(loc: Loc, *fields: str) -> Loc:
    """``loc`` followed by one field segment per name."""
    return (*loc, *(("field", name) for name in fields))


def item(loc: Loc, collection: str, position: int) -> Loc:
    """``loc`` followed by ``collection`` and the index of one of its entries."""
    return (*loc, ("field", collection), ("index", position))


def within(loc: Loc, name: str) -> Loc:
    """``loc`` followed by the node segment of a child called ``name``."""
    return (*loc, ("node", name))


def segments(loc: Loc) -> list[FieldSegment | IndexSegment | NodeSegment]:
    """The wire form of a location."""
    result: list[FieldSegment | IndexSegment | NodeSegment] = []
    for kind, value in loc:
        if kind == "index":
            result.append(index_segment(int(value)))
        elif kind == "field":
            result.append(field_segment(str(value)))
        else:
            result.append(node_segment(str(value)))
    return result


def children_with_locations(parent: GraphNode, loc: Loc) -> Iterator[tuple[GraphNode, Loc]]:
    """Direct children in authored order, each with its own location."""
    if isinstance(parent, SeqNode):
        for position, child in enumerate(parent.children):
            yield child, within(item(loc, "children", position), child.name)
    elif isinstance(parent, ChoiceNode):
        for position, branch in enumerate(parent.branches):
            yield branch.node, within(at(item(loc, "branches", position), "node"), branch.node.name)
        if parent.otherwise is not None:
            yield parent.otherwise, within(at(loc, "otherwise"), parent.otherwise.name)
    elif isinstance(parent, ParNode):
        for position, child in enumerate(parent.branches):
            yield child, within(item(loc, "branches", position), child.name)
    elif isinstance(parent, LoopNode | MapNode):
        yield parent.body, within(at(loc, "body"), parent.body.name)


@dataclass(frozen=True)
class MapScope:
    """The map whose items a node runs in, and how many items it may have."""

    owner: str
    max_items: int


@dataclass
class GraphIndex:
    """Every node of a graph in pre-order with its location and nearest enclosing map."""

    nodes: dict[str, GraphNode] = field(default_factory=dict)
    locations: dict[str, Loc] = field(default_factory=dict)
    map_owners: dict[str, str | None] = field(default_factory=dict)
    located: list[tuple[GraphNode, Loc]] = field(default_factory=list)

    @classmethod
    def of(cls, graph: GraphSpec) -> GraphIndex:
        index = cls()
        index._add(graph.root, within(ROOT, graph.root.name), None)
        return index

    def _add(self, current: GraphNode, loc: Loc, owner: str | None) -> None:
        self.located.append((current, loc))
        if current.name not in self.nodes:
            self.nodes[current.name] = current
            self.locations[current.name] = loc
            self.map_owners[current.name] = owner
        inner_owner = current.name if isinstance(current, MapNode) else owner
        for child, child_loc in children_with_locations(current, loc):
            self._add(child, child_loc, inner_owner)

    def location(self, name: str) -> Loc:
        """Where the node called ``name`` is; the root field for a name the graph lacks."""
        return self.locations.get(name, ROOT)

    def map_owner(self, name: str) -> str | None:
        return self.map_owners.get(name)

    def map_scope(self, name: str) -> MapScope | None:
        """The enclosing map of ``name`` when both exist, else ``None``."""
        owner = self.map_owners.get(name)
        owner_node = self.nodes.get(owner) if owner is not None else None
        if owner is None or not isinstance(owner_node, MapNode):
            return None
        return MapScope(owner, owner_node.max_items)

    def verifier(self, name: str) -> VerifierNode | None:
        found = self.nodes.get(name)
        return found if isinstance(found, VerifierNode) else None

    def executable(self, name: str) -> StepNode | VerifierNode | None:
        found = self.nodes.get(name)
        return found if isinstance(found, StepNode | VerifierNode) else None
