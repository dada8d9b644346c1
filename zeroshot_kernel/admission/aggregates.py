"""Per-item controls of a map, read as counts over its items (``k_of_map``).

Nodes of one map body whose outcomes are tied (a par and its branches, a node and the
choice that leads to it) are enumerated together per item, so that a count over the
items never combines outcomes no single item could produce. Independent nodes form
separate components, which keeps the multiset counts small.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from zeroshot_kernel.admission.controls import (
    NOTHING,
    Assignment,
    ControlKey,
    Source,
    is_silent,
    key_of,
    selectors_of,
)
from zeroshot_kernel.admission.correlations import (
    JoinCorrelation,
    MapExecution,
    execution_consistent,
    join_consistent,
)
from zeroshot_kernel.admission.outcome_checks import (
    MAX_ASSIGNMENTS,
    combinations,
    execution_outcomes,
    item_multisets,
    product_is_bounded,
    scalar_dimensions,
)
from zeroshot_kernel.admission.predicates import Always, guards_in
from zeroshot_kernel.contract.graph import GraphNode, Guard

Members = dict[str, list[ControlKey]]
"""Nodes of one map body with the controls read from them."""


def guard_keys(guards: list[Guard]) -> list[ControlKey]:
    return [key_of(selector) for guard in guards for selector in selectors_of(guard)]


def join_present(name: str, correlation: JoinCorrelation, keys: Set[ControlKey]) -> bool:
    return ControlKey(name, Source.GROUP, correlation.field) in keys


def join_applies(
    name: str,
    correlation: JoinCorrelation,
    controls: Set[ControlKey],
    available: Set[ControlKey],
) -> bool:
    """A par's join tie constrains ``controls`` when its control is among them and every
    control its branches' completion reads is known."""
    return join_present(name, correlation, controls) and all(
        key in available for key in guard_keys(correlation.guards())
    )


@dataclass(frozen=True)
class MapScopeControls:
    """The controls read per item of one map, and the ties that constrain them."""

    nodes: Mapping[str, GraphNode]
    joins: Mapping[str, JoinCorrelation]
    executions: Mapping[str, MapExecution]
    members: Members
    maximum: int

    def dimensions(self, shared: set[ControlKey]) -> list[list[Assignment]] | None:
        """The map's dimensions; with ``shared`` controls (read outside the map but tied
        to it), one combined dimension over every value of those controls."""
        scope = {key for keys in self.members.values() for key in keys}
        available = scope | shared
        components = self._components(scope, available)
        if not shared:
            return self._per_component(components, {}, scope)
        shared_dimensions = scalar_dimensions_for(self.nodes, shared)
        if shared_dimensions is None or not product_is_bounded(shared_dimensions):
            return None
        combined: list[Assignment] = []
        for fixed in combinations(shared_dimensions) or []:
            local = self._per_component(components, fixed, available)
            if local is None or not product_is_bounded(local):
                return None
            for assignment in combinations(local) or []:
                if len(combined) >= MAX_ASSIGNMENTS:
                    return None
                combined.append({**fixed, **assignment})
        return [combined]

    def _components(self, scope: set[ControlKey], available: set[ControlKey]) -> list[set[str]]:
        components = [{name} for name in sorted(self.members)]
        for name in sorted(self.joins):
            correlation = self.joins[name]
            if join_applies(name, correlation, scope, available):
                tied = {name, *self._scoped_names(correlation.guards(), scope)}
                components = _merge(components, tied)
        always = {
            name
            for name in self.members
            if name in self.executions and isinstance(self.executions[name].presence, Always)
        }
        if always:
            components = _merge(components, always)
        for name in sorted(self.executions):
            if name in self.members:
                guards = guards_in(self.executions[name].presence)
                components = _merge(components, {name, *self._scoped_names(guards, scope)})
        return sorted(components, key=min)

    @staticmethod
    def _scoped_names(guards: list[Guard], scope: set[ControlKey]) -> set[str]:
        return {key.node for key in guard_keys(guards) if key in scope}

    def _per_component(
        self, components: list[set[str]], fixed: Assignment, available: set[ControlKey]
    ) -> list[list[Assignment]] | None:
        dimensions = []
        for component in components:
            dimension = self._component(component, fixed, available)
            if dimension is None:
                return None
            dimensions.append(dimension)
        return dimensions

    def _component(
        self, component: set[str], fixed: Assignment, available: set[ControlKey]
    ) -> list[Assignment] | None:
        """Multisets of per-item outcomes of the nodes of one component."""
        names = sorted(component)
        keys = [key for name in names for key in self.members.get(name, [])]
        controls = set(keys)
        per_node: list[list[Assignment]] = []
        for name in names:
            node = self.nodes.get(name)
            if name not in self.members or node is None:
                return None
            node_keys = list(self.members[name])
            if name in self.executions:
                node_keys.append(ControlKey(name, Source.EXECUTION, ""))
            outcomes = execution_outcomes(node, node_keys)
            if outcomes is None:
                return None
            per_node.append([*outcomes, dict.fromkeys(node_keys, NOTHING)])
        if not product_is_bounded(per_node):
            return None
        distinct: dict[tuple[tuple[ControlKey, tuple[tuple[str, int], ...]], ...], Assignment] = {}
        for outcome in combinations(per_node) or []:
            if all(is_silent(counts) for counts in outcome.values()):
                continue
            if not self._consistent({**fixed, **outcome}, component, controls, available):
                continue
            visible = {k: v for k, v in outcome.items() if k.source != Source.EXECUTION}
            if not all(is_silent(counts) for counts in visible.values()):
                distinct.setdefault(tuple(sorted(visible.items())), visible)
        items = [distinct[signature] for signature in sorted(distinct)]
        return item_multisets(keys, items, self.maximum)

    def _consistent(
        self,
        assignment: Assignment,
        component: set[str],
        controls: set[ControlKey],
        available: set[ControlKey],
    ) -> bool:
        for name in sorted(self.joins):
            correlation = self.joins[name]
            if join_applies(name, correlation, controls, available) and not join_consistent(
                assignment, name, correlation
            ):
                return False
        return all(
            execution_consistent(assignment, name, self.executions[name])
            for name in component
            if name in self.executions
        )


