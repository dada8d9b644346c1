"""The reviewer agent: a fresh, read-only judge of one round's result.

It trusts the records, not the result's claims: it re-hashes the stored bytes, re-derives
the incumbent from the earlier rounds and recomputes the gain and the noise floor from the
recorded measurements. It accepts an adoption only when the gain beats the noise floor,
accepts a non-adoption the evidence supports, approves a stop only with a justification,
and otherwise asks for concrete corrections.
"""

from __future__ import annotations

import math

from zeroshot_kernel.research.candidates import verify_candidate
from zeroshot_kernel.research.evidence import Comparison, compare, fmt
from zeroshot_kernel.research.protocol import (
    ResearchResult,
    ReviewerInput,
    ReviewVerdict,
    VerdictLabel,
)
from zeroshot_kernel.research.records import ResearchRecords, ResearchState
from zeroshot_kernel.research.studies import records_for
from zeroshot_kernel.research.task import ResearchTask, resolve_task


def reviewer(request: ReviewerInput) -> ReviewVerdict:
    task = resolve_task(request.task, request.workspace)
    records = records_for(request.workspace, request.study)
    state = records.snapshot()
    result = request.result
    corrections = _evidence_problems(task, records, state, result)
    if corrections:
        return _verdict("corrections", result, "the evidence does not hold up",
                        "\n".join(corrections))
    comparison = compare(task.spec, state.candidates, result.candidate_id, result.incumbent_id)
    mismatch = _recomputed(result, comparison)
    if mismatch:
        return _verdict("corrections", result, "the result disagrees with the measurements",
                        mismatch)
    if result.disposition == "stop":
        if not result.justification.strip():
            return _verdict("corrections", result, "a stop needs a justification",
                            f"Round {result.round}: justify the early stop from the evidence "
                            f"(plateau alone never justifies one), or continue the research.")
        return _verdict("stop_approved", result, result.justification, "")
    if result.disposition == "adopt":
        return _review_adoption(task, state, result, comparison)
    return _review_non_adoption(task, state, result, comparison)


def _evidence_problems(
    task: ResearchTask, records: ResearchRecords, state: ResearchState, result: ResearchResult
) -> list[str]:
    """Concrete corrections for missing records or bytes that do not match."""
    r = result.round
    record = state.rounds.get(r)
    if record is None or not record.passes or record.passes[-1].status != "done":
        return [f"Round {r}: rounds/{r:03d}.json has no finished pass; record the round's "
                f"evidence before asking for review."]
    problems = []
    if record.result != result:
        problems.append(f"Round {r}: the result differs from rounds/{r:03d}.json; write the "
                        f"records of this pass again so they agree with the result.")
    if not result.bytes_verified:
        problems.append(f"Round {r}: the bytes were not verified; restore parent "
                        f"{result.parent_id} from its manifest (or rebuild it), verify every "
                        f"file's SHA-256 and run the experiment again.")
    for candidate_id in dict.fromkeys(c for c in (result.parent_id, result.candidate_id) if c):
        check = verify_candidate(records, candidate_id)
        if not check.ok:
            problems.append(
                f"Round {r}: the stored bytes of {candidate_id} do not match its manifest "
                f"({', '.join(check.problems)}); restore {candidate_id} (rebuild it from its "
                f"parent and params), verify every file's SHA-256 and re-measure it.")
    manifest = state.candidates.get(result.candidate_id)
    if manifest is not None and manifest.content_sha256 != result.candidate_sha256:
        problems.append(f"Round {r}: candidateSha256 is not the content hash in the manifest of "
                        f"{result.candidate_id}; report the verified hash.")
    expected = state.incumbent_before(r)
    if expected != result.incumbent_id:
        problems.append(f"Round {r}: the incumbent before this round is {expected}, not "
                        f"{result.incumbent_id}; compare against {expected}.")
    if manifest is None or not manifest.measurements:
        problems.append(f"Round {r}: {result.candidate_id} has no recorded measurement; run its "
                        f"experiment with {task.spec.repeats} repeats.")
    if state.incumbent is not None:
        named = result.candidate_id if result.disposition == "adopt" else expected
        if state.incumbent.candidate_id != named:
            problems.append(f"Round {r}: incumbent.json names {state.incumbent.candidate_id} "
                            f"but the disposition implies {named}; update it.")
    return problems


