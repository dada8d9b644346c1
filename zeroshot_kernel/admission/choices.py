"""Choice routing: branches are tried first-true in order, so each branch gets the residual
assignments no earlier branch matched.

A branch with an empty residual is dead, an ``otherwise`` with nothing left over is dead,
and a choice without ``otherwise`` must leave nothing over (every legal outcome, errors
included, is routed). The residual also tells each route what it learned: inside a branch
taken only on success of ``work``, ``work``'s writes have happened and its output is
readable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zeroshot_kernel.admission.controls import (
    JOIN_FAILURES,
    JOIN_FIELDS,
    Assignment,
    Source,
    guard_holds,
)
from zeroshot_kernel.admission.flow import Flow
from zeroshot_kernel.admission.guard_checks import check_guard
from zeroshot_kernel.admission.locations import Loc, at, item, within
from zeroshot_kernel.admission.predicates import (
    ALWAYS,
    Holds,
    Predicate,
    conjoin,
    negate,
)
from zeroshot_kernel.admission.verifier_state import Reach, VerifierState
from zeroshot_kernel.contract.graph import ChoiceNode


@dataclass(frozen=True)
class Refinement:
    """Executables (and pars) known to have succeeded on a route, and those that may have
    failed on it."""

    succeeded: frozenset[str] = frozenset()
    failed: frozenset[str] = frozenset()

    def applied_to(self, incoming: Flow) -> Flow:
        flow = incoming.copy()
        flow.refine(set(self.succeeded), set(self.failed))
        return flow


@dataclass(frozen=True)
class Routes:
    reachable: tuple[bool, ...]
    refinements: tuple[Refinement, ...]
    completions: tuple[Predicate, ...]
    otherwise: Refinement
    otherwise_reachable: bool
    otherwise_completion: Predicate
    exhaustive: bool

    @property
    def reach(self) -> Reach:
        return Reach(self.reachable, self.otherwise_reachable)


def branch_conditions(choice: ChoiceNode) -> list[Predicate]:
    """Branch ``i`` runs when its guard holds and no earlier guard does (its own guard
    first: it rules out most assignments at once, where the earlier guards' negations hold
    on nearly all of them)."""
    # Negations of the earlier guards, one object each: shared by every later condition,
    # so what the verifier learns about one (its coupled nodes) is learnt once.
    ruled_out: list[Predicate] = []
    conditions = []
    for branch in choice.branches:
        current = Holds(branch.when)
        conditions.append(conjoin([current, *ruled_out]))
        ruled_out.append(negate(current))
    return conditions


def otherwise_condition(choice: ChoiceNode) -> Predicate:
    return conjoin(negate(Holds(branch.when)) for branch in choice.branches)


def undecided(choice: ChoiceNode) -> Routes:
    """Every route possible and nothing learned: used when the guards cannot be analysed."""
    count = len(choice.branches)
    present = choice.otherwise is not None
    return Routes(
        reachable=(True,) * count,
        refinements=(Refinement(),) * count,
        completions=(ALWAYS,) * count,
        otherwise=Refinement(),
        otherwise_reachable=present,
        otherwise_completion=ALWAYS,
        exhaustive=present,
    )


def route_choice(run: VerifierState, choice: ChoiceNode, incoming: Flow, loc: Loc) -> Routes:
    legal = True
    for position, branch in enumerate(choice.branches):
        when_loc = at(item(loc, "branches", position), "when")
        legal &= check_guard(
            run, branch.when, incoming.available, when_loc, "choice_exhaustiveness"
        )
    if not legal:
        return undecided(choice)
    assignments = run.assignments([b.when for b in choice.branches], at(loc, "branches"))
    if assignments is None:
        return undecided(choice)
    matched = [False] * len(assignments)
    reachable: list[bool] = []
    refinements: list[Refinement] = []
    for position, branch in enumerate(choice.branches):
        residual = []
        for number, assignment in enumerate(assignments):
            if guard_holds(branch.when, assignment):
                if not matched[number]:
                    residual.append(assignment)
                matched[number] = True
        if not residual:
            run.emit(
                "choice_exhaustiveness",
                "branch can never be taken: earlier branches already match every control "
                "outcome this guard accepts; remove it or narrow an earlier guard",
                at(item(loc, "branches", position), "when"),
                [choice.name],
            )
        reachable.append(bool(residual))
        refinements.append(refinement_of(residual))
    uncovered = [a for a, hit in zip(assignments, matched, strict=True) if not hit]
    if choice.otherwise is None and uncovered:
        run.emit(
            "choice_exhaustiveness",
            "branches leave some legal control outcomes (errors included) unrouted; add "
            "branches for them or an otherwise",
            at(loc, "branches"),
            [choice.name],
        )
    if choice.otherwise is not None and not uncovered:
        run.emit(
            "choice_exhaustiveness",
            "otherwise can never be taken because the branches route every legal control "
            "outcome; remove it",
            within(at(loc, "otherwise"), choice.otherwise.name),
            [choice.name],
        )
    return Routes(
        reachable=tuple(reachable),
        refinements=tuple(refinements),
        completions=tuple(branch_conditions(choice)),
        otherwise=refinement_of(uncovered),
        otherwise_reachable=choice.otherwise is not None and bool(uncovered),
        otherwise_completion=otherwise_condition(choice),
        exhaustive=choice.otherwise is not None or not uncovered,
    )


def refinement_of(assignments: Sequence[Assignment]) -> Refinement:
    """A node read by the route's controls failed on the route if it failed in any of the
    route's assignments, else it succeeded on every one."""
    names = sorted(
        {
            key.node
            for assignment in assignments
            for key in assignment
            if key.source in (Source.SIGNAL, Source.ERROR)
            or (key.source == Source.GROUP and key.field in JOIN_FIELDS)
        }
    )
    failed = {name for name in names if any(_failed(a, name) for a in assignments)}
    return Refinement(frozenset(names) - failed, frozenset(failed))


def _failed(assignment: Assignment, name: str) -> bool:
    signalled = False
    signals = 0
    for key, counts in assignment.items():
        if key.node != name:
            continue
        if key.source == Source.ERROR and any(count > 0 for _, count in counts):
            return True
        if (
            key.source == Source.GROUP
            and key.field in JOIN_FIELDS
            and any(count > 0 and label in JOIN_FAILURES for label, count in counts)
        ):
            return True
        if key.source == Source.SIGNAL:
            signalled = True
            signals += sum(count for _, count in counts)
    return signalled and signals == 0
