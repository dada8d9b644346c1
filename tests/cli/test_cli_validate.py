"""``zeroshot validate`` with the full admission: graph, input, runtime, registry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from admission_graphs import guarded, step
from conftest import PROJECT_ROOT, load_json

# slow: a real zeroshot process per call
pytestmark = pytest.mark.slow


def validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zeroshot_kernel", "validate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PROJECT_ROOT / "tests",
    )


def write(tmp_path: Path, name: str, document: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def test_verified_graph_prints_its_identity(tmp_path: Path) -> None:
    result = validate(write(tmp_path, "g.json", guarded("work", step("work"))))
    assert result.returncode == 0
    assert "verified (identity " in result.stdout


def test_semantic_rejection_is_readable_and_exit_1(tmp_path: Path) -> None:
    graph = guarded("work", step("work"))
    graph["root"]["children"].pop()
    result = validate(write(tmp_path, "g.json", graph))
    assert result.returncode == 1
    assert "reachability at root" in result.stdout


def test_input_and_runtime_are_checked_when_given(tmp_path: Path) -> None:
    graph = write(tmp_path, "g.json", guarded("work", step("work")))
    plan = write(
        tmp_path,
        "plan.json",
        {
            "harness": "python",
            "nodes": {"work": {"kind": "agent", "callable": "workers_pkg.basic:noop"}},
        },
    )
    ok = validate(graph, "--input", '{"value": 2}', "--runtime", f"@{plan}")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad_input = validate(graph, "--input", '{"value": "x"}', "--json")
    envelope = json.loads(bad_input.stdout)
    assert bad_input.returncode == 1
    assert envelope["diagnostics"][0]["path"] == [
        {"kind": "field", "name": "input"},
        {"kind": "field", "name": "value"},
    ]
    unbound = validate(graph, "--runtime", '{"harness": "python"}')
    assert unbound.returncode == 1 and "has no runtime binding" in unbound.stdout
    garbage = validate(graph, "--input", "{oops")
    assert garbage.returncode == 2


def test_registry_file_is_used_for_worker_checks(conformance: Path, tmp_path: Path) -> None:
    fixture = load_json(conformance / "fixtures/verifier/negative/registry-not-found.json")
    registry = conformance.parent / "verifier-fixture-registry.json"
    graph = write(tmp_path, "g.json", fixture["graph"])
    result = validate(graph, "--registry", str(registry), "--json")
    envelope = json.loads(result.stdout)
    assert result.returncode == 1
    assert [(d["code"], d["path"], d["relatedNodes"]) for d in envelope["diagnostics"]] == [
        (d["code"], d["path"], d["relatedNodes"]) for d in fixture["expected"]["diagnostics"]
    ]
    without = validate(graph, "--json")
    assert json.loads(without.stdout)["status"] == "verified"
    missing = validate(graph, "--registry", str(tmp_path / "absent.json"))
    assert missing.returncode == 2


def test_positive_fixture_envelope_equals_expected(conformance: Path, tmp_path: Path) -> None:
    fixture = load_json(conformance / "fixtures/verifier/positive/join-first.json")
    registry = conformance.parent / "verifier-fixture-registry.json"
    result = validate(
        write(tmp_path, "g.json", fixture["graph"]), "--registry", str(registry), "--json"
    )
    envelope = json.loads(result.stdout)
    assert result.returncode == 0
    assert {k: envelope[k] for k in ("status", "diagnostics", "compiledIr")} == fixture["expected"]
