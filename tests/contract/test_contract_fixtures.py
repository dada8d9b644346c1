"""The reference's graph, compiled-IR and artifact fixtures, through the public parse API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fixture_params, load_json

from zeroshot_kernel.contract.canonical import canonical_bytes, graph_identity
from zeroshot_kernel.contract.graph import CompiledGraphIr, GraphSpec
from zeroshot_kernel.contract.outcome import ArtifactRef
from zeroshot_kernel.contract.parse import parse_compiled_ir, parse_graph, parse_model

POSITIVE_MODELS = {
    "artifact-ref": ArtifactRef,
    "compiled-ir": CompiledGraphIr,
    "full-all-nodes": GraphSpec,
    "single-worker": GraphSpec,
}


def _sorted_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("path", fixture_params("graph/positive"))
def test_positive_documents_round_trip_byte_identically(conformance: Path, path: Path) -> None:
    document = load_json(path)
    if path.stem == "diagnostic":
        from zeroshot_kernel.contract.diagnostics import GraphDiagnostic

        model: type = GraphDiagnostic
    else:
        model = POSITIVE_MODELS[path.stem]
    result = parse_model(model, document)
    assert result.value is not None, result.diagnostics
    assert _sorted_json(result.value.to_wire()) == _sorted_json(document)


# Where each negative fixture's defect is, as a readable diagnostic path.
NEGATIVE_LOCATIONS = {
    "artifact-bytes": "bytes",
    "artifact-control-character": "artifactId",
    "artifact-overlength": "mediaType",
    "artifact-signed-url": "signedUrl",
    "duplicate-enum": "initialInput › values",
    "empty-enum": "initialInput › values",
    "empty-policy-version": "policy › policy",
    "empty-type-version": "typeId",
    "empty-worker-version": "root › children[0] › work › worker",
    "malformed-policy-ref": "policy › policy",
    "malformed-worker-ref": "root › children[0] › work › worker",
    "overlength-attempt-node": "bounds › attemptsPerNode › " + "a" * 129,
    "overlength-record-field": "initialInput › fields › " + "a" * 129,
    "overlength-signal-name": "root › children[1] › verify › signals › " + "a" * 129,
    "payload-custom": "initialInput",
    "payload-reference": "initialInput",
    "payload-regex": "initialInput › regex",
    "payload-union": "initialInput",
    "regex-guard": "root › children[2] › choose › branches[0] › when › regex",
    "script-guard": "root › children[2] › choose › branches[0] › when › script",
    "string-selector": "root › children[8] › each › over",
    "unknown-node": "root",
    "unknown-profile": "profile",
    "worker-command": "root › children[0] › work › command",
    "worker-credential": "root › children[0] › work › credential",
    "worker-endpoint": "root › children[0] › work › endpoint",
    "zero-bound": "bounds › peakConcurrency",
}


@pytest.mark.parametrize("path", fixture_params("graph/negative"))
def test_negative_documents_are_rejected_at_the_offending_field(
    conformance: Path, path: Path
) -> None:
    fixture = load_json(path)
    parser = {
        "graph": parse_graph,
        "compiled-ir": parse_compiled_ir,
        "artifact": lambda doc: parse_model(ArtifactRef, doc),
    }[fixture["schema"]]
    result = parser(fixture["document"])
    assert not result.ok
    paths = [d.readable_path() for d in result.diagnostics]
    assert paths == [NEGATIVE_LOCATIONS[path.stem]]
    assert all(d.message and d.severity == "error" for d in result.diagnostics)


def test_every_negative_fixture_has_an_expected_location(conformance: Path) -> None:
    names = {p.stem for p in (conformance / "fixtures/graph/negative").glob("*.json")}
    assert names == set(NEGATIVE_LOCATIONS)


def test_canonical_base_vector(conformance: Path) -> None:
    folder = conformance / "fixtures/graph/canonical"
    ir = CompiledGraphIr.from_wire(load_json(folder / "base.json"))
    assert canonical_bytes(ir) == (folder / "base.canonical.json").read_bytes().strip()
    assert graph_identity(ir) == (folder / "base.sha256").read_text().strip()


def test_reordering_keeps_and_sequence_mutation_changes_identity(conformance: Path) -> None:
    folder = conformance / "fixtures/graph/canonical"
    base = graph_identity(CompiledGraphIr.from_wire(load_json(folder / "base.json")))
    reordered = graph_identity(CompiledGraphIr.from_wire(load_json(folder / "reordered.json")))
    mutated = graph_identity(CompiledGraphIr.from_wire(load_json(folder / "sequence-mutated.json")))
    assert reordered == base
    assert mutated != base


def test_verifier_fixture_graphs_parse_with_sorted_labels(conformance: Path) -> None:
    for path in sorted((conformance / "fixtures/verifier").glob("*/*.json")):
        fixture = load_json(path)
        result = parse_graph(fixture["graph"])
        assert result.ok, (path.name, result.diagnostics)
        if "compiledIr" in fixture["expected"]:
            ir = fixture["expected"]["compiledIr"]
            assert CompiledGraphIr.from_wire(ir).to_wire() == ir
