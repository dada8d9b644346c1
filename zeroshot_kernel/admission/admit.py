"""Admission: everything checked once, before a controller starts or an agent is contacted.

``verify_graph`` is the graph verifier (structural passes, bounds, then the registry);
``admit`` adds the submission's own checks: the runtime plan's bindings, the initial
input's value, delivery placement and declared environment names.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from zeroshot_kernel.admission.bounds import compile_ir, structural_bounds
from zeroshot_kernel.admission.runtime_checks import runtime_diagnostics
from zeroshot_kernel.admission.verifier import structural_diagnostics
from zeroshot_kernel.admission.worker_registry import (
    WorkerRegistry,
    registry_diagnostics,
)
from zeroshot_kernel.contract.canonical import graph_identity
from zeroshot_kernel.contract.diagnostics import (
    FieldSegment,
    GraphDiagnostic,
    IndexSegment,
    sorted_diagnostics,
)
from zeroshot_kernel.contract.diagnostics import (
    field as field_segment,
)
from zeroshot_kernel.contract.diagnostics import (
    index as index_segment,
)
from zeroshot_kernel.contract.graph import CompiledGraphIr, GraphSpec
from zeroshot_kernel.contract.parse import diagnostics_from_validation, parse_graph
from zeroshot_kernel.contract.payload import iter_violations
from zeroshot_kernel.contract.reading import MAX_VIOLATIONS
from zeroshot_kernel.harness.plan import RuntimePlan
from zeroshot_kernel.ledger.events import MAX_INPUT_BYTES, stored_json


@dataclass(frozen=True)
class Verification:
    """The verifier's answer, shaped like a conformance fixture's ``expected``."""

    diagnostics: list[GraphDiagnostic]
    compiled_ir: CompiledGraphIr | None = None
    identity: str | None = None

    @property
    def status(self) -> Literal["verified", "rejected"]:
        return "verified" if self.compiled_ir is not None else "rejected"

    def envelope(self) -> dict[str, Any]:
        """``{status, diagnostics, compiledIr?, identity?}`` for ``--json`` and APIs."""
        result: dict[str, Any] = {
            "status": self.status,
            "diagnostics": [d.to_wire() for d in self.diagnostics],
        }
        if self.compiled_ir is not None:
            result["compiledIr"] = self.compiled_ir.to_wire()
            result["identity"] = self.identity
        return result


def verify_graph(graph: GraphSpec, registry: WorkerRegistry | None = None) -> Verification:
    """Verify a parsed graph. Without a registry, workers resolve to the contract each
    node declares (the registry is synthesised from the graph itself)."""
    bounds, bound_diagnostics = structural_bounds(graph)
    diagnostics = sorted_diagnostics([*structural_diagnostics(graph), *bound_diagnostics])
    if diagnostics:
        return Verification(diagnostics)
    if registry is not None:
        diagnostics = registry_diagnostics(graph, registry)
        if diagnostics:
            return Verification(diagnostics)
    if bounds is None:
        raise AssertionError("a graph without structural diagnostics must have bounds")
    ir = compile_ir(graph, bounds)
    return Verification([], ir, graph_identity(ir))


def verify_document(document: Any, registry: WorkerRegistry | None = None) -> Verification:
    """Parse then verify; parse failures come back as diagnostics, never exceptions."""
    parsed = parse_graph(document)
    if parsed.value is None:
        return Verification(parsed.diagnostics)
    return verify_graph(parsed.value, registry)


@dataclass(frozen=True)
class AdmittedSubmission:
    """A submission that passed every check: what the ledger records for a run."""

    title: str
    compiled_ir: CompiledGraphIr
    identity: str
    initial_input: Any
    runtime: RuntimePlan

    def to_wire(self) -> dict[str, Any]:
        """The admitted run as stored: no secret values, ever."""
        return {
            "title": self.title,
            "graph": self.compiled_ir.to_wire(),
            "identity": self.identity,
            "initialInput": self.initial_input,
            "runtime": self.runtime.to_wire(),
        }


@dataclass(frozen=True)
class Admission:
    """``admitted`` when every check passed, else the diagnostics saying what to fix."""

    admitted: AdmittedSubmission | None
    diagnostics: list[GraphDiagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.admitted is not None


def admit(
    graph: GraphSpec | Mapping[str, Any],
    *,
    initial_input: Any = None,
    runtime: RuntimePlan | Mapping[str, Any] | None = None,
    title: str = "untitled run",
    registry: WorkerRegistry | None = None,
    importable: bool = True,
    require_runtime: bool = True,
    require_input: bool = True,
    workspace: str | os.PathLike[str] | None = None,
) -> Admission:
    """Run every admission check; nothing is created and nothing is contacted.

    ``importable`` also checks that python-harness callables import (local code only),
    with ``workspace`` first on the import path as the run's controller will have it;
    ``require_runtime=False`` skips the runtime-plan checks when no plan is given (to
    validate a graph and its input alone); ``require_input=False`` skips the input check
    when no input is given (a profile saved without a default input).

    >>> admit({"profile": "bad"}).ok
    False
    """
    if not isinstance(graph, GraphSpec):
        parsed = parse_graph(dict(graph))
        if parsed.value is None:
            return Admission(None, parsed.diagnostics)
        graph = parsed.value
    verification = verify_graph(graph, registry)
    if verification.compiled_ir is None or verification.identity is None:
        return Admission(None, verification.diagnostics)

    plan, plan_diagnostics = _parse_plan(runtime)
    diagnostics = list(plan_diagnostics)
    if initial_input is not None or require_input:
        diagnostics += _input_diagnostics(graph, initial_input)
    if plan is not None and (runtime is not None or require_runtime):
        with _importing_from(workspace):
            diagnostics += runtime_diagnostics(graph, plan, importable=importable)
    if diagnostics or plan is None:
        return Admission(None, sorted_diagnostics(diagnostics))
    admitted = AdmittedSubmission(
        title=title,
        compiled_ir=verification.compiled_ir,
        identity=verification.identity,
        initial_input=initial_input,
        runtime=plan,
    )
    return Admission(admitted)


@contextmanager
def _importing_from(workspace: str | os.PathLike[str] | None) -> Iterator[None]:
    """``workspace`` first on ``sys.path`` for the duration of the import checks."""
    if workspace is None:
        yield
        return
    entry = os.fspath(workspace)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        sys.path.remove(entry)


def _parse_plan(
    runtime: RuntimePlan | Mapping[str, Any] | None,
) -> tuple[RuntimePlan | None, list[GraphDiagnostic]]:
    if isinstance(runtime, RuntimePlan):
        return runtime, []
    if runtime is not None and not isinstance(runtime, Mapping):
        return None, [
            GraphDiagnostic(
                code="invalid_graph_shape",
                path=[field_segment("runtime")],
                message=f"a runtime plan is an object, not {type(runtime).__name__}",
            )
        ]
    document = dict(runtime) if runtime is not None else {}
    try:
        return RuntimePlan.model_validate(document), []
    except ValidationError as error:
        diagnostics = diagnostics_from_validation(error, document)
        prefixed = [
            d.model_copy(update={"path": [field_segment("runtime"), *d.path]}) for d in diagnostics
        ]
        return None, prefixed


def _input_diagnostics(graph: GraphSpec, value: Any) -> list[GraphDiagnostic]:
    """One diagnostic per violation up to :data:`MAX_VIOLATIONS`, then one that counts the
    rest (an input can hold a million unknown keys); and one for an input larger than a
    run can record, so what validation admits, a run accepts."""
    return _violations(graph, value) + _oversize(value)


def _oversize(value: Any) -> list[GraphDiagnostic]:
    try:
        size = len(stored_json(value).encode("utf-8"))
    except (TypeError, ValueError):  # not plain JSON: the type check says where
        return []
    if size <= MAX_INPUT_BYTES:
        return []
    message = (
        f"the initial input is {size:,} bytes of JSON; a run records at most "
        f"{MAX_INPUT_BYTES:,} (a step's start event carries the input it reads)"
    )
    return [
        GraphDiagnostic(code="ceiling_exceeded", message=message, path=[field_segment("input")])
    ]


def _violations(graph: GraphSpec, value: Any) -> list[GraphDiagnostic]:
    violations = iter_violations(value, graph.initial_input)
    diagnostics = [
        GraphDiagnostic(
            code="schema_safety",
            message=f"initial input does not match initialInput: {violation.describe()}",
            path=[field_segment("input"), *(_value_segment(p) for p in violation.path)],
        )
        for violation in itertools.islice(violations, MAX_VIOLATIONS)
    ]
    more = sum(1 for _ in violations)
    if more:
        diagnostics.append(
            GraphDiagnostic(
                code="schema_safety",
                message=f"initial input does not match initialInput: {more} more violations "
                f"(only the first {MAX_VIOLATIONS} are listed)",
                path=[field_segment("input")],
            )
        )
    return diagnostics


def _value_segment(part: str | int) -> FieldSegment | IndexSegment:
    return index_segment(part) if isinstance(part, int) else field_segment(part)
