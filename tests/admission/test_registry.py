"""Registry resolution and the registry admission pass against the reference fixtures."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import conformance_dir, fixture_files, fixture_params, load_json

from zeroshot_kernel.admission.worker_registry import (
    FileRegistry,
    InvalidWorkerDescriptor,
    MappingRegistry,
    RegistryFileError,
    WorkerNotFound,
    WorkerVersionUnavailable,
    registry_diagnostics,
)
from zeroshot_kernel.contract.diagnostics import GraphDiagnostic, field, index, node
from zeroshot_kernel.contract.graph import GraphSpec
from zeroshot_kernel.contract.parse import parse_graph

REGISTRY_FIXTURES = [
    pytest.param(path, id=path.stem)
    for path in fixture_files("verifier/negative")
    if path.stem.startswith("registry-")
] or fixture_params("verifier/negative/registry")


def _registry() -> FileRegistry:
    return FileRegistry.load(conformance_dir().parent / "verifier-fixture-registry.json")


def _graph(document: Any) -> GraphSpec:
    result = parse_graph(document)
    assert result.value is not None, result.diagnostics
    return result.value


def _comparable(diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wire form without ``message``, whose wording is ours."""
    return [{k: v for k, v in d.items() if k != "message"} for d in diagnostics]


def _wire(diagnostics: list[GraphDiagnostic]) -> list[dict[str, Any]]:
    return [d.to_wire() for d in diagnostics]


@pytest.mark.conformance
@pytest.mark.parametrize("path", REGISTRY_FIXTURES)
def test_registry_fixture_diagnostics_match(conformance: Path, path: Path) -> None:
    fixture = load_json(path)
    found = registry_diagnostics(_graph(fixture["graph"]), _registry())
    assert _comparable(_wire(found)) == _comparable(fixture["expected"]["diagnostics"])


@pytest.mark.conformance
@pytest.mark.parametrize("path", fixture_params("verifier/positive"))
def test_verified_fixtures_have_no_registry_findings(conformance: Path, path: Path) -> None:
    assert registry_diagnostics(_graph(load_json(path)["graph"]), _registry()) == []


# --- resolution ---------------------------------------------------------------------------


@pytest.fixture
def descriptor(conformance: Path) -> dict[str, Any]:
    return load_json(conformance / "fixtures" / "workers" / "positive" / "acp-v1.json")  # type: ignore[no-any-return]


def _step_graph(worker: str, **overrides: Any) -> dict[str, Any]:
    step = {
        "kind": "step",
        "name": "work",
        "worker": worker,
        "input": {"kind": "string"},
        "output": {"kind": "string"},
        "inputBindings": [],
        "writeBindings": [],
        "timeoutMs": 10,
        "attempts": 1,
    }
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": {"kind": "null"},
        "policy": {"policy": "policy.strict@1", "default": "deny"},
        "root": {**step, **overrides},
    }


def test_resolution_failures_are_distinct(descriptor: dict[str, Any]) -> None:
    registry = MappingRegistry({"mock.acp@1": descriptor, "mock.acp@2": None, "bad@1": {}})
    assert registry.resolve("mock.acp@1").worker == "mock.acp@1"
    with pytest.raises(WorkerVersionUnavailable):
        registry.resolve("mock.acp@2")
    with pytest.raises(WorkerNotFound):
        registry.resolve("mock.acp@3")
    with pytest.raises(InvalidWorkerDescriptor) as caught:
        registry.resolve("bad@1")
    assert any("'worker' is missing" in problem for problem in caught.value.problems)


