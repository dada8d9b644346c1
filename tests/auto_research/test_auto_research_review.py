"""The work/review cycle through the real engine: corrections go back to the researcher
within the round (its change measured again), 64 passes exhaust the review, and an early
stop needs a justification."""

from __future__ import annotations

from pathlib import Path

import pytest
from auto_research_agents import CORRECTED_ROUND, CORRECTIONS
from auto_research_support import copy_task, new_workspace, python_node, start

from zeroshot_kernel.auto_research.template import REVIEW_PASSES
from zeroshot_kernel.ledger.events import FailedResult, SucceededResult

# slow: real research runs through the engine
pytestmark = pytest.mark.slow


def test_corrections_are_answered_in_the_same_round(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "branin", repeats=2)
    research = start(
        workspace, task, 2, nodes={"reviewer": python_node("reviewer_correcting_once")}
    )
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()

    assert [r.round for r in view.rounds] == [1, 2]
    assert [r.passes for r in view.rounds] == [2, 1]
    assert terminal.output["round"] == 2
    # Both passes of round 1 are measured against round 1; the second got the corrections
    # (a discriminating measurement of the same change: twice the seeds).
    assert [e["round"] for e in research.evidence()] == [1, 1, 2]
    assert [r["round"] for r in research.results()] == [1, 2]
    record = research.records.read_round(CORRECTED_ROUND)
    assert record is not None
    assert [p.corrections for p in record.passes] == ["", CORRECTIONS]
    first, second = (p.evidence for p in record.passes)
    assert first is not None and second is not None
    assert second.candidate_id == first.candidate_id and second.measurement == "discriminating"
    assert second.seeds[: len(first.seeds)] == first.seeds and len(second.seeds) == 4
    # Corrections never re-scout: three scouts a round, whatever the passes.
    assert len(research.starts("scout_exploration")) == 2
    assert [v.signals["verdict"] for v in research.verdicts()] == [
        "corrections",
        "accepted",
        "accepted",
    ]


@pytest.mark.parametrize("push", [False, True])
def test_sixty_four_passes_exhaust_the_review(tmp_path: Path, push: bool) -> None:
    """Also with --push, where the round's own gate ends the run: unreviewed work is
    never delivered."""
    workspace = new_workspace(tmp_path)
    task = copy_task(workspace, "branin")
    research = start(
        workspace,
        task,
        2,
        push=push,
        nodes={
            "researcher": python_node("researcher_stub"),
            "reviewer": python_node("reviewer_never_satisfied"),
            **{
                f"scout_{s}": python_node("scout_stub")
                for s in ("exploration", "synthesis", "challenge")
            },
        },
    )
    terminal = research.wait()
    assert isinstance(terminal, FailedResult) and terminal.reason == "review_exhausted"
    view = research.view()
    assert view.rounds == () and view.passes_in_progress == REVIEW_PASSES
    assert len(research.starts("researcher")) == REVIEW_PASSES
    assert len(research.starts("measure")) == REVIEW_PASSES
    assert len(research.verdicts()) == REVIEW_PASSES
    assert research.starts("adopt") == []  # an unreviewed round is never decided
    assert len(research.starts("scout_exploration")) == 1
    assert research.starts("deliver") == []


def test_an_early_stop_comes_with_a_justification(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    # The starting point (0, 0) of branin measures about 55.6: the target is met already.
    task = copy_task(workspace, "branin", repeats=2, target=60.0)
    research = start(workspace, task, 10)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    view = research.view()

    assert 1 <= len(view.rounds) < 10
    last = view.rounds[-1]
    assert last.verdict == "stop_approved" and last.disposition == "stop"
    assert terminal.output == {
        "round": last.round,
        "candidateId": last.candidate_id,
        "disposition": "stop",
    }
    assert "meets the charter's target" in last.justification  # trusted adoption's words
    assert "meets the charter's target" in last.reason  # the reviewer's
    assert all(r.verdict == "accepted" for r in view.rounds[:-1])
