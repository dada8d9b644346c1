"""How the researcher chooses this round's proposal and parent.

Normally: the incumbent is the parent, and the proposal is the one with the highest
expected improvement under the Gaussian process fitted to every candidate measured before
this round, failures included (:mod:`surrogate`), whichever scout made it. A scout's request to
re-measure the incumbent comes first: it asks only when a rival sits within the noise of
an incumbent measured few times, and a search built on a lucky incumbent is wasted. When
reconsideration is due: a new mechanism (the best proposal of a strategy other than the
last round's, and not a re-measurement), an archived parent (the best measured candidate
that is not the incumbent) and a discriminating measurement (twice the usual repeats,
asked of the measure step).
"""

from __future__ import annotations

from dataclasses import dataclass

from zeroshot_kernel.auto_research.agents.surrogate import Surrogate
from zeroshot_kernel.auto_research.noise_floor import ranked
from zeroshot_kernel.auto_research.protocol import REMEASURE, STRATEGIES, ScoutProposal
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
    surrogate = Surrogate.fit_to(spec, earlier.values())
    if reconsideration_due:
        last = history[-1].strategy if history else None
        fresh = [(p, q) for p, q in usable if p.strategy != last and p.approach != REMEASURE]
        if fresh:
            (proposal, params), score = _most_promising(surrogate, fresh)
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
                f"{last}; log EI {score:.3g}), archived parent {parent}, "
                f"{2 * spec.repeats} repeats{note}",
            )
    remeasures = [(p, q) for p, q in usable if p.approach == REMEASURE]
    if remeasures:
        proposal = remeasures[0][0]
        return Plan(
            proposal,
            incumbent_params,
            incumbent_id,
            True,
            False,
            spec.repeats,
            f"chose {proposal.approach}: a scout doubts the incumbent's lead{note}",
        )
    (proposal, params), score = _most_promising(surrogate, usable)
    return Plan(
        proposal,
        params,
        incumbent_id,
        False,
        False,
        spec.repeats,
        f"chose {proposal.approach}: the highest expected improvement of {len(usable)} "
        f"(log EI {score:.3g}; {surrogate.describe()}){note}",
    )


def _most_promising(
    surrogate: Surrogate, options: list[tuple[ScoutProposal, Params]]
) -> tuple[tuple[ScoutProposal, Params], float]:
    """The option whose parameters have the highest expected improvement; among equals,
    the earlier strategy (exploration, synthesis, challenge)."""
    scores = surrogate.scores([params for _, params in options])
    best = max(
        range(len(options)),
        key=lambda i: (scores[i], -STRATEGIES.index(options[i][0].strategy), -i),
    )
    return options[best], scores[best]