def test_invalid_file_entry_is_reported_at_the_node_not_at_load(
    tmp_path: Path, descriptor: dict[str, Any]
) -> None:
    broken = copy.deepcopy(descriptor)
    broken["contract"]["errors"] = ["timeout"]
    path = tmp_path / "registry.json"
    path.write_text(json.dumps({"mock.acp@1": broken}), encoding="utf-8")
    registry = FileRegistry.load(path)  # loading does not judge entries
    [finding] = registry_diagnostics(_graph(_step_graph("mock.acp@1")), registry)
    assert (finding.code, finding.path, finding.related_nodes) == (
        "invalid_graph_shape",
        [field("root"), node("work")],
        ["work"],
    )
    assert "add crash, malformed, refusal" in finding.message


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("{not json", "not valid JSON"),
        ('["mock.acp@1"]', "JSON object"),
        ('{"mock.acp": null}', "name@1"),
        ('{"a@1": null, "a@1": null}', "duplicate key"),
    ],
)
def test_unreadable_registry_file_raises_a_clear_error(
    tmp_path: Path, text: str, complaint: str
) -> None:
    path = tmp_path / "registry.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RegistryFileError) as caught:
        FileRegistry.load(path)
    assert complaint in str(caught.value) and str(path) in str(caught.value)


def test_missing_registry_file_raises_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RegistryFileError, match="cannot read registry file"):
        FileRegistry.load(tmp_path / "absent.json")


# --- the checks -----------------------------------------------------------------------------


def test_findings_at_one_node_follow_the_reference_order(descriptor: dict[str, Any]) -> None:
    other = copy.deepcopy(descriptor)
    other["worker"] = "returned.other@1"
    other["graphProfiles"] = ["openengine.graph.single-worker/v1"]
    other["contract"]["input"] = {"kind": "integer"}
    other["contract"]["output"] = {"kind": "integer"}
    found = registry_diagnostics(
        _graph(_step_graph("mock.acp@1")), MappingRegistry({"mock.acp@1": other})
    )
    # reference: output, input (schema_safety); then profile, identity (invalid_graph_shape)
    assert [(d.code, d.message.split(" ")[0]) for d in found] == [
        ("schema_safety", "output"),
        ("schema_safety", "worker"),
        ("invalid_graph_shape", "graph"),
        ("invalid_graph_shape", "registry"),
    ]


def test_verifier_findings_follow_the_reference_order(descriptor: dict[str, Any]) -> None:
    verifier = copy.deepcopy(descriptor)
    verifier["contract"]["input"] = {"kind": "string"}
    verifier["contract"]["verifier"] = {
        "signals": {"b": ["x"], "a": ["x", "y"], "verdict": ["accepted"]},
        "diagnostic": {"kind": "string"},
    }
    graph = _step_graph(
        "mock.acp@1",
        kind="verifier",
        signals={"a": ["x"], "verdict": ["accepted"]},
        diagnostic={"kind": "integer"},
    )
    found = registry_diagnostics(_graph(graph), MappingRegistry({"mock.acp@1": verifier}))
    # reference: diagnostic, labels (a), absent signal (b)
    assert [d.message.split(" of ")[0].split(" emitted")[0] for d in found] == [
        "diagnostic type",
        "labels",
        "signal b",
    ]
    assert {d.code for d in found} == {"schema_safety"}


def test_verifier_node_needs_a_verifier_worker(descriptor: dict[str, Any]) -> None:
    graph = _step_graph("mock.acp@1", kind="verifier", signals={}, diagnostic={"kind": "null"})
    [finding] = registry_diagnostics(_graph(graph), MappingRegistry({"mock.acp@1": descriptor}))
    assert finding.code == "invalid_graph_shape" and "not a verifier" in finding.message


@pytest.mark.conformance
def test_nested_executables_are_checked_in_source_order(conformance: Path) -> None:
    fixture = load_json(conformance / "fixtures/verifier/positive/nested-structural-folds.json")
    document = fixture["graph"]
    verify = document["root"]["children"][0]["branches"][0]["body"]["body"]
    peer = document["root"]["children"][0]["branches"][1]
    verify["worker"], peer["worker"] = "fixture.missing@1", "fixture.version-unavailable@2"
    found = registry_diagnostics(_graph(document), _registry())
    parallel = [field("root"), node("root"), field("children"), index(0), node("parallel")]
    assert [(d.path, d.related_nodes) for d in found] == [
        (
            [
                *parallel,
                field("branches"),
                index(0),
                node("outerMap"),
                field("body"),
                node("innerLoop"),
                field("body"),
                node("verify"),
            ],
            ["verify"],
        ),
        ([*parallel, field("branches"), index(1), node("peer")], ["peer"]),
    ]
    assert "not in the registry" in found[0].message
    assert "unavailable" in found[1].message
