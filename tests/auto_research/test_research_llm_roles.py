"""LLM research agents are briefed by the engine and confined by it.

The claude and codex agents are stand-in CLIs (``tests/agent_standins``: the documented
flags and JSON output, real subprocesses) that edit files with their "tools"; the openai
agents are a loopback OpenAI-compatible server (``chat_server``). What is checked is the
engine's side: what each role is told (read from the records, never from a model), that a
researcher with tools works in a scratch checkout whose differences trusted code collects
as the change, and that a researcher writing outside its checkout is refused and recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from auto_research_support import Research, copy_task, new_workspace
from chat_server import chat_server
from harness_support import agent_home, install_standin
from harness_support import calls as calls_made
from zeroshot_widgets.report import report_html

from zeroshot_kernel.auto_research import ResearchRecords
from zeroshot_kernel.auto_research.llm_roles import SCRATCH_DIR
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import FailedResult, NodeCompleted, SucceededResult
from zeroshot_kernel.ledger.failure import explain_failure
from zeroshot_kernel.templates import TemplateOptions, expand_template

# slow: real research runs with agent stand-in processes
pytestmark = pytest.mark.slow

KEY_ENV = "ZS_ROLES_LLM_KEY"
NEW_PARAMS = '{\n  "x1": 3.14159,\n  "x2": 2.275\n}\n'
PROPOSAL = {
    "strategy": "exploration",
    "approach": "exploration:optimum",
    "paramsJson": json.dumps({"x1": 3.1, "x2": 2.3}),
    "rationale": "near an optimum",
}
SCOUT = {"output": {"proposal": PROPOSAL}, "signals": {}, "diagnostic": None}
REVIEW = {
    "output": None,
    "signals": {"verdict": "accepted"},
    "diagnostic": {
        "reason": "the evidence beats the noise floor",
        "corrections": "",
        "title": "Move to the optimum",
        "description": "d",
        "adopt": True,
    },
}


def change(**fields: Any) -> dict[str, Any]:
    return {
        "change": {
            "parentId": "c000",
            "strategy": "exploration",
            "approach": "exploration:optimum",
            "rationale": "r",
            **fields,
        }
    }


def code_task(workspace: Path) -> str:
    """branin whose params file is an editable file: a change may be a file edit (its
    experiment still prints the metric, so it says it is self-scored)."""
    return copy_task(workspace, "branin", repeats=2, editable=["params.json"], selfScored=True)


def start(
    workspace: Path, task: str, harness: str, *, iterations: int = 1, **runtime: Any
) -> Research:
    client = Client(workspace=str(workspace))
    expansion = expand_template(
        "auto-research",
        TemplateOptions(task=task, iterations=iterations, harness=harness, model="standin-model"),
    )
    plan = {**expansion.runtime, **runtime}
    if "connections" in runtime:
        plan["nodes"] = {
            name: b if b["kind"] == "trusted" else {**b, "connections": ["local"]}
            for name, b in expansion.runtime["nodes"].items()
        }
    run = client.submit(
        expansion.graph, input=expansion.input, runtime=plan, title=f"{harness} roles"
    )
    return Research(workspace, task, client, run)


def test_openai_roles_are_briefed_from_the_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-key")
    workspace = new_workspace(tmp_path / "ws")
    task = code_task(workspace)
    prompts: dict[str, list[str]] = {}

    def respond(body: dict[str, Any]) -> Any:
        prompt = body["messages"][-1]["content"]
        node = prompt.split("`", 2)[1]
        prompts.setdefault(node, []).append(prompt)
        if node.startswith("scout_"):
            return {
                **SCOUT,
                "output": {"proposal": {**PROPOSAL, "strategy": node.removeprefix("scout_")}},
            }
        if node == "researcher":
            return change(edits=[{"path": "params.json", "kind": "contents", "text": NEW_PARAMS}])
        return REVIEW

    with chat_server({"respond": respond}) as server:
        research = start(
            workspace,
            task,
            "openai",
            iterations=2,
            connections={"local": {"env": KEY_ENV, "baseUrl": server.base_url}},
        )
        assert isinstance(research.wait(), SucceededResult)
    records = ResearchRecords(workspace, task)
    first, second = research.view().rounds
    assert first.adopted and first.params == {"x1": 3.14159, "x2": 2.275}
    adopted = records.read_manifest(first.candidate_id)
    assert adopted is not None and adopted.metric is not None
    charter = "# Charter: branin"
    # Round 1 runs before anything is measured (the measure step measures the baseline
    # first): its agents are told so, and the researcher gets the starting files.
    scout, researcher = prompts["scout_exploration"][0], prompts["researcher"][0]
    assert charter in scout and "None measured yet" in scout
    assert charter in researcher and "# Context from the engine" in researcher
    start_params = (workspace / task / "candidate" / "params.json").read_text()
    assert "### params.json\n```\n" + start_params in researcher
    # Round 2: the incumbent and round 1 as the engine measured them, the incumbent's file.
    researcher = prompts["researcher"][-1]
    assert f"{first.candidate_id} (adopted in round 1): branin {adopted.metric:.4g}" in researcher
    assert f"- round 1: {first.candidate_id} from c000" in researcher
    assert "### params.json\n```\n" + NEW_PARAMS in researcher
    reviewer = prompts["reviewer"][0]
    assert charter in reviewer and "### params.json" not in reviewer
    assert second.measure_status == "measured"
    # The change is shown against its parent in the report (and the monitor's table).
    assert first.diff.startswith("--- a/params.json\n+++ b/params.json\n")
    assert '+  "x1": 3.14159,' in report_html(research.client, research.run.id)


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_researcher_with_tools_edits_a_checkout_and_the_engine_collects_the_change(
    cli: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_standin(tmp_path, cli, monkeypatch)
    workspace = new_workspace(tmp_path / "ws")
    task = code_task(workspace)
    task_bytes = (workspace / task / "candidate" / "params.json").read_bytes()
    script(
        workspace,
        {
            **{
                f"scout_{s}": [
                    {"json": {**SCOUT, "output": {"proposal": {**PROPOSAL, "strategy": s}}}}
                ]
                for s in ("exploration", "synthesis", "challenge")
            },
            # The reply names another parent and edits nothing: the checkout decides both.
            "researcher": [
                {
                    "write": {"params.json": NEW_PARAMS, "notes.txt": "scratch"},
                    "json": change(parentId="c999", edits=[]),
                }
            ],
            "reviewer": [{"json": REVIEW}],
        },
    )
    research = start(workspace, task, cli)
    assert isinstance(research.wait(), SucceededResult), research.view()
    [adopted] = research.view().rounds
    assert adopted.adopted and adopted.parent_id == "c000"
    assert adopted.params == {"x1": 3.14159, "x2": 2.275}
    record = ResearchRecords(workspace, task).read_round(1)
    assert record is not None
    [row] = record.passes
    assert row.change is not None and row.change.parent_id == "c000"
    assert [(e.path, e.kind, e.text) for e in row.change.edits] == [
        ("params.json", "contents", NEW_PARAMS)
    ]  # notes.txt is not editable: left out
    assert row.evidence is not None and '+  "x1": 3.14159,' in row.evidence.diff
    # The agent worked below .zeroshot/scratch, never in the task folder.
    assert (workspace / task / "candidate" / "params.json").read_bytes() == task_bytes
    [checkout] = (workspace / SCRATCH_DIR).iterdir()
    assert (checkout / "params.json").read_text() == NEW_PARAMS


@pytest.mark.parametrize("outside", ["task", "records"])
def test_a_researcher_writing_outside_its_checkout_is_stopped_by_its_box(
    outside: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In its box the write never reaches the machine (the task folder is read-only or, below
    the box's private ``/tmp``, not there at all; ``.zeroshot/`` is an empty stand-in): the
    task and records stay as they were and the round goes on. Uncontained (``--sandbox
    none``), trusted code finds the write afterwards and refuses the round, recorded in the
    ledger."""
    install_standin(tmp_path, "claude", monkeypatch)
    workspace = new_workspace(tmp_path / "ws")
    task = code_task(workspace)
    # The checkout is .zeroshot/scratch/<key>/: three levels below the workspace.
    target = {
        "task": f"../../../{task}/candidate/params.json",
        "records": f"../../research/{task}/charter.md",
    }[outside]
    script(
        workspace,
        {
            **{
                f"scout_{s}": [
                    {"json": {**SCOUT, "output": {"proposal": {**PROPOSAL, "strategy": s}}}}
                ]
                for s in ("exploration", "synthesis", "challenge")
            },
            "researcher": [{"write": {target: NEW_PARAMS}, "json": change(edits=[])}],
            "reviewer": [{"json": REVIEW}],
        },
    )
    task_bytes = (workspace / task / "candidate" / "params.json").read_bytes()

    research = start(workspace, task, "claude")
    assert isinstance(research.wait(), SucceededResult)
    assert (workspace / task / "candidate" / "params.json").read_bytes() == task_bytes
    charter = workspace / ".zeroshot" / "research" / task / "charter.md"
    assert NEW_PARAMS not in charter.read_text()
    assert [c["node"] for c in calls_made() if c.get("refused_write")] in ([], ["researcher"])

    uncontained = new_workspace(tmp_path / "uncontained")
    task = code_task(uncontained)
    research = start(uncontained, task, "claude", sandbox="none")
    terminal = research.wait()
    assert isinstance(terminal, FailedResult) and terminal.reason == "research_failed"
    refusals = [
        e
        for _, e in research.run.events()
        if isinstance(e, NodeCompleted) and e.detail and "outside its scratch checkout" in e.detail
    ]
    assert refusals, "the refusal is recorded in the ledger"
    assert all(e.completion.outcome.status == "error" for e in refusals)
    assert ResearchRecords(uncontained, task).read_round(1) is None  # nothing was measured
    cause = explain_failure(e for _, e in research.run.events())
    assert cause is not None and cause.node == "researcher"
    assert "outside its scratch checkout" in cause.summary()


