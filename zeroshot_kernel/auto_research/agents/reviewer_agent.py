"""The reviewer agent (embedded, no LLM): a fresh, read-only judge of one change and the
trusted evidence the measure step recorded for it.

It asks to adopt only a candidate whose paired gain beats the noise floor, accepts a
non-adoption the evidence supports (a refused change, a failed or clearly worse run, a
re-measurement), asks for a discriminating measurement (twice the repeats and twice the
racing budget) when a gain is still within the noise after the race, and approves a stop
only when the incumbent meets the charter's target.
Whatever it says, trusted adoption moves the incumbent only when the evidence supports it.
"""

from __future__ import annotations

from zeroshot_kernel.auto_research.noise_floor import fmt
from zeroshot_kernel.auto_research.protocol import (
    Evidence,
    ReviewerInput,
    ReviewVerdict,
    VerdictLabel,
)
from zeroshot_kernel.auto_research.task import resolve_task


def reviewer(request: ReviewerInput) -> ReviewVerdict:
    spec = resolve_task(request.task, request.workspace).spec
    e = request.evidence
    r, described = e.round, e.summary.splitlines()[0] if e.summary else ""
    if e.status != "measured":
        return _verdict(
            "accepted",
            e,
            False,
            f"kept the incumbent: the change was not measured "
            f"({e.status.replace('_', ' ')}: {'; '.join(e.reasons)})",
        )
    if e.experiment_status != "ok":
        return _verdict(
            "accepted",
            e,
            False,
            f"kept the incumbent: the experiment ended "
            f"{e.experiment_status.replace('_', ' ')} (recorded)",
        )
    if e.candidate_id == e.incumbent_id:
        if e.target_met:
            return _verdict(
                "stop_approved",
                e,
                False,
                f"the incumbent {e.candidate_id} meets the charter's target: "
                f"{spec.metric} {fmt(e.metric)} on {len(e.seeds)} paired seeds "
                f"against target {fmt(spec.target)}",
            )
        return _verdict("accepted", e, False, "kept the incumbent: this round measured it again")
    if e.supports_adoption:
        return _verdict("accepted", e, True, "the gain beats the noise floor: " + described)
    undecided = e.gate_decision in (None, "budget_spent", "undecided")
    if e.gain > 0 and undecided and e.measurement == "standard" and len(e.seeds) >= spec.repeats:
        return _verdict(
            "corrections",
            e,
            False,
            f"the gain {fmt(e.gain)} is within the noise floor {fmt(e.noise_floor)} "
            f"after {len(e.seeds)} paired seeds",
            corrections=f"Round {r}: the gain of {e.candidate_id} over {e.incumbent_id} "
            f"({fmt(e.gain)}) does not beat the noise floor "
            f"({fmt(e.noise_floor)}) on {len(e.seeds)} paired seeds. Take a "
            f"discriminating measurement (twice the repeats and twice the racing budget, "
            f"both on the same seeds) before deciding.",
        )
    why = "the change is worse" if e.gate_decision == "worse" else "the gain is within the noise"
    return _verdict("accepted", e, False, f"kept the incumbent: {why}: {described}")


def _verdict(
    verdict: VerdictLabel, e: Evidence, adopt: bool, reason: str, *, corrections: str = ""
) -> ReviewVerdict:
    r = e.round
    if verdict == "corrections":
        title = f"Round {r}: corrections requested"
    elif verdict == "stop_approved":
        title = f"Round {r}: stop approved"
    elif adopt:
        title = f"Round {r}: adopt {e.candidate_id} ({fmt(e.incumbent_metric)} -> {fmt(e.metric)})"
    else:
        title = f"Round {r}: keep {e.incumbent_id}; {e.candidate_id or 'the change'} not adopted"
    description = f"{e.summary}\n\nReview: {reason}"
    if corrections:
        description += f"\n\nCorrections:\n{corrections}"
    return ReviewVerdict(
        verdict=verdict,
        reason=reason,
        corrections=corrections,
        title=title,
        description=description,
        adopt=adopt,
    )
