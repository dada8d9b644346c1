"""Effects: what running a node does to the flow after it, summarised for its parent.

An effect records which nodes have definitely run, which writes definitely or possibly
happened, which writes wait for an executable's success, whether the node can complete
normally at all and under which control condition. Alternatives (choice branches) keep
what all completing alternatives share; parallel branches keep what every possible set
of joining branches guarantees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from zeroshot_kernel.admission.facts import (
    OutcomeWrites,
    ParDefinition,
    WriteFact,
    Writes,
    compose_writes,
    copy_outcomes,
    intersect_all,
    intersect_facts,
    merge_possible_types,
    restrict_definitions,
    retain_definitions,
)
from zeroshot_kernel.admission.predicates import NEVER, Predicate, disjoin
from zeroshot_kernel.admission.typepaths import FieldPath, is_prefix
from zeroshot_kernel.contract.payload import PayloadType

Scenario = frozenset[int]
"""Indexes of the par branches that complete together in one legal outcome."""


@dataclass
class Effects:
    definite_nodes: set[str] = field(default_factory=set)
    unavailable_nodes: set[str] = field(default_factory=set)
    conditional_nodes: dict[str, set[str]] = field(default_factory=dict)
    definite_writes: Writes = field(default_factory=dict)
    possible_writes: Writes = field(default_factory=dict)
    possible_types: dict[FieldPath, list[PayloadType]] = field(default_factory=dict)
    outcome_writes: OutcomeWrites = field(default_factory=dict)
    outcome_order: list[str] = field(default_factory=list)
    definitions: list[ParDefinition] = field(default_factory=list)
    exit_failed: set[str] = field(default_factory=set)
    falls_through: bool = False
    completion: Predicate = NEVER

    def settle(self, failed: set[str]) -> None:
        """Writes of executables known to have succeeded become definite."""
        for name in [name for name in self.outcome_order if name not in failed]:
            writes = self.outcome_writes.pop(name, None)
            if writes is not None:
                self.definitions = retain_definitions(self.definitions, writes, [])
                compose_writes(self.definite_writes, writes)
        self.outcome_order = [name for name in self.outcome_order if name in self.outcome_writes]

    def keep_promoted(self, promoted: set[FieldPath]) -> None:
        """A group's writes end at its boundary except the promoted paths."""

        def kept(path: FieldPath) -> bool:
            return any(is_prefix(p, path) for p in promoted)

        self.definite_writes = {p: w for p, w in self.definite_writes.items() if kept(p)}
        self.possible_writes = {p: w for p, w in self.possible_writes.items() if kept(p)}
        self.possible_types = {p: t for p, t in self.possible_types.items() if kept(p)}
        outcomes = {
            name: {p: w for p, w in writes.items() if kept(p)}
            for name, writes in self.outcome_writes.items()
        }
        self.outcome_writes = {name: writes for name, writes in outcomes.items() if writes}
        self.outcome_order = [n for n in self.outcome_order if n in self.outcome_writes]
        self.definitions = restrict_definitions(self.definitions, promoted)


def merge_conditional(target: dict[str, set[str]], source: dict[str, set[str]]) -> None:
    for owner, nodes in source.items():
        target.setdefault(owner, set()).update(nodes)


def keep_conditional(conditional: dict[str, set[str]], definite: set[str]) -> dict[str, set[str]]:
    kept = {owner: nodes & definite for owner, nodes in conditional.items()}
    return {owner: nodes for owner, nodes in kept.items() if nodes}


def merge_alternatives(alternatives: Sequence[Effects]) -> Effects:
    """What holds after whichever completing alternative ran."""
    merged = Effects()
    for alternative in alternatives:
        merged.possible_writes.update(alternative.possible_writes)
        merge_possible_types(merged.possible_types, alternative.possible_types)
    completing = [a for a in alternatives if a.falls_through]
    if not completing:
        return merged
    first = completing[0]
    merged.definite_nodes = set.intersection(*(a.definite_nodes for a in completing))
    merged.definite_writes = dict(first.definite_writes)
    merged.outcome_writes = copy_outcomes(first.outcome_writes)
    merged.definitions = list(first.definitions)
    merged.unavailable_nodes = set().union(*(a.unavailable_nodes for a in completing))
    merged.exit_failed = set().union(*(a.exit_failed for a in completing))
    conditional = {owner: set(nodes) for owner, nodes in first.conditional_nodes.items()}
    for other in completing:
        merged.definite_writes = _common_writes(merged.definite_writes, other.definite_writes)
        merged.outcome_writes = {
            name: common
            for name, writes in merged.outcome_writes.items()
            if name in other.outcome_writes
            and (common := _common_writes(writes, other.outcome_writes[name]))
        }
        merged.definitions = [d for d in merged.definitions if d in other.definitions]
        conditional = {
            owner: nodes & other.conditional_nodes[owner]
            for owner, nodes in conditional.items()
            if owner in other.conditional_nodes and nodes & other.conditional_nodes[owner]
        }
    merged.conditional_nodes = keep_conditional(conditional, merged.definite_nodes)
    merged.outcome_order = [n for n in first.outcome_order if n in merged.outcome_writes]
    merged.falls_through = True
    merged.completion = disjoin(a.completion for a in completing)
    return merged


