"""When reconsideration is due, and what the researcher does about it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from research_driver import STUDY, decide, line_task, measure_pass, propose

from zeroshot_kernel.auto_research import ResearchRecords, reconsideration_due
from zeroshot_kernel.auto_research.agents import researcher
from zeroshot_kernel.auto_research.protocol import ResearcherInput


def r(
    disposition: str = "reject",
    approach: str = "exploration:tpe",
    gain: float = 0.0,
    reconsidered: bool = False,
) -> dict[str, Any]:
    return {
        "disposition": disposition,
        "approach": approach,
        "gain": gain,
        "reconsidered": reconsidered,
    }


A, B = "exploration:tpe", "synthesis:blend"


@pytest.mark.parametrize(
    ("rounds", "iterations", "due"),
    [
        ([], 10, False),
        ([r("adopt", A, 1.0)], 10, False),
        ([r("adopt", A, 1.0), r("reject", B)], 10, False),
        ([r("adopt", A, 1.0), r("reject", B), r("reject", A)], 10, True),  # two non-adoptions
        ([r("reject", A), r("reject", B)], 10, True),
        ([r("reject", A), r("stop", B)], 10, True),
        ([r("reject", A), r("reject", B, reconsidered=True)], 10, False),  # reconsidering resets
        ([r("reject", A), r("reject", B, reconsidered=True), r("reject", A)], 10, False),
        (
            [r("reject", A), r("reject", B, reconsidered=True), r("reject", A), r("reject", B)],
            10,
            True,
        ),
        # diminishing returns, window max(1, ceil(10 / 10)) = 1 round on one approach
        ([r("adopt", A, 0.5), r("adopt", A, 0.1)], 10, True),
        ([r("adopt", A, 0.1), r("adopt", A, 0.5)], 10, False),
        ([r("adopt", A, 0.5), r("adopt", B, 0.1)], 10, False),
        ([r("adopt", A, 0.5), r("adopt", B, 0.4), r("adopt", A, 0.1)], 10, True),
        ([r("adopt", A, 0.5), r("reject", A, 0.3)], 10, True),  # an unadopted gain is no gain
        ([r("reject", A), r("adopt", A, 0.5)], 10, False),
        # window ceil(25 / 10) = 3 rounds
        ([r("adopt", A, 0.5), r("adopt", A, 0.3), r("adopt", A, 0.1)], 25, False),
        (
            [r("adopt", A, 0.9), r("adopt", A, 0.5), r("adopt", A, 0.3), r("adopt", A, 0.1)],
            25,
            True,
        ),
        (
            [r("adopt", A, 0.9), r("adopt", A, 0.5), r("adopt", B, 0.3), r("adopt", A, 0.1)],
            25,
            False,
        ),
        (
            [r("adopt", A, 0.9), r("adopt", A, 0.5), r("adopt", A, 0.6), r("adopt", A, 0.1)],
            25,
            False,
        ),
    ],
)
def test_reconsideration_due(rounds: list[dict[str, Any]], iterations: int, due: bool) -> None:
    assert reconsideration_due(rounds, iterations) is due


def test_missing_keys_read_as_no_adoption() -> None:
    assert reconsideration_due([{}, {}], 10) is True
    assert reconsideration_due([{"disposition": "adopt"}], 10) is False


@pytest.mark.slow  # real research rounds
def test_the_researcher_reconsiders_with_a_new_mechanism_and_an_archived_parent(
    tmp_path: Path,
) -> None:
    task = line_task(tmp_path / "task")
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def research(number: int, proposals: list[Any], due: bool = False) -> tuple[Any, Any]:
        """One round: the researcher's change, measured, adopted when it beats the noise."""
        proposed = researcher(
            ResearcherInput(
                study=STUDY,
                task=str(task),
                workspace=str(workspace),
                round=number,
                proposals=proposals,
                reconsideration_due=due,
            )
        )
        evidence = measure_pass(task, workspace, number, proposed)
        return proposed, decide(task, workspace, evidence, "accepted", evidence.supports_adoption)

    assert research(1, [propose({"x": 0.3}, "synthesis:blend")])[1].disposition == "adopt"
    assert research(2, [propose({"x": 0.6}, "synthesis:blend")])[1].disposition == "reject"
    assert research(3, [propose({"x": 0.5}, "synthesis:blend")])[1].disposition == "reject"
    offered = [
        propose({"x": 0.35}, "synthesis:blend"),
        propose({"x": 0.25}, "exploration:tpe"),
        propose({"x": 0.28}, "challenge:perturb"),
    ]
    proposed, result = research(4, offered, due=True)
    assert proposed.reconsidered and proposed.approach == "exploration:tpe"
    assert proposed.measurement == "discriminating", "twice the repeats"
    assert result.reconsidered
    state = ResearchRecords(workspace, STUDY).snapshot()
    archived = min(
        (m for m in state.candidates.values() if m.candidate_id not in ("c001", "c004")),
        key=lambda m: m.metric or 0.0,
    )
    assert result.parent_id == archived.candidate_id != "c001"
    assert len(result.metric_repeats) == 6, "a discriminating measurement: twice the repeats"
    assert "reconsideration" in proposed.rationale

    normal, _ = research(
        5, [propose({"x": 0.31}, "synthesis:blend"), propose({"x": 0.29}, "exploration:tpe")]
    )
    assert not normal.reconsidered
