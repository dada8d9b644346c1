"""The structural verifier (pass 1 of admission): schema safety, reachability, choice
exhaustiveness, loop exits, write conflicts, undefined reads and graph shape.

It walks the graph once with a flow analysis (see ``analysis``), then checks terminal
coverage. Ceilings of the graph's size and the dependency order are the bounds pass
(``bounds``); worker contracts are the registry pass (``registry``), which runs only when
no structural diagnostic was found.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from zeroshot_kernel.admission.analysis import FlowWalk
from zeroshot_kernel.admission.flow import Flow
from zeroshot_kernel.admission.reachability import check_terminal_coverage
from zeroshot_kernel.admission.shape import check_profile, check_unique_names
from zeroshot_kernel.admission.typepaths import required_descendants
from zeroshot_kernel.admission.verifier_state import Scope, VerifierState
from zeroshot_kernel.contract.diagnostics import GraphDiagnostic, sorted_diagnostics
from zeroshot_kernel.contract.graph import GraphSpec


def structural_diagnostics(graph: GraphSpec) -> list[GraphDiagnostic]:
    """All pass-1 diagnostics (every code except those of the registry check, ceilings and
    cyclic references), sorted.

    One ceiling is the flow analysis's own and is included: a routing question whose
    control space exceeds 65,536 assignments is reported as ``ceiling_exceeded`` at the
    guard (or join, or group) that asked it.
    """
    run = VerifierState.of(graph)
    check_profile(run)
    check_unique_names(run)
    start = Flow(defined=required_descendants(graph.initial_input))
    with _stack_for(max(len(loc) for _, loc in run.index.located)):
        FlowWalk(run).visit(graph.root, Scope(start, graph.initial_input))
        check_terminal_coverage(run)
    return sorted_diagnostics(run.diagnostics)


@contextmanager
def _stack_for(nesting: int) -> Iterator[None]:
    """The walk recurses a few frames per level. Graphs deeper than the depth ceiling are
    rejected by the bounds pass, but must still be analysed without a RecursionError, so
    the limit is raised (never lowered) for the walk when such a graph needs it."""
    needed = 1_000 + 10 * nesting
    previous = sys.getrecursionlimit()
    if needed > previous:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


__all__ = ["structural_diagnostics"]
