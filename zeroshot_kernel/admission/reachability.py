"""Terminal coverage: every normal run ends in an explicit succeed or fail, and nothing
follows a child that always ends the run.

Whether a node can complete normally comes from the flow analysis (a choice whose only
completing branches are dead, or a par that can never join, does not complete either).
"""

from __future__ import annotations

from zeroshot_kernel.admission.locations import ROOT
from zeroshot_kernel.admission.verifier_state import VerifierState
from zeroshot_kernel.contract.graph import (
    ChoiceNode,
    GraphNode,
    LoopNode,
    MapNode,
    ParNode,
    SeqNode,
)


def check_terminal_coverage(run: VerifierState) -> None:
    root = run.graph.root
    _visit(run, root)
    if run.may_fall_through(root):
        run.emit(
            "reachability",
            "a normal run can reach the end of the graph without a succeed or fail terminal; "
            "end every route with one",
            ROOT,
            [root.name],
        )


def _visit(run: VerifierState, node: GraphNode) -> None:
    if isinstance(node, SeqNode):
        reachable = True
        for child in node.children:
            if not reachable:
                run.emit(
                    "reachability",
                    f"{child.name} can never run because an earlier sibling always ends the "
                    "run; remove it or make that ending conditional",
                    run.index.location(child.name),
                    [child.name, node.name],
                )
            _visit(run, child)
            reachable = reachable and run.may_fall_through(child)
    elif isinstance(node, ChoiceNode):
        reach = run.reach.get(node.name)
        for position, branch in enumerate(node.branches):
            if reach is None or position >= len(reach.branches) or reach.branches[position]:
                _visit(run, branch.node)
        if node.otherwise is not None and (reach is None or reach.otherwise):
            _visit(run, node.otherwise)
    elif isinstance(node, ParNode):
        for lane in node.branches:
            _visit(run, lane)
    elif isinstance(node, LoopNode | MapNode):
        _visit(run, node.body)
