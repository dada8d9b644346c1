"""Structural bounds: how much a graph can run, and a proof that it terminates.

Admission needs these numbers before anything runs: the worst-case number of executions,
the peak number running at once, and either a dependency order (no loops) or a loop
ranking whose product of iteration limits bounds the run. Graphs beyond the full/v1
ceilings are rejected here with ``ceiling_exceeded`` at the narrowest responsible field.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from zeroshot_kernel.contract.diagnostics import (
    DiagnosticCode,
    FieldSegment,
    GraphDiagnostic,
    IndexSegment,
    NodeSegment,
    field,
    index,
    node,
    sorted_diagnostics,
)
from zeroshot_kernel.contract.graph import (
    AcyclicTermination,
    AllGuard,
    AnyGuard,
    BoundedTermination,
    ChoiceNode,
    CompiledGraphIr,
    ControlSelector,
    FailNode,
    FirstJoin,
    GraphNode,
    GraphSpec,
    Guard,
    InGuard,
    KOfMapGuard,
    KOfNGuard,
    LoopNode,
    MapNode,
    NotGuard,
    ParNode,
    SeqNode,
    StepNode,
    StructuralBounds,
    SucceedNode,
    TerminationWitness,
    VerifierNode,
)

Segment = FieldSegment | IndexSegment | NodeSegment
Path = tuple[Segment, ...]

# The full/v1 ceilings. Each keeps admission-time analysis and run-time cost bounded.
MAX_GRAPH_NODES = 4_096
MAX_GRAPH_DEPTH = 64
MAX_GUARD_NODES = 4_096
MAX_LOOP_ITERATIONS = 100
MAX_MAP_ITEMS = 1_024
MAX_ATTEMPTS = 100
MAX_NODE_EXECUTIONS = 65_536
MAX_LOOP_ENTRIES = 65_536
MAX_PEAK_CONCURRENCY = 1_024

_ROOT: Path = (field("root"),)


# --- where nodes are ------------------------------------------------------------------


@dataclass(frozen=True)
class LocatedNode:
    """A node with its diagnostic path, nesting depth (root = 1) and pre-order position."""

    node: GraphNode
    path: Path
    depth: int
    ordinal: int


def child_paths(parent: GraphNode, path: Path) -> Iterator[tuple[GraphNode, Path]]:
    """Direct children with their paths, in authored order, using the contract's segments."""
    if isinstance(parent, SeqNode):
        for i, child in enumerate(parent.children):
            yield child, (*path, field("children"), index(i), node(child.name))
    elif isinstance(parent, ChoiceNode):
        for i, branch in enumerate(parent.branches):
            yield (
                branch.node,
                (*path, field("branches"), index(i), field("node"), node(branch.node.name)),
            )
        if parent.otherwise is not None:
            yield parent.otherwise, (*path, field("otherwise"), node(parent.otherwise.name))
    elif isinstance(parent, ParNode):
        for i, branch_node in enumerate(parent.branches):
            yield branch_node, (*path, field("branches"), index(i), node(branch_node.name))
    elif isinstance(parent, LoopNode | MapNode):
        yield parent.body, (*path, field("body"), node(parent.body.name))


def located_nodes(graph: GraphSpec) -> list[LocatedNode]:
    """Every node in pre-order with its path; iterative so deep graphs cannot overflow."""
    located: list[LocatedNode] = []
    stack: list[tuple[GraphNode, Path, int]] = [(graph.root, (*_ROOT, node(graph.root.name)), 1)]
    while stack:
        current, path, depth = stack.pop()
        located.append(LocatedNode(current, path, depth, len(located)))
        children = list(child_paths(current, path))
        stack.extend((child, child_path, depth + 1) for child, child_path in reversed(children))
    return located


# --- guards -----------------------------------------------------------------------------


def guard_size(guard: Guard) -> int:
    """Guard nodes in ``guard`` itself plus every nested guard."""
    if isinstance(guard, AllGuard | AnyGuard):
        return 1 + sum(guard_size(inner) for inner in guard.guards)
    if isinstance(guard, NotGuard):
        return 1 + guard_size(guard.guard)
    return 1


def guard_selectors(guard: Guard) -> Iterator[ControlSelector]:
    """Every control selector a guard reads, in authored order."""
    if isinstance(guard, InGuard | KOfMapGuard):
        yield guard.value
    elif isinstance(guard, KOfNGuard):
        yield from guard.values
    elif isinstance(guard, AllGuard | AnyGuard):
        for inner in guard.guards:
            yield from guard_selectors(inner)
    elif isinstance(guard, NotGuard):
        yield from guard_selectors(guard.guard)


