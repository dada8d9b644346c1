"""The embedded research agents as the ``local`` harness calls them.

Each function takes ``{"input": <the node's graph input>, "engine": <context>}`` and
returns what the graph declares: a scout its proposal (as a verifier answer), the
researcher its result, the reviewer its verdict. The context comes from the ledger (see
:func:`engine_context`), so the round number and "reconsideration due" are facts of the
run, not guesses of the agent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from zeroshot_kernel.harness.base import ExecutionRequest
from zeroshot_kernel.harness.plan import AgentBinding
from zeroshot_kernel.ledger.events import RunEvent, SafeLog
from zeroshot_kernel.research.agents import researcher as run_researcher
from zeroshot_kernel.research.agents import reviewer as run_reviewer
from zeroshot_kernel.research.agents import scout as run_scout
from zeroshot_kernel.research.protocol import (
    STRATEGIES,
    ResearcherInput,
    ResearchResult,
    ReviewerInput,
    ScoutInput,
    ScoutProposal,
    Strategy,
)
from zeroshot_kernel.research.reconsider import reconsideration_due
from zeroshot_kernel.research.studies import records_for, study_of
from zeroshot_kernel.research.views import research_view
from zeroshot_kernel.templates.auto_research import DEFAULT_ITERATIONS
from zeroshot_kernel.workers import Verdict, WorkerContext

RESEARCHER_AGENT = "research.researcher"
CONTEXT_LOG_PREFIX = "engine context "
"""How the researcher's execution log records the engine's part of its input."""


def engine_context(request: ExecutionRequest) -> dict[str, Any]:
    """Round and pass numbers, reconsideration and seed, derived from the run's recorded
    events (a retried execution gets the same ones).

    The researcher's context is also written to its execution's log in the ledger
    (``engine context {json}``), next to the graph input its ``node_started`` records, so
    what the engine passed it (reconsideration due or not) is on record, not only in the
    call."""
    context = _context(request)
    if isinstance(request.binding, AgentBinding) and request.binding.agent == RESEARCHER_AGENT:
        request.log("output", CONTEXT_LOG_PREFIX + json.dumps(context, sort_keys=True))
    return context


def recorded_contexts(events: Iterable[RunEvent]) -> dict[str, dict[str, Any]]:
    """The engine context each researcher execution was given, by execution id, read
    back from its ``engine context`` log line."""
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, SafeLog) and event.execution is not None and \
                event.line.startswith(CONTEXT_LOG_PREFIX):
            found[event.execution] = json.loads(event.line.removeprefix(CONTEXT_LOG_PREFIX))
    return found


def _context(request: ExecutionRequest) -> dict[str, Any]:
    """Rounds are numbered across the study (see ``ResearchRecords.round_offset``)."""
    view = research_view(request.events())
    accepted = [
        {"disposition": r.disposition, "approach": r.approach, "gain": r.gain,
         "reconsidered": r.reconsidered}
        for r in view.rounds
    ]
    run_input = request.run_input or {}
    options = run_input.get("options") or {}
    iterations = int(options.get("iterations") or DEFAULT_ITERATIONS)
    offset = records_for(request.workspace, study_of(run_input)).round_offset(
        request.run_id, str(run_input.get("task", "")))
    return {
        "round": offset + view.active_round,
        "pass": view.passes_in_progress + 1,
        "iterations": iterations,
        "reconsiderationDue": reconsideration_due(accepted, iterations),
        "seed": _seed(request.run_id),
    }


def _seed(run_id: str) -> int:
    return int.from_bytes(run_id.encode()[-6:].ljust(6, b"\0"), "big") % (2**31)


def _workspace(context: WorkerContext) -> str:
    return str(Path(context.workspace).resolve())


def _scout(strategy: Strategy, call: dict[str, Any], context: WorkerContext) -> Verdict:
    engine = call["engine"]
    proposal = run_scout(ScoutInput(
        task=call["input"]["task"], study=call["input"]["study"],
        workspace=_workspace(context), round=engine["round"],
        strategy=strategy, seed=engine["seed"],
    ))
    return Verdict(signals={}, output={"proposal": proposal.to_wire()})


def scout_exploration(call: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scout("exploration", call, context)


def scout_synthesis(call: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scout("synthesis", call, context)


def scout_challenge(call: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scout("challenge", call, context)


def researcher(call: dict[str, Any], context: WorkerContext) -> dict[str, Any]:
    graph_input, engine = call["input"], call["engine"]
    proposals = [ScoutProposal.model_validate(graph_input[s]) for s in STRATEGIES
                 if graph_input[s].get("approach") != "none yet"]
    result = run_researcher(ResearcherInput(
        task=graph_input["task"], study=graph_input["study"], workspace=_workspace(context),
        round=engine["round"],
        proposals=proposals, corrections=graph_input["corrections"],
        reconsideration_due=engine["reconsiderationDue"], seed=engine["seed"],
        pass_id=f"{context.run_id}/round-{engine['round']}/pass-{engine['pass']}",
    ))
    return {"result": _finite(result.to_wire())}


def reviewer(call: dict[str, Any], context: WorkerContext) -> Verdict:
    graph_input = call["input"]
    verdict = run_reviewer(ReviewerInput(
        task=graph_input["task"], study=graph_input["study"], workspace=_workspace(context),
        result=ResearchResult.model_validate(graph_input["result"]),
    ))
    return Verdict(
        signals={"verdict": verdict.verdict},
        diagnostic={"reason": verdict.reason, "corrections": verdict.corrections,
                    "title": verdict.title, "description": verdict.description},
    )


def _finite(document: dict[str, Any]) -> dict[str, Any]:
    """Drop non-finite numbers (a crashed experiment has no metric, not NaN)."""
    return {k: v for k, v in document.items()
            if not (isinstance(v, float) and not math.isfinite(v))}
