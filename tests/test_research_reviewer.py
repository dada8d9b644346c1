"""The reviewer's discipline on a task with known noise (x plus Gaussian noise, sigma 0.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from research_driver import STUDY, line_task, propose

from zeroshot_kernel.research import IncumbentRecord, ResearchRecords, ResearchResult
from zeroshot_kernel.research.agents import researcher, reviewer
from zeroshot_kernel.research.protocol import ResearcherInput, ReviewerInput, ReviewVerdict


class Lab:
    """One line task and workspace, with the researcher and reviewer at hand."""

    def __init__(self, root: Path, target: float | None = None) -> None:
        self.task = line_task(root / "task", target=target)
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.records = ResearchRecords(self.workspace, STUDY)

    def research(self, number: int, x: float, corrections: str = "") -> ResearchResult:
        return researcher(ResearcherInput(study=STUDY,
                                          task=str(self.task), workspace=str(self.workspace),
                                          round=number, proposals=[propose({"x": x})],
                                          corrections=corrections))

    def review(self, result: ResearchResult) -> ReviewVerdict:
        return reviewer(ReviewerInput(study=STUDY,
                                      task=str(self.task), workspace=str(self.workspace),
                                      result=result))

    def rewrite(self, result: ResearchResult, **changes: object) -> ResearchResult:
        """Change a recorded result as a careless researcher might (records included)."""
        changed = result.model_copy(update=changes)
        record = self.records.read_round(result.round)
        assert record is not None
        self.records.finish_pass(result.round, record.passes[-1].model_copy(
            update={"result": changed}))
        if changed.disposition != result.disposition:
            named = changed.candidate_id if changed.disposition == "adopt" else \
                changed.incumbent_id
            manifest = self.records.read_manifest(named)
            assert manifest is not None
            self.records.write_incumbent(IncumbentRecord(
                candidate_id=named, adopted_round=manifest.round, metric=manifest.metric,
                content_sha256=manifest.content_sha256))
        return changed


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


def test_adoption_within_the_noise_floor_is_sent_back(lab: Lab) -> None:
    result = lab.research(1, 0.8)
    assert result.disposition == "reject" and 0 < result.gain <= result.noise_floor
    eager = lab.rewrite(result, disposition="adopt", justification="it looks better")
    verdict = lab.review(eager)
    assert verdict.verdict == "corrections"
    assert "within the noise floor" in verdict.reason
    assert "discriminating measurement" in verdict.corrections

    corrected = lab.research(1, 0.8, corrections=verdict.corrections)
    assert len(corrected.metric_repeats) == 6, "the candidate was measured again"
    incumbent = lab.records.read_manifest("c000")
    assert incumbent is not None and len(incumbent.values) == 6, "and so was the incumbent"
    assert corrected.disposition == ("adopt" if corrected.gain > corrected.noise_floor
                                     else "reject")
    final = lab.review(corrected)
    assert final.verdict == "accepted", final.reason
    current = lab.records.read_incumbent()
    assert current is not None
    assert current.candidate_id == ("c001" if corrected.disposition == "adopt" else "c000")


def test_a_real_gain_is_adopted_and_accepted(lab: Lab) -> None:
    result = lab.research(1, 0.2)
    assert result.disposition == "adopt" and result.gain > result.noise_floor
    verdict = lab.review(result)
    assert verdict.verdict == "accepted"
    assert verdict.title.startswith("Round 1: adopt c001")
    assert result.evidence in verdict.description


def test_rejecting_a_real_improvement_is_sent_back(lab: Lab) -> None:
    result = lab.research(1, 0.2)
    timid = lab.rewrite(result, disposition="reject", justification="not sure")
    verdict = lab.review(timid)
    assert verdict.verdict == "corrections" and "beats the incumbent" in verdict.reason


def test_a_clearly_worse_candidate_may_be_rejected_after_one_run(lab: Lab) -> None:
    result = lab.research(1, 1.45)
    assert result.disposition == "reject" and len(result.metric_repeats) == 1
    assert "stopped after one run" in result.evidence
    assert lab.review(result).verdict == "accepted"


def test_a_result_that_disagrees_with_the_records_is_sent_back(lab: Lab) -> None:
    result = lab.research(1, 0.2)
    claimed = result.model_copy(update={"metric": 0.0})
    verdict = lab.review(claimed)
    assert verdict.verdict == "corrections"
    assert "differs from rounds/001.json" in verdict.corrections
    lab.records.round_path(1).unlink()
    verdict = lab.review(result)
    assert verdict.verdict == "corrections" and "no finished pass" in verdict.corrections


def test_arithmetic_the_measurements_do_not_support_is_sent_back(lab: Lab) -> None:
    result = lab.research(1, 0.2)
    inflated = lab.rewrite(result, gain=result.gain * 2)
    verdict = lab.review(inflated)
    assert verdict.verdict == "corrections" and "gain is" in verdict.corrections


def test_a_justified_stop_is_approved_and_an_unjustified_one_is_not(tmp_path: Path) -> None:
    lab = Lab(tmp_path, target=1.5)  # the starting candidate already meets the target
    result = lab.research(1, 0.5)
    assert result.disposition == "stop" and result.candidate_id == "c000"
    assert "meets the charter's target" in result.justification
    verdict = lab.review(result)
    assert verdict.verdict == "stop_approved" and verdict.title == "Round 1: stop approved"
    bare = lab.rewrite(result, justification=" ")
    verdict = lab.review(bare)
    assert verdict.verdict == "corrections" and "justify the early stop" in verdict.corrections
