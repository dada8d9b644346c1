"""Real rounds of auto-research on each bundled task, through the real engine: the
ledger, the records on disk and the views agree, the incumbent only ever improves, every
non-adoption says why, and the incumbent restored from the records reproduces its metric."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from auto_research_support import BUNDLED, Research, copy_task, new_workspace, reproduce, start

from zeroshot_kernel.auto_research import load_task, restore_candidate
from zeroshot_kernel.auto_research.views import ResearchView
from zeroshot_kernel.ledger.events import SucceededResult

# slow: real research rounds on every bundled task
pytestmark = pytest.mark.slow

ROUNDS = {"rosenbrock": 10, "branin": 10, "svc-digits": 4}
"""Ten rounds where an experiment is a formula; four where each trains a classifier."""


def test_rounds_on_each_bundled_task(tmp_path: Path, task_name: str) -> None:
    workspace = new_workspace(tmp_path)
    rounds = ROUNDS[task_name]
    # Two repeats (the least a noise floor needs) keep the three runs quick side by side.
    task = copy_task(workspace, task_name, repeats=2)
    research = start(workspace, task, rounds)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()

    assert [r.round for r in view.rounds] == list(range(1, rounds + 1))
    assert terminal.output["round"] == rounds
    assert terminal.output["candidateId"] == view.rounds[-1].candidate_id
    assert_ledger_matches_view(research, view)
    assert_records_match_view(research, view)
    assert_incumbent_only_improves(research, view)
    for round_view in view.rounds:
        if not round_view.adopted:
            assert round_view.reason.strip() and round_view.justification.strip(), round_view
    assert_incumbent_reproduces(research, view, tmp_path / "restored")


@pytest.fixture(params=BUNDLED)
def task_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def assert_ledger_matches_view(research: Research, view: ResearchView) -> None:
    """Each round of the view is the ledger's trusted adoption result of that round and
    its closing verdict."""
    results = {r["round"]: r for r in research.results()}
    closing = [v for v in research.verdicts() if v.signals["verdict"] != "corrections"]
    assert len(closing) == len(view.rounds)
    for round_view, verdict in zip(view.rounds, closing, strict=True):
        result = results[round_view.round]
        assert round_view.candidate_id == result["candidateId"]
        assert round_view.disposition == result["disposition"]
        assert round_view.metric == result.get("metric")
        assert round_view.verdict == verdict.signals["verdict"]
        assert round_view.reason == verdict.diagnostic["reason"]


def assert_records_match_view(research: Research, view: ResearchView) -> None:
    state = research.records.snapshot()
    assert sorted(state.rounds) == list(range(len(view.rounds) + 1))  # round 0: the baseline
    for round_view in view.rounds:
        record = state.rounds[round_view.round]
        assert [p.status for p in record.passes] == ["done"] * round_view.passes
        result = record.result
        assert result is not None
        assert (result.round, result.candidate_id, result.disposition) == (
            round_view.round,
            round_view.candidate_id,
            round_view.disposition,
        )
        assert result.metric == round_view.metric
        manifest = state.candidates[result.candidate_id]
        assert manifest.content_sha256 == result.candidate_sha256
        # The round's numbers are the recorded runs of its paired seeds, and only those.
        evidence = record.passes[-1].evidence
        assert evidence is not None and evidence.candidate_id == result.candidate_id
        by_seed = {m.experiment.seed: m.experiment.metric for m in manifest.measurements}
        assert [by_seed[s] for s in evidence.seeds] == result.metric_repeats
        if round_view.metric is not None:
            assert math.isclose(
                sum(result.metric_repeats) / len(result.metric_repeats), round_view.metric
            )
    assert view.incumbent is not None and state.incumbent is not None
    assert state.incumbent.candidate_id == view.incumbent.candidate_id


def assert_incumbent_only_improves(research: Research, view: ResearchView) -> None:
    """Every adoption beats the incumbent it replaces by more than the noise floor; every
    other round keeps the incumbent."""
    spec = load_task(research.workspace / research.task).spec
    incumbent = "c000"
    for round_view in view.rounds:
        assert round_view.incumbent_id == incumbent, round_view
        if round_view.adopted:
            assert round_view.metric is not None and round_view.incumbent_metric is not None
            assert spec.gain(round_view.incumbent_metric, round_view.metric) > 0
            assert round_view.gain > round_view.noise_floor
            incumbent = round_view.candidate_id
    assert view.incumbent is not None and view.incumbent.candidate_id == incumbent


def assert_incumbent_reproduces(research: Research, view: ResearchView, fresh: Path) -> None:
    """The incumbent's bytes restored from the records into a fresh directory give its
    recorded measurements again, seed for seed, so its mean within the noise floor."""
    assert view.incumbent is not None
    records = research.records
    manifest = records.read_manifest(view.incumbent.candidate_id)
    assert manifest is not None and manifest.measurements
    check = restore_candidate(records, manifest.candidate_id, fresh)
    assert check.ok, check.problems
    recorded = [m.experiment for m in manifest.measurements if m.experiment.metric is not None]
    with ThreadPoolExecutor(max_workers=2) as pool:
        again = list(
            pool.map(
                lambda m: reproduce(research.workspace, research.task, fresh, m.seed), recorded
            )
        )
    assert again == pytest.approx([m.metric for m in recorded], rel=1e-9, abs=1e-12)
    mean = sum(v for v in again if v is not None) / len(again)
    floor = max(r.noise_floor for r in view.rounds)
    assert manifest.metric is not None and abs(mean - manifest.metric) <= floor
