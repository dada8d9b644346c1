"""Python-harness stand-ins for auto-research nodes, bound by the end-to-end tests through
runtime plan overrides. Copied into each test workspace, where the controller's worker
processes import it as ``auto_research_agents``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zeroshot_kernel.auto_research import ResearchRecords
from zeroshot_kernel.auto_research.local_agents import reviewer as embedded_reviewer
from zeroshot_kernel.workers import Verdict, WorkerContext

CORRECTED_ROUND = 1
CORRECTIONS = "Re-measure the candidate and the incumbent before deciding (test request)."


def _corrections(round_number: int, text: str) -> Verdict:
    return Verdict(
        signals={"verdict": "corrections"},
        diagnostic={
            "reason": "the test reviewer asks for corrections",
            "corrections": text,
            "title": f"Round {round_number}: corrections requested",
            "description": text,
            "adopt": False,
        },
    )


def reviewer_correcting_once(value: dict[str, Any], context: WorkerContext) -> Verdict:
    """Ask for corrections on the first pass of round 1, then judge like the embedded
    reviewer. The pass count comes from the records, so the worker needs no memory."""
    round_number = int(value["evidence"]["round"])
    record = ResearchRecords(context.workspace, value["study"]).read_round(round_number)
    if round_number == CORRECTED_ROUND and record is not None and len(record.passes) == 1:
        return _corrections(round_number, CORRECTIONS)
    return embedded_reviewer({"input": value, "engine": {}}, context)


def reviewer_never_satisfied(value: dict[str, Any]) -> Verdict:
    return _corrections(int(value["evidence"]["round"]), "Try again (test request).")


def scout_stub(value: dict[str, Any]) -> Verdict:
    proposal = {
        "strategy": "exploration",
        "approach": "exploration:stub",
        "paramsJson": json.dumps({"x1": 1.0, "x2": 2.0}),
        "rationale": "stub",
    }
    return Verdict(signals={}, output={"proposal": proposal})


def researcher_stub(value: dict[str, Any]) -> dict[str, Any]:
    """A typed change at once, the same every pass."""
    return {
        "change": {
            "parentId": "c000",
            "strategy": "exploration",
            "approach": "exploration:stub",
            "rationale": "stub",
            "paramsJson": json.dumps({"x1": 1.0, "x2": 2.0}),
        }
    }


# --- scripted scouts: fixed points, so a test knows what each round tries ----------------

SCRIPT = ".zeroshot/scripted_points.json"
"""Where a test writes the points its scripted scouts propose, in order (a JSON list of
parameter dicts). A scout proposes the first point no candidate in the records has yet,
so round n tries point n whatever the retries."""


def _scripted(strategy: str, study: str, context: WorkerContext) -> Verdict:
    workspace = Path(context.workspace)
    points = json.loads((workspace / SCRIPT).read_text())
    records = ResearchRecords(workspace, study)
    measured = (
        {_key(m.params) for m in records.candidates().values()} if records.initialised() else set()
    )
    point = next((p for p in points if _key(p) not in measured), points[-1])
    proposal = {
        "strategy": strategy,
        "approach": f"{strategy}:scripted",
        "paramsJson": json.dumps(point, sort_keys=True),
        "rationale": "the test's next scripted point",
    }
    return Verdict(signals={}, output={"proposal": proposal})


def _key(params: dict[str, Any]) -> str:
    return json.dumps({k: float(v) for k, v in params.items()}, sort_keys=True)


def scout_scripted_exploration(value: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scripted("exploration", value["study"], context)


def scout_scripted_synthesis(value: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scripted("synthesis", value["study"], context)


def scout_scripted_challenge(value: dict[str, Any], context: WorkerContext) -> Verdict:
    return _scripted("challenge", value["study"], context)


# --- agents that fail or misbehave ---------------------------------------------------------

FAILURE = "scripted failure (test)"


def failing(value: dict[str, Any]) -> Verdict:
    """Any node that raises on every attempt: an unrecovered execution error."""
    raise RuntimeError(FAILURE)


def reviewer_damaging_adoptions(value: dict[str, Any], context: WorkerContext) -> Verdict:
    """Judge like the embedded reviewer, then, when it asks to adopt, damage the
    candidate's stored bytes (as a faulty agent or disk would) before adoption."""
    verdict = embedded_reviewer({"input": value, "engine": {}}, context)
    if verdict.signals.get("verdict") == "accepted" and verdict.diagnostic["adopt"]:
        stored = ResearchRecords(context.workspace, value["study"]).source_dir(
            value["evidence"]["candidateId"]
        )
        params = stored / "params.json"
        params.write_text(params.read_text() + "\n# damaged\n")
    return verdict