def _recomputed(result: ResearchResult, comparison: Comparison) -> str:
    def differs(claimed: float | None, actual: float | None) -> bool:
        if claimed is None or actual is None:
            return claimed is not actual
        return not math.isclose(claimed, actual, rel_tol=1e-9, abs_tol=1e-12)

    for name, claimed, actual in (
        ("metric", result.metric, comparison.candidate_mean),
        ("incumbentMetric", result.incumbent_metric, comparison.incumbent_mean),
        ("gain", result.gain, comparison.gain),
        ("noiseFloor", result.noise_floor, comparison.noise_floor),
    ):
        if differs(claimed, actual):
            return (f"Round {result.round}: {name} is {fmt(claimed)} but the recorded "
                    f"measurements give {fmt(actual)}; recompute it from the records.")
    return ""


def _review_adoption(
    task: ResearchTask, state: ResearchState, result: ResearchResult, comparison: Comparison
) -> ReviewVerdict:
    spec = task.spec
    manifest = state.candidates[result.candidate_id]
    r = result.round
    if manifest.status != "ok":
        return _verdict("corrections", result, f"the experiment ended {manifest.status}",
                        f"Round {r}: a candidate whose experiment ended {manifest.status} cannot "
                        f"be adopted; do not adopt {result.candidate_id}.")
    if comparison.incumbent_mean is None:
        return _verdict("accepted", result, "the incumbent has no successful measurement", "")
    if comparison.n_candidate < spec.repeats:
        return _verdict("corrections", result, "too few measurements to adopt",
                        f"Round {r}: measure {result.candidate_id} {spec.repeats} times (it has "
                        f"{comparison.n_candidate}) before adopting it.")
    if not comparison.beats_noise:
        return _verdict(
            "corrections", result,
            f"the gain {fmt(comparison.gain)} is within the noise floor "
            f"{fmt(comparison.noise_floor)}",
            f"Round {r}: the gain of {result.candidate_id} over {result.incumbent_id} "
            f"({fmt(comparison.gain)}) does not beat the noise floor "
            f"({fmt(comparison.noise_floor)}). Take a discriminating measurement (more repeats "
            f"of both) and adopt only if the gain then beats the noise floor; otherwise do not "
            f"adopt.")
    return _verdict("accepted", result, "the gain beats the noise floor: "
                    + comparison.describe(spec.metric), "")


def _review_non_adoption(
    task: ResearchTask, state: ResearchState, result: ResearchResult, comparison: Comparison
) -> ReviewVerdict:
    spec = task.spec
    manifest = state.candidates[result.candidate_id]
    r = result.round
    if not result.justification.strip():
        return _verdict("corrections", result, "a non-adoption needs a reason",
                        f"Round {r}: say why {result.candidate_id} is not adopted.")
    if manifest.status != "ok":
        return _verdict("accepted", result,
                        f"supported: the experiment ended {manifest.status} and is recorded", "")
    if result.candidate_id == result.incumbent_id:
        return _verdict("accepted", result, "supported: a re-measurement of the incumbent", "")
    if comparison.beats_noise and comparison.n_candidate >= spec.repeats:
        return _verdict("corrections", result, "the candidate beats the incumbent beyond noise",
                        f"Round {r}: {comparison.describe(spec.metric)}. Adopt "
                        f"{result.candidate_id} or explain with new evidence why not.")
    if comparison.n_candidate < spec.repeats and not comparison.worse_beyond_noise:
        return _verdict("corrections", result, "too few measurements to reject",
                        f"Round {r}: {result.candidate_id} is within the noise floor after "
                        f"{comparison.n_candidate} measurements; measure it {spec.repeats} "
                        f"times before deciding.")
    return _verdict("accepted", result,
                    "supported non-adoption: " + comparison.describe(spec.metric), "")


def _verdict(
    verdict: VerdictLabel, result: ResearchResult, reason: str, corrections: str
) -> ReviewVerdict:
    r = result.round
    if verdict == "corrections":
        title = f"Round {r}: corrections requested"
    elif verdict == "stop_approved":
        title = f"Round {r}: stop approved"
    elif result.disposition == "adopt":
        title = (f"Round {r}: adopt {result.candidate_id} "
                 f"({fmt(result.incumbent_metric)} -> {fmt(result.metric)})")
    else:
        title = f"Round {r}: keep {result.incumbent_id}; {result.candidate_id} not adopted"
    description = f"{result.evidence}\n\nReview: {reason}"
    if corrections:
        description += f"\n\nCorrections:\n{corrections}"
    return ReviewVerdict(verdict=verdict, reason=reason, corrections=corrections, title=title,
                         description=description)
