"""Graph shape: the profile this verifier executes, unique node names, satisfiable quorums."""

from __future__ import annotations

from zeroshot_kernel.admission.locations import Loc, at
from zeroshot_kernel.admission.verifier_state import VerifierState
from zeroshot_kernel.contract.graph import FULL_PROFILE, ParNode, QuorumJoin


def check_profile(run: VerifierState) -> None:
    if run.graph.profile != FULL_PROFILE:
        run.emit(
            "invalid_graph_shape",
            f"profile {run.graph.profile} is not executable here; use {FULL_PROFILE}",
            (("field", "profile"),),
        )


def check_unique_names(run: VerifierState) -> None:
    """Selectors and bindings name nodes, so a name must mean one node."""
    seen: set[str] = set()
    for node, loc in run.index.located:
        if node.name in seen:
            run.emit(
                "invalid_graph_shape",
                f"node name {node.name} is already used by an earlier node; rename one of them",
                loc,
                [node.name],
            )
        seen.add(node.name)


def check_quorum(run: VerifierState, par: ParNode, loc: Loc) -> None:
    if isinstance(par.join, QuorumJoin) and par.join.count > len(par.branches):
        run.emit(
            "invalid_graph_shape",
            f"quorum count {par.join.count} exceeds the {len(par.branches)} branches, so "
            "the par can never join; lower the count or add branches",
            at(loc, "join", "count"),
            [par.name],
        )
