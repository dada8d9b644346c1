"""Worker descriptors, outcomes and artifact references against the reference fixtures."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_params, load_json
from pydantic import TypeAdapter, ValidationError

from zeroshot_kernel.admission.worker_registry import MappingRegistry, registry_diagnostics
from zeroshot_kernel.contract.diagnostics import field, node
from zeroshot_kernel.contract.outcome import ArtifactRef, WorkerOutcome
from zeroshot_kernel.contract.parse import parse_graph, parse_model
from zeroshot_kernel.contract.worker_descriptors import (
    LEGACY_WORKER,
    PINNED_BINDINGS,
    WorkerContractViolation,
    WorkerDescriptor,
)

OUTCOME: TypeAdapter[Any] = TypeAdapter(WorkerOutcome)
POSITIVE = "workers/positive"
BASE_BY_PROTOCOL = {
    "acp": "acp-v1.json",
    "builtin": "builtin-v1.json",
    "legacy_zeroshot": "legacy-zeroshot-ship-v1.json",
}
COMPATIBILITY_CODES = {
    "INPUT": "schema_safety",
    "OUTPUT": "schema_safety",
    "SIGNAL_FIELD": "schema_safety",
    "SIGNAL_LABELS": "schema_safety",
    "DIAGNOSTIC": "schema_safety",
    "VERIFIER_CONTRACT": "invalid_graph_shape",
}


def _rejection_codes(error: ValidationError) -> list[tuple[str, tuple[int | str, ...]]]:
    """(code, location) per error, in the fixture vocabulary."""
    found: list[tuple[str, tuple[int | str, ...]]] = []
    for detail in error.errors():
        loc = tuple(detail["loc"])
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, WorkerContractViolation):
            found.append((cause.code, loc))
        elif detail["type"] == "extra_forbidden":
            found.append(("FORBIDDEN_FIELD", loc))
        elif detail["type"] == "literal_error" and loc[:2] == ("contract", "errors"):
            found.append(("UNKNOWN_WORKER_ERROR", loc))
        else:
            found.append((detail["type"], loc))
    return found


def _mutation(base: Any, document: Any) -> tuple[str, ...]:
    """The deepest key path under which every difference between the two documents lies."""
    changes = _changed(base, document)
    assert changes, "the fixture should differ from its positive base"
    prefix = changes[0]
    for change in changes[1:]:
        while change[: len(prefix)] != prefix:
            prefix = prefix[:-1]
    return prefix


def _changed(base: Any, document: Any, at: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Where ``document`` differs from ``base``: the key path of each difference."""
    if isinstance(base, dict) and isinstance(document, dict):
        changes: list[tuple[str, ...]] = []
        for key in sorted(set(base) | set(document)):
            if key not in base or key not in document:
                changes.append((*at, key))
            else:
                changes.extend(_changed(base[key], document[key], (*at, key)))
        return changes
    return [] if base == document else [at]


def _compatible(location: tuple[int | str, ...], pointer: tuple[str, ...]) -> bool:
    shorter = min(len(location), len(pointer))
    return tuple(location[:shorter]) == tuple(pointer[:shorter])


@pytest.mark.conformance
@pytest.mark.parametrize("path", fixture_params(POSITIVE))
def test_positive_fixture_parses_and_round_trips(conformance: Path, path: Path) -> None:
    document = load_json(path)
    if "worker" in document:
        assert WorkerDescriptor.from_wire(document).to_wire() == document
    elif "artifactId" in document:
        assert ArtifactRef.from_wire(document).to_wire() == document
    else:
        assert OUTCOME.dump_python(OUTCOME.validate_python(document), mode="json") == document


@pytest.mark.conformance
@pytest.mark.parametrize("path", fixture_params("workers/mock"))
def test_mock_normalization_is_a_valid_outcome_for_a_pinned_binding(
    conformance: Path, path: Path
) -> None:
    document = load_json(path)
    assert (document["version"], document["profile"]) in PINNED_BINDINGS.values()
    outcome = OUTCOME.validate_python(document["normalized"])
    assert OUTCOME.dump_python(outcome, mode="json") == document["normalized"]


