"""``zeroshot template list | show`` as a user types them, in a real subprocess: a template
is the ordinary GraphSpec it prints, our verifier admits it with a stable identity, its
round count is checked, and its runtime plan keeps the sessions the design asks for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import zeroshot

from zeroshot_kernel.admission.admit import admit, verify_document
from zeroshot_kernel.auto_research.options import MAX_ITERATIONS
from zeroshot_kernel.auto_research.template import REVIEW_PASSES
from zeroshot_kernel.client import Client
from zeroshot_kernel.contract.documents import node_documents
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: a real zeroshot process per call
pytestmark = pytest.mark.slow

SCOUTS = ("scout_exploration", "scout_synthesis", "scout_challenge")
FAIL_REASONS = {
    "scouting_failed",
    "research_failed",
    "measure_failed",
    "review_failed",
    "review_exhausted",
    "adoption_failed",
}
PUSH_FAIL_REASONS = FAIL_REASONS | {"delivery_failed", "delivery_repair_requested"}


def shown(cwd: Path, *args: str) -> dict[str, Any]:
    done = zeroshot(cwd, "template", "show", *args, "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def by_name(graph: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["name"]: node for node in node_documents(graph["root"])}


def test_list_names_the_templates(tmp_path: Path) -> None:
    listed = zeroshot(tmp_path, "template", "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        "single-worker",
        "auto-research",
        "software-change",
    ]


@pytest.mark.parametrize("push", [False, True])
def test_show_json_prints_the_graph_our_verifier_admits_with_a_stable_identity(
    tmp_path: Path,
    push: bool,
) -> None:
    args = ["auto-research", "--iterations", "3", "--task", "branin", *(["--push"] if push else [])]
    first, again = shown(tmp_path, *args), shown(tmp_path, *args)
    assert first == again
    expansion = expand_template(
        "auto-research", TemplateOptions(task="branin", iterations=3, push=push)
    )
    assert first == {
        "graph": expansion.graph,
        "input": expansion.input,
        "runtime": expansion.runtime,
    }

    verification = verify_document(first["graph"])
    assert verification.diagnostics == [] and verification.identity
    assert verify_document(again["graph"]).identity == verification.identity
    admission = admit(first["graph"], initial_input=first["input"], runtime=first["runtime"])
    assert admission.ok, admission.diagnostics
    assert admission.admitted is not None
    assert admission.admitted.identity == verification.identity
    # The printed files are what a user copies: `zeroshot validate` admits them as they are.
    for part in ("graph", "input", "runtime"):
        (tmp_path / f"{part}.json").write_text(json.dumps(first[part]))
    validated = zeroshot(
        tmp_path, "validate", "graph.json", "--input", "@input.json", "--runtime", "@runtime.json"
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert f"verified (identity {verification.identity})" in validated.stdout

    graph = by_name(first["graph"])
    assert graph["rounds"]["kind"] == "loop" and graph["rounds"]["maxIterations"] == 3
    assert first["input"]["options"] == {"iterations": 3}  # fixed at admission
    assert graph["review_cycle"]["maxIterations"] == REVIEW_PASSES
    assert graph["scouting"]["kind"] == "par"
    assert [b["name"] for b in graph["scouting"]["branches"]] == list(SCOUTS)
    assert all(graph[s]["kind"] == "verifier" for s in SCOUTS)  # read-only
    assert graph["researcher"]["kind"] == "step"  # proposes the change
    assert graph["reviewer"]["kind"] == "verifier"
    # The trusted steps: engine code, no instructions (never an agent).
    assert graph["measure"]["worker"] == "zeroshot.research.measure@1"
    assert graph["adopt"]["worker"] == "zeroshot.research.adopt@1"
    assert "instructions" not in graph["measure"] and "instructions" not in graph["adopt"]
    reasons = {node["reason"] for node in graph.values() if node["kind"] == "fail"}
    assert reasons == (PUSH_FAIL_REASONS if push else FAIL_REASONS)
    assert ("deliver" in graph) is push


@pytest.mark.parametrize("push", [False, True])
def test_the_expanded_runtime_keeps_scout_and_researcher_sessions_and_a_fresh_reviewer(
    tmp_path: Path,
    push: bool,
) -> None:
    runtime = shown(tmp_path, "auto-research", *(["--push"] if push else []))["runtime"]
    bindings = runtime["nodes"]
    for node in (*SCOUTS, "researcher"):
        assert bindings[node]["sessionScope"] == "node_instance", node
    assert bindings["reviewer"].get("sessionScope", "execution") == "execution"
    assert {bindings[s]["agent"] for s in SCOUTS} == {
        "research.scout.exploration",
        "research.scout.synthesis",
        "research.scout.challenge",
    }
    assert bindings["researcher"]["agent"] == "research.researcher"
    assert bindings["reviewer"]["agent"] == "research.reviewer"
    trusted = {
        "measure": {"kind": "trusted", "code": "research.measure"},
        "adopt": {"kind": "trusted", "code": "research.adopt"},
    }
    assert {n: bindings[n] for n in trusted} == trusted
    # ... whatever harness runs the agents.
    llm = shown(tmp_path, "auto-research", "--harness", "openai")["runtime"]
    assert {n: llm["nodes"][n] for n in trusted} == trusted
    if push:
        assert bindings["deliver"] == {"kind": "git_delivery"}
    else:
        assert "deliver" not in bindings
    single = shown(tmp_path, "single-worker", "--task", "fix it")
    assert single["input"] == {"task": "fix it"}
    assert verify_document(single["graph"]).diagnostics == []


def test_show_prints_an_outline_with_the_rounds_and_the_fail_reasons(tmp_path: Path) -> None:
    done = zeroshot(tmp_path, "template", "show", "auto-research")
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert "loop rounds  (at most 10 iterations)" in lines  # the default
    assert f"loop review_cycle  (at most {REVIEW_PASSES} iterations)" in lines
    assert "par scouting  (join all)" in lines
    assert "step researcher  (zeroshot.research.researcher@1)" in lines
    for reason in FAIL_REASONS:
        assert any(
            line.startswith("fail ") and line.endswith(f"(reason {reason})") for line in lines
        ), reason


@pytest.mark.parametrize("iterations", [0, -1, MAX_ITERATIONS + 1])
def test_iterations_out_of_range_are_refused_with_a_clear_error(
    tmp_path: Path,
    iterations: int,
) -> None:
    with pytest.raises(ValueError, match=f"between 1 and {MAX_ITERATIONS}, not {iterations}"):
        expand_template("auto-research", TemplateOptions(iterations=iterations))
    bound = (
        "greater than or equal to 1"
        if iterations < 1
        else f"less than or equal to {MAX_ITERATIONS}"
    )
    refused = zeroshot(
        tmp_path, "template", "show", "auto-research", "--iterations", str(iterations)
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert "Invalid value for '--iterations'" in refused.stderr and bound in refused.stderr
    (tmp_path / ".zeroshot").mkdir(exist_ok=True)
    run = zeroshot(tmp_path, "research", "run", "branin", "--iterations", str(iterations))
    assert run.returncode == 2
    assert "Invalid value for '--iterations'" in run.stderr and bound in run.stderr
    assert Client(workspace=str(tmp_path)).runs() == []


@pytest.mark.parametrize("iterations", [1, MAX_ITERATIONS])
def test_iterations_at_the_bounds_are_admitted(iterations: int) -> None:
    expansion = expand_template("auto-research", TemplateOptions(iterations=iterations))
    assert by_name(expansion.graph)["rounds"]["maxIterations"] == iterations
    assert verify_document(expansion.graph).diagnostics == []


def test_an_unknown_template_is_refused_with_the_known_names(tmp_path: Path) -> None:
    refused = zeroshot(tmp_path, "template", "show", "no-such-template")
    assert refused.returncode == 2
    assert "unknown template 'no-such-template'" in refused.stderr
    assert "auto-research" in refused.stderr and "single-worker" in refused.stderr


def test_the_trusted_steps_cannot_be_bound_to_an_agent_nor_to_another_node() -> None:
    expansion = expand_template("auto-research", TemplateOptions(task="branin", iterations=1))

    def diagnostics(**nodes: dict[str, Any]) -> list[str]:
        runtime = {**expansion.runtime, "nodes": {**expansion.runtime["nodes"], **nodes}}
        admission = admit(expansion.graph, initial_input=expansion.input, runtime=runtime)
        assert admission.admitted is None
        return [d.message for d in admission.diagnostics]

    [as_agent] = diagnostics(measure={"kind": "agent", "harness": "openai", "model": "m"})
    assert "node 'measure' (zeroshot.research.measure@1) is trusted engine code" in as_agent
    [swapped] = diagnostics(measure={"kind": "trusted", "code": "research.adopt"})
    assert "runs only nodes of worker zeroshot.research.adopt@1" in swapped
    [unknown] = diagnostics(adopt={"kind": "trusted", "code": "research.nothing"})
    assert "unknown trusted code 'research.nothing'" in unknown
