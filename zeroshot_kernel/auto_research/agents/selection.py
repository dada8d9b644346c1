"""How the researcher chooses this round's proposal and parent.

Normally: the incumbent is the parent, and the proposal comes from the strategy with the
best upper confidence bound (UCB1) on its adoption rate so far, so strategies that keep
paying get more rounds without starving the others. When reconsideration is due: a new
mechanism (a strategy other than the last round's, and not a re-measurement), an archived
parent (the best measured candidate that is not the incumbent) and a discriminating
measurement (twice the usual repeats, asked of the measure step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from zeroshot_kernel.auto_research.noise_floor import ranked
from zeroshot_kernel.auto_research.protocol import (
    REMEASURE,
    STRATEGIES,
    ResearchResult,
    ScoutProposal,
)
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.task import Params, ResearchTask, params_key


@dataclass(frozen=True)
class Plan:
    proposal: ScoutProposal
    params: Params
    parent_id: str
    remeasure: bool
    reconsidered: bool
    repeats: int
    why: str


def plan_round(
    task: ResearchTask,
    state: ResearchState,
    proposals: list[ScoutProposal],
    *,
    incumbent_id: str,
    round_number: int,
    reconsideration_due: bool,
) -> Plan:
    spec = task.spec
    earlier = {c: m for c, m in state.candidates.items() if m.round < round_number}
    incumbent_params = (
        earlier[incumbent_id].params if incumbent_id in earlier else task.start_params
    )  # before the first measurement: the task's starting candidate
    tried = {params_key(m.params) for m in earlier.values()} | {params_key(incumbent_params)}
    usable: list[tuple[ScoutProposal, Params]] = []
    skipped: list[str] = []
    for proposal in proposals:
        try:
            params = spec.check_params(proposal.params)
        except ValueError as exc:
            skipped.append(f"{proposal.approach}: {exc}")
            continue
        if proposal.approach != REMEASURE and params_key(params) in tried:
            skipped.append(f"{proposal.approach}: parameters already measured")
            continue
        usable.append((proposal, params))
    note = f" (skipped {'; '.join(skipped)})" if skipped else ""
    if not usable:
        fallback = ScoutProposal(
            strategy="challenge",
            approach=REMEASURE,
            params=incumbent_params,
            rationale="no usable proposal; re-measure the incumbent",
        )
        return Plan(
            fallback,
            incumbent_params,
            incumbent_id,
            True,
            False,
            spec.repeats,
            f"no usable proposal{note}: re-measuring the incumbent",
        )
    history = state.results(before=round_number)
    if reconsideration_due:
        last = history[-1].strategy if history else None
        fresh = [(p, q) for p, q in usable if p.strategy != last and p.approach != REMEASURE]
        if fresh:
            fresh.sort(key=lambda item: STRATEGIES.index(item[0].strategy))
            proposal, params = fresh[0]
            archived = [
                m.candidate_id for m in ranked(spec, earlier) if m.candidate_id != incumbent_id
            ]
            parent = archived[0] if archived else incumbent_id
            return Plan(
                proposal,
                params,
                parent,
                False,
                True,
                2 * spec.repeats,
                f"reconsideration: new mechanism {proposal.approach} (last round used "
                f"{last}), archived parent {parent}, {2 * spec.repeats} repeats{note}",
            )
    proposal, params = max(usable, key=lambda item: _ucb(item[0], history))
    remeasure = proposal.approach == REMEASURE
    return Plan(
        proposal,
        incumbent_params if remeasure else params,
        incumbent_id,
        remeasure,
        False,
        spec.repeats,
        f"chose {proposal.approach} by UCB1 over strategy adoption rates{note}",
    )


def _ucb(proposal: ScoutProposal, history: list[ResearchResult]) -> tuple[float, int]:
    tries = [r for r in history if r.strategy == proposal.strategy]
    order = -STRATEGIES.index(proposal.strategy)
    if not tries:
        return (math.inf, order)
    adopted = sum(r.disposition == "adopt" for r in tries)
    bonus = math.sqrt(2 * math.log(len(history)) / len(tries))
    return (adopted / len(tries) + bonus, order)
