"""Shared state of one structural analysis: the index, the findings, and the facts that
analyses of later nodes need from earlier ones (group correlations, completions, routes)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from zeroshot_kernel.admission.assignments import ControlSpace
from zeroshot_kernel.admission.controls import Assignment
from zeroshot_kernel.admission.flow import Flow
from zeroshot_kernel.admission.index import GraphIndex, Loc, segments
from zeroshot_kernel.admission.outcomes import MAX_ASSIGNMENTS
from zeroshot_kernel.admission.predicates import Predicate, guards_in, holds
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
class Run:
    graph: GraphSpec
    index: GraphIndex
    controls: ControlSpace
    diagnostics: list[GraphDiagnostic] = field(default_factory=list)
    completions: dict[str, Predicate] = field(default_factory=dict)
    fallthrough: dict[int, bool] = field(default_factory=dict)
    reach: dict[str, Reach] = field(default_factory=dict)

    @classmethod
    def of(cls, graph: GraphSpec) -> Run:
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
        ``loc`` and returns ``None`` so the caller stays conservative."""
        found = self.controls.assignments(guards)
        if found is None:
            self.emit(
                "ceiling_exceeded",
                f"deciding this routing needs more than {MAX_ASSIGNMENTS} control "
                "combinations; split the decision or read fewer controls at once",
                loc,
            )
        return found

    def satisfiable(self, predicate: Predicate, loc: Loc) -> bool | None:
        """Whether some legal assignment satisfies ``predicate`` (``None``: undecidable)."""
        found = self.assignments(guards_in(predicate), loc)
        if found is None:
            return None
        return any(holds(predicate, assignment) for assignment in found)

    def may_fall_through(self, node: object) -> bool:
        return self.fallthrough.get(id(node), True)
