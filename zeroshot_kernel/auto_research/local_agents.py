"""The embedded research agents as the ``local`` harness calls them.

Each function takes ``{"input": <the node's graph input>, "engine": <context>}`` and
returns what the graph declares: a scout its proposal (as a verifier answer), the
researcher its change, the reviewer its verdict. The context comes from the ledger (see
:func:`engine_context`), so the round number and "reconsideration due" are facts of the
run, not guesses of the agent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research.agents import NoSearchSpace
from zeroshot_kernel.auto_research.agents import researcher as run_researcher
from zeroshot_kernel.auto_research.agents import reviewer as run_reviewer
from zeroshot_kernel.auto_research.agents import scout as run_scout
from zeroshot_kernel.auto_research.engine_context import research_context
from zeroshot_kernel.auto_research.protocol import (
    STRATEGIES,
    Change,
    Evidence,
    ResearcherInput,
    ReviewerInput,
    ScoutInput,
    ScoutProposal,
    Strategy,
)
from zeroshot_kernel.harness.base import ExecutionRequest
from zeroshot_kernel.harness.plan import AgentBinding
from zeroshot_kernel.ledger.events import RunEvent, SafeLog
from zeroshot_kernel.workers import Refusal, Verdict, WorkerContext

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
    context = research_context(request)
    if isinstance(request.binding, AgentBinding) and request.binding.agent == RESEARCHER_AGENT:
        request.log("output", CONTEXT_LOG_PREFIX + json.dumps(context, sort_keys=True))
    return context


def recorded_contexts(events: Iterable[RunEvent]) -> dict[str, dict[str, Any]]:
    """The engine context each researcher execution was given, by execution id, read
    back from its ``engine context`` log line."""
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        if (
            isinstance(event, SafeLog)
            and event.execution is not None
            and event.line.startswith(CONTEXT_LOG_PREFIX)
        ):
            found[event.execution] = json.loads(event.line.removeprefix(CONTEXT_LOG_PREFIX))
    return found


def _workspace(context: WorkerContext) -> str:
    return str(Path(context.workspace).resolve())


@contextmanager
def _parameters_only() -> Iterator[None]:
    """A task the embedded agents cannot research (no search space) is a refusal with its
    one-line reason, recorded and never retried, not a crash with a stack frame."""
    try:
        yield
    except NoSearchSpace as problem:
        raise Refusal(str(problem)) from None


def _scout(strategy: Strategy, call: dict[str, Any], context: WorkerContext) -> Verdict:
    engine = call["engine"]
    with _parameters_only():
        proposal = run_scout(
            ScoutInput(
                task=call["input"]["task"],
                study=call["input"]["study"],
                workspace=_workspace(context),
                round=engine["round"],
                strategy=strategy,
                seed=engine["seed"],
            )
        )
    return Verdict(signals={}, output={"proposal": proposal.to_wire()})


def scout_exploration(call: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scout("exploration", call, context)


def scout_synthesis(call: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scout("synthesis", call, context)


def scout_challenge(call: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scout("challenge", call, context)


def researcher(call: dict[str, Any], context: WorkerContext) -> dict[str, Any]:
    graph_input, engine = call["input"], call["engine"]
    proposals = [
        ScoutProposal.model_validate(graph_input[s])
        for s in STRATEGIES
        if graph_input[s].get("approach") != "none yet"
    ]
    with _parameters_only():
        change = run_researcher(
            ResearcherInput(
                task=graph_input["task"],
                study=graph_input["study"],
                workspace=_workspace(context),
                round=engine["round"],
                proposals=proposals,
                corrections=graph_input["corrections"],
                reconsideration_due=engine["reconsiderationDue"],
                seed=engine["seed"],
            )
        )
    return {"change": change.to_wire()}


def reviewer(call: dict[str, Any], context: WorkerContext) -> Verdict:
    graph_input = call["input"]
    verdict = run_reviewer(
        ReviewerInput(
            task=graph_input["task"],
            study=graph_input["study"],
            workspace=_workspace(context),
            change=Change.model_validate(graph_input["change"]),
            evidence=Evidence.model_validate(graph_input["evidence"]),
        )
    )
    return Verdict(
        signals={"verdict": verdict.verdict},
        diagnostic={
            "reason": verdict.reason,
            "corrections": verdict.corrections,
            "title": verdict.title,
            "description": verdict.description,
            "adopt": verdict.adopt,
        },
    )