def _guards(current: GraphNode, path: Path) -> Iterator[tuple[Guard, Path]]:
    if isinstance(current, ChoiceNode):
        for i, branch in enumerate(current.branches):
            yield branch.when, (*path, field("branches"), index(i), field("when"))
    elif isinstance(current, ParNode) and isinstance(current.join, FirstJoin):
        yield current.join.when, (*path, field("join"), field("when"))
    elif isinstance(current, LoopNode) and current.until is not None:
        yield current.until, (*path, field("until"))


def _dependencies(current: GraphNode) -> set[str]:
    """Nodes that must come before ``current`` in ``order``: whatever its write bindings
    read, and whatever a choice (or a par's ``first`` join) routes on."""
    if isinstance(current, StepNode | VerifierNode):
        names = {binding.value.node for binding in current.write_bindings}
    elif isinstance(current, ChoiceNode):
        names = {s.name for branch in current.branches for s in guard_selectors(branch.when)}
    elif isinstance(current, ParNode) and isinstance(current.join, FirstJoin):
        names = {s.name for s in guard_selectors(current.join.when)}
    else:
        names = set()
    names.discard(current.name)
    return names


# --- the analysis -------------------------------------------------------------------------


class _Fold(NamedTuple):
    executions: int
    concurrency: int
    loop_entries: int


_NOTHING = _Fold(0, 0, 0)
_ONE_EXECUTION = _Fold(1, 1, 0)


def diagnostic_at(
    code: DiagnosticCode, message: str, path: Path, related: list[str]
) -> GraphDiagnostic:
    """An error-severity diagnostic; ``related`` is sorted and deduplicated as the wire wants."""
    return GraphDiagnostic(
        code=code, message=message, path=list(path), related_nodes=sorted(set(related))
    )


