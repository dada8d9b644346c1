"""A re-measurement of the incumbent, read back from a study's records: ``summary.md`` and
the candidate view say "re-measured the incumbent c000" in plain words, not the scout's
``challenge:remeasure`` marked as a rejection."""

from __future__ import annotations

from pathlib import Path

from research_driver import STUDY, change, decide, line_task, measure_pass
from zeroshot_widgets.study_views import CandidateView, review_html

from zeroshot_kernel.auto_research import REMEASURE
from zeroshot_kernel.auto_research.agents import researcher
from zeroshot_kernel.auto_research.protocol import ResearcherInput, ScoutProposal
from zeroshot_kernel.auto_research.round_words import approach_words, decision_words


def test_a_remeasured_incumbent_reads_in_plain_words_in_the_records(tmp_path: Path) -> None:
    task = line_task(tmp_path / "task", env={"NOISE": "independent"})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    rival = measure_pass(task, workspace, 1, change({"x": 0.85}))
    decide(task, workspace, rival, "accepted", adopt_it=False)
    ask = ScoutProposal(
        strategy="challenge",
        approach=REMEASURE,
        params={"x": 1.0},
        rationale="the lead may be noise",
    )
    proposed = researcher(
        ResearcherInput(
            study=STUDY, task=str(task), workspace=str(workspace), round=2, proposals=[ask]
        )
    )
    again = measure_pass(task, workspace, 2, proposed)
    assert again.candidate_id == again.incumbent_id == "c000"
    decide(task, workspace, again, "accepted", adopt_it=False)

    summary = (workspace / ".zeroshot" / "research" / STUDY / "summary.md").read_text()
    (row,) = [line for line in summary.splitlines() if line.startswith("| 2 |")]
    assert "challenge:remeasure" not in row and "| reject |" not in row
    assert "| re-measured the incumbent c000 |" in row and "| re-measured |" in row
    (first,) = [line for line in summary.splitlines() if line.startswith("| 1 |")]
    assert "| reject |" in first  # a real rejection keeps its word

    view = CandidateView(str(workspace), study=STUDY, round=2)
    assert view.detail is not None and view.detail.candidate_id == "c000"
    assert "round 2 re-measured the incumbent c000" in view.message.value
    assert "made no new candidate" in view.message.value
    view.select_round(1)
    assert view.message.value == "" and view.detail is not None
    review = review_html(view.detail)
    assert "kept the incumbent" in review and ">reject<" not in review


def test_the_words_of_a_round() -> None:
    assert approach_words(REMEASURE, "c046", "c046") == "re-measured the incumbent c046"
    assert approach_words("exploration:ei", "c047", "c046") == "exploration:ei"
    assert decision_words("reject", "c046", "c046", REMEASURE) == "re-measured the incumbent c046"
    assert decision_words("reject", "c047", "c046") == "kept the incumbent"
    assert decision_words("adopt", "c047", "c046") == "adopted"
    assert decision_words("", "c047", "c046") == "undecided"
