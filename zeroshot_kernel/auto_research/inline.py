"""Rounds of auto-research in this process, without the engine: the same embedded agents
and trusted steps the ``local`` and ``trusted`` harnesses run, in the graph's order (three
scouts; researcher, measure, reviewer until the reviewer stops asking for corrections;
adoption). For benchmarks and for studying the research discipline itself; runs of the
template go through the engine, which adds the ledger, resumption and the views.

Example::

    from zeroshot_kernel.auto_research.inline import run_rounds
    rounds = run_rounds("research_templates/branin", ".", "branin", 3)
    print(rounds[-1].result.disposition)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from zeroshot_kernel.auto_research.adoption import AdoptionRequest, adopt
from zeroshot_kernel.auto_research.measure import MeasureRequest, measure
from zeroshot_kernel.auto_research.protocol import (
    STRATEGIES,
    Change,
    Evidence,
    ResearcherInput,
    ResearchResult,
    ReviewerInput,
    ReviewVerdict,
    ScoutInput,
)
from zeroshot_kernel.auto_research.reconsider import reconsideration_due
from zeroshot_kernel.auto_research.seeds import study_seed
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.task import resolve_task
from zeroshot_kernel.sandbox import Containment

REVIEW_PASSES = 64


@dataclass
class InlineRound:
    """One decided round and every pass it took."""

    result: ResearchResult
    verdict: ReviewVerdict
    """The closing verdict."""
    passes: list[tuple[Change, Evidence, ReviewVerdict]] = field(default_factory=list)


def run_rounds(
    task: str | os.PathLike[str],
    workspace: str | os.PathLike[str],
    study: str,
    rounds: int,
    *,
    seed: int = 0,
    measure_seed: int | None = None,
    run_id: str = "inline",
    containment: Containment | None = None,
) -> list[InlineRound]:
    """Run ``rounds`` rounds (fewer after a stop) and return them. ``seed`` drives the
    agents' choices; ``measure_seed`` the experiment seeds (default: the study's);
    ``containment`` how the experiments are boxed (default: as a run's are)."""
    from zeroshot_kernel.auto_research.agents import researcher, reviewer, scout

    folder, place = str(task), str(workspace)
    base = study_seed(study) if measure_seed is None else measure_seed
    spec = resolve_task(folder, place).spec
    offset = records_for(place, study).round_offset(run_id, folder, spec)
    done: list[InlineRound] = []
    for number in range(offset + 1, offset + rounds + 1):
        proposals = [
            scout(
                ScoutInput(
                    task=folder, study=study, workspace=place, round=number, strategy=s, seed=seed
                )
            )
            for s in STRATEGIES
        ]
        due = reconsideration_due([r.result.to_wire() for r in done], rounds)
        corrections = ""
        passes: list[tuple[Change, Evidence, ReviewVerdict]] = []
        for pass_number in range(1, REVIEW_PASSES + 1):
            change = researcher(
                ResearcherInput(
                    task=folder,
                    study=study,
                    workspace=place,
                    round=number,
                    proposals=proposals,
                    corrections=corrections,
                    reconsideration_due=due,
                    seed=seed,
                )
            )
            evidence = measure(
                MeasureRequest(
                    task=folder,
                    study=study,
                    workspace=place,
                    run_id=run_id,
                    round=number,
                    pass_number=pass_number,
                    pass_id=f"{run_id}/round-{number}/pass-{pass_number}",
                    seed=base,
                    change=change.to_wire(),
                    proposals=proposals,
                    corrections=corrections,
                    reconsideration_due=due,
                    containment=containment or Containment(),
                )
            )
            verdict = reviewer(
                ReviewerInput(
                    task=folder, study=study, workspace=place, change=change, evidence=evidence
                )
            )
            passes.append((change, evidence, verdict))
            if verdict.verdict != "corrections":
                break
            corrections = verdict.corrections
        else:
            raise RuntimeError(f"round {number}: the review took {REVIEW_PASSES} passes")
        result = adopt(
            AdoptionRequest(
                task=folder,
                study=study,
                workspace=place,
                round=number,
                evidence=evidence.to_wire(),
                verdict=verdict.verdict,
                adopt=verdict.adopt,
            )
        )
        done.append(InlineRound(result, verdict, passes))
        if result.disposition == "stop":
            break
    return done
