"""The verifier against the reference's verifier fixtures.

Positive fixtures must give no structural diagnostic. Negative fixtures must give exactly
the expected diagnostics (code, path, related nodes, severity, in order), leaving out
those of other passes: ``ceiling_exceeded`` and ``cyclic_reference`` come from the bounds
pass, and the ``registry-*`` fixtures are structurally valid graphs that only the registry
pass rejects. The whole verification (every pass, with the fixtures' registry) must then
reproduce each fixture's ``expected`` exactly, message text aside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_params, load_json

from zeroshot_kernel.admission.admit import verify_document
from zeroshot_kernel.admission.verifier import structural_diagnostics
from zeroshot_kernel.admission.worker_registry import FileRegistry
from zeroshot_kernel.contract.diagnostics import GraphDiagnostic
from zeroshot_kernel.contract.graph import GraphSpec
from zeroshot_kernel.contract.parse import parse_graph

OTHER_PASSES = frozenset({"ceiling_exceeded", "cyclic_reference"})

pytestmark = pytest.mark.conformance


def _graph(path: Path) -> tuple[GraphSpec, dict[str, Any]]:
    fixture = load_json(path)
    parsed = parse_graph(fixture["graph"])
    assert parsed.value is not None, [d.message for d in parsed.diagnostics]
    return parsed.value, fixture["expected"]


def _ours(diagnostics: list[GraphDiagnostic]) -> list[tuple[object, ...]]:
    return [
        (d.code, [s.to_wire() for s in d.path], d.related_nodes, d.severity) for d in diagnostics
    ]


def _expected(diagnostics: list[dict[str, Any]]) -> list[tuple[object, ...]]:
    return [
        (d["code"], d["path"], d["relatedNodes"], d["severity"])
        for d in diagnostics
        if d["code"] not in OTHER_PASSES
    ]


@pytest.mark.parametrize("path", fixture_params("verifier/positive"))
def test_positive_fixture_has_no_structural_diagnostic(conformance: Path, path: Path) -> None:
    graph, expected = _graph(path)
    assert expected["status"] == "verified"
    assert _ours(structural_diagnostics(graph)) == []


@pytest.mark.parametrize("path", fixture_params("verifier/negative"))
def test_negative_fixture_matches_reference(conformance: Path, path: Path) -> None:
    graph, expected = _graph(path)
    assert expected["status"] == "rejected"
    wanted = [] if path.stem.startswith("registry-") else _expected(expected["diagnostics"])
    assert _ours(structural_diagnostics(graph)) == wanted


def _without_message(diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: value for key, value in d.items() if key != "message"} for d in diagnostics]


@pytest.mark.parametrize(
    "path", fixture_params("verifier/positive") + fixture_params("verifier/negative")
)
def test_whole_verification_reproduces_the_fixture(conformance: Path, path: Path) -> None:
    """Parse, structural passes, bounds, registry and compiled IR, end to end: status,
    diagnostics in order (all fields but the message) and ``compiledIr`` as expected."""
    fixture = load_json(path)
    registry = FileRegistry.load(conformance.parent / "verifier-fixture-registry.json")
    envelope = verify_document(fixture["graph"], registry).envelope()
    expected = fixture["expected"]
    assert envelope["status"] == expected["status"]
    assert _without_message(envelope["diagnostics"]) == _without_message(expected["diagnostics"])
    assert envelope.get("compiledIr") == expected.get("compiledIr")
    assert ("identity" in envelope) == (expected["status"] == "verified")


def test_every_fixture_family_is_present(conformance: Path) -> None:
    root = conformance / "fixtures" / "verifier"
    assert len(list((root / "positive").glob("*.json"))) == 19
    assert len(list((root / "negative").glob("*.json"))) == 33


def test_the_registry_is_consulted_only_when_the_structure_is_sound(conformance: Path) -> None:
    """A graph with a structural fault gets only that fault: its unknown worker is reported
    once the structure is fixed, not before."""
    fixture = load_json(conformance / "fixtures/verifier/negative/registry-not-found.json")
    registry = FileRegistry.load(conformance.parent / "verifier-fixture-registry.json")
    graph = fixture["graph"]
    work = graph["root"]["children"][0]
    graph["root"]["children"].append({**work, "name": "later"})  # after `done`: unreachable
    faulty = verify_document(graph, registry).envelope()
    assert [(d["code"], d["relatedNodes"]) for d in faulty["diagnostics"]] == [
        ("reachability", ["later", "root"])
    ]
    graph["root"]["children"].pop()
    sound = verify_document(graph, registry).envelope()
    assert _without_message(sound["diagnostics"]) == _without_message(
        fixture["expected"]["diagnostics"]
    )