def script(workspace: Path, nodes: dict[str, list[dict[str, Any]]]) -> None:
    """What the stand-ins answer per node (see ``agent_standins.scripted_agent``), in their
    configuration folder (the workspace is read-only in their box)."""
    (agent_home() / "standin.json").write_text(json.dumps(nodes))


def test_an_llm_researcher_works_with_the_embedded_scouts_and_reviewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The researcher's output type is the reviewer's input type whatever runs each: an
    openai researcher between embedded scouts and an embedded reviewer."""
    monkeypatch.setenv(KEY_ENV, "local-key")
    workspace = new_workspace(tmp_path / "ws")
    task = code_task(workspace)
    client = Client(workspace=str(workspace))
    expansion = expand_template("auto-research", TemplateOptions(task=task, iterations=2))
    with chat_server(
        {
            "respond": lambda body: change(
                edits=[{"path": "params.json", "kind": "contents", "text": NEW_PARAMS}]
            )
        }
    ) as server:
        plan = {
            **expansion.runtime,
            "connections": {"local": {"env": KEY_ENV, "baseUrl": server.base_url}},
        }
        plan["nodes"] = {
            **plan["nodes"],
            "researcher": {"kind": "agent", "harness": "openai", "connections": ["local"]},
        }
        run = client.submit(
            expansion.graph, input=expansion.input, runtime=plan, title="mixed harnesses"
        )
        research = Research(workspace, task, client, run)
        assert isinstance(research.wait(), SucceededResult)
    rounds = research.view().rounds
    assert [r.verdict for r in rounds] == ["accepted", "accepted"]
    assert rounds[0].adopted and rounds[0].params == {"x1": 3.14159, "x2": 2.275}
    assert len(server.completions()) == 2  # the researcher only
