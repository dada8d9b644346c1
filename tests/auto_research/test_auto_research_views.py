"""The research views of a real run, against what its records on disk say: best-so-far,
plateau and reconsideration points, at the end and at an earlier cursor; and the
reconsideration the engine computed from the ledger reaching the researcher's call.

The scouts are scripted so the run's course is known: from (0, 0) of rosenbrock (~1),
rounds 1 and 2 try far worse points (two accepted non-adoptions), so round 3 is due to
reconsider, and it tries the optimum (1, 1) (~0), an adoption far beyond the noise."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from auto_research_support import (
    SCRIPTED_SCOUTS,
    Research,
    copy_task,
    new_workspace,
    script_points,
    start,
)

from zeroshot_kernel.auto_research import ResearchRecords, reconsideration_due
from zeroshot_kernel.auto_research.local_agents import recorded_contexts
from zeroshot_kernel.auto_research.views import ResearchView, ResearchViewBuilder, research_view
from zeroshot_kernel.ledger.events import NodeStarted, RunEvent, SucceededResult

# slow: real research runs through the engine
pytestmark = pytest.mark.slow

POINTS = [{"x": -2.0, "y": 2.0}, {"x": 2.0, "y": -1.0}, {"x": 1.0, "y": 1.0}]


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Research:
    """One three-round run, shared by the tests below (they only read it)."""
    workspace = new_workspace(tmp_path_factory.mktemp("views"))
    task = copy_task(workspace, "rosenbrock", repeats=2, params={"x": 0.0, "y": 0.0})
    script_points(workspace, POINTS)
    research = start(workspace, task, 3, nodes=SCRIPTED_SCOUTS)
    terminal = research.wait()
    assert isinstance(terminal, SucceededResult), terminal
    return research


def test_views_of_a_real_run_match_its_records(scripted_run: Research) -> None:
    research = scripted_run
    view = research.view()
    records = research.records
    assert [(r.round, r.adopted) for r in view.rounds] == [(1, False), (2, False), (3, True)]

    expected = from_records(records, 3)
    assert view.best_so_far == expected.best_so_far
    assert view.plateau == expected.plateau == 0
    assert view.reconsiderations == expected.reconsiderations == (3,)
    assert view.incumbent is not None
    assert (view.incumbent.candidate_id, view.incumbent.round) == ("c003", 3)
    assert view.incumbent.metric == records.read_round(3).result.metric  # type: ignore[union-attr]
    first = records.read_round(1)
    assert first is not None and first.result is not None
    assert view.best_so_far[:2] == (first.result.incumbent_metric,) * 2  # the start's metric

    # The same views at a cursor before round 3 (as a monitor saw them then): a plateau of
    # two rounds and nothing reconsidered yet.
    at_round = views_by_round(research.run.events())
    assert at_round[3] == view
    earlier = at_round[2]
    assert earlier.plateau == 2 and earlier.reconsiderations == ()
    assert earlier.best_so_far == expected.best_so_far[:2]
    assert earlier.incumbent is not None and earlier.incumbent.candidate_id == "c000"


def test_reconsideration_reaches_the_researcher_through_the_engine(
    scripted_run: Research,
) -> None:
    research = scripted_run
    events = [event for _, event in research.run.events()]

    # Each researcher execution: its recorded input (the graph's: task, corrections, the
    # scouts' proposals) and the engine context recorded with it in the ledger.
    contexts = recorded_contexts(events)
    started = [e for e in events if isinstance(e, NodeStarted) and e.reference.node == "researcher"]
    assert len(started) == len(contexts) >= 3
    due_by_round: dict[int, bool] = {}
    for event in started:
        assert event.input["task"] == research.task
        assert set(event.input) == {
            "task",
            "study",
            "corrections",
            "exploration",
            "synthesis",
            "challenge",
        }
        context = contexts[event.reference.execution]
        assert context["iterations"] == 3
        due_by_round[context["round"]] = context["reconsiderationDue"]
    assert due_by_round == {1: False, 2: False, 3: True}
    # What the engine said is what the ledger implies: two accepted non-adoptions.
    before_three = views_by_round(research.run.events())[2]
    assert reconsideration_due(
        [
            {
                "disposition": r.disposition,
                "approach": r.approach,
                "gain": r.gain,
                "reconsidered": r.reconsidered,
            }
            for r in before_three.rounds
        ],
        3,
    )

    # The researcher acted on it: round 3 reconsidered, from an archived parent.
    view = research.view()
    assert [(r.reconsideration_due, r.reconsidered) for r in view.rounds] == [
        (False, False),
        (False, False),
        (True, True),
    ]
    third = research.records.read_round(3)
    assert third is not None and third.result is not None
    assert third.result.reconsideration_due and third.result.reconsidered
    assert third.result.parent_id == "c001"  # the best archived candidate, not c000
    proposed = third.passes[-1].change
    assert proposed is not None and proposed.reconsidered
    assert "reconsideration" in proposed.rationale and proposed.measurement == "discriminating"


def from_records(records: ResearchRecords, rounds: int) -> ResearchView:
    """The expected views, computed from the records on disk only (never the ledger):
    the incumbent's metric after each round, rounds since it last improved, and the rounds
    that reconsidered."""
    best: list[float | None] = []
    plateau = 0
    reconsidered: list[int] = []
    current: float | None = None
    for number in range(1, rounds + 1):
        record = records.read_round(number)
        assert record is not None and record.result is not None
        result = record.result
        if number == 1:
            current = result.incumbent_metric
        if result.disposition == "adopt":
            current, plateau = result.metric, 0
        else:
            plateau += 1
        if result.reconsidered:
            reconsidered.append(number)
        best.append(current)
    return ResearchView(
        rounds=(),
        incumbent=None,
        best_so_far=tuple(best),
        plateau=plateau,
        reconsiderations=tuple(reconsidered),
        active_round=0,
        passes_in_progress=0,
        measured_in_progress=0,
        review_in_progress=("", False),
        terminal=None,
    )


def views_by_round(events: Iterable[tuple[Any, RunEvent]]) -> dict[int, ResearchView]:
    """The view as each round closed, feeding the ledger's events one at a time (as a
    monitor does); the last entry is fed every event."""
    builder = ResearchViewBuilder()
    found: dict[int, ResearchView] = {}
    everything = [event for _, event in events]
    for event in everything:
        current = builder.feed([event]).view()
        if current.rounds:
            found[len(current.rounds)] = current
    assert found[max(found)] == research_view(everything)
    return found
