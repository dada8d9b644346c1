"""An LLM research run that changes code, end to end: ``zeroshot research run quadrature
--harness openai --base-url URL`` (no key, no model named) against a loopback
OpenAI-compatible server scripted as a competent agent (a stand-in for a model server,
not a model). Its researcher writes a Gauss-Legendre rule into quadrature.py; the run
adopts it on the engine's own measurements, reaches the task's target, and the diff is in
the records and the report. A second agent that claims success for a broken edit gets
nothing adopted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from auto_research_support import new_workspace
from chat_server import chat_server
from code_task_agents import CLAIM, competent, research
from quadrature_rules import GAUSS, OVER_BUDGET
from zeroshot_widgets.report import report_html

from zeroshot_kernel.auto_research import ResearchRecords, load_task, run_experiment
from zeroshot_kernel.auto_research.task import BUNDLED_TASKS
from zeroshot_kernel.auto_research.views import load_research_view
from zeroshot_kernel.client import Client
from zeroshot_kernel.ledger.events import SucceededResult

# slow: real research runs against a loopback model server
pytestmark = pytest.mark.slow


def test_an_llm_agent_reaches_the_code_tasks_target_on_trusted_measurements(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    with chat_server({"respond": competent(GAUSS)}) as server:
        ran = research(workspace, server.base_url, "gauss")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert all(r["body"]["model"] == "standin" for r in server.completions())  # its only one
    assert all(
        "authorization" not in {h.lower() for h in r["headers"]} for r in server.completions()
    )
    client = Client(workspace=str(workspace))
    [run] = client.runs()
    assert isinstance(client.run(run.run_id).wait(60), SucceededResult)
    [decided] = load_research_view(client.ledger, run.run_id).rounds
    assert decided.adopted and decided.candidate_id == "c001"
    records = ResearchRecords(workspace, "gauss")
    manifest = records.read_manifest("c001")
    assert manifest is not None and manifest.metric is not None
    task = load_task(BUNDLED_TASKS / "quadrature")
    assert task.spec.target is not None and manifest.metric <= task.spec.target
    # Every recorded figure is a measurement: re-measure the stored bytes on one seed.
    first = manifest.measurements[0].experiment
    again = run_experiment(task, records.source_dir("c001"), seed=first.seed)
    assert again.metric == first.metric
    assert CLAIM not in json.dumps([m.model_dump() for m in manifest.measurements])
    record = records.read_round(1)
    assert record is not None
    [row] = record.passes
    assert row.evidence is not None and "+    panels = budget // 4" in row.evidence.diff
    assert "+    panels = budget // 4" in report_html(client, run.run_id)


def test_a_broken_edit_claimed_as_a_success_is_not_adopted(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "ws")
    with chat_server({"respond": competent(OVER_BUDGET)}) as server:
        ran = research(workspace, server.base_url, "broken")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    client = Client(workspace=str(workspace))
    [run] = client.runs()
    [decided] = load_research_view(client.ledger, run.run_id).rounds
    assert not decided.adopted and decided.metric is None  # 65 nodes: no metric
    [line] = [x for x in ran.stdout.splitlines() if x.startswith("round")]
    assert "     crashed  kept incumbent" in line
    incumbent = ResearchRecords(workspace, "broken").read_incumbent()
    assert incumbent is not None and incumbent.candidate_id == "c000"
