"""par: branches run concurrently; a join decides when the group is done.

A branch completes only by falling through its end (a terminal inside it is a
non-completion). Winners are the earliest qualifying completions by (position, branch index),
so adding history never changes who won. Winners' written promoted paths flow out; losers'
unsettled executions are voided with ``parallel_join``. If every branch settles without
enough completions, the control says so and the pre-par state is kept.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from zeroshot_kernel.contract.graph import FirstJoin, Join, ParNode, QuorumJoin
from zeroshot_kernel.engine.bindings import select, with_path, written_under
from zeroshot_kernel.engine.decisions import PromotedValue
from zeroshot_kernel.engine.guards import holds
from zeroshot_kernel.engine.traversal import PENDING, Done, Ended, Pending, Status, Traversal
from zeroshot_kernel.engine.walk_context import Context, Path

if TYPE_CHECKING:
    from zeroshot_kernel.engine.walker import Walked, Walker


def eval_par(walker: Walker, node: ParNode, ctx: Context, tr: Traversal) -> Status:
    probe = replace(tr, decide=False)
    runs = [walker.walk_clone(branch, ctx, probe) for branch in node.branches]
    completions = sorted(
        (run.status.position, index)
        for index, run in enumerate(runs)
        if isinstance(run.status, Done) and _qualifies(walker, node.join, run, tr)
    )
    required = _required(node.join, len(runs))
    if len(completions) >= required:
        return _join(walker, node, ctx, tr, runs, completions[:required])
    if any(isinstance(run.status, Pending) for run in runs):
        if tr.decide:
            for branch in node.branches:
                walker.walk_clone(branch, ctx, tr)
        return PENDING
    return _unreachable(walker, node, ctx, tr, runs)


def _required(join: Join, branches: int) -> int:
    if isinstance(join, QuorumJoin):
        return join.count
    return branches if join.kind == "all" else 1


def _qualifies(walker: Walker, join: Join, run: Walked, tr: Traversal) -> bool:
    """Under ``first``, a completion counts only if ``when`` holds on that branch."""
    if not isinstance(join, FirstJoin):
        return True
    return holds(join.when, run.context.controls, tr.map_indices, walker.index)


def _control(node: ParNode, reached: bool) -> tuple[str, str]:
    if isinstance(node.join, FirstJoin):
        return "raced", "satisfied" if reached else "no_satisfier"
    return "joined", "reached" if reached else "quorum_unreachable"


def _join(
    walker: Walker,
    node: ParNode,
    ctx: Context,
    tr: Traversal,
    runs: list[Walked],
    winners: list[tuple[int, int]],
) -> Done:
    """Re-walk winners as of the join (to emit their progress once) and losers as of the
    join (so their facts, not their late results, merge up), then void the losers."""
    position = max(completed for completed, _ in winners)
    at_join = replace(tr, cutoff=position)
    winning = {index for _, index in winners}
    joined = ctx.clone()
    for index, branch in enumerate(node.branches):
        if index not in winning:
            joined.merge_facts(
                walker.walk_clone(branch, ctx, replace(at_join, decide=False)).context
            )
            walker.void(runs[index].touched, position, "parallel_join")
    paths = [tuple(path) for path in node.promoted_state_paths]
    promoted: set[Path] = set()
    for _, index in winners:
        run = walker.walk_clone(node.branches[index], ctx, at_join) if tr.decide else runs[index]
        assert isinstance(run.status, Done), "a winner completes again when re-walked"
        for path in written_under(run.context.written, paths):
            value = select(run.context.state, path, f"promotion from par {node.name}")
            joined.state = with_path(joined.state, path, value)
            promoted.add(path)
        joined.merge_facts(run.context)
    joined.written |= promoted
    field, label = _control(node, reached=True)
    walker.set_control(joined, node.name, "group", field, label, tr)
    walker.emit_promote(
        node.name,
        tr,
        tuple(
            PromotedValue(path, select(joined.state, path, node.name)) for path in sorted(promoted)
        ),
    )
    ctx.replace_with(joined)
    walker.emit_continue(node.name, tr)
    return Done(position)


def _unreachable(
    walker: Walker, node: ParNode, ctx: Context, tr: Traversal, runs: list[Walked]
) -> Done:
    if tr.decide:
        runs = [walker.walk_clone(branch, ctx, tr) for branch in node.branches]
    for run in runs:
        ctx.merge_facts(run.context)
    field, label = _control(node, reached=False)
    walker.set_control(ctx, node.name, "group", field, label, tr)
    walker.emit_continue(node.name, tr)
    return Done(
        max(
            (run.status.position for run in runs if isinstance(run.status, Done | Ended)),
            default=0,
        )
    )
