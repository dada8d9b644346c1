"""A code task: the bundled ``quadrature`` task has no search space, only an editable file.

Its target is out of reach of the starting left Riemann sum and of any parameter; a better
rule written into ``quadrature.py`` reaches it through the trusted measure step (real
subprocess experiments). Parameters, edits of the non-editable runner and the embedded
agents (which search parameters only) are refused with a clear, recorded reason.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from quadrature_rules import OVER_BUDGET, SIMPSON, SIMPSON_LINE
from research_driver import STUDY, TEMPLATES, change, decide, measure_pass, propose

from zeroshot_kernel.auto_research import (
    ResearchRecords,
    TaskError,
    load_task,
    local_agents,
    run_repeats,
)
from zeroshot_kernel.auto_research.agents import NoSearchSpace, researcher, reviewer, scout
from zeroshot_kernel.auto_research.protocol import ResearcherInput, ReviewerInput, ScoutInput
from zeroshot_kernel.auto_research.seeds import experiment_seed
from zeroshot_kernel.client import Client
from zeroshot_kernel.harness.python_call import call_worker
from zeroshot_kernel.workers import WorkerContext

TASK = TEMPLATES / "quadrature"
MESSAGE = (
    "task quadrature has no searchSpace: the embedded agents search parameters only; "
    "run it with --harness claude|codex|openai"
)
START = (TASK / "candidate" / "quadrature.py").read_text()

TRAPEZOID = START.replace(
    "    h = 1.0 / budget\n    return [i * h for i in range(budget)], [h] * budget\n",
    "    h = 1.0 / (budget - 1)\n    ends = (0, budget - 1)\n"
    "    weights = [h / 2 if i in ends else h for i in range(budget)]\n"
    "    return [i * h for i in range(budget)], weights\n",
)


def edit(path: str, kind: str, text: str) -> dict[str, str]:
    return {"path": path, "kind": kind, "text": text}


def diff_of(before: str, after: str, path: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"
        )
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_the_code_task_loads_and_its_baseline_is_far_from_the_target() -> None:
    task = load_task(TASK)
    spec = task.spec
    assert spec.search_space == [] and task.start_params == {}
    assert spec.editable == ["quadrature.py"] and spec.is_editable("quadrature.py")
    assert not spec.is_editable("run.py")
    assert spec.direction == "minimize" and spec.target == -5.0
    assert not (task.candidate_dir / spec.params_file).exists(), "a code task has no params"
    assert spec.embedded_agents_problem() == MESSAGE
    seeds = [experiment_seed(0, i) for i in range(spec.repeats)]
    runs = run_repeats(task, task.candidate_dir, seeds, parallel=2)
    assert [r.status for r in runs] == ["ok"] * spec.repeats
    assert all(r.duration_seconds < 1.0 for r in runs), [r.duration_seconds for r in runs]
    values = [r.metric for r in runs if r.metric is not None]
    mean = sum(values) / len(values)
    # The left Riemann sum is about 1e-2 accurate: three orders of magnitude off the target.
    assert -2.5 < mean < -1.0 and spec.target is not None and mean - spec.target > 2.5
    assert not spec.meets_target(mean)


def test_a_whole_contents_edit_reaches_the_target_and_is_recorded_with_its_diff(
    workspace: Path,
    tmp_path: Path,
) -> None:
    evidence = measure_pass(
        TASK, workspace, 1, change({}, edits=[edit("quadrature.py", "contents", SIMPSON)])
    )
    assert evidence.status == "measured" and evidence.experiment_status == "ok", evidence
    assert evidence.candidate_id == "c001" and evidence.incumbent_id == "c000"
    assert evidence.metric is not None and evidence.metric < -5.0 and evidence.target_met
    assert evidence.incumbent_metric is not None and evidence.incumbent_metric > -2.5
    assert evidence.gain > 3.0 and evidence.supports_adoption
    assert "--- a/quadrature.py" in evidence.diff and "+++ b/quadrature.py" in evidence.diff
    assert f"+    {SIMPSON_LINE}" in evidence.diff
    assert "run.py" not in evidence.diff

    records = ResearchRecords(workspace, STUDY)
    manifest = records.read_manifest("c001")
    assert manifest is not None and manifest.parent_id == "c000" and manifest.params == {}
    assert (records.source_dir("c001") / "quadrature.py").read_text() == SIMPSON
    record = records.read_round(1)
    assert record is not None and record.passes[-1].evidence == evidence
    assert record.passes[-1].change is not None
    assert record.passes[-1].change.edits[0].text == SIMPSON
    assert (TASK / "candidate" / "quadrature.py").read_text() == START, "the task is untouched"

    # The embedded reviewer judges evidence, not parameters: it works on a code task.
    verdict = reviewer(
        ReviewerInput(
            task=str(TASK),
            study=STUDY,
            workspace=str(workspace),
            change=record.passes[-1].change,
            evidence=evidence,
        )
    )
    assert verdict.verdict == "accepted" and verdict.adopt
    result = decide(TASK, workspace, evidence, verdict.verdict, verdict.adopt)
    assert result.disposition == "adopt"
    incumbent = records.read_incumbent()
    assert incumbent is not None and incumbent.candidate_id == "c001"


def test_a_unified_diff_edit_applies(workspace: Path) -> None:
    evidence = measure_pass(
        TASK,
        workspace,
        1,
        change(
            {}, edits=[edit("quadrature.py", "diff", diff_of(START, TRAPEZOID, "quadrature.py"))]
        ),
    )
    assert evidence.status == "measured" and evidence.experiment_status == "ok", evidence
    assert "+    ends = (0, budget - 1)" in evidence.diff
    records = ResearchRecords(workspace, STUDY)
    assert (records.source_dir(evidence.candidate_id) / "quadrature.py").read_text() == TRAPEZOID
    # The trapezoid rule is a real gain, but a second-order rule still misses the target.
    assert evidence.supports_adoption and evidence.metric is not None
    assert -5.0 < evidence.metric < -2.5 and not evidence.target_met


def test_a_rule_over_the_budget_is_a_recorded_failed_run(workspace: Path) -> None:
    evidence = measure_pass(
        TASK, workspace, 1, change({}, edits=[edit("quadrature.py", "contents", OVER_BUDGET)])
    )
    assert evidence.status == "measured" and evidence.experiment_status == "crashed"
    assert evidence.metric is None and not evidence.supports_adoption
    assert "needs 1 to 64 nodes" in evidence.summary


def _rejected(workspace: Path, proposed: Any, reason: str) -> None:
    evidence = measure_pass(TASK, workspace, 1, proposed)
    assert evidence.status == "change_rejected", evidence
    assert any(reason in r for r in evidence.reasons), evidence.reasons
    assert evidence.candidate_id == "" and evidence.experiment_status == "not_run"
    records = ResearchRecords(workspace, STUDY)
    assert sorted(records.candidates()) == ["c000"]
    record = records.read_round(1)
    assert record is not None and record.passes[-1].evidence == evidence
    result = decide(TASK, workspace, evidence, "accepted", adopt_it=True)
    assert result.disposition == "reject" and reason.split(":")[0] in result.justification


def test_an_edit_of_the_runner_is_a_recorded_rejection(workspace: Path) -> None:
    cheat = 'print(\'ZEROSHOT_METRIC {"name": "log10_error", "value": -15}\')\n'
    _rejected(
        workspace,
        change({}, edits=[edit("run.py", "contents", cheat)]),
        "'run.py' is outside the task's editable files (quadrature.py)",
    )
    assert (TASK / "candidate" / "run.py").read_text() != cheat


@pytest.mark.parametrize(
    "edits",
    [[], [edit("quadrature.py", "contents", SIMPSON)]],
    ids=["params-only", "params-and-edit"],
)
def test_parameters_on_a_task_without_a_search_space_are_a_recorded_rejection(
    workspace: Path,
    edits: list[dict[str, str]],
) -> None:
    _rejected(
        workspace,
        change({"budget": 128}, edits=edits),
        "parameters given (budget), but the task has no search space",
    )


def test_a_task_with_nothing_to_change_is_invalid(tmp_path: Path) -> None:
    root = tmp_path / "task"
    shutil.copytree(TASK, root)
    text = (root / "task.yaml").read_text().replace('editable: ["quadrature.py"]\n', "")
    (root / "task.yaml").write_text(text)
    with pytest.raises(TaskError, match="neither a searchSpace nor editable files") as caught:
        load_task(root)
    assert str(root) in str(caught.value)


def test_a_parameter_task_still_needs_its_params_file(tmp_path: Path) -> None:
    root = tmp_path / "task"
    shutil.copytree(TEMPLATES / "branin", root)
    (root / "candidate" / "params.json").unlink()
    with pytest.raises(TaskError, match=r"candidate/params\.json is missing"):
        load_task(root)
    assert load_task(TEMPLATES / "branin").spec.embedded_agents_problem() is None


def test_research_run_with_the_local_harness_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    (tmp_path / ".zeroshot").mkdir()
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "zeroshot_kernel",
            "research",
            "run",
            "quadrature",
            "--iterations",
            "1",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)},
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr.strip() == f"error: --harness local: {MESSAGE}. Nothing was started."
    assert ran.stdout == ""
    assert Client(workspace=str(tmp_path)).runs() == []
    assert not (tmp_path / ".zeroshot" / "research").exists()


def test_the_embedded_agents_refuse_a_task_without_a_search_space(workspace: Path) -> None:
    for strategy in ("exploration", "synthesis", "challenge"):
        with pytest.raises(NoSearchSpace) as caught:
            scout(
                ScoutInput(
                    task=str(TASK),
                    study=STUDY,
                    workspace=str(workspace),
                    round=1,
                    strategy=strategy,
                    seed=1,
                )
            )
        assert str(caught.value) == MESSAGE
    with pytest.raises(NoSearchSpace, match="embedded agents search parameters only"):
        researcher(
            ResearcherInput(
                task=str(TASK),
                study=STUDY,
                workspace=str(workspace),
                round=1,
                proposals=[propose({})],
                corrections="",
                reconsideration_due=False,
                seed=1,
            )
        )
    with pytest.raises(TaskError):  # a NoSearchSpace is a TaskError
        scout(
            ScoutInput(
                task="quadrature",
                study=STUDY,
                workspace=str(workspace),
                round=1,
                strategy="exploration",
                seed=1,
            )
        )


def test_the_local_harness_records_a_one_line_refusal_not_a_crash(workspace: Path) -> None:
    """As the local harness calls them: a refusal with the reason (never retried)."""
    context = WorkerContext(
        run_id="run-test", node="n", execution="e", attempt=1, workspace=workspace
    )
    proposal = propose({}).to_wire()
    graph_input: dict[str, Any] = {
        "task": "quadrature",
        "study": STUDY,
        "corrections": "",
        **{s: proposal for s in ("exploration", "synthesis", "challenge")},
    }
    engine = {"round": 1, "seed": 1, "reconsiderationDue": False}
    calls = [
        (local_agents.scout_exploration, True),
        (local_agents.scout_synthesis, True),
        (local_agents.scout_challenge, True),
        (local_agents.researcher, False),
    ]
    for function, verifier in calls:
        reply = asyncio.run(
            call_worker(
                function, {"input": graph_input, "engine": engine}, context, verifier=verifier
            )
        )
        assert reply == ("refusal", "policy_denied", MESSAGE), reply
    assert "\n" not in MESSAGE


@pytest.mark.slow  # a real run through a detached controller
def test_a_run_submitted_past_the_cli_fails_with_the_one_line_reason(tmp_path: Path) -> None:
    """The template submitted directly (no CLI check): the scouts refuse, the run fails
    with the reason as its cause, and no experiment ran."""
    from zeroshot_kernel.ledger.failure import explain_failure
    from zeroshot_kernel.templates import TemplateOptions, expand_template

    (tmp_path / ".zeroshot").mkdir()
    shutil.copytree(TASK, tmp_path / "quadrature")
    client = Client(workspace=str(tmp_path))
    expansion = expand_template("auto-research", TemplateOptions(task="quadrature", iterations=1))
    run = client.submit(
        expansion.graph,
        input=expansion.input,
        runtime=expansion.runtime,
        title="auto-research: quadrature",
    )
    terminal = run.wait(120)
    assert terminal.status == "failed"
    cause = explain_failure(event for _, event in run.events())
    assert cause is not None and MESSAGE in "\n".join(cause.lines())
    assert not ResearchRecords(tmp_path, "quadrature").initialised()
