"""The structural verifier against the reference's verifier fixtures.

Positive fixtures must give no structural diagnostic. Negative fixtures must give exactly
the expected diagnostics (code, path, related nodes, severity, in order), leaving out
those of other passes: ``ceiling_exceeded`` and ``cyclic_reference`` come from the bounds
pass, and the ``registry-*`` fixtures are structurally valid graphs that only the registry
pass rejects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import fixture_params, load_json

from zeroshot_kernel.admission.verifier import structural_diagnostics
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


def test_every_fixture_family_is_present(conformance: Path) -> None:
    root = conformance / "fixtures" / "verifier"
    assert len(list((root / "positive").glob("*.json"))) == 19
    assert len(list((root / "negative").glob("*.json"))) == 33
