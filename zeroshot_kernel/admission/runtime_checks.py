"""Admission checks of a runtime plan against the graph it will run.

Problems are reported at ``runtime › nodes › <node>`` because that is where a user
fixes them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

from zeroshot_kernel.admission.placement import executables, overlapping_executables
from zeroshot_kernel.contract.diagnostics import FieldSegment, GraphDiagnostic, field
from zeroshot_kernel.contract.graph import GraphSpec, StepNode, VerifierNode
from zeroshot_kernel.harness.plan import (
    LLM_HARNESSES,
    AgentBinding,
    GitDeliveryBinding,
    RuntimePlan,
    TrustedBinding,
)
from zeroshot_kernel.harness.registry import agent_harnesses
from zeroshot_kernel.harness.trusted_harness import trusted_code, trusted_workers


def runtime_diagnostics(
    graph: GraphSpec, plan: RuntimePlan, *, importable: bool = True
) -> list[GraphDiagnostic]:
    """Every way ``plan`` fails to run ``graph`` exactly as written."""
    nodes = {node.name: node for node in executables(graph.root)}
    return [
        *_uninstalled(plan.harness, "harness"),
        *_unknown_nodes(plan, nodes),
        *_bindings(graph, plan, nodes, importable=importable),
        *_connections(plan),
    ]


def _at(*names: str) -> list[FieldSegment]:
    return [field("runtime"), *(field(name) for name in names)]


def _problem(message: str, *names: str, related: list[str] | None = None) -> GraphDiagnostic:
    return GraphDiagnostic(
        code="invalid_graph_shape",
        message=message,
        path=list(_at(*names)),
        related_nodes=related or [],
    )


def _uninstalled(
    harness: str, *names: str, related: list[str] | None = None
) -> Iterator[GraphDiagnostic]:
    installed = agent_harnesses()
    if harness not in installed:
        yield _problem(
            f'the harness "{harness}" is not installed here; installed: '
            f"{', '.join(sorted(installed))}",
            *names,
            related=related,
        )


def _unknown_nodes(
    plan: RuntimePlan, nodes: dict[str, StepNode | VerifierNode]
) -> Iterator[GraphDiagnostic]:
    for name in plan.nodes:
        if name not in nodes:
            yield _problem(
                f"the plan binds '{name}', which is not a step or verifier of this graph; "
                "remove the binding or fix the node name",
                "nodes",
                name,
            )


def _bindings(
    graph: GraphSpec,
    plan: RuntimePlan,
    nodes: dict[str, StepNode | VerifierNode],
    *,
    importable: bool,
) -> Iterator[GraphDiagnostic]:
    deliveries = [n for n, b in plan.nodes.items() if isinstance(b, GitDeliveryBinding)]
    for name, node in nodes.items():
        binding = plan.nodes.get(name)
        if binding is None:
            yield _problem(
                f"node '{name}' has no runtime binding; add it under runtime.nodes",
                "nodes",
                related=[name],
            )
        elif isinstance(binding, GitDeliveryBinding):
            yield from _delivery(graph, node, deliveries)
        elif isinstance(binding, TrustedBinding):
            yield from _trusted(node, binding)
        elif node.worker in trusted_workers():
            yield _problem(
                f"node '{name}' ({node.worker}) is trusted engine code, never an agent: bind "
                f'it as {{"kind": "trusted", "code": "{trusted_workers()[node.worker]}"}}',
                "nodes",
                name,
                related=[name],
            )
        else:
            yield from _agent(plan, node, binding, importable=importable)


def _trusted(node: StepNode | VerifierNode, binding: TrustedBinding) -> Iterator[GraphDiagnostic]:
    where = ("nodes", node.name)
    known = trusted_code()
    entry = known.get(binding.code)
    if entry is None:
        yield _problem(
            f"unknown trusted code '{binding.code}'; known: {', '.join(sorted(known))}",
            *where,
            "code",
            related=[node.name],
        )
    elif entry.worker != node.worker:
        yield _problem(
            f"trusted code '{binding.code}' runs only nodes of worker "
            f"{entry.worker}, not {node.worker}",
            *where,
            "code",
            related=[node.name],
        )
    if node.instructions is not None:
        yield _problem(
            f"node '{node.name}' runs trusted code, not an agent: remove its instructions",
            *where,
            related=[node.name],
        )


def _agent(
    plan: RuntimePlan,
    node: StepNode | VerifierNode,
    binding: AgentBinding,
    *,
    importable: bool,
) -> Iterator[GraphDiagnostic]:
    harness = binding.harness or plan.harness
    where = ("nodes", node.name)
    if harness not in agent_harnesses():  # the plan's own harness is reported once, above
        if binding.harness is not None:
            yield from _uninstalled(harness, *where, "harness", related=[node.name])
        return
    if harness == "python":
        if binding.callable is None:
            yield _problem(
                f"node '{node.name}' runs on the python harness and needs "
                "'callable': 'package.module:function'",
                *where,
                related=[node.name],
            )
        elif importable and (problem := _import_problem(binding.callable)):
            yield _problem(problem, *where, "callable", related=[node.name])
    elif binding.callable is not None:
        yield _problem(
            f"'callable' only applies to the python harness, not {harness}",
            *where,
            "callable",
            related=[node.name],
        )
    if harness in LLM_HARNESSES:
        if node.instructions is None:
            yield _problem(
                f"node '{node.name}' runs on the {harness} harness, so the graph must give "
                "it instructions",
                *where,
                related=[node.name],
            )
    elif binding.session_scope == "node_instance" and harness == "python":
        yield _problem(
            "python callables keep no session; remove sessionScope",
            *where,
            "sessionScope",
            related=[node.name],
        )


def _delivery(
    graph: GraphSpec, node: StepNode | VerifierNode, deliveries: list[str]
) -> Iterator[GraphDiagnostic]:
    where = ("nodes", node.name)
    if not isinstance(node, VerifierNode):
        yield _problem(
            f"delivery node '{node.name}' must be a verifier (it reports a delivery signal)",
            *where,
            related=[node.name],
        )
    if node.instructions is not None:
        yield _problem(
            f"delivery node '{node.name}' is trusted code, not an agent: remove its instructions",
            *where,
            related=[node.name],
        )
    if len(deliveries) > 1:
        yield _problem(
            f"a run has at most one delivery node; found {', '.join(sorted(deliveries))}",
            *where,
            related=sorted(deliveries),
        )
    overlapping = overlapping_executables(graph, node.name)
    if node.name in overlapping:
        yield _problem(
            f"delivery node '{node.name}' sits in a map that can run several items at once; "
            "deliver once, after the map",
            *where,
            related=[node.name],
        )
    others = sorted(overlapping - {node.name})
    if others:
        yield _problem(
            f"delivery node '{node.name}' could run alongside {', '.join(others)}; "
            "sequence delivery after every other executable has settled",
            *where,
            related=[node.name, *others],
        )


def _connections(plan: RuntimePlan) -> Iterator[GraphDiagnostic]:
    for name, binding in plan.nodes.items():
        for connection in binding.connections:
            if plan.connection(connection) is None:
                yield _problem(
                    f"unknown connection '{connection}'; declare it under runtime.connections "
                    "with the environment variable that holds its secret",
                    "nodes",
                    name,
                    "connections",
                    related=[name],
                )


def _import_problem(path: str) -> str | None:
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any import failure is the user's to see
        return f"cannot import module '{module_name}': {type(error).__name__}: {error}"
    target = getattr(module, attribute, None)
    if target is None:
        return f"module '{module_name}' has no attribute '{attribute}'"
    if not callable(target):
        return f"'{path}' is not callable"
    return None
