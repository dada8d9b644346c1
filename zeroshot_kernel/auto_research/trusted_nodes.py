"""The trusted research nodes as the ``trusted`` harness calls them: ``measure`` and
``adopt`` (see :mod:`zeroshot_kernel.harness.trusted_harness`).

Each takes ``{"input": <the node's graph input>, "engine": <context>}`` (the context from
:func:`engine_context`, computed in the controller from the ledger) and returns what the
graph declares. Neither ever runs an agent: they are the engine's own code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research.adoption import AdoptionRequest
from zeroshot_kernel.auto_research.adoption import adopt as decide
from zeroshot_kernel.auto_research.engine_context import research_context
from zeroshot_kernel.auto_research.measure import MeasureRequest
from zeroshot_kernel.auto_research.measure import measure as run_measure
from zeroshot_kernel.auto_research.protocol import STRATEGIES, ScoutProposal
from zeroshot_kernel.harness.base import ExecutionRequest
from zeroshot_kernel.sandbox import SandboxUnavailable
from zeroshot_kernel.workers import Refusal, Verdict, WorkerContext


def engine_context(request: ExecutionRequest) -> dict[str, Any]:
    return research_context(request)


def measure(call: dict[str, Any], context: WorkerContext) -> dict[str, Any]:
    """Measure the round's change in the run's boxes; a code task that wants a box where
    none can be made is refused in one line (never retried, never run unboxed)."""
    graph_input, engine = call["input"], call["engine"]
    number = engine["measured"] + 1
    request = MeasureRequest(
        task=graph_input["task"],
        study=graph_input["study"],
        workspace=str(Path(context.workspace).resolve()),
        run_id=context.run_id,
        round=engine["round"],
        pass_number=number,
        pass_id=f"{context.run_id}/round-{engine['round']}/pass-{number}",
        seed=engine["studySeed"],
        change=graph_input["change"],
        proposals=_proposals(graph_input),
        corrections=graph_input["corrections"],
        reconsideration_due=engine["reconsiderationDue"],
        dask=engine.get("dask"),
        candidates=engine.get("parallel"),
        containment=context.containment,
    )
    try:
        evidence = run_measure(request)
    except SandboxUnavailable as unavailable:
        raise Refusal(str(unavailable)) from None
    return {"evidence": evidence.to_wire()}


DECISIONS = {"adopt": "adopted", "reject": "kept", "stop": "stopped"}


def adopt(call: dict[str, Any], context: WorkerContext) -> Verdict:
    """Decide the round; the reviewer's verdict and adopt flag come from the ledger."""
    graph_input, engine = call["input"], call["engine"]
    result = decide(
        AdoptionRequest(
            task=graph_input["task"],
            study=graph_input["study"],
            workspace=str(Path(context.workspace).resolve()),
            round=engine["round"],
            evidence=graph_input["evidence"],
            verdict=engine["verdict"],
            adopt=engine["adopt"],
        )
    )
    return Verdict(
        signals={"decision": DECISIONS[result.disposition]}, output={"result": result.to_wire()}
    )


def _proposals(graph_input: dict[str, Any]) -> list[ScoutProposal]:
    """The round's scout proposals (placeholders and malformed ones left out)."""
    found = []
    for strategy in STRATEGIES:
        try:
            proposal = ScoutProposal.model_validate(graph_input[strategy])
        except ValueError:
            continue
        if proposal.approach != "none yet":
            found.append(proposal)
    return found
