"""The researcher agent (embedded, no LLM): turns the scouts' proposals into a change.

It reads the records, picks the parent and one proposal (:mod:`selection`) and returns a
parameter change against that parent. It measures nothing and writes nothing: the trusted
measure step builds, stores and measures the change. With corrections it proposes its
round's last change again with a discriminating measurement (twice the repeats, for the
candidate and the incumbent), as the embedded reviewer asks when a gain may be noise.
"""

from __future__ import annotations

from zeroshot_kernel.auto_research.agents.selection import plan_round
from zeroshot_kernel.auto_research.measure import BASELINE_ID
from zeroshot_kernel.auto_research.protocol import REMEASURE, Change, ResearcherInput
from zeroshot_kernel.auto_research.records import ResearchState
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.task import Params, ResearchTask, resolve_task


def researcher(request: ResearcherInput) -> Change:
    """The change for this pass of ``request.round``; a task without a search space
    raises :class:`NoSearchSpace` (the embedded researcher changes parameters only)."""
    task = resolve_task(request.task, request.workspace)
    task.require_search_space()
    state = records_for(request.workspace, request.study).snapshot()
    if request.corrections.strip():
        again = _last_change(state, request.round)
        if again is not None:
            return again.model_copy(
                update={
                    "measurement": "discriminating",
                    "rationale": f"{again.rationale}; addressing corrections: "
                    f"{request.corrections.strip()}",
                }
            )
    incumbent_id = state.incumbent.candidate_id if state.incumbent else BASELINE_ID
    if (
        state.incumbent is not None
        and state.incumbent.metric is not None
        and task.spec.meets_target(state.incumbent.metric)
    ):
        return Change(
            parent_id=incumbent_id,
            strategy="challenge",
            approach=REMEASURE,
            rationale=f"the incumbent {incumbent_id} meets the target; confirming "
            "on more seeds before stopping",
            measurement="discriminating",
        )
    plan = plan_round(
        task,
        state,
        request.proposals,
        incumbent_id=incumbent_id,
        round_number=request.round,
        reconsideration_due=request.reconsideration_due,
    )
    return Change(
        parent_id=plan.parent_id,
        strategy=plan.proposal.strategy,
        approach=plan.proposal.approach,
        rationale=f"{plan.why}; {plan.proposal.rationale}",
        params={} if plan.remeasure else _changed(task, state, plan.parent_id, plan.params),
        measurement="discriminating" if plan.reconsidered or plan.remeasure else "standard",
        reconsidered=plan.reconsidered,
    )


def _last_change(state: ResearchState, round_number: int) -> Change | None:
    """The round's last measured change, unless it was refused (measuring it again could
    not help)."""
    record = state.rounds.get(round_number)
    last = record.passes[-1] if record and record.passes else None
    if last is None or last.evidence is None or last.evidence.status != "measured":
        return None
    return last.change


def _changed(task: ResearchTask, state: ResearchState, parent_id: str, params: Params) -> Params:
    """The parameters that differ from the parent's (all of them if the parent is unknown)."""
    parent = state.candidates.get(parent_id)
    base = parent.params if parent else task.start_params
    return {name: value for name, value in params.items() if base.get(name) != value}
