"""Static facts about a graph that the walk needs at every node, computed once per graph."""

from __future__ import annotations

from dataclasses import dataclass

from zeroshot_kernel.contract.graph import GraphNode, MapNode
from zeroshot_kernel.engine.graph_cache import IdentityCache


@dataclass(frozen=True, slots=True)
class GraphIndex:
    """``map_depth[name]``: how many maps enclose the node (a map's own depth excludes its
    body). Controls are keyed by that many map indices, which is what lets a selector read
    one item from inside a map and aggregate over all items from outside."""

    map_depth: dict[str, int]

    @classmethod
    def of(cls, root: GraphNode) -> GraphIndex:
        depths: dict[str, int] = {}
        pending: list[tuple[GraphNode, int]] = [(root, 0)]
        while pending:
            node, depth = pending.pop()
            depths[node.name] = depth
            inner = depth + 1 if isinstance(node, MapNode) else depth
            pending.extend((child, inner) for child in node.child_nodes())
        return cls(depths)

    def scope(self, node: str, map_indices: tuple[int, ...]) -> tuple[int, ...]:
        """The indices that identify ``node``'s occurrence from a walk at ``map_indices``."""
        return map_indices[: self.map_depth.get(node, 0)]


_INDEXES: IdentityCache[GraphNode, GraphIndex] = IdentityCache(64)


def index_of(root: GraphNode) -> GraphIndex:
    """``GraphIndex.of(root)``, computed once for each graph object."""
    return _INDEXES.get_or_make(root, GraphIndex.of)
