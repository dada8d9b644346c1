"""The records: every candidate restores byte for byte, re-running it reproduces its metric,
tampered bytes are caught (and repaired when they can be), rows come before restores."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from research_driver import STUDY, TEMPLATES, Run, drive

from zeroshot_kernel.research import (
    ResearchRecords,
    content_sha256,
    load_task,
    restore_candidate,
    run_experiment,
    tree_hashes,
    verify_candidate,
)
from zeroshot_kernel.research.agents import researcher, reviewer, scout
from zeroshot_kernel.research.agents.seeding import derive_seed
from zeroshot_kernel.research.evidence import compare
from zeroshot_kernel.research.protocol import (
    STRATEGIES,
    ResearcherInput,
    ResearchResult,
    ReviewerInput,
    ScoutInput,
)


@pytest.fixture(scope="module")
def researched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """Five real rounds of the Branin task, run once for the module."""
    root = tmp_path_factory.mktemp("branin")
    shutil.copytree(TEMPLATES / "branin", root / "branin")
    (root / "ws").mkdir()
    return root, drive(root / "branin", root / "ws", 5, seed=5)


@pytest.fixture
def research(researched: tuple[Path, Run], tmp_path: Path) -> tuple[Path, Path, Run]:
    """A private copy of the task and its workspace after those five rounds."""
    root, run = researched
    shutil.copytree(root, tmp_path / "copy")
    return tmp_path / "copy" / "branin", tmp_path / "copy" / "ws", run


def _next_round(
    task_root: Path, workspace: Path, number: int, corrections: str = ""
) -> ResearchResult:
    proposals = [scout(ScoutInput(study=STUDY,
                                  task=str(task_root), workspace=str(workspace), round=number,
                                  strategy=s, seed=5)) for s in STRATEGIES]
    return researcher(ResearcherInput(study=STUDY, task=str(task_root), workspace=str(workspace),
                                      round=number, proposals=proposals,
                                      corrections=corrections, seed=5))


def test_restored_incumbent_reproduces_its_metric(
    research: tuple[Path, Path, Run], tmp_path: Path
) -> None:
    task_root, workspace, _ = research
    task = load_task(task_root)
    records = ResearchRecords(workspace, STUDY)
    state = records.snapshot()
    assert state.incumbent is not None
    incumbent = state.candidates[state.incumbent.candidate_id]

    fresh = tmp_path / "fresh"
    check = restore_candidate(records, incumbent.candidate_id, fresh)
    assert check.ok, check.problems
    assert tree_hashes(fresh) == incumbent.files
    assert content_sha256(tree_hashes(fresh)) == incumbent.content_sha256

    floor = compare(task.spec, state.candidates, incumbent.candidate_id,
                    incumbent.candidate_id).noise_floor
    assert incumbent.metric is not None and floor > 0
    # the recorded seeds reproduce every recorded value exactly
    again = [run_experiment(task, fresh, seed=m.experiment.seed).metric
             for m in incumbent.measurements]
    assert again == incumbent.values
    # fresh seeds reproduce the metric within the noise floor
    fresh_values = [run_experiment(task, fresh, seed=derive_seed("re-run", i)).metric
                    for i in range(len(incumbent.values))]
    assert all(v is not None for v in fresh_values)
    mean = sum(v for v in fresh_values if v is not None) / len(fresh_values)
    assert abs(mean - incumbent.metric) <= floor


def test_every_candidate_restores_and_verifies(
    research: tuple[Path, Path, Run], tmp_path: Path
) -> None:
    _, workspace, run = research
    records = ResearchRecords(workspace, STUDY)
    for index, candidate_id in enumerate(records.snapshot().candidates):
        assert restore_candidate(records, candidate_id, tmp_path / str(index)).ok
    with pytest.raises(FileExistsError):
        restore_candidate(records, "c000", tmp_path / "0")
    assert {r.candidate_id for r in run.results} <= set(records.snapshot().candidates)


def test_tampered_candidate_is_sent_back_then_repaired(research: tuple[Path, Path, Run]) -> None:
    task_root, workspace, run = research
    records = ResearchRecords(workspace, STUDY)
    result = run.results[-1]
    target = records.source_dir(result.candidate_id) / "objective.py"
    target.write_text(target.read_text() + "# tampered\n")
    assert not verify_candidate(records, result.candidate_id).ok

    verdict = reviewer(ReviewerInput(study=STUDY, task=str(task_root), workspace=str(workspace),
                                     result=result))
    assert verdict.verdict == "corrections"
    assert "do not match its manifest" in verdict.corrections
    assert "changed objective.py" in verdict.corrections

    corrected = _next_round(task_root, workspace, result.round, verdict.corrections)
    assert corrected.round == result.round and corrected.bytes_verified
    assert "addressing corrections" in corrected.evidence
    assert f"rebuilt {result.candidate_id}" in corrected.evidence
    assert verify_candidate(records, result.candidate_id).ok
    record = records.read_round(result.round)
    assert record is not None and len(record.passes) == 2 and record.result == corrected
    again = reviewer(ReviewerInput(study=STUDY, task=str(task_root), workspace=str(workspace),
                                   result=corrected))
    assert again.verdict == "accepted", again.reason


def test_damaged_parent_is_reported_and_rebuilt(research: tuple[Path, Path, Run]) -> None:
    task_root, workspace, _ = research
    records = ResearchRecords(workspace, STUDY)
    incumbent = records.read_incumbent()
    assert incumbent is not None
    (records.source_dir(incumbent.candidate_id) / "params.json").write_text("{}\n")
    result = _next_round(task_root, workspace, 6)
    assert result.parent_id == incumbent.candidate_id and result.bytes_verified
    assert f"stored bytes of {incumbent.candidate_id} do not match" in result.evidence
    assert verify_candidate(records, incumbent.candidate_id).ok


def test_unrepairable_bytes_are_reported_and_rejected(research: tuple[Path, Path, Run]) -> None:
    task_root, workspace, _ = research
    records = ResearchRecords(workspace, STUDY)
    incumbent = records.read_incumbent()
    assert incumbent is not None
    for source in (records.source_dir(incumbent.candidate_id), task_root / "candidate"):
        (source / "objective.py").write_text("print('something else')\n")
    result = _next_round(task_root, workspace, 6)
    assert not result.bytes_verified and result.disposition == "reject"
    assert f"cannot restore {incumbent.candidate_id}" in result.evidence
    verdict = reviewer(ReviewerInput(study=STUDY, task=str(task_root), workspace=str(workspace),
                                     result=result))
    assert verdict.verdict == "corrections" and "not verified" in verdict.corrections


def test_the_row_is_recorded_before_any_restore(
    research: tuple[Path, Path, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    task_root, workspace, _ = research

    def broken(*_: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("zeroshot_kernel.research.agents.researcher_agent.verify_candidate", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        _next_round(task_root, workspace, 6)
    record = ResearchRecords(workspace, STUDY).read_round(6)
    assert record is not None and record.passes[-1].status == "started"
    assert record.passes[-1].proposal is not None and record.result is None


def test_a_retried_round_starts_a_new_pass_against_the_same_incumbent(
    research: tuple[Path, Path, Run],
) -> None:
    task_root, workspace, run = research
    last = run.results[-1]
    first = ResearchRecords(workspace, STUDY).read_round(last.round)
    assert first is not None
    again = researcher(ResearcherInput(study=STUDY, task=str(task_root), workspace=str(workspace),
                                       round=last.round, proposals=first.passes[0].proposals,
                                       reconsideration_due=last.reconsidered, seed=5))
    assert again.incumbent_id == last.incumbent_id
    assert again.candidate_id == last.candidate_id and again.params == last.params
    record = ResearchRecords(workspace, STUDY).read_round(last.round)
    assert record is not None and len(record.passes) == 2 and record.result == again
