"""Completion predicates: under which control assignments a node finishes normally.

A node inside a choice branch only completes when the branch was taken; a seq completes
when all its children do; a par when enough branches do. Keeping these conditions as
formulas over guards (instead of booleans) lets later choices and joins see which of their
combinations can actually happen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from zeroshot_kernel.admission.controls import ControlKey, Counts, guard_holds
from zeroshot_kernel.contract.graph import Guard


@dataclass(frozen=True)
class Always:
    pass


@dataclass(frozen=True)
class Never:
    pass


@dataclass(frozen=True)
class Holds:
    guard: Guard


@dataclass(frozen=True)
class Negation:
    inner: Predicate


@dataclass(frozen=True)
class Conjunction:
    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class Disjunction:
    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class AtLeast:
    count: int
    parts: tuple[Predicate, ...]


Predicate = Always | Never | Holds | Negation | Conjunction | Disjunction | AtLeast
ALWAYS = Always()
NEVER = Never()


def negate(predicate: Predicate) -> Predicate:
    if isinstance(predicate, Always):
        return NEVER
    if isinstance(predicate, Never):
        return ALWAYS
    return Negation(predicate)


def conjoin(predicates: Iterable[Predicate]) -> Predicate:
    parts: list[Predicate] = []
    for predicate in predicates:
        if isinstance(predicate, Never):
            return NEVER
        if isinstance(predicate, Conjunction):
            parts.extend(predicate.parts)
        elif not isinstance(predicate, Always):
            parts.append(predicate)
    if not parts:
        return ALWAYS
    return parts[0] if len(parts) == 1 else Conjunction(tuple(parts))


def disjoin(predicates: Iterable[Predicate]) -> Predicate:
    parts: list[Predicate] = []
    for predicate in predicates:
        if isinstance(predicate, Always):
            return ALWAYS
        if isinstance(predicate, Disjunction):
            parts.extend(predicate.parts)
        elif not isinstance(predicate, Never):
            parts.append(predicate)
    if not parts:
        return NEVER
    return parts[0] if len(parts) == 1 else Disjunction(tuple(parts))


def at_least(count: int, predicates: list[Predicate]) -> Predicate:
    if count == 0:
        return ALWAYS
    if count > len(predicates):
        return NEVER
    if count == len(predicates):
        return conjoin(predicates)
    return AtLeast(count, tuple(predicates))


def holds(predicate: Predicate, assignment: Mapping[ControlKey, Counts]) -> bool:
    if isinstance(predicate, Always):
        return True
    if isinstance(predicate, Never):
        return False
    if isinstance(predicate, Holds):
        return guard_holds(predicate.guard, assignment)
    if isinstance(predicate, Negation):
        return not holds(predicate.inner, assignment)
    if isinstance(predicate, Conjunction):
        return all(holds(part, assignment) for part in predicate.parts)
    if isinstance(predicate, Disjunction):
        return any(holds(part, assignment) for part in predicate.parts)
    return sum(holds(part, assignment) for part in predicate.parts) >= predicate.count


def guards_in(predicate: Predicate) -> list[Guard]:
    """The guards a predicate mentions, in order."""
    if isinstance(predicate, Holds):
        return [predicate.guard]
    if isinstance(predicate, Negation):
        return guards_in(predicate.inner)
    if isinstance(predicate, Conjunction | Disjunction | AtLeast):
        return [guard for part in predicate.parts for guard in guards_in(part)]
    return []
