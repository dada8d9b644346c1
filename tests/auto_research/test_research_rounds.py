"""Ten real rounds on the bundled numeric tasks with the embedded agents (scouts,
researcher, reviewer) and the trusted steps (measure, adoption), checking the research
discipline and that the records agree with the results, the evidence and the measurements.
svc-digits' ten rounds (a minute and more of training) run once, through the engine, in
test_auto_research_rounds."""

from __future__ import annotations

from pathlib import Path

import pytest
from research_driver import BUNDLED, STUDY, TEMPLATES, drive

from zeroshot_kernel.auto_research import ResearchRecords, load_task, verify_candidate
from zeroshot_kernel.auto_research import template as auto_research
from zeroshot_kernel.auto_research.payloads import payload_types
from zeroshot_kernel.contract.payload import RecordType, check_value

# slow: ten real research rounds per bundled task
pytestmark = pytest.mark.slow

ROUNDS = 10


@pytest.mark.parametrize("name", [n for n in BUNDLED if n != "svc-digits"])
def test_ten_rounds_on_a_bundled_task(tmp_path: Path, name: str) -> None:
    task = load_task(TEMPLATES / name)
    run = drive(task.root, tmp_path, ROUNDS, seed=11)
    assert [r.round for r in run.results] == list(range(1, ROUNDS + 1))
    records = ResearchRecords(tmp_path, STUDY)
    state = records.snapshot()
    baseline = state.rounds[0].result
    assert baseline is not None and baseline.metric is not None

    types = payload_types()
    declared = {
        name: RecordType.from_wire(getattr(auto_research, name))
        for name in ("PROPOSAL", "CHANGE", "EVIDENCE", "RESULT", "REVIEW")
    }
    incumbent, incumbent_metric = "c000", baseline.metric
    for result, verdict in zip(run.results, run.verdicts, strict=True):
        assert verdict.verdict == "accepted", verdict.reason
        record = state.rounds[result.round]
        final = record.passes[-1]
        assert final.change is not None and final.evidence is not None
        # every payload is JSON-ready and fits its declared contract type
        assert check_value(result.to_wire(), types["ResearchResult"]) == []
        assert check_value(verdict.to_wire(), types["ReviewVerdict"]) == []
        for proposal in record.passes[0].proposals:
            assert check_value(proposal.to_wire(), types["ScoutProposal"]) == []
            assert check_value(proposal.to_wire(), declared["PROPOSAL"]) == []
        # ... and what the auto-research template declares for its nodes
        assert check_value(result.to_wire(), declared["RESULT"]) == []
        assert check_value(final.change.to_wire(), declared["CHANGE"]) == []
        assert check_value(final.evidence.to_wire(), declared["EVIDENCE"]) == []
        review = {k: v for k, v in verdict.to_wire().items() if k != "verdict"}
        assert check_value(review, declared["REVIEW"]) == []
        # the result is compared against the incumbent the previous rounds left
        assert result.incumbent_id == incumbent
        assert result.bytes_verified and result.parent_id in state.candidates
        assert result.parent_id == final.change.parent_id
        if result.disposition == "adopt":
            assert result.metric is not None and result.incumbent_metric is not None
            assert task.spec.gain(result.incumbent_metric, result.metric) > 0
            assert result.gain > result.noise_floor and final.evidence.supports_adoption
            incumbent, incumbent_metric = result.candidate_id, result.metric
        else:
            # every non-adoption is recorded with its reason
            assert result.disposition == "reject" and result.justification.strip()
        # the records agree with the returned result, and its numbers are the measurements'
        assert record.result == result and all(p.status == "done" for p in record.passes)
        manifest = state.candidates[result.candidate_id]
        assert manifest.content_sha256 == result.candidate_sha256
        by_seed = {m.experiment.seed: m.experiment.metric for m in manifest.measurements}
        assert [by_seed[s] for s in final.evidence.seeds] == result.metric_repeats
        assert result.justification in records.summary_path.read_text()

    assert state.incumbent is not None and state.incumbent.candidate_id == incumbent
    # the incumbent never got worse than the baseline
    assert task.spec.gain(baseline.metric, incumbent_metric) >= 0
    for candidate_id in state.candidates:
        assert verify_candidate(records, candidate_id).ok
    assert records.charter_path.read_text().startswith(f"# Charter: {task.spec.name}")
    assert f"Incumbent: {incumbent}" in records.summary_path.read_text()
    assert records.backlog_path.read_text().startswith("# Backlog")
