"""Maps: the body runs once per item of ``over``; promoted arrays collect one element per
item, so writes in the body to a promoted path ``p: array<T>`` write a ``T``.

For counting item outcomes (``k_of_map``), every node of the body is tied to the route
that leads to it in an item (``MapExecution``).
"""

from __future__ import annotations

import dataclasses

from zeroshot_kernel.admission.binding_checks import read_data
from zeroshot_kernel.admission.choices import branch_conditions, otherwise_condition
from zeroshot_kernel.admission.correlations import MapExecution
from zeroshot_kernel.admission.effects import Effects
from zeroshot_kernel.admission.facts import WriteFact
from zeroshot_kernel.admission.flow import Flow
from zeroshot_kernel.admission.locations import Loc, at, item
from zeroshot_kernel.admission.parallel import required_completions
from zeroshot_kernel.admission.predicates import ALWAYS, NEVER, Predicate, conjoin
from zeroshot_kernel.admission.typepaths import FieldPath, guaranteed_paths, path_type
from zeroshot_kernel.admission.verifier_state import Scope, VerifierState
from zeroshot_kernel.contract.graph import (
    ChoiceNode,
    GraphNode,
    LoopNode,
    MapNode,
    ParNode,
    SeqNode,
    StepNode,
    VerifierNode,
)
from zeroshot_kernel.contract.payload import ArrayType, PayloadType

Indexed = dict[FieldPath, PayloadType]
"""Element types of promoted map arrays, by promoted path."""


def indexed_targets(
    run: VerifierState, group: MapNode, scope: Scope, loc: Loc
) -> tuple[Indexed, Indexed]:
    """Element types for the body (inherited from enclosing maps plus this map's own) and
    this map's own, reporting promoted paths that are not arrays."""
    inherited: Indexed = dict(scope.indexed or {})
    own: Indexed = {}
    for position, raw in enumerate(group.promoted_state_paths):
        path = tuple(raw)
        declared = (
            scope.indexed[path]
            if scope.indexed is not None and path in scope.indexed
            else path_type(group.state, path)
        )
        if isinstance(declared, ArrayType):
            inherited[path] = declared.items
            own[path] = declared.items
        elif declared is not None:
            inherited.pop(path, None)
            run.emit(
                "schema_safety",
                "map promotion needs an array at this path (one element per item); declare "
                "it as an array",
                item(loc, "promotedStatePaths", position),
                [group.name],
            )
    return inherited, own


def item_type(run: VerifierState, group: MapNode, scope: Scope, loc: Loc) -> PayloadType | None:
    """The element type of ``over`` (read in the map's own state), when it is an array."""
    own_state = dataclasses.replace(scope, state=group.state)
    selected = read_data(run, group.over, own_state, at(loc, "over"))
    if isinstance(selected, ArrayType):
        return selected.items
    if selected is not None:
        run.emit(
            "schema_safety",
            "map over must select an array; select an array field of the state or item",
            at(loc, "over"),
            [group.name],
        )
    return None


def record_executions(run: VerifierState, group: MapNode) -> None:
    _record(run, group.body, group.name, ALWAYS)


def _record(run: VerifierState, node: GraphNode, owner: str, presence: Predicate) -> None:
    executions = run.controls.executions
    if isinstance(node, StepNode | VerifierNode):
        executions[node.name] = MapExecution(owner, presence)
    elif isinstance(node, SeqNode):
        reached = presence
        for child in node.children:
            _record(run, child, owner, reached)
            reached = (
                conjoin([reached, run.completions.get(child.name, ALWAYS)])
                if run.may_fall_through(child)
                else NEVER
            )
    elif isinstance(node, ChoiceNode):
        for branch, condition in zip(node.branches, branch_conditions(node), strict=True):
            _record(run, branch.node, owner, conjoin([presence, condition]))
        if node.otherwise is not None:
            _record(run, node.otherwise, owner, conjoin([presence, otherwise_condition(node)]))
    elif isinstance(node, ParNode):
        executions[node.name] = MapExecution(owner, presence)
        if required_completions(node.join, len(node.branches)) == len(node.branches):
            for lane in node.branches:
                _record(run, lane, owner, presence)
    elif isinstance(node, LoopNode):
        executions[node.name] = MapExecution(owner, presence)
        _record(run, node.body, owner, presence)
    elif isinstance(node, MapNode):
        executions[node.name] = MapExecution(owner, presence)


def map_effects(group: MapNode, incoming: Flow, body: Effects, own: Indexed) -> Effects:
    """Only the map itself becomes available after it; body writes leave it as whole arrays
    of promoted paths, still waiting for the body executables' success where they did."""
    effects = Effects(
        definite_nodes={group.name},
        exit_failed=incoming.failed | body.exit_failed,
        falls_through=True,
        completion=ALWAYS,
    )
    for raw in group.promoted_state_paths:
        path = tuple(raw)
        if path not in own:
            continue
        if path in body.definite_writes:
            collected = _collected(path, body.definite_writes[path])
            effects.definite_writes[path] = collected
            effects.possible_writes[path] = collected
        for name in body.outcome_order:
            writes = body.outcome_writes.get(name, {})
            if path in writes:
                effects.outcome_writes.setdefault(name, {})[path] = _collected(path, writes[path])
                if name not in effects.outcome_order:
                    effects.outcome_order.append(name)
        element_types = body.possible_types.get(path, [])
        if element_types:
            effects.possible_types[path] = [ArrayType(kind="array", items=t) for t in element_types]
        if path in body.possible_writes:
            effects.possible_writes[path] = _collected(path, body.possible_writes[path])
        elif any(path in writes for writes in effects.outcome_writes.values()):
            array = ArrayType(kind="array", items=own[path])
            effects.possible_writes[path] = WriteFact(array, guaranteed_paths(path, array, True))
    return effects


def _collected(path: FieldPath, element: WriteFact) -> WriteFact:
    array = ArrayType(kind="array", items=element.value_type)
    return WriteFact(array, guaranteed_paths(path, array, True))
