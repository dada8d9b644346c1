"""Shared state of one structural analysis: the index, the findings, and the facts that
analyses of later nodes need from earlier ones (group correlations, completions, routes)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from zeroshot_kernel.admission.assignments import ControlSpace
from zeroshot_kernel.admission.controls import Assignment
from zeroshot_kernel.admission.flow import Flow
from zeroshot_kernel.admission.locations import GraphIndex, Loc, segments
from zeroshot_kernel.admission.outcome_checks import MAX_ASSIGNMENTS
from zeroshot_kernel.admission.predicates import (
    Always,
    Conjunction,
    Never,
    Predicate,
    conjoin,
    guards_in,
    holds,
)
from zeroshot_kernel.admission.typepaths import FieldPath
from zeroshot_kernel.contract.diagnostics import DiagnosticCode, GraphDiagnostic
from zeroshot_kernel.contract.graph import GraphSpec, Guard
from zeroshot_kernel.contract.payload import PayloadType


@dataclass(frozen=True)
class Scope:
    """What a node is analysed against: the flow reaching it, the state type it reads and
    writes, the current map item type, and element types of enclosing map promotions."""

    incoming: Flow
    state: PayloadType
    item: PayloadType | None = None
    indexed: Mapping[FieldPath, PayloadType] | None = None

    def entering(self, incoming: Flow, state: PayloadType) -> Scope:
        return dataclasses.replace(self, incoming=incoming, state=state)


@dataclass(frozen=True)
class Reach:
    """Which routes of a choice can be taken (all of them when undecidable)."""

    branches: tuple[bool, ...]
    otherwise: bool


@dataclass
class VerifierState:
    """The verifier's working state for one graph: its index, control space and what the
    checks found so far (diagnostics, completions, reachable routes)."""

    graph: GraphSpec
    index: GraphIndex
    controls: ControlSpace
    diagnostics: list[GraphDiagnostic] = field(default_factory=list)
    completions: dict[str, Predicate] = field(default_factory=dict)
    fallthrough: dict[int, bool] = field(default_factory=dict)
    reach: dict[str, Reach] = field(default_factory=dict)
    ceilings: set[Loc] = field(default_factory=set)
    """Locations whose ceiling is already reported (a question asked again adds nothing)."""
    coupling: dict[int, tuple[Predicate, tuple[int, int], frozenset[str]]] = field(
        default_factory=dict
    )

    @classmethod
    def of(cls, graph: GraphSpec) -> VerifierState:
        index = GraphIndex.of(graph)
        return cls(graph, index, ControlSpace(index))

    def emit(
        self, code: DiagnosticCode, message: str, loc: Loc, related: Iterable[str] = ()
    ) -> None:
        self.diagnostics.append(
            GraphDiagnostic(
                code=code,
                message=message,
                path=segments(loc),
                related_nodes=sorted(set(related)),
            )
        )

    def assignments(self, guards: Sequence[Guard], loc: Loc) -> list[Assignment] | None:
        """Legal control assignments for ``guards``; over the ceiling, reports it at
        ``loc`` (once per location) and returns ``None`` so the caller stays conservative."""
        found = self.controls.assignments(guards)
        if found is None and loc not in self.ceilings:
            self.ceilings.add(loc)
            self.emit(
                "ceiling_exceeded",
                f"deciding this needs more than {MAX_ASSIGNMENTS} combinations of control "
                "outcomes at once; split the decision or read fewer controls in one guard",
                loc,
            )
        return found

    def satisfiable(self, predicate: Predicate, loc: Loc) -> bool | None:
        """Whether some legal assignment satisfies ``predicate`` (``None``: undecidable).

        A conjunction is decided one independent group of conjuncts at a time: conjuncts
        that read no common control (after the correlations that tie controls together)
        range over a product space, so the whole holds somewhere iff every group does.
        This keeps a long sequence of unrelated choices linear instead of a product."""
        return self.conjunction(loc).add(predicate)

    def conjunction(self, loc: Loc) -> GrowingConjunction:
        """An empty conjunction to decide as conjuncts are added (a sequence's completion
        child by child), reporting ceilings at ``loc``."""
        return GrowingConjunction(self, loc)

    def decide(self, members: Sequence[Predicate], loc: Loc) -> bool | None:
        """Whether some legal assignment satisfies every one of ``members`` at once."""
        group = conjoin(members)
        found = self.assignments(guards_in(group), loc)
        if found is None:
            return None
        return any(holds(group, assignment) for assignment in found)

    def coupled(self, part: Predicate) -> frozenset[str]:
        """The nodes whose controls deciding ``part`` enumerates together, remembered per
        predicate object until a new group correlation is recorded."""
        version = (len(self.controls.joins), len(self.controls.executions))
        known = self.coupling.get(id(part))
        if known is not None and known[0] is part and known[1] == version:
            return known[2]
        nodes = self.controls.coupled_nodes(guards_in(part))
        self.coupling[id(part)] = (part, version, nodes)
        return nodes

    def may_fall_through(self, node: object) -> bool:
        return self.fallthrough.get(id(node), True)


class _Groups:
    """Conjuncts grouped so that no two groups share a coupled node.

    Groups are keyed by the index of their last part; a node points at the group that took
    it, and a merged group's old keys point at its new one (union-find), so each part costs
    its own nodes, not a scan of every group."""

    def __init__(self) -> None:
        self.members: dict[int, list[Predicate]] = {}
        """In the order of each group's last part (a merged group moves to the end)."""
        self._merged_into: dict[int, int] = {}
        self._owner: dict[str, int] = {}
        self._added = 0

    def add(self, part: Predicate, nodes: frozenset[str]) -> tuple[int, list[int]]:
        """Files ``part`` (coupled to ``nodes``); returns its group's key and the keys of
        the groups it merged."""
        key = self._added
        self._added += 1
        merged = sorted({self._current(self._owner[node]) for node in nodes if node in self._owner})
        members = [member for old in merged for member in self.members.pop(old)]
        for old in merged:
            self._merged_into[old] = key
        self.members[key] = [*members, part]
        for node in nodes:
            self._owner[node] = key
        return key, merged

    def _current(self, key: int) -> int:
        root = key
        while root in self._merged_into:
            root = self._merged_into[root]
        while key != root:  # point the whole chain at the root
            self._merged_into[key], key = root, self._merged_into[key]
        return root


class GrowingConjunction:
    """A conjunction decided as it grows: a new conjunct re-decides only the groups it
    joins, since the others were decided when they last changed. A sequence's completion
    is checked after every child; re-deciding the whole of it each time made admission
    quadratic in the length of the sequence."""

    def __init__(self, state: VerifierState, loc: Loc) -> None:
        self._state = state
        self._loc = loc
        self._groups = _Groups()
        self._undecidable: set[int] = set()
        self._never = False

    def add(self, predicate: Predicate) -> bool | None:
        """Conjoins ``predicate``; whether the conjunction so far is satisfiable
        (``None``: undecidable)."""
        if isinstance(predicate, Never):
            self._never = True
        if self._never:
            return False
        parts = predicate.parts if isinstance(predicate, Conjunction) else (predicate,)
        changed: set[int] = set()
        for part in parts:
            if isinstance(part, Always):
                continue
            key, merged = self._groups.add(part, self._state.coupled(part))
            changed.difference_update(merged)
            self._undecidable.difference_update(merged)
            changed.add(key)
        for key in sorted(changed):
            verdict = self._state.decide(self._groups.members[key], self._loc)
            if verdict is False:
                self._never = True
                return False
            if verdict is None:
                self._undecidable.add(key)
        return None if self._undecidable else True
