"""The records: every candidate restores byte for byte, re-running it reproduces its metric,
tampered bytes are caught (never adopted, repaired when they can be), rows come before
restores, and a pass measured once is never measured again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from research_driver import STUDY, TEMPLATES, Run, change, decide, drive, measure_pass

from zeroshot_kernel.auto_research import (
    ResearchRecords,
    content_sha256,
    load_task,
    restore_candidate,
    run_experiment,
    tree_hashes,
    verify_candidate,
)
from zeroshot_kernel.auto_research.agents import researcher, scout
from zeroshot_kernel.auto_research.noise_floor import compare
from zeroshot_kernel.auto_research.protocol import (
    STRATEGIES,
    Evidence,
    ResearcherInput,
    ScoutInput,
)
from zeroshot_kernel.auto_research.seeds import derive_seed

# slow: five real research rounds for the module
pytestmark = pytest.mark.slow


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


def _next_round(task_root: Path, workspace: Path, number: int) -> Evidence:
    """The embedded researcher's change for round ``number``, measured."""
    proposals = [
        scout(
            ScoutInput(
                study=STUDY,
                task=str(task_root),
                workspace=str(workspace),
                round=number,
                strategy=s,
                seed=5,
            )
        )
        for s in STRATEGIES
    ]
    proposed = researcher(
        ResearcherInput(
            study=STUDY,
            task=str(task_root),
            workspace=str(workspace),
            round=number,
            proposals=proposals,
            seed=5,
        )
    )
    return measure_pass(task_root, workspace, number, proposed)


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

    floor = compare(
        task.spec, state.candidates, incumbent.candidate_id, incumbent.candidate_id
    ).noise_floor
    assert incumbent.metric is not None and floor > 0
    # the recorded seeds reproduce every recorded value exactly
    again = [
        run_experiment(task, fresh, seed=m.experiment.seed).metric for m in incumbent.measurements
    ]
    assert again == incumbent.values
    # fresh seeds reproduce the metric within the noise floor
    fresh_values = [
        run_experiment(task, fresh, seed=derive_seed("re-run", i)).metric
        for i in range(len(incumbent.values))
    ]
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


def test_tampered_bytes_are_never_adopted(research: tuple[Path, Path, Run]) -> None:
    """Bytes changed after their measurement: trusted adoption refuses them, whatever the
    reviewer says, and the next measurement of that candidate rebuilds them first."""
    task_root, workspace, _ = research
    records = ResearchRecords(workspace, STUDY)
    incumbent = records.read_incumbent()
    assert incumbent is not None
    evidence = measure_pass(
        task_root, workspace, 6, change({"x1": 3.1416, "x2": 2.275}, parent=incumbent.candidate_id)
    )
    assert evidence.status == "measured" and evidence.candidate_id == "c006"
    assert evidence.supports_adoption  # the optimum: a real gain over any incumbent
    target = records.source_dir("c006") / "objective.py"
    target.write_text(target.read_text() + "# tampered\n")

    result = decide(task_root, workspace, evidence, "accepted", adopt_it=True)
    assert result.disposition == "reject"
    assert "no longer match their content hash (changed objective.py)" in result.justification
    current = records.read_incumbent()
    assert current is not None and current.candidate_id == incumbent.candidate_id

    again = measure_pass(task_root, workspace, 7, change({}, parent="c006"))
    assert "stored bytes of c006 do not match its manifest" in again.summary
    assert "rebuilt c006 from the task and its params; verified" in again.summary
    assert verify_candidate(records, "c006").ok and again.candidate_id == "c006"


def test_damaged_parent_is_reported_and_rebuilt(research: tuple[Path, Path, Run]) -> None:
    task_root, workspace, _ = research
    records = ResearchRecords(workspace, STUDY)
    incumbent = records.read_incumbent()
    assert incumbent is not None
    (records.source_dir(incumbent.candidate_id) / "params.json").write_text("{}\n")
    evidence = _next_round(task_root, workspace, 6)
    assert evidence.parent_id == incumbent.candidate_id and evidence.status == "measured"
    assert f"stored bytes of {incumbent.candidate_id} do not match" in evidence.summary
    assert verify_candidate(records, incumbent.candidate_id).ok


def test_unrepairable_bytes_are_a_recorded_result(research: tuple[Path, Path, Run]) -> None:
    task_root, workspace, _ = research
    records = ResearchRecords(workspace, STUDY)
    incumbent = records.read_incumbent()
    assert incumbent is not None
    for source in (records.source_dir(incumbent.candidate_id), task_root / "candidate"):
        (source / "objective.py").write_text("print('something else')\n")
    evidence = _next_round(task_root, workspace, 6)
    assert evidence.status == "parent_unverified" and evidence.experiment_status == "not_run"
    assert any(f"cannot restore {incumbent.candidate_id}" in r for r in evidence.reasons)
    assert not evidence.supports_adoption and evidence.candidate_id == ""
    result = decide(task_root, workspace, evidence, "accepted", adopt_it=True)
    assert result.disposition == "reject" and not result.bytes_verified
    assert "parent unverified" in result.justification
    record = records.read_round(6)
    assert record is not None and record.result == result


def test_the_row_is_recorded_before_any_restore(
    research: tuple[Path, Path, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    task_root, workspace, _ = research

    def broken(*_: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("zeroshot_kernel.auto_research.measure.verify_candidate", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        _next_round(task_root, workspace, 6)
    record = ResearchRecords(workspace, STUDY).read_round(6)
    assert record is not None and record.passes[-1].status == "started"
    assert record.passes[-1].change is not None and record.result is None


def test_a_retried_pass_returns_its_evidence_and_a_new_pass_reruns_nothing(
    research: tuple[Path, Path, Run],
) -> None:
    task_root, workspace, _ = research
    records = ResearchRecords(workspace, STUDY)
    first = _next_round(task_root, workspace, 6)
    runs = {c: len(m.measurements) for c, m in records.candidates().items()}
    record = records.read_round(6)
    assert record is not None and record.passes[0].change is not None
    proposed = record.passes[0].change
    # The same pass again (its execution was lost after it finished): the same evidence.
    assert measure_pass(task_root, workspace, 6, proposed) == first
    # A second pass of the same change: the same candidate, no experiment run again.
    second = measure_pass(task_root, workspace, 6, proposed, pass_number=2)
    assert second.candidate_id == first.candidate_id and second.seeds == first.seeds
    assert second.metric_repeats == first.metric_repeats
    assert {c: len(m.measurements) for c, m in records.candidates().items()} == runs
    record = records.read_round(6)
    assert record is not None and [p.status for p in record.passes] == ["done", "done"]
    assert record.passes[1].measurements == []


def test_rounds_recorded_before_the_trusted_measure_step_are_kept_and_skipped(
    research: tuple[Path, Path, Run],
) -> None:
    """A study continued from records of the earlier layout (the researcher's own rows):
    its incumbent and candidates carry on; the old round files are left as they are."""
    task_root, workspace, _ = research
    records = ResearchRecords(workspace, STUDY)
    old = {
        "round": 1,
        "passes": [
            {
                "status": "done",
                "corrections": "",
                "proposals": [],
                "proposal": None,
                "parentId": "c000",
                "candidateId": "c001",
                "incumbentBefore": "c000",
                "plan": None,
            }
        ],
    }
    text = json.dumps(old)
    records.round_path(1).write_text(text)
    evidence = _next_round(task_root, workspace, 6)
    assert evidence.status == "measured"
    assert 1 not in records.snapshot().rounds and 6 in records.snapshot().rounds
    assert records.round_path(1).read_text() == text
