"""Trusted adoption: the only code that moves a study's incumbent.

After a round's review, the engine (not a model) decides the round from the measure step's
evidence and the reviewer's verdict: the candidate becomes the incumbent only when the
reviewer accepted (or approved a stop) *and* asked to adopt it *and* the trusted evidence
supports it (measured on paired seeds, every run ok, the task's repeats, a gain beyond the
noise floor in the task's direction: the gate's race over paired seeds ended ``better``,
see ``noise_floor``) *and* its stored bytes still match their content hash *and* every run
the evidence rests on measured those bytes. A reviewer can refuse a real gain; it cannot
adopt noise. The evidence it reads is checked against the measure step's record, so a state
edited on the way is refused; the result records the content hash that was measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from zeroshot_kernel.auto_research.candidates import verify_candidate
from zeroshot_kernel.auto_research.markdown_records import render_records
from zeroshot_kernel.auto_research.noise_floor import decision_text, fmt, paired_seeds
from zeroshot_kernel.auto_research.protocol import (
    Disposition,
    Evidence,
    ResearchResult,
    VerdictLabel,
)
from zeroshot_kernel.auto_research.records import (
    CandidateManifest,
    IncumbentRecord,
    ResearchRecords,
    RoundRecord,
)
from zeroshot_kernel.auto_research.studies.catalog import records_for
from zeroshot_kernel.auto_research.task import resolve_task
from zeroshot_kernel.exceptions import Refused


class AdoptionRefused(Refused):
    """The round cannot be decided from what was given (an error of the node, with why)."""


@dataclass(frozen=True)
class AdoptionRequest:
    task: str
    study: str
    workspace: str
    round: int
    evidence: Any
    """The evidence the reviewer saw, in its wire form (checked against the records)."""
    verdict: VerdictLabel
    adopt: bool
    """Whether the reviewer asked to adopt the candidate."""


def adopt(request: AdoptionRequest) -> ResearchResult:
    """Decide ``request.round``; a retried call returns the decision already recorded."""
    task = resolve_task(request.task, request.workspace)
    records = records_for(request.workspace, request.study)
    record = records.read_round(request.round)
    if record is not None and record.result is not None:
        _settle_incumbent(records, record.result)  # a lost execution may have stopped here
        return record.result
    evidence = _recorded_evidence(record, request)
    assert record is not None
    row = next(p for p in record.passes if p.evidence == evidence)
    disposition, justification = _decide(records, evidence, request)
    manifest = records.read_manifest(evidence.candidate_id or evidence.parent_id)
    change = row.change
    result = ResearchResult(
        round=request.round,
        parent_id=evidence.parent_id,
        candidate_id=evidence.candidate_id,
        strategy=change.strategy if change else "baseline",
        approach=change.approach if change else "baseline",
        params=manifest.params if manifest else {},
        measure_status=evidence.status,
        experiment_status=evidence.experiment_status,
        metric=evidence.metric,
        metric_repeats=evidence.metric_repeats,
        incumbent_id=evidence.incumbent_id,
        incumbent_metric=evidence.incumbent_metric,
        gain=evidence.gain,
        noise_floor=evidence.noise_floor,
        effect_size=evidence.effect_size,
        gate_decision=evidence.gate_decision,
        max_seeds=evidence.max_seeds,
        evidence=evidence.summary,
        disposition=disposition,
        justification=justification,
        bytes_verified=evidence.status != "parent_unverified",
        candidate_sha256=evidence.candidate_sha256,
        reconsidered=evidence.reconsidered,
        reconsideration_due=evidence.reconsideration_due,
        contained=evidence.contained,
        self_scored=evidence.self_scored,
    )
    records.decide(result)  # first: a retry finds the decision and settles the incumbent
    _settle_incumbent(records, result)
    render_records(task, records)
    return result


def _recorded_evidence(record: RoundRecord | None, request: AdoptionRequest) -> Evidence:
    try:
        given = Evidence.from_wire(request.evidence)
    except ValidationError as invalid:
        raise AdoptionRefused(
            f"round {request.round}: the evidence is malformed: {invalid.errors()[0]['msg']}"
        ) from None
    recorded = [p.evidence for p in record.passes if p.evidence is not None] if record else []
    if not recorded or recorded[-1] != given:
        raise AdoptionRefused(
            f"round {request.round}: the evidence given is not the measure "
            "step's record of this round's last pass; nothing was decided"
        )
    return given


def _decide(
    records: ResearchRecords, evidence: Evidence, request: AdoptionRequest
) -> tuple[Disposition, str]:
    candidate, incumbent = evidence.candidate_id, evidence.incumbent_id
    stop = request.verdict == "stop_approved"
    kept = "an early stop approved by the reviewer; " if stop else ""
    if evidence.status != "measured":
        return (
            "stop" if stop else "reject",
            f"{kept}not adopted: {evidence.status.replace('_', ' ')}: "
            f"{'; '.join(evidence.reasons)}",
        )
    numbers = (
        f"gain {fmt(evidence.gain)} against the noise floor "
        f"{fmt(evidence.noise_floor)} on {paired_seeds(len(evidence.seeds))}"
    )
    if evidence.gate_decision is not None:
        numbers += (
            " (gate: "
            + decision_text(
                evidence.gate_decision,
                len(evidence.seeds),
                evidence.max_seeds,
                evidence.experiment_status,
            )
            + ")"
        )
    # the measure step's flag, and (records made since racing) the race's own decision
    supported = evidence.supports_adoption and evidence.gate_decision in (None, "better")
    if supported and request.adopt:
        check = verify_candidate(records, candidate)
        problems = _measured_other_bytes(records.read_manifest(candidate), evidence)
        if problems:
            check = check.model_copy(update={"ok": False, "problems": [*check.problems, *problems]})
        if check.ok:
            return "adopt", (f"{kept}adopted {candidate}: {numbers}; the reviewer accepted")
        return (
            "stop" if stop else "reject",
            f"{kept}not adopted: the stored bytes of {candidate} no longer match their "
            f"content hash ({', '.join(check.problems)})",
        )
    if stop:
        target = (
            f"; the measurement of {candidate} meets the charter's target"
            if evidence.target_met
            else ""
        )
        return "stop", f"an early stop approved by the reviewer{target}; {incumbent} is kept"
    if supported:
        return "reject", f"not adopted: the reviewer declined {candidate} although its {numbers}"
    if evidence.experiment_status == "pruned":
        return "reject", (
            "not adopted: a run was pruned (its learning curve could not beat the earlier "
            f"runs'); it is recorded and {incumbent} is kept"
        )
    if evidence.experiment_status != "ok":
        return "reject", (
            f"not adopted: the experiment ended {evidence.experiment_status}; "
            f"the failure is recorded and {incumbent} is kept"
        )
    if candidate == incumbent:
        return "reject", (
            f"a re-measurement of the incumbent {incumbent} "
            f"({paired_seeds(len(evidence.seeds))}); nothing new to adopt"
        )
    asked = "the reviewer asked to adopt, but " if request.adopt else ""
    return "reject", f"not adopted: {asked}the evidence does not support it: {numbers}"


def _measured_other_bytes(manifest: CandidateManifest | None, evidence: Evidence) -> list[str]:
    """What binds the evidence to other bytes than the candidate's stored ones: a manifest
    naming other bytes, or a run on the evidence's seeds recorded with another hash."""
    if manifest is None:
        return ["no manifest"]
    problems = []
    if manifest.content_sha256 != evidence.candidate_sha256:
        problems.append("the manifest names other bytes than were measured")
    seeds = set(evidence.seeds)
    if any(
        m.content_sha256 and m.content_sha256 != evidence.candidate_sha256
        for m in manifest.measurements
        if m.experiment.seed in seeds
    ):
        problems.append("a run of the evidence measured other bytes")
    return problems


def _settle_incumbent(records: ResearchRecords, result: ResearchResult) -> None:
    """Point ``incumbent.json`` at the candidate a decided adoption names."""
    if result.disposition != "adopt":
        return
    current = records.read_incumbent()
    if current is not None and current.candidate_id == result.candidate_id:
        return
    manifest = records.read_manifest(result.candidate_id)
    assert manifest is not None
    records.write_incumbent(
        IncumbentRecord(
            candidate_id=result.candidate_id,
            adopted_round=result.round,
            metric=result.metric,
            content_sha256=manifest.content_sha256,
        )
    )
