"""Python-harness stand-ins for auto-research nodes, bound by the end-to-end tests through
runtime plan overrides. Copied into each test workspace, where the controller's worker
processes import it as ``auto_research_agents``."""

from __future__ import annotations

import json
from typing import Any

from zeroshot_kernel.research import ResearchRecords
from zeroshot_kernel.research.local_agents import reviewer as embedded_reviewer
from zeroshot_kernel.workers import Verdict, WorkerContext

CORRECTED_ROUND = 1
CORRECTIONS = "Re-measure the candidate and the incumbent before deciding (test request)."


def _corrections(round_number: int, text: str) -> Verdict:
    return Verdict(signals={"verdict": "corrections"}, diagnostic={
        "reason": "the test reviewer asks for corrections", "corrections": text,
        "title": f"Round {round_number}: corrections requested", "description": text})


def reviewer_correcting_once(value: dict[str, Any], context: WorkerContext) -> Verdict:
    """Ask for corrections on the first pass of round 1, then judge like the embedded
    reviewer. The pass count comes from the records, so the worker needs no memory."""
    round_number = int(value["result"]["round"])
    record = ResearchRecords(context.workspace).read_round(round_number)
    if round_number == CORRECTED_ROUND and record is not None and len(record.passes) == 1:
        return _corrections(round_number, CORRECTIONS)
    return embedded_reviewer({"input": value, "engine": {}}, context)


def reviewer_never_satisfied(value: dict[str, Any]) -> Verdict:
    return _corrections(int(value["result"]["round"]), "Try again (test request).")


def scout_stub(value: dict[str, Any]) -> Verdict:
    proposal = {"strategy": "exploration", "approach": "exploration:stub",
                "paramsJson": json.dumps({"x1": 1.0, "x2": 2.0}), "rationale": "stub"}
    return Verdict(signals={}, output={"proposal": proposal})


def researcher_stub(value: dict[str, Any]) -> dict[str, Any]:
    """A typed result at once: no experiment, no records."""
    return {"result": {
        "round": 1, "parentId": "c000", "candidateId": "c001", "strategy": "exploration",
        "approach": "exploration:stub", "paramsJson": json.dumps({"x1": 1.0, "x2": 2.0}),
        "experimentStatus": "ok", "incumbentId": "c000", "gain": 0.0, "noiseFloor": 0.0,
        "metricRepeats": [1.0], "evidence": "stub", "disposition": "reject",
        "justification": "stub", "bytesVerified": True, "candidateSha256": "",
        "reconsidered": False, "reconsiderationDue": False, "metric": 1.0,
    }}
