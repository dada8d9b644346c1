"""Write facts: what a write binding stores and which state paths it makes definitely defined.

Writes of an executable only happen when it succeeds, and writes of a par only survive
when it joins, so the flow keeps them as facts that are applied once that is known. The
helpers here compose, intersect and apply such facts; all of them treat facts as values
and never change one in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zeroshot_kernel.admission.typepaths import (
    Definitions,
    FieldPath,
    common_supertype,
    is_prefix,
    overlaps,
)
from zeroshot_kernel.contract.payload import PayloadType


@dataclass(frozen=True)
class WriteFact:
    """A write of ``value_type`` and the paths (at and below its target) it defines."""

    value_type: PayloadType
    guaranteed: Mapping[FieldPath, PayloadType]


Writes = dict[FieldPath, WriteFact]
OutcomeWrites = dict[str, Writes]
"""Writes that happen only if the named executable (or map item) succeeds."""


@dataclass(frozen=True)
class Transition:
    before: PayloadType | None
    after: PayloadType | None


@dataclass(frozen=True)
class ParDefinition:
    """How a par's writes change definitions: applied only while the par is known to have
    joined, reverted to ``before`` while it may have failed."""

    name: str
    targets: frozenset[FieldPath]
    transitions: Mapping[FieldPath, Transition]


def intersect_facts(left: WriteFact, right: WriteFact) -> WriteFact | None:
    """What two alternative writes to one target have in common, if their types compare."""
    value_type = common_supertype(left.value_type, right.value_type)
    if value_type is None:
        return None
    guaranteed = {}
    for path, left_type in left.guaranteed.items():
        right_type = right.guaranteed.get(path)
        common = common_supertype(left_type, right_type) if right_type is not None else None
        if common is not None:
            guaranteed[path] = common
    return WriteFact(value_type, guaranteed)


def intersect_all(facts: Sequence[WriteFact]) -> WriteFact | None:
    if not facts:
        return None
    common: WriteFact | None = facts[0]
    for fact in facts[1:]:
        if common is None:
            return None
        common = intersect_facts(common, fact)
    return common


def apply_writes(defined: Definitions, writes: Mapping[FieldPath, WriteFact]) -> None:
    """Each write (in path order) forgets what it overwrites and defines what it guarantees."""
    for target in sorted(writes):
        for path in [path for path in defined if overlaps(target, path)]:
            del defined[path]
        defined.update(writes[target].guaranteed)


def compose_writes(target: Writes, later: Mapping[FieldPath, WriteFact]) -> None:
    """``later`` writes replace every earlier write they overlap."""
    for path in sorted(later):
        for prior in [prior for prior in target if overlaps(prior, path)]:
            del target[prior]
        target[path] = later[path]


def merge_outcome_writes(
    target: OutcomeWrites,
    order: list[str],
    source: Mapping[str, Writes],
    source_order: Iterable[str],
) -> None:
    for name, writes in source.items():
        target.setdefault(name, {}).update(writes)
    for name in source_order:
        if name in source and name not in order:
            order.append(name)


def merge_possible_types(
    target: dict[FieldPath, list[PayloadType]], source: Mapping[FieldPath, list[PayloadType]]
) -> None:
    for path, types in source.items():
        known = target.setdefault(path, [])
        known.extend(t for t in types if t not in known)


def copy_outcomes(outcomes: Mapping[str, Writes]) -> OutcomeWrites:
    return {name: dict(writes) for name, writes in outcomes.items()}


def par_definition(
    name: str, before: Definitions, writes: Mapping[FieldPath, WriteFact]
) -> ParDefinition | None:
    """The definition change a par's own writes make, or ``None`` when they change nothing."""
    after = dict(before)
    apply_writes(after, writes)
    targets = frozenset(writes)
    touched = sorted(path for path in {*before, *after} if any(overlaps(t, path) for t in targets))
    if all(before.get(path) == after.get(path) for path in touched):
        return None
    transitions = {path: Transition(before.get(path), after.get(path)) for path in touched}
    return ParDefinition(name, targets, transitions)


def retain_definitions(
    existing: Sequence[ParDefinition],
    writes: Mapping[FieldPath, WriteFact],
    incoming: Sequence[ParDefinition],
) -> list[ParDefinition]:
    """Drop the targets that ``writes`` overwrite unconditionally (writes owned by an
    ``incoming`` par definition are conditional and do not count)."""
    conditional = {target for definition in incoming for target in definition.targets}
    overwriting = [path for path in writes if path not in conditional]
    kept: list[ParDefinition] = []
    for definition in existing:
        targets = frozenset(
            t for t in definition.targets if not any(overlaps(t, w) for w in overwriting)
        )
        transitions = {
            path: change
            for path, change in definition.transitions.items()
            if any(is_prefix(t, path) for t in targets)
        }
        if targets and transitions:
            kept.append(ParDefinition(definition.name, targets, transitions))
    return kept


def restrict_definitions(
    definitions: Sequence[ParDefinition], keep: set[FieldPath]
) -> list[ParDefinition]:
    """Only the targets under a path of ``keep`` (a group's promoted paths) survive."""
    kept: list[ParDefinition] = []
    for definition in definitions:
        targets = frozenset(t for t in definition.targets if any(is_prefix(p, t) for p in keep))
        transitions = {
            path: change
            for path, change in definition.transitions.items()
            if any(is_prefix(t, path) for t in targets)
        }
        if targets and transitions:
            kept.append(ParDefinition(definition.name, targets, transitions))
    return kept


def unowned_writes(writes: Writes, definitions: Sequence[ParDefinition]) -> Writes:
    """The writes no nested par definition already accounts for."""
    owned = [target for definition in definitions for target in definition.targets]
    return {
        path: fact
        for path, fact in writes.items()
        if not any(overlaps(target, path) for target in owned)
    }
