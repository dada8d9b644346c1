"""Bindings: every value copied into an input, output or state is typed and defined.

Input bindings read state (or the map item) and must fill every required field of the
payload they build; write bindings read an executable's outcome and may only read nodes
that have definitely run and, on this path, definitely succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zeroshot_kernel.admission.facts import WriteFact, Writes
from zeroshot_kernel.admission.flow import Flow
from zeroshot_kernel.admission.locations import Loc, at, item
from zeroshot_kernel.admission.typepaths import (
    FieldPath,
    comparable,
    dotted,
    guaranteed_paths,
    is_prefix,
    is_required_path,
    overlaps,
    path_type,
    required_leaf_paths,
)
from zeroshot_kernel.admission.verifier_state import Scope, VerifierState
from zeroshot_kernel.contract.graph import (
    DataSelector,
    InputBinding,
    NodeOutputSelector,
    StateSelector,
    StepNode,
    VerifierNode,
    WriteBinding,
)
from zeroshot_kernel.contract.payload import EnumType, NullType, PayloadType, RecordType, is_subtype


@dataclass(frozen=True)
class Selected:
    """The type a selector reads, and whether a value is always there."""

    value_type: PayloadType
    present: bool


def check_input_bindings(
    run: VerifierState,
    bindings: Sequence[InputBinding],
    payload: PayloadType,
    scope: Scope,
    loc: Loc,
    *,
    collection: str,
    payload_field: str,
) -> None:
    """Bindings in ``collection`` build ``payload`` (declared in ``payload_field``)."""
    if not isinstance(payload, NullType | RecordType):
        run.emit(
            "schema_safety",
            f"{payload_field} must be null or a record: bindings fill its fields and never "
            "build a whole value; wrap the value in a record field",
            at(loc, payload_field),
        )
    targets: list[FieldPath] = []
    for position, binding in enumerate(bindings):
        binding_loc = item(loc, collection, position)
        target = tuple(binding.target)
        _check_input_binding(run, binding, payload, scope, binding_loc, payload_field)
        if any(overlaps(earlier, target) for earlier in targets):
            run.emit(
                "write_conflict",
                "binding target overlaps the target of an earlier binding; bind each field once",
                at(binding_loc, "target"),
            )
        targets.append(target)
    for leaf in required_leaf_paths(payload):
        if not any(is_prefix(target, leaf) for target in targets):
            run.emit(
                "undefined_read",
                f"required {payload_field} field {dotted(leaf)} is not bound; add a binding "
                "that fills it",
                at(loc, collection),
            )


def _check_input_binding(
    run: VerifierState,
    binding: InputBinding,
    payload: PayloadType,
    scope: Scope,
    loc: Loc,
    payload_field: str,
) -> None:
    target = path_type(payload, tuple(binding.target))
    if target is None:
        run.emit(
            "schema_safety",
            f"binding target is not a field of the declared {payload_field}; bind a "
            "declared field or declare this one",
            at(loc, "target"),
        )
    source = read_data(run, binding.value, scope, at(loc, "value"))
    if source is not None and target is not None and not is_subtype(source, target):
        run.emit(
            "schema_safety",
            "bound value's type does not fit the target field; bind a compatible value or "
            "widen the declared field",
            loc,
        )


def read_data(
    run: VerifierState, selector: DataSelector, scope: Scope, loc: Loc
) -> PayloadType | None:
    """The type a state or item selector reads, reporting a missing or undefined path."""
    path = tuple(selector.path)
    override: PayloadType | None = None
    refined: PayloadType | None = None
    payload: PayloadType | None
    if isinstance(selector, StateSelector):
        payload = scope.state
        actual = scope.incoming.defined.get(path)
        if scope.indexed is not None and path in scope.indexed:
            override = scope.indexed[path]
            refined = actual if actual is not None and comparable(actual, override) else None
            defined = refined is not None
        else:
            refined = actual
            defined = is_required_path(payload, path) or actual is not None
    else:
        payload = scope.item
        defined = payload is not None and is_required_path(payload, path)
    if payload is None:
        run.emit(
            "invalid_graph_shape",
            "item selector used outside a map body; read from state instead",
            loc,
        )
        return None
    selected = override if override is not None else path_type(payload, path)
    if selected is None:
        run.emit(
            "schema_safety",
            f"selected path {dotted(path)} does not exist in the {selector.source} type; fix "
            "the path",
            loc,
        )
    elif not defined:
        run.emit(
            "undefined_read",
            f"selected path {dotted(path)} may be undefined on some route reaching this "
            "read; read a required field or one that every route writes first",
            loc,
        )
    return refined if refined is not None else selected


def check_write_bindings(
    run: VerifierState, node: StepNode | VerifierNode, scope: Scope, loc: Loc
) -> Writes:
    """The writes ``node`` makes on success, keyed by target path."""
    writes: Writes = {}
    targets: list[FieldPath] = []
    for position, binding in enumerate(node.write_bindings):
        binding_loc = item(loc, "writeBindings", position)
        target = tuple(binding.target)
        fact = _check_write(run, node, binding, scope, binding_loc)
        if fact is not None:
            writes[target] = fact
        if any(overlaps(earlier, target) for earlier in targets):
            run.emit(
                "write_conflict",
                "write target overlaps an earlier write target of this node; write each "
                "state path once",
                at(binding_loc, "target"),
                [node.name],
            )
        targets.append(target)
    return writes


def _check_write(
    run: VerifierState, node: StepNode | VerifierNode, binding: WriteBinding, scope: Scope, loc: Loc
) -> WriteFact | None:
    target = tuple(binding.target)
    declared = path_type(scope.state, target)
    if declared is None:
        run.emit(
            "schema_safety",
            "write target is not a field of the enclosing group's state; declare it there "
            "or fix the target",
            at(loc, "target"),
            [node.name],
        )
    expected = (
        scope.indexed[target] if scope.indexed is not None and target in scope.indexed else declared
    )
    produced = _read_output(run, binding.value, node, scope.incoming, loc)
    if produced is None or expected is None:
        return None
    if not is_subtype(produced.value_type, expected):
        run.emit(
            "schema_safety",
            "written value's type does not fit the state target; write a compatible value "
            "or widen the target's declared type",
            loc,
            [binding.value.node, node.name],
        )
    value_type = produced.value_type
    return WriteFact(value_type, guaranteed_paths(target, value_type, produced.present))


def _read_output(
    run: VerifierState,
    selector: NodeOutputSelector,
    current: StepNode | VerifierNode,
    incoming: Flow,
    loc: Loc,
) -> Selected | None:
    value_loc = at(loc, "value")
    source = selector.node
    related = [source, current.name]
    if source != current.name and (
        source not in incoming.available or source in incoming.unavailable
    ):
        run.emit(
            "undefined_read",
            f"write reads {source}, which has not definitely run before {current.name}; "
            "read only nodes that run earlier on every route",
            value_loc,
            related,
        )
    if source in incoming.failed:
        run.emit(
            "undefined_read",
            f"write reads {source}, which may have failed here; route on its error first "
            "and read it only where it succeeded",
            value_loc,
            related,
        )
    selected = _output(run, selector, current)
    if selected is None:
        run.emit(
            "schema_safety",
            f"{source} has no {selector.channel} at this path; select a declared field "
            "(signal: one declared signal name; diagnostic: verifiers only)",
            value_loc,
            [source],
        )
    return selected


def _output(
    run: VerifierState, selector: NodeOutputSelector, current: StepNode | VerifierNode
) -> Selected | None:
    path = tuple(selector.path)
    if selector.channel == "out":
        producer = current if selector.node == current.name else run.index.executable(selector.node)
        return _select(producer.output, path) if producer is not None else None
    verifier = run.index.verifier(selector.node)
    if verifier is None:
        return None
    if selector.channel == "diagnostic":
        return _select(verifier.diagnostic, path)
    if len(path) != 1 or path[0] not in verifier.signals:
        return None
    return Selected(EnumType(kind="enum", values=list(verifier.signals[path[0]])), True)


def _select(payload: PayloadType, path: FieldPath) -> Selected | None:
    found = path_type(payload, path)
    return Selected(found, is_required_path(payload, path)) if found is not None else None
