"""The ``zeroshot`` command line as a user runs it: a real subprocess per call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import load_json

# slow: a real zeroshot process per call
pytestmark = pytest.mark.slow

ZEROSHOT = [sys.executable, "-m", "zeroshot_kernel"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ZEROSHOT, *args], capture_output=True, text=True, timeout=60)


def test_help_lists_the_commands() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("validate", "graph", "schema"):
        assert command in result.stdout


def test_validate_broken_graph_prints_a_readable_diagnostic(
    conformance: Path, tmp_path: Path
) -> None:
    document = load_json(conformance / "fixtures/graph/negative/worker-command.json")["document"]
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps(document))
    result = run("validate", str(graph))
    assert result.returncode == 1
    assert "root › children[0] › work › command" in result.stdout
    assert "runtime plan" in result.stdout


def test_validate_json_envelope(conformance: Path, tmp_path: Path) -> None:
    document = load_json(conformance / "fixtures/graph/negative/unknown-profile.json")["document"]
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps(document))
    result = run("validate", str(graph), "--json")
    envelope = json.loads(result.stdout)
    assert result.returncode == 1
    assert envelope["status"] == "rejected"
    assert envelope["diagnostics"][0]["path"] == [{"kind": "field", "name": "profile"}]


def test_validate_accepts_yaml(tmp_path: Path) -> None:
    graph = tmp_path / "graph.yaml"
    graph.write_text(
        "profile: openengine.graph.full/v1\n"
        'initialInput: {kind: "null"}\n'
        "policy: {policy: policy.default@1, default: deny}\n"
        "root: {kind: fail, name: root, reason: nothing_to_do}\n"
    )
    result = run("validate", str(graph))
    assert result.returncode == 0, result.stdout + result.stderr


def test_missing_files_exit_2_and_garbage_is_a_rejected_graph(tmp_path: Path) -> None:
    missing = run("validate", str(tmp_path / "absent.json"))
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr
    assert run("validate").returncode == 2
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    rejected = run("validate", str(garbage))
    assert rejected.returncode == 1
    assert "invalid_graph_shape" in rejected.stdout and "not valid JSON" in rejected.stdout


def test_graph_identity_of_the_canonical_vector(conformance: Path) -> None:
    folder = conformance / "fixtures/graph/canonical"
    result = run("graph", "identity", str(folder / "base.json"))
    assert result.returncode == 0
    assert result.stdout.strip() == (folder / "base.sha256").read_text().strip()


def test_schema_graph_is_a_json_schema_of_the_models() -> None:
    result = run("schema", "graph")
    schema = json.loads(result.stdout)
    assert result.returncode == 0
    assert set(schema["required"]) == {"profile", "initialInput", "policy", "root"}
    assert schema["additionalProperties"] is False
