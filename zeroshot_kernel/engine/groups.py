"""The sequential groups: seq, choice and the do-while loop.

Each runs on a clone of its parent's context and, when it falls through, promotes its
``promotedStatePaths`` and merges its facts back. A pending or terminal status passes up
unchanged (a terminal anywhere below ends the graph, unless a par branch absorbs it).

A tracked seq or loop (the root, and a seq or loop child its tracked parent resumed at)
resumes at the point the last reduction left and, before the child (or iteration) it waited
on then, leaves a new one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from zeroshot_kernel.contract.graph import ChoiceNode, GraphNode, LoopNode, SeqNode
from zeroshot_kernel.engine.bindings import promote
from zeroshot_kernel.engine.guards import holds
from zeroshot_kernel.engine.memo import NO_TRACK, Point, Track
from zeroshot_kernel.engine.reducer_errors import NoChoiceRoute
from zeroshot_kernel.engine.traversal import Done, Ended, Status, Traversal
from zeroshot_kernel.engine.walk_context import Context

if TYPE_CHECKING:
    from zeroshot_kernel.engine.walker import Walker


def eval_seq(walker: Walker, node: SeqNode, ctx: Context, tr: Traversal) -> Status:
    track = walker.claim(node)
    point = walker.resume(track.point) if track is not None else None
    local = point.context.clone() if point is not None else ctx.clone()
    position = point.position if point is not None else 0
    for index in range(point.index if point is not None else 0, len(node.children)):
        child = node.children[index]
        if track is not None and index == track.frontier and (point is None or point.index < index):
            point = walker.point(index, local, position)
        at_point = point if point is not None and point.index == index else None
        status, point = _walk_at(walker, child, local, tr, point, at_point)
        if not isinstance(status, Done):
            if track is not None:
                walker.give_back(Track(point, index))
            return status.after(position) if isinstance(status, Ended) else status
        position = max(position, status.position)
    if track is not None:
        walker.give_back(Track(point, None))
    return finish(walker, node.name, node.promoted_state_paths, local, ctx, tr, position)


def eval_choice(walker: Walker, node: ChoiceNode, ctx: Context, tr: Traversal) -> Status:
    """The first branch whose guard holds, else ``otherwise``."""
    local = ctx.clone()
    selected: GraphNode | None = next(
        (
            branch.node
            for branch in node.branches
            if holds(branch.when, local.controls, tr.map_indices, walker.index)
        ),
        node.otherwise,
    )
    if selected is None:
        raise NoChoiceRoute(f"no branch of choice {node.name} applies and it has no otherwise")
    status = walker.walk(selected, local, tr)
    if not isinstance(status, Done):
        return status
    return finish(walker, node.name, node.promoted_state_paths, local, ctx, tr, status.position)


def eval_loop(walker: Walker, node: LoopNode, ctx: Context, tr: Traversal) -> Status:
    """Do-while: state accumulates across iterations; after each one the loop stops as
    ``converged`` if ``until`` holds, or as ``exhausted`` after ``maxIterations``.

    A tracked loop resumes before the iteration the last reduction waited on, as a tracked
    seq resumes before its child, so a long loop is not walked from its first iteration
    again on every reduction."""
    track = walker.claim(node)
    point = walker.resume(track.point) if track is not None else None
    local = point.context.clone() if point is not None else ctx.clone()
    position = point.position if point is not None else 0
    label = "exhausted"
    for iteration in range(point.index if point is not None else 0, node.max_iterations):
        if (
            track is not None
            and iteration == track.frontier
            and (point is None or point.index < iteration)
        ):
            point = walker.point(iteration, local, position)
        at_point = point if point is not None and point.index == iteration else None
        status, point = _walk_at(walker, node.body, local, tr, point, at_point)
        if not isinstance(status, Done):
            if track is not None:
                walker.give_back(Track(point, iteration))
            return status.after(position) if isinstance(status, Ended) else status
        position = max(position, status.position)
        if node.until is not None and holds(
            node.until, local.controls, tr.map_indices, walker.index
        ):
            label = "converged"
            break
    if track is not None:
        walker.give_back(Track(point, None))
    walker.set_control(local, node.name, "group", "terminated", label, tr)
    return finish(walker, node.name, node.promoted_state_paths, local, ctx, tr, position)


def _walk_at(
    walker: Walker,
    child: GraphNode,
    local: Context,
    tr: Traversal,
    point: Point | None,
    at_point: Point | None,
) -> tuple[Status, Point | None]:
    """Walk ``child``; when it starts at the group's resume point and is itself a seq or a
    loop, hand it the track it left and keep the one it gives back in the point."""
    if at_point is None or not isinstance(child, SeqNode | LoopNode):
        return walker.walk(child, local, tr), point
    walker.hand(child, at_point.inner or NO_TRACK)
    status = walker.walk(child, local, tr)
    return status, replace(at_point, inner=walker.take_back())


def finish(
    walker: Walker,
    name: str,
    paths: list[list[str]],
    local: Context,
    parent: Context,
    tr: Traversal,
    position: int,
) -> Done:
    """A group fell through: promote, merge facts, report."""
    values = promote(local, parent, [tuple(path) for path in paths])
    walker.emit_promote(name, tr, values)
    walker.emit_continue(name, tr)
    return Done(position)
