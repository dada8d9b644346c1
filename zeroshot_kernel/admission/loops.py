"""Loop exits: ``until`` is checked after every iteration, so it may only read verifiers
the body runs in every iteration, and some legal outcome of theirs must satisfy it
(otherwise the loop always runs to ``maxIterations``)."""

from __future__ import annotations

from zeroshot_kernel.admission.controls import guard_holds, selectors_of
from zeroshot_kernel.admission.effects import Effects
from zeroshot_kernel.admission.guard_checks import check_guard
from zeroshot_kernel.admission.locations import Loc, at
from zeroshot_kernel.admission.verifier_state import VerifierState
from zeroshot_kernel.contract.graph import LoopNode


def check_loop_exit(
    run: VerifierState, loop: LoopNode, available: set[str], body: Effects, loc: Loc
) -> None:
    """``available`` is what has run before the loop; ``body`` the effects of one iteration."""
    if loop.until is None:
        return
    until_loc = at(loc, "until")
    legal = check_guard(
        run, loop.until, available | body.definite_nodes, until_loc, "loop_exit_satisfiability"
    )
    for selector in selectors_of(loop.until):
        every_iteration = selector.name in body.definite_nodes
        if not (every_iteration and run.index.verifier(selector.name) is not None):
            run.emit(
                "loop_exit_satisfiability",
                f"loop exit reads {selector.name}, which is not a verifier run in every "
                "iteration; route the exit on a verifier the body always runs",
                until_loc,
                [selector.name, loop.name],
            )
    if legal:
        assignments = run.assignments([loop.until], until_loc)
        if assignments is None or not any(guard_holds(loop.until, a) for a in assignments):
            run.emit(
                "loop_exit_satisfiability",
                "loop exit guard can never hold, so the loop always exhausts maxIterations; "
                "test labels its controls can report",
                until_loc,
                [loop.name],
            )
