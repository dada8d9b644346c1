"""Admission of a submission: graph, runtime plan, initial input, delivery placement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from admission_graphs import guarded, mapped, parallel_pair, step, verifier
from conftest import load_json

from zeroshot_kernel.admission.admit import admit, verify_document
from zeroshot_kernel.admission.worker_registry import FileRegistry

PYTHON = {"harness": "python"}


def plan(**nodes: dict[str, Any]) -> dict[str, Any]:
    return {**PYTHON, "nodes": {name: {"kind": "agent", **b} for name, b in nodes.items()}}


NOOP = {"callable": "workers_pkg.basic:noop"}


def problems(admission: Any) -> list[tuple[str, str, list[str]]]:
    return [(d.code, d.readable_path(), d.related_nodes) for d in admission.diagnostics]


def test_a_complete_submission_is_admitted_with_identity_and_bounds() -> None:
    admission = admit(
        guarded("work", step("work")),
        initial_input={"value": 1},
        runtime=plan(work=NOOP),
        title="ok",
    )
    assert admission.ok and admission.admitted is not None
    wire = admission.admitted.to_wire()
    assert wire["title"] == "ok"
    assert len(wire["identity"]) == 64
    assert wire["graph"]["bounds"]["maxNodeExecutions"] == 1
    assert wire["runtime"]["nodes"]["work"]["callable"] == "workers_pkg.basic:noop"


def test_admission_is_deterministic() -> None:
    first, again = (
        admit(guarded("work", step("work")), initial_input={"value": 1}, runtime=plan(work=NOOP))
        for _ in range(2)
    )
    assert first.admitted is not None and again.admitted is not None
    assert json.dumps(first.admitted.to_wire()) == json.dumps(again.admitted.to_wire())


def test_graph_diagnostics_stop_admission_before_anything_else() -> None:
    graph = guarded("work", step("work"))
    graph["root"]["children"].pop()  # falls through without a terminal
    admission = admit(graph, initial_input="not even a record", runtime={"harness": "nope"})
    assert [code for code, _, _ in problems(admission)] == ["reachability"]


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"value": "three"}, "input › value"),
        ({}, "input › value"),
        ({"value": 1, "extra": True}, "input › extra"),
        ({"value": 1.5}, "input › value"),
        (None, "input"),
    ],
)
def test_initial_input_errors_point_into_the_input(value: Any, path: str) -> None:
    admission = admit(guarded("work", step("work")), initial_input=value, runtime=plan(work=NOOP))
    assert problems(admission) == [("schema_safety", path, [])]


def test_every_executable_needs_exactly_its_binding() -> None:
    missing = admit(guarded("work", step("work")), initial_input={"value": 1}, runtime=PYTHON)
    assert problems(missing) == [("invalid_graph_shape", "runtime › nodes", ["work"])]
    unknown = admit(
        guarded("work", step("work")),
        initial_input={"value": 1},
        runtime=plan(work=NOOP, ghost=NOOP),
    )
    assert problems(unknown) == [("invalid_graph_shape", "runtime › nodes › ghost", [])]


@pytest.mark.parametrize(
    ("binding", "fragment"),
    [
        ({}, "needs 'callable'"),
        ({"callable": "workers_pkg.missing_module:noop"}, "cannot import module"),
        ({"callable": "workers_pkg.basic:absent"}, "has no attribute"),
        ({"callable": "workers_pkg.basic:NOT_CALLABLE"}, "is not callable"),
    ],
)
def test_python_callables_are_checked_before_anything_runs(
    binding: dict[str, Any], fragment: str
) -> None:
    admission = admit(
        guarded("work", step("work")), initial_input={"value": 1}, runtime=plan(work=binding)
    )
    assert len(admission.diagnostics) == 1
    assert fragment in admission.diagnostics[0].message


def test_malformed_plans_get_paths_under_runtime() -> None:
    admission = admit(
        guarded("work", step("work")),
        initial_input={"value": 1},
        runtime={
            "harness": "python",
            "nodes": {"work": {"kind": "agent", "callable": "no colon", "env": ["BAD-NAME"]}},
        },
    )
    paths = sorted(path for _, path, _ in problems(admission))
    assert paths == ["runtime › nodes › work › callable", "runtime › nodes › work › env[0]"]


def test_llm_harnesses_need_instructions_but_not_a_model() -> None:
    admission = admit(
        guarded("work", step("work")),
        initial_input={"value": 1},
        runtime={"harness": "claude", "nodes": {"work": {"kind": "agent"}}},
    )
    messages = " | ".join(d.message for d in admission.diagnostics)
    assert "must give it instructions" in messages and "model" not in messages
    # No model: the CLI's configured default (claude, codex), or the server's only model
    # (openai).
    for harness in ("claude", "codex", "openai"):
        instructed = admit(
            guarded("work", step("work", instructions="Do the work.")),
            initial_input={"value": 1},
            runtime={"harness": harness, "nodes": {"work": {"kind": "agent"}}},
        )
        assert instructed.ok, instructed.diagnostics


def test_environment_names_are_limited_and_connections_must_be_known() -> None:
    too_many = {
        "harness": "python",
        "nodes": {"work": {"kind": "agent", **NOOP, "env": [f"VAR_{i}" for i in range(65)]}},
    }
    assert not admit(guarded("work", step("work")), initial_input={"value": 1}, runtime=too_many).ok
    unknown = admit(
        guarded("work", step("work")),
        initial_input={"value": 1},
        runtime=plan(work={**NOOP, "connections": ["nowhere"]}),
    )
    assert problems(unknown) == [
        ("invalid_graph_shape", "runtime › nodes › work › connections", ["work"])
    ]
    declared = admit(
        guarded("work", step("work")),
        initial_input={"value": 1},
        runtime={
            **plan(work={**NOOP, "connections": ["nowhere", "github"]}),
            "connections": {"nowhere": {"env": "NOWHERE_TOKEN"}},
        },
    )
    assert declared.ok


def test_delivery_alongside_another_executable_is_rejected() -> None:
    graph = parallel_pair(step("work"), verifier("deliver"))
    admission = admit(
        graph,
        initial_input={"value": 1},
        runtime={
            **PYTHON,
            "nodes": {
                "work": {"kind": "agent", **NOOP},
                "deliver": {"kind": "git_delivery", "env": ["GH_TOKEN"]},
            },
        },
    )
    assert problems(admission) == [
        ("invalid_graph_shape", "runtime › nodes › deliver", ["deliver", "work"])
    ]
    assert "alongside work" in admission.diagnostics[0].message


def test_delivery_inside_a_map_of_several_items_is_rejected_but_one_item_is_fine() -> None:
    runtime = {"harness": "python", "nodes": {"deliver": {"kind": "git_delivery"}}}
    several = admit(
        mapped(verifier("deliver"), max_items=3),
        initial_input={"value": 1, "items": [1]},
        runtime=runtime,
    )
    assert "map that can run several items" in several.diagnostics[0].message
    single = admit(
        mapped(verifier("deliver"), max_items=1),
        initial_input={"value": 1, "items": [1]},
        runtime=runtime,
    )
    assert single.ok, single.diagnostics


def test_delivery_must_be_a_verifier_without_instructions() -> None:
    runtime = {"harness": "python", "nodes": {"deliver": {"kind": "git_delivery"}}}
    as_step = admit(
        guarded("deliver", step("deliver", instructions="push it")),
        initial_input={"value": 1},
        runtime=runtime,
    )
    messages = [d.message for d in as_step.diagnostics]
    assert any("must be a verifier" in m for m in messages)
    assert any("remove its instructions" in m for m in messages)


def test_parallel_writers_are_allowed_here() -> None:
    """Unlike the reference, two writing steps may share a par (only delivery is exclusive)."""
    admission = admit(
        parallel_pair(step("left"), step("right")),
        initial_input={"value": 1},
        runtime=plan(left=NOOP, right=NOOP),
    )
    assert admission.ok, admission.diagnostics


def test_verification_envelope_matches_fixture_shape(conformance: Path) -> None:
    fixture = load_json(conformance / "fixtures/verifier/positive/basic.json")
    registry = FileRegistry.load(conformance.parent / "verifier-fixture-registry.json")
    envelope = verify_document(fixture["graph"], registry).envelope()
    assert envelope["status"] == fixture["expected"]["status"]
    assert envelope["compiledIr"] == fixture["expected"]["compiledIr"]
    assert envelope["diagnostics"] == []
    assert len(envelope["identity"]) == 64
