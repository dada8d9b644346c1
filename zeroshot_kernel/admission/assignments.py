"""The bounded enumeration of control assignments behind every routing question.

To ask "can this branch be taken?" or "does this par ever join?", the verifier lists every
legal assignment of the controls the guards read (pulling in the controls that correlated
group outcomes depend on) and evaluates the guards on each. The space is capped at 65,536
assignments; past that the question has no answer and the caller reports the ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from zeroshot_kernel.admission.aggregates import (
    MapScopeControls,
    Members,
    shared_execution_keys,
    shared_join_keys,
)
from zeroshot_kernel.admission.controls import (
    Assignment,
    ControlKey,
    key_of,
    selector_uses,
    selectors_of,
)
from zeroshot_kernel.admission.correlations import JoinCorrelation, MapExecution, join_consistent
from zeroshot_kernel.admission.locations import GraphIndex, MapScope
from zeroshot_kernel.admission.outcome_checks import (
    MAX_ASSIGNMENTS,
    combinations,
    scalar_dimensions,
)
from zeroshot_kernel.admission.predicates import guards_in
from zeroshot_kernel.contract.graph import ControlSelector, Guard


@dataclass
class ControlSpace:
    """Assignments over a graph's controls, given what the flow learned about its groups."""

    index: GraphIndex
    joins: dict[str, JoinCorrelation] = field(default_factory=dict)
    executions: dict[str, MapExecution] = field(default_factory=dict)

    def assignments(self, guards: Sequence[Guard]) -> list[Assignment] | None:
        """Every legal assignment of the controls ``guards`` read; ``None`` over the cap."""
        selectors, aggregated, tied_pars = self._inputs(guards)
        dimensions = self._dimensions(selectors, aggregated)
        if dimensions is None:
            return None
        found = combinations(dimensions, MAX_ASSIGNMENTS)
        if found is None:
            return None
        return [
            assignment
            for assignment in found
            if all(join_consistent(assignment, name, self.joins[name]) for name in tied_pars)
        ]

    def coupled_nodes(self, guards: Sequence[Guard]) -> frozenset[str]:
        """Nodes (and map owners) whose controls an enumeration for ``guards`` reads: two
        questions with disjoint sets range over independent dimensions."""
        selectors, aggregated, _ = self._inputs(guards)
        return frozenset(
            {selector.name for selector in selectors}
            | {scope.owner for scope in aggregated.values()}
        )

    def _scope_of(self, selector: ControlSelector) -> MapScope | None:
        return self.index.map_scope(selector.name)

    def _explicit_aggregates(self, guards: Sequence[Guard]) -> dict[ControlKey, MapScope]:
        found: dict[ControlKey, MapScope] = {}
        for guard in guards:
            for selector, per_item in selector_uses(guard):
                scope = self._scope_of(selector) if per_item else None
                if scope is not None:
                    found[key_of(selector)] = scope
        return found

    def _inputs(
        self, guards: Sequence[Guard]
    ) -> tuple[list[ControlSelector], dict[ControlKey, MapScope], set[str]]:
        """The selectors to enumerate: those of ``guards`` plus, transitively, those that
        the outcome of a read par or the presence of a map-scoped node depends on."""
        expanded = list(guards)
        aggregated = self._explicit_aggregates(expanded)
        tied_pars: set[str] = set()
        tied_executions: set[str] = set()
        discovered = True
        while discovered:
            discovered = False
            for selector in [s for guard in expanded for s in selectors_of(guard)]:
                correlation = self.joins.get(selector.name)
                if (
                    correlation is None
                    or selector.source != "group"
                    or selector.field != correlation.field
                    or selector.name in tied_pars
                ):
                    continue
                tied_pars.add(selector.name)
                dependencies = correlation.guards()
                scope = aggregated.get(key_of(selector))
                if scope is not None:
                    self._aggregate_within(dependencies, scope, aggregated)
                expanded.extend(dependencies)
                aggregated.update(self._explicit_aggregates(expanded))
                discovered = True
            for key, scope in sorted(aggregated.items()):
                execution = self.executions.get(key.node)
                if (
                    execution is None
                    or execution.owner != scope.owner
                    or key.node in tied_executions
                ):
                    continue
                tied_executions.add(key.node)
                dependencies = guards_in(execution.presence)
                self._aggregate_within(dependencies, scope, aggregated)
                expanded.extend(dependencies)
                discovered = True
        selectors = [selector for guard in expanded for selector in selectors_of(guard)]
        return selectors, aggregated, tied_pars

    def _aggregate_within(
        self, guards: list[Guard], scope: MapScope, aggregated: dict[ControlKey, MapScope]
    ) -> None:
        """Controls of the same map as a per-item control are per-item too."""
        for guard in guards:
            for selector in selectors_of(guard):
                own = self._scope_of(selector)
                if own is not None and own.owner == scope.owner:
                    aggregated[key_of(selector)] = scope

    def _dimensions(
        self, selectors: list[ControlSelector], aggregated: dict[ControlKey, MapScope]
    ) -> list[list[Assignment]] | None:
        by_node: dict[str, set[ControlKey]] = {}
        for selector in selectors:
            by_node.setdefault(selector.name, set()).add(key_of(selector))
        scopes: dict[str, tuple[int, Members]] = {}
        for name in sorted(by_node):
            for key in sorted(by_node[name]):
                scope = aggregated.get(key)
                if scope is None:
                    continue
                maximum, members = scopes.setdefault(scope.owner, (scope.max_items, {}))
                if maximum != scope.max_items:
                    return None
                members.setdefault(name, []).append(key)
        shared_by_scope = {
            owner: shared_join_keys(members, aggregated, self.joins)
            | shared_execution_keys(members, aggregated, self.executions)
            for owner, (_, members) in scopes.items()
        }
        shared = set().union(*shared_by_scope.values())
        dimensions: list[list[Assignment]] = []
        for name in sorted(by_node):
            node = self.index.nodes.get(name)
            if node is None:
                continue
            found = scalar_dimensions(node, by_node[name] - shared, aggregated)
            if found is None:
                return None
            dimensions.extend(found)
        for owner in sorted(scopes):
            maximum, members = scopes[owner]
            controls = MapScopeControls(
                self.index.nodes, self.joins, self.executions, members, maximum
            )
            found = controls.dimensions(shared_by_scope[owner])
            if found is None:
                return None
            dimensions.extend(found)
        return dimensions
