"""The review discipline and trusted adoption on a task with known noise (x plus Gaussian
noise, sigma 0.1, drawn per seed and x so that it does not cancel on paired seeds): the
embedded reviewer asks for a discriminating measurement when a gain is still within the
noise after the measure step's race, adopts only real gains and approves a stop only at the
target; trusted adoption lets a reviewer refuse a real gain but never adopt noise."""

from __future__ import annotations

from pathlib import Path

import pytest
from research_driver import STUDY, change, decide, line_task, measure_pass, propose

from zeroshot_kernel.auto_research import ResearchRecords
from zeroshot_kernel.auto_research.agents import researcher, reviewer
from zeroshot_kernel.auto_research.protocol import (
    Change,
    Evidence,
    ResearcherInput,
    ReviewerInput,
    ReviewVerdict,
)


class Lab:
    """One line task and workspace, with the agents and the trusted steps at hand."""

    def __init__(self, root: Path, target: float | None = None) -> None:
        self.task = line_task(root / "task", target=target, env={"NOISE": "independent"})
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.records = ResearchRecords(self.workspace, STUDY)

    def propose(self, number: int, x: float, corrections: str = "") -> Change:
        return researcher(
            ResearcherInput(
                study=STUDY,
                task=str(self.task),
                workspace=str(self.workspace),
                round=number,
                proposals=[propose({"x": x})],
                corrections=corrections,
            )
        )

    def measure(self, number: int, proposed: Change, pass_number: int = 1) -> Evidence:
        return measure_pass(self.task, self.workspace, number, proposed, pass_number=pass_number)

    def review(self, proposed: Change, evidence: Evidence) -> ReviewVerdict:
        return reviewer(
            ReviewerInput(
                study=STUDY,
                task=str(self.task),
                workspace=str(self.workspace),
                change=proposed,
                evidence=evidence,
            )
        )

    def incumbent(self) -> str:
        current = self.records.read_incumbent()
        assert current is not None
        return current.candidate_id


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


@pytest.mark.slow  # many real measurements
def test_a_gain_within_the_noise_gets_a_discriminating_measurement(lab: Lab) -> None:
    # x = 0.93 is truly 0.07 better, against a sigma of 0.14 for a paired difference: on
    # these seeds the race adds seeds up to its budget (three times the repeats) and ends
    # with a positive gain still within the noise floor.
    first_change = lab.propose(1, 0.93)
    first = lab.measure(1, first_change)
    assert 0 < first.gain <= first.noise_floor and not first.supports_adoption
    assert first.gate_decision == "budget_spent" and len(first.seeds) == first.max_seeds == 9
    assert "undecided: the race spent its budget of 9 seeds" in first.summary
    verdict = lab.review(first_change, first)
    assert verdict.verdict == "corrections" and not verdict.adopt
    assert "within the noise floor" in verdict.reason
    assert "discriminating measurement" in verdict.corrections

    again = lab.propose(1, 0.93, corrections=verdict.corrections)
    assert again.measurement == "discriminating" and again.params == first_change.params
    second = lab.measure(1, again, pass_number=2)
    assert second.candidate_id == first.candidate_id == "c001"
    assert second.max_seeds == 18 and len(second.seeds) in (12, 18)  # its looks after the 9
    assert second.seeds[: len(first.seeds)] == first.seeds
    for candidate in ("c001", "c000"):  # both measured on the same seeds
        manifest = lab.records.read_manifest(candidate)
        assert manifest is not None
        assert sorted(m.experiment.seed for m in manifest.measurements) == sorted(second.seeds)
    final = lab.review(again, second)
    assert final.verdict == "accepted" and final.adopt == second.supports_adoption
    if not final.adopt:  # plain words for the user, not the rule's name
        assert final.reason.startswith("kept the incumbent: the gain is within the noise: ")
    result = decide(lab.task, lab.workspace, second, final.verdict, final.adopt)
    assert result.disposition == ("adopt" if second.supports_adoption else "reject")
    assert lab.incumbent() == ("c001" if second.supports_adoption else "c000")
    assert result.gate_decision == second.gate_decision and result.max_seeds == 18


def test_a_real_gain_is_adopted(lab: Lab) -> None:
    proposed = lab.propose(1, 0.2)
    evidence = lab.measure(1, proposed)
    assert evidence.supports_adoption and evidence.gain > evidence.noise_floor
    assert evidence.effect_size is not None and evidence.effect_size > 0
    verdict = lab.review(proposed, evidence)
    assert verdict.verdict == "accepted" and verdict.adopt
    assert verdict.title.startswith("Round 1: adopt c001")
    assert evidence.summary in verdict.description
    result = decide(lab.task, lab.workspace, evidence, verdict.verdict, verdict.adopt)
    assert result.disposition == "adopt" and lab.incumbent() == "c001"
    assert (result.metric, result.gain, result.noise_floor) == (
        evidence.metric,
        evidence.gain,
        evidence.noise_floor,
    )


@pytest.mark.slow  # many real measurements
def test_a_reviewer_may_refuse_a_real_gain_but_cannot_adopt_noise(lab: Lab) -> None:
    real = lab.measure(1, change({"x": 0.2}))
    assert real.supports_adoption
    refused = decide(lab.task, lab.workspace, real, "accepted", adopt_it=False)
    assert refused.disposition == "reject" and "the reviewer declined c001" in refused.justification
    assert lab.incumbent() == "c000"

    noise = lab.measure(2, change({"x": 0.9}))
    assert not noise.supports_adoption
    eager = decide(lab.task, lab.workspace, noise, "accepted", adopt_it=True)
    assert eager.disposition == "reject"
    assert (
        "the reviewer asked to adopt, but the evidence does not support it" in eager.justification
    )
    assert lab.incumbent() == "c000"


def test_a_clearly_worse_candidate_is_rejected_after_one_run(lab: Lab) -> None:
    decide(lab.task, lab.workspace, lab.measure(1, change({"x": 0.9})), "accepted", False)
    proposed = lab.propose(2, 1.45)
    evidence = lab.measure(2, proposed)
    assert len(evidence.seeds) == 1 and evidence.gain < 0
    assert "stopped after one run" in evidence.summary
    verdict = lab.review(proposed, evidence)
    assert verdict.verdict == "accepted" and not verdict.adopt
    assert verdict.reason.startswith("kept the incumbent: the change is worse: ")


def test_a_stop_is_approved_only_at_the_target(tmp_path: Path) -> None:
    lab = Lab(tmp_path, target=1.5)  # the starting candidate already meets the target
    first = lab.measure(1, change({"x": 1.3}))  # (the first pass measures the baseline)
    decide(lab.task, lab.workspace, first, "accepted", adopt_it=False)
    proposed = lab.propose(2, 0.5)
    assert proposed.parent_id == "c000" and proposed.params == {}  # confirm, do not change
    assert proposed.measurement == "discriminating"
    evidence = lab.measure(2, proposed)
    assert evidence.candidate_id == evidence.incumbent_id == "c000" and evidence.target_met
    assert len(evidence.seeds) == 6
    verdict = lab.review(proposed, evidence)
    assert verdict.verdict == "stop_approved" and verdict.title == "Round 2: stop approved"
    assert "meets the charter's target" in verdict.reason
    result = decide(lab.task, lab.workspace, evidence, verdict.verdict, verdict.adopt)
    assert result.disposition == "stop" and "meets the charter's target" in result.justification

    elsewhere = Lab(tmp_path / "other")  # no target: a re-measurement is only that
    again = elsewhere.measure(1, change({}))
    assert elsewhere.review(change({}), again).verdict == "accepted"