class _Analysis:
    def __init__(self, graph: GraphSpec) -> None:
        self.graph = graph
        self.nodes = located_nodes(graph)
        self.first: dict[str, LocatedNode] = {}
        for entry in self.nodes:
            self.first.setdefault(entry.node.name, entry)
        self.diagnostics: list[GraphDiagnostic] = []

    def emit(self, code: DiagnosticCode, message: str, path: Path, related: list[str]) -> None:
        self.diagnostics.append(diagnostic_at(code, message, path, related))

    # ceilings that do not depend on the fold

    def check_static_ceilings(self) -> None:
        total_guard_nodes = 0
        for entry in self.nodes:
            current, path = entry.node, entry.path
            if entry.depth > MAX_GRAPH_DEPTH:
                self.emit(
                    "ceiling_exceeded",
                    f"graph depth {entry.depth} exceeds the full/v1 ceiling of "
                    f"{MAX_GRAPH_DEPTH}; flatten nested groups",
                    path,
                    [current.name],
                )
            if isinstance(current, StepNode | VerifierNode) and current.attempts > MAX_ATTEMPTS:
                self.emit(
                    "ceiling_exceeded",
                    f"attempts {current.attempts} exceeds the full/v1 ceiling of "
                    f"{MAX_ATTEMPTS}; lower it",
                    (*path, field("attempts")),
                    [current.name],
                )
            if isinstance(current, LoopNode) and current.max_iterations > MAX_LOOP_ITERATIONS:
                self.emit(
                    "ceiling_exceeded",
                    f"maxIterations {current.max_iterations} exceeds the full/v1 ceiling "
                    f"of {MAX_LOOP_ITERATIONS}; lower it",
                    (*path, field("maxIterations")),
                    [current.name],
                )
            if isinstance(current, MapNode) and current.max_items > MAX_MAP_ITEMS:
                self.emit(
                    "ceiling_exceeded",
                    f"maxItems {current.max_items} exceeds the full/v1 ceiling of "
                    f"{MAX_MAP_ITEMS}; lower it or split the input",
                    (*path, field("maxItems")),
                    [current.name],
                )
            for guard, guard_path in _guards(current, path):
                size = guard_size(guard)
                total_guard_nodes += size
                if size > MAX_GUARD_NODES:
                    self.emit(
                        "ceiling_exceeded",
                        f"guard has {size} guard nodes, over the full/v1 ceiling of "
                        f"{MAX_GUARD_NODES}; simplify it",
                        guard_path,
                        [],
                    )
        if len(self.nodes) > MAX_GRAPH_NODES:
            self.emit(
                "ceiling_exceeded",
                f"total nodes ({len(self.nodes)}) exceed the full/v1 ceiling of "
                f"{MAX_GRAPH_NODES}; split the graph",
                _ROOT,
                [],
            )
        if total_guard_nodes > MAX_GUARD_NODES:
            self.emit(
                "ceiling_exceeded",
                f"total guard nodes ({total_guard_nodes}) exceed the full/v1 ceiling of "
                f"{MAX_GUARD_NODES}; simplify the routing",
                _ROOT,
                [],
            )

    # the dependency order

    def order(self) -> list[str]:
        """Kahn's sort; among ready nodes the earliest in pre-order goes first."""
        waiting: dict[str, set[str]] = {name: set() for name in self.first}
        for entry in self.nodes:
            waiting[entry.node.name] |= _dependencies(entry.node)
        for name, needs in waiting.items():
            # Membership tests, not set algebra with the keys view: that walks every key.
            for missing in sorted(need for need in needs if need not in self.first):
                self.emit(
                    "undefined_read",
                    f"reference to unknown node {missing}, which is not in this graph; "
                    "name a node of the graph",
                    self.first[name].path,
                    [missing],
                )
        dependents: dict[str, list[str]] = {name: [] for name in waiting}
        for name, needs in waiting.items():
            for need in (need for need in needs if need in self.first):
                dependents[need].append(name)
        blocked = {name: len(needs) for name, needs in waiting.items()}
        ready = [(self.first[name].ordinal, name) for name, count in blocked.items() if not count]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            _, name = heapq.heappop(ready)
            order.append(name)
            for dependent in dependents[name]:
                blocked[dependent] -= 1
                if blocked[dependent] == 0:
                    heapq.heappush(ready, (self.first[dependent].ordinal, dependent))
        stuck = sorted(set(waiting) - set(order))
        if stuck:
            self.emit(
                "cyclic_reference",
                f"node-output and control references form a cycle through "
                f"{', '.join(stuck)}; break it so each node reads only earlier ones",
                self.first[stuck[0]].path,
                stuck,
            )
        return order

    # the (E, C, L) fold

    def fold(self, current: GraphNode, path: Path) -> _Fold | None:
        """Bottom-up worst case; ``None`` where a ceiling was exceeded below or here."""
        if isinstance(current, StepNode | VerifierNode):
            return _ONE_EXECUTION
        if isinstance(current, SucceedNode | FailNode):
            return _NOTHING
        children = child_paths(current, path)
        if isinstance(current, SeqNode | ParNode):
            folds = [f for child, p in children if (f := self.fold(child, p)) is not None]
            return self._fold_sum(current, path, folds)
        if isinstance(current, ChoiceNode):
            folds = []
            for child, child_path in children:
                folded = self.fold(child, child_path)
                if folded is None and child is current.otherwise:
                    return None
                if folded is not None:
                    folds.append(folded)
            return _Fold(*(max((f[i] for f in folds), default=0) for i in range(3)))
        assert isinstance(current, LoopNode | MapNode)
        body = self.fold(current.body, (*path, field("body"), node(current.body.name)))
        if body is None:
            return None
        if isinstance(current, MapNode):
            return self._fold_map(current, path, body)
        return self._fold_loop(current, path, body)

    def _fold_sum(self, group: SeqNode | ParNode, path: Path, folds: list[_Fold]) -> _Fold | None:
        where = (*path, field("children" if isinstance(group, SeqNode) else "branches"))
        hint = "split the group or lower the bounds inside it"
        executions = self._within(
            sum(f.executions for f in folds), "node executions", MAX_NODE_EXECUTIONS, where, hint
        )
        if executions is None:
            return None
        concurrency = max((f.concurrency for f in folds), default=0)
        if isinstance(group, ParNode):  # branches run at once; seq children one at a time
            summed = self._within(
                sum(f.concurrency for f in folds),
                "peak concurrency",
                MAX_PEAK_CONCURRENCY,
                where,
                hint,
            )
            if summed is None:
                return None
            concurrency = summed
        loop_entries = self._within(
            sum(f.loop_entries for f in folds), "loop entries", MAX_LOOP_ENTRIES, where, hint
        )
        if loop_entries is None:
            return None
        return _Fold(executions, concurrency, loop_entries)

    def _fold_map(self, group: MapNode, path: Path, body: _Fold) -> _Fold | None:
        where = (*path, field("maxItems"))
        hint = "lower maxItems or the bounds inside the body"
        folded = []
        for value, label, ceiling in (
            (body.executions, "node executions", MAX_NODE_EXECUTIONS),
            (body.concurrency, "peak concurrency", MAX_PEAK_CONCURRENCY),
            (body.loop_entries, "loop entries", MAX_LOOP_ENTRIES),
        ):
            total = self._within(group.max_items * value, label, ceiling, where, hint)
            if total is None:
                return None
            folded.append(total)
        return _Fold(*folded)

    def _fold_loop(self, group: LoopNode, path: Path, body: _Fold) -> _Fold | None:
        where = (*path, field("maxIterations"))
        hint = "lower maxIterations or the bounds inside the body"
        executions = self._within(
            group.max_iterations * body.executions,
            "node executions",
            MAX_NODE_EXECUTIONS,
            where,
            hint,
        )
        if executions is None:
            return None
        loop_entries = self._within(
            group.max_iterations * (1 + body.loop_entries),
            "loop entries",
            MAX_LOOP_ENTRIES,
            where,
            hint,
        )
        if loop_entries is None:
            return None
        return _Fold(executions, body.concurrency, loop_entries)

    def _within(self, value: int, label: str, ceiling: int, path: Path, hint: str) -> int | None:
        # Messages start with the quantity so that several at one path sort as the
        # reference engine's do.
        if value <= ceiling:
            return value
        self.emit(
            "ceiling_exceeded",
            f"{label} could reach {value}, over the full/v1 ceiling of {ceiling}; {hint}",
            path,
            [],
        )
        return None

    def termination(self, fold: _Fold, order: list[str]) -> TerminationWitness:
        loops = [entry.node.name for entry in self.nodes if isinstance(entry.node, LoopNode)]
        if not loops:
            return AcyclicTermination(kind="acyclic", order=order)
        return BoundedTermination(
            kind="bounded", ranking=[[name] for name in loops], max_iterations=fold.loop_entries
        )


