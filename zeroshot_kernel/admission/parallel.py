"""Parallel groups: which branch sets can join, what survives the join, and which writes
can collide.

The join condition (all, any, quorum, or the first branch that satisfies ``when``) is an
at-least condition over the branches' completion predicates. Enumerating it yields the
legal sets of completing branches ("scenarios"); a branch fact survives the join when
every scenario guarantees it. The par's reported outcome (``joined``/``raced``) is tied to
the same predicates so that later choices see only consistent combinations.
"""

from __future__ import annotations

from collections.abc import Sequence

from zeroshot_kernel.admission.controls import selector_uses
from zeroshot_kernel.admission.correlations import JoinedCorrelation, RacedCorrelation
from zeroshot_kernel.admission.effects import Effects, Scenario, merge_scenarios
from zeroshot_kernel.admission.flow import Flow
from zeroshot_kernel.admission.guard_checks import check_guard
from zeroshot_kernel.admission.locations import Loc, at, item
from zeroshot_kernel.admission.predicates import (
    ALWAYS,
    NEVER,
    Holds,
    Predicate,
    at_least,
    conjoin,
    disjoin,
    guards_in,
    holds,
    negate,
)
from zeroshot_kernel.admission.shape import check_quorum
from zeroshot_kernel.admission.typepaths import comparable, overlaps
from zeroshot_kernel.admission.verifier_state import VerifierState
from zeroshot_kernel.contract.graph import (
    AllGuard,
    AllJoin,
    AnyGuard,
    ControlSelector,
    FirstJoin,
    Guard,
    InGuard,
    Join,
    KOfMapGuard,
    NotGuard,
    ParNode,
    QuorumJoin,
)


def required_completions(join: Join, branches: int) -> int:
    if isinstance(join, AllJoin):
        return branches
    if isinstance(join, QuorumJoin):
        return join.count
    return 1


def check_join(run: VerifierState, par: ParNode, incoming: Flow, loc: Loc) -> None:
    """A first join's ``when`` may read the par's own branches; a quorum must be reachable."""
    if isinstance(par.join, FirstJoin):
        inside = {node.name for branch in par.branches for node in branch.walk()}
        check_guard(
            run,
            par.join.when,
            incoming.available | inside,
            at(loc, "join", "when"),
            "invalid_graph_shape",
        )
    check_quorum(run, par, loc)


def check_parallel_writes(
    run: VerifierState, par: ParNode, branches: Sequence[Effects], loc: Loc
) -> None:
    for position, raw in enumerate(par.promoted_state_paths):
        path = tuple(raw)
        types = [t for branch in branches for t in branch.possible_types.get(path, [])]
        for left, left_type in enumerate(types):
            for right_type in types[left + 1 :]:
                if not comparable(left_type, right_type):
                    run.emit(
                        "schema_safety",
                        "parallel branches write incompatible types to this promoted path; "
                        "make the branch writes agree on one type",
                        item(loc, "promotedStatePaths", position),
                        [par.name],
                    )
    if not isinstance(par.join, AllJoin):
        return
    for left, left_branch in enumerate(branches):
        for right in range(left + 1, len(branches)):
            for left_path in sorted(left_branch.possible_writes):
                for right_path in sorted(branches[right].possible_writes):
                    if overlaps(left_path, right_path):
                        run.emit(
                            "write_conflict",
                            "branches of this all-join par can write overlapping state "
                            "paths; give each branch its own paths",
                            at(loc, "branches"),
                            [par.branches[left].name, par.branches[right].name],
                        )


def merge_join(
    run: VerifierState, par: ParNode, branches: Sequence[Effects], incoming: Flow, loc: Loc
) -> Effects:
    """The par's effects after it joined (before its own promotion)."""
    if isinstance(par.join, FirstJoin):
        return _merge_first(run, par, branches, incoming, loc)
    required = required_completions(par.join, len(branches))
    if required > len(branches):
        return _undecided(branches, required)
    completion = at_least(required, [branch.completion for branch in branches])
    run.controls.joins[par.name] = JoinedCorrelation(completion)
    predicates = [branch.completion for branch in branches]
    assignments = run.assignments(
        [guard for p in predicates for guard in guards_in(p)], at(loc, "join")
    )
    if assignments is None:
        return _undecided(branches, required)
    scenarios = _scenarios(
        [
            frozenset(i for i, branch in enumerate(branches) if holds(branch.completion, a))
            for a in assignments
        ],
        required,
    )
    merged = merge_scenarios(branches, required, scenarios)
    merged.completion = completion
    return merged


