"""map: the body runs once per item, concurrently, each on its own clone with ``item`` set
and the item's index appended to the map indices.

More than ``maxItems`` items runs nothing (``overflow=overflow``). The earliest item to reach
a terminal (by position, then index) ends the graph and voids the other items with
``map_terminal``. Otherwise each promoted path collects the value each item wrote there, in
input order, and ``overflow=ok``; if some item did not write it (it failed), the path is
undefined after the map (admission proves that only guarded paths read it then).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from zeroshot_kernel.contract.graph import MapNode
from zeroshot_kernel.engine.bindings import (
    select,
    select_data,
    with_path,
    without_path,
    written_under,
)
from zeroshot_kernel.engine.groups import finish
from zeroshot_kernel.engine.reducer_errors import ReducerError
from zeroshot_kernel.engine.traversal import PENDING, Done, Ended, MapItem, Status, Traversal
from zeroshot_kernel.engine.walk_context import Context

if TYPE_CHECKING:
    from zeroshot_kernel.engine.walker import Walked, Walker


def eval_map(walker: Walker, node: MapNode, ctx: Context, tr: Traversal) -> Status:
    items = select_data(node.over, ctx.state, tr.item)
    if not isinstance(items, list):
        raise ReducerError(f"map {node.name} is over a value that is not an array")
    if len(items) > node.max_items:
        walker.set_control(ctx, node.name, "group", "overflow", "overflow", tr)
        walker.emit_continue(node.name, tr)
        return Done(0)
    runs = _run_items(walker, node, ctx, replace(tr, decide=False), items)
    ended = [
        (run.status.position, index)
        for index, run in enumerate(runs)
        if isinstance(run.status, Ended)
    ]
    if ended:
        return _terminal(walker, node, ctx, tr, items, runs, min(ended))
    if tr.decide:
        runs = _run_items(walker, node, ctx, tr, items)
    if not all(isinstance(run.status, Done) for run in runs):
        return PENDING
    local = ctx.clone()
    for run in runs:
        local.merge_facts(run.context)
    for path in node.promoted_state_paths:
        if all(written_under(run.context.written, [tuple(path)]) for run in runs):
            values = [select(run.context.state, path, f"map {node.name}") for run in runs]
            local.state = with_path(local.state, path, values)
        else:
            local.state = without_path(local.state, path)
        local.written.add(tuple(path))
    walker.set_control(local, node.name, "group", "overflow", "ok", tr)
    position = max((run.status.position for run in runs if isinstance(run.status, Done)), default=0)
    return finish(walker, node.name, node.promoted_state_paths, local, ctx, tr, position)


def _at(tr: Traversal, index: int, item: Any) -> Traversal:
    return replace(tr, map_indices=(*tr.map_indices, index), item=MapItem(item))


def _run_items(
    walker: Walker, node: MapNode, ctx: Context, tr: Traversal, items: list[Any]
) -> list[Walked]:
    return [
        walker.walk_clone(node.body, ctx, _at(tr, index, item)) for index, item in enumerate(items)
    ]


def _terminal(
    walker: Walker,
    node: MapNode,
    ctx: Context,
    tr: Traversal,
    items: list[Any],
    runs: list[Walked],
    earliest: tuple[int, int],
) -> Status:
    position, winner = earliest
    status = runs[winner].status
    if tr.decide:
        status = walker.walk_clone(
            node.body, ctx, replace(_at(tr, winner, items[winner]), cutoff=position)
        ).status
    for index, run in enumerate(runs):
        if index != winner:
            walker.void(run.touched, position, "map_terminal")
    return status