@pytest.mark.conformance
@pytest.mark.parametrize("path", fixture_params("workers/negative"))
def test_negative_fixture_is_rejected_for_its_reason(conformance: Path, path: Path) -> None:
    fixture = load_json(path)
    kind, expected = fixture["fixtureKind"], fixture["expectedCode"]
    if kind == "descriptor":
        document = fixture["document"]
        with pytest.raises(ValidationError) as caught:
            WorkerDescriptor.from_wire(document)
        base = load_json(
            conformance / "fixtures" / POSITIVE / BASE_BY_PROTOCOL[document["binding"]["protocol"]]
        )
        pointer = _mutation(base, document)
        matching = [loc for code, loc in _rejection_codes(caught.value) if code == expected]
        assert matching, _rejection_codes(caught.value)
        assert any(_compatible(loc, pointer) for loc in matching), (matching, pointer)
        if matching == [()]:  # a whole-descriptor rule must name the offending field
            assert f"{'.'.join(pointer)} must" in str(caught.value)
    elif kind == "outcome":
        with pytest.raises(ValidationError) as caught:
            OUTCOME.validate_python(fixture["document"])
        [detail] = caught.value.errors()
        assert detail["type"] == "value_error" and tuple(detail["loc"]) == ("error",)
    else:
        assert kind == "compatibility"
        graph = parse_graph(fixture["graph"]).value
        assert graph is not None
        registry = MappingRegistry(
            {entry["requestedWorker"]: entry["descriptor"] for entry in fixture["registry"]}
        )
        [diagnostic] = registry_diagnostics(graph, registry)
        assert diagnostic.code == COMPATIBILITY_CODES[expected]
        assert diagnostic.path == [field("root"), node(graph.root.name)]
        assert diagnostic.related_nodes == [graph.root.name]


# --- rules the fixtures do not cover ----------------------------------------------------


@pytest.fixture
def acp(conformance: Path) -> dict[str, Any]:
    return load_json(conformance / "fixtures" / POSITIVE / "acp-v1.json")  # type: ignore[no-any-return]


@pytest.fixture
def legacy(conformance: Path) -> dict[str, Any]:
    return load_json(conformance / "fixtures" / POSITIVE / BASE_BY_PROTOCOL["legacy_zeroshot"])  # type: ignore[no-any-return]


def _codes(document: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        WorkerDescriptor.from_wire(document)
    return [code for code, _ in _rejection_codes(caught.value)]


@pytest.mark.parametrize(
    ("pointer", "value", "code"),
    [
        (("contract", "errors"), [], "EMPTY_WORKER_ERRORS"),
        (
            ("contract", "errors"),
            ["timeout", "crash", "crash", "refusal"],
            "DUPLICATE_WORKER_ERRORS",
        ),
        (("artifactProfile", "allowedTypeIds"), ["a@1", "a@1"], "DUPLICATE_ARTIFACT_TYPES"),
        (("artifactProfile", "allowedMediaTypes"), [], "EMPTY_MEDIA_TYPES"),
        (("artifactProfile", "allowedMediaTypes"), ["a/b", "a/b"], "DUPLICATE_MEDIA_TYPES"),
        (("binding", "profile"), "openengine.worker.a2a/1.0", "UNSUPPORTED_WORKER_BINDING"),
        (("worker",), LEGACY_WORKER, "INVALID_LEGACY_BINDING"),
    ],
)
def test_descriptor_rules(
    acp: dict[str, Any], pointer: tuple[str, ...], value: Any, code: str
) -> None:
    document = copy.deepcopy(acp)
    target = document
    for key in pointer[:-1]:
        target = target[key]
    target[pointer[-1]] = value
    assert code in _codes(document)


def test_legacy_contract_pins_error_order(legacy: dict[str, Any]) -> None:
    document = copy.deepcopy(legacy)
    document["contract"]["errors"] = ["crash", "timeout", "malformed", "refusal"]
    assert _codes(document) == ["INVALID_LEGACY_BINDING"]


def test_descriptor_errors_become_located_diagnostics(acp: dict[str, Any]) -> None:
    document = copy.deepcopy(acp)
    document["graphProfiles"] = []
    document["endpoint"] = "https://example.invalid"
    result = parse_model(WorkerDescriptor, document)
    assert result.value is None
    assert [d.readable_path() for d in result.diagnostics] == ["endpoint", "graphProfiles"]
    assert "at least one" in result.diagnostics[1].message