def _merge_first(
    run: VerifierState,
    par: ParNode,
    branches: Sequence[Effects],
    incoming: Flow,
    loc: Loc,
) -> Effects:
    satisfiers: list[Predicate] = [
        conjoin([branch.completion, _when_on_branch(run, par, position, branch, incoming)])
        for position, branch in enumerate(branches)
    ]
    satisfaction = disjoin(satisfiers)
    all_completed = conjoin(branch.completion for branch in branches)
    run.controls.joins[par.name] = RacedCorrelation(satisfaction, all_completed)
    settled = disjoin([satisfaction, all_completed])
    assignments = run.assignments(
        [*guards_in(satisfaction), *guards_in(all_completed)], at(loc, "join")
    )
    if assignments is None:
        return _undecided(branches, 1)
    scenarios = _scenarios(
        [frozenset(i for i, s in enumerate(satisfiers) if holds(s, a)) for a in assignments], 1
    )
    merged = merge_scenarios(branches, 1, scenarios)
    merged.falls_through = any(holds(settled, a) for a in assignments)
    merged.completion = settled
    return merged


def _when_on_branch(
    run: VerifierState, par: ParNode, position: int, branch: Effects, incoming: Flow
) -> Predicate:
    """When ``when`` holds on branch ``position``, as the reducer evaluates it: on that
    branch's own controls, where every control of another racer is unset and so matches
    nothing. A control of this branch's own nodes that may not have run leaves the branch
    unjudgeable, and it is (conservatively) taken never to satisfy."""
    assert isinstance(par.join, FirstJoin)
    others = frozenset(
        node.name
        for number, other in enumerate(par.branches)
        if number != position
        for node in other.walk()
    )

    def readable(selector: ControlSelector, per_item: bool) -> bool:
        owner = run.index.map_owner(selector.name) if per_item else None
        return (
            selector.name in incoming.available
            or selector.name in branch.definite_nodes
            or (owner is not None and owner in branch.definite_nodes)
        )

    uses = selector_uses(par.join.when)
    if all(readable(selector, per_item) for selector, per_item in uses):
        return Holds(par.join.when)
    if any(not readable(s, per_item) and s.name not in others for s, per_item in uses):
        return NEVER
    return _without(par.join.when, others)


def _without(guard: Guard, unset: frozenset[str]) -> Predicate:
    """``guard`` with the controls of ``unset`` nodes absent (an absent control reports
    no label, so it matches nothing)."""
    if isinstance(guard, InGuard | KOfMapGuard):
        return NEVER if guard.value.name in unset else Holds(guard)
    if isinstance(guard, AllGuard):
        return conjoin(_without(inner, unset) for inner in guard.guards)
    if isinstance(guard, AnyGuard):
        return disjoin(_without(inner, unset) for inner in guard.guards)
    if isinstance(guard, NotGuard):
        return negate(_without(guard.guard, unset))
    present = [value for value in guard.values if value.name not in unset]
    if len(present) == len(guard.values):
        return Holds(guard)
    return at_least(
        guard.count,
        [Holds(InGuard(kind="in", value=value, labels=guard.labels)) for value in present],
    )


def _scenarios(completing: list[frozenset[int]], required: int) -> list[Scenario]:
    distinct = {s for s in completing if len(s) >= required}
    return sorted(distinct, key=lambda s: tuple(sorted(s)))


def _undecided(branches: Sequence[Effects], required: int) -> Effects:
    """Joins that cannot be analysed continue conservatively (their diagnostic suffices)."""
    merged = merge_scenarios(branches, required, [])
    merged.falls_through = True
    merged.completion = ALWAYS
    return merged