def structural_bounds(graph: GraphSpec) -> tuple[StructuralBounds | None, list[GraphDiagnostic]]:
    """The graph's bounds, or ``None`` with the ceiling/ordering diagnostics that prevent them.

    Dependency order (acyclic graphs) lists every node; a node waits for the executables its
    write bindings read, a choice for what its guards read, and a par with a ``first`` join
    for what ``when`` reads. With loops, termination is instead the loop ranking in
    pre-order, bounded by the total number of loop entries.
    """
    analysis = _Analysis(graph)
    analysis.check_static_ceilings()
    order = analysis.order()
    fold = analysis.fold(graph.root, analysis.nodes[0].path)
    if analysis.diagnostics or fold is None:
        return None, sorted_diagnostics(analysis.diagnostics)
    attempts = {
        entry.node.name: entry.node.attempts
        for entry in analysis.nodes
        if isinstance(entry.node, StepNode | VerifierNode)
    }
    bounds = StructuralBounds(
        termination=analysis.termination(fold, order),
        max_node_executions=max(1, fold.executions),
        peak_concurrency=max(1, fold.concurrency),
        attempts_per_node=dict(sorted(attempts.items())),
    )
    return bounds, []


def compile_ir(graph: GraphSpec, bounds: StructuralBounds) -> CompiledGraphIr:
    """The verified graph as stored: the parsed graph (label sets sorted) plus its bounds."""
    return CompiledGraphIr(
        profile=graph.profile,
        initial_input=graph.initial_input,
        policy=graph.policy,
        root=graph.root,
        bounds=bounds,
    )


__all__ = [
    "MAX_ATTEMPTS",
    "MAX_GRAPH_DEPTH",
    "MAX_GRAPH_NODES",
    "MAX_GUARD_NODES",
    "MAX_LOOP_ENTRIES",
    "MAX_LOOP_ITERATIONS",
    "MAX_MAP_ITEMS",
    "MAX_NODE_EXECUTIONS",
    "MAX_PEAK_CONCURRENCY",
    "LocatedNode",
    "child_paths",
    "compile_ir",
    "diagnostic_at",
    "guard_selectors",
    "guard_size",
    "located_nodes",
    "structural_bounds",
]
