"""Correlations that tie a group's reported outcome to the outcomes inside it.

A par reports ``joined=reached`` exactly when enough branches completed, and a node in a
map body runs in an item exactly when the path to it was taken. Enumerating controls
without these ties would invent impossible combinations (a par that joined although every
branch failed) and so flag sound graphs or accept unsound ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zeroshot_kernel.admission.controls import (
    ControlKey,
    Counts,
    Source,
    is_silent,
    reports,
)
from zeroshot_kernel.admission.predicates import Predicate, guards_in, holds
from zeroshot_kernel.contract.graph import Guard


@dataclass(frozen=True)
class JoinedCorrelation:
    """An all/any/quorum par: ``joined=reached`` iff ``completion`` holds."""

    completion: Predicate
    field: str = "joined"

    def guards(self) -> list[Guard]:
        return guards_in(self.completion)


@dataclass(frozen=True)
class RacedCorrelation:
    """A first par: ``raced=satisfied`` iff some branch satisfied ``when``; ``no_satisfier``
    iff none did and all branches completed."""

    satisfaction: Predicate
    all_completed: Predicate
    field: str = "raced"

    def guards(self) -> list[Guard]:
        return [*guards_in(self.satisfaction), *guards_in(self.all_completed)]


JoinCorrelation = JoinedCorrelation | RacedCorrelation


@dataclass(frozen=True)
class MapExecution:
    """A node inside the body of map ``owner`` runs in an item iff ``presence`` holds."""

    owner: str
    presence: Predicate


def join_control(
    assignment: Mapping[ControlKey, Counts], name: str, correlation: JoinCorrelation
) -> Counts | None:
    return assignment.get(ControlKey(name, Source.GROUP, correlation.field))


def join_consistent(
    assignment: Mapping[ControlKey, Counts], name: str, correlation: JoinCorrelation
) -> bool:
    """Whether the par's reported join outcome agrees with its branches' outcomes."""
    control = join_control(assignment, name, correlation)
    if control is None or is_silent(control):
        return True
    if isinstance(correlation, JoinedCorrelation):
        completed = holds(correlation.completion, assignment)
        return (reports(control, ["reached"]) and completed) or (
            reports(control, ["quorum_unreachable"]) and not completed
        )
    satisfied = holds(correlation.satisfaction, assignment)
    return (reports(control, ["satisfied"]) and satisfied) or (
        reports(control, ["no_satisfier"])
        and not satisfied
        and holds(correlation.all_completed, assignment)
    )


def execution_consistent(
    assignment: Mapping[ControlKey, Counts], name: str, execution: MapExecution
) -> bool:
    """Whether an item ran ``name`` exactly when the path to it was taken."""
    ran = not is_silent(assignment.get(ControlKey(name, Source.EXECUTION, ""), ()))
    return ran == holds(execution.presence, assignment)