def shared_join_keys(
    members: Members,
    aggregated: Mapping[ControlKey, object],
    joins: Mapping[str, JoinCorrelation],
) -> set[ControlKey]:
    """Controls outside the map that a par inside it is tied to (transitively)."""
    available = {key for keys in members.values() for key in keys}
    shared: set[ControlKey] = set()
    discovered = True
    while discovered:
        discovered = False
        for name in sorted(joins):
            correlation = joins[name]
            if not join_present(name, correlation, available):
                continue
            for key in guard_keys(correlation.guards()):
                if key in aggregated:
                    continue
                if key not in shared:
                    shared.add(key)
                    discovered = True
                available.add(key)
    return shared


def shared_execution_keys(
    members: Members,
    aggregated: Mapping[ControlKey, object],
    executions: Mapping[str, MapExecution],
) -> set[ControlKey]:
    """Controls outside the map that decide whether a node inside it runs."""
    return {
        key
        for name in sorted(members)
        if name in executions
        for key in guard_keys(guards_in(executions[name].presence))
        if key not in aggregated
    }


def scalar_dimensions_for(
    nodes: Mapping[str, GraphNode], keys: set[ControlKey]
) -> list[list[Assignment]] | None:
    by_node: dict[str, set[ControlKey]] = {}
    for key in keys:
        by_node.setdefault(key.node, set()).add(key)
    dimensions: list[list[Assignment]] = []
    for name in sorted(by_node):
        node = nodes.get(name)
        found = scalar_dimensions(node, by_node[name], ()) if node is not None else None
        if found is None:
            return None
        dimensions.extend(found)
    return dimensions


def _merge(components: list[set[str]], tied: set[str]) -> list[set[str]]:
    independent = [component for component in components if component.isdisjoint(tied)]
    merged = set(tied).union(*(c for c in components if not c.isdisjoint(tied)))
    return [*independent, merged]