def _common_writes(left: Writes, right: Writes) -> Writes:
    common: Writes = {}
    for path, fact in left.items():
        other = right.get(path)
        shared = intersect_facts(fact, other) if other is not None else None
        if shared is not None:
            common[path] = shared
    return common


def definite_in_every(scenarios: Sequence[Scenario], required: int, provides: list[bool]) -> bool:
    """A branch fact survives a join when, in every legal set of completing branches,
    fewer than ``required`` of them lack it."""
    return all(sum(1 for i in scenario if not provides[i]) < required for scenario in scenarios)


def merge_scenarios(
    branches: Sequence[Effects], required: int, scenarios: Sequence[Scenario]
) -> Effects:
    """What holds after a par joined, given the sets of branches that can complete."""
    merged = Effects()
    for branch in branches:
        merged.possible_writes.update(branch.possible_writes)
        merge_possible_types(merged.possible_types, branch.possible_types)
    if not scenarios:
        return merged
    candidates = sorted({name for b in branches for name in b.definite_nodes})
    merged.definite_nodes = {
        name
        for name in candidates
        if definite_in_every(scenarios, required, [name in b.definite_nodes for b in branches])
    }
    merged.unavailable_nodes = set().union(*(b.unavailable_nodes for b in branches))
    for branch in branches:
        merge_conditional(merged.conditional_nodes, branch.conditional_nodes)
    merged.conditional_nodes = keep_conditional(merged.conditional_nodes, merged.definite_nodes)
    merged.definite_writes = _joined_writes(
        [b.definite_writes for b in branches], required, scenarios
    )
    merged.outcome_writes = _joined_outcomes(branches, required, scenarios)
    merged.outcome_order = [
        name for b in branches for name in b.outcome_order if name in merged.outcome_writes
    ]
    merged.definitions = _joined_definitions(branches, required, scenarios)
    merged.exit_failed = set().union(*(branches[i].exit_failed for s in scenarios for i in s))
    merged.falls_through = True
    return merged


def _joined_writes(
    per_branch: Sequence[Writes], required: int, scenarios: Sequence[Scenario]
) -> Writes:
    joined: Writes = {}
    for path in sorted({path for writes in per_branch for path in writes}):
        if not definite_in_every(scenarios, required, [path in w for w in per_branch]):
            continue
        providers = _providers(per_branch, path, scenarios)
        common = intersect_all(providers)
        if common is not None:
            joined[path] = common
    return joined


def _providers(
    per_branch: Sequence[Writes], path: FieldPath, scenarios: Sequence[Scenario]
) -> list[WriteFact]:
    return [
        per_branch[i][path]
        for scenario in scenarios
        for i in sorted(scenario)
        if path in per_branch[i]
    ]


def _joined_outcomes(
    branches: Sequence[Effects], required: int, scenarios: Sequence[Scenario]
) -> OutcomeWrites:
    joined: OutcomeWrites = {}
    pairs = sorted({(n, p) for b in branches for n, ws in b.outcome_writes.items() for p in ws})
    for name, path in pairs:
        per_branch = [b.outcome_writes.get(name, {}) for b in branches]
        if not definite_in_every(scenarios, required, [path in w for w in per_branch]):
            continue
        common = intersect_all(_providers(per_branch, path, scenarios))
        if common is not None:
            joined.setdefault(name, {})[path] = common
    return joined


def _joined_definitions(
    branches: Sequence[Effects], required: int, scenarios: Sequence[Scenario]
) -> list[ParDefinition]:
    kept: list[ParDefinition] = []
    for candidate in (d for b in branches for d in b.definitions):
        if candidate in kept:
            continue
        if definite_in_every(scenarios, required, [candidate in b.definitions for b in branches]):
            kept.append(candidate)
    return kept
