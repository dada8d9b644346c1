"""The completion decision: a pure function of the facts a run's ledger holds.

The five questions stay separate fields of :class:`CompletionFacts` (owner verification,
checkout integrity, independent review, evidence coverage, and the gate itself); the gate
applies its rules in order and the first failing one decides. Missing proof stays
missing: an empty matrix, a stale or diagnostic receipt, an unavailable service are
recorded as such and never pass.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from zeroshot_kernel.software_change.review.receipts import EvidenceReceipt
from zeroshot_kernel.software_change.review.tiers import Tier

CompletionState = Literal[
    "IMPLEMENTATION_COMPLETE",
    "OWNER_VERIFIED",
    "REVIEW_PENDING",
    "SEMANTIC_REVIEW_APPROVED",
    "OWNER_VERIFIED_REVIEW_UNAVAILABLE",
    "PARTIALLY_VERIFIED",
    "CANDIDATE_COMPLETE",
    "BLOCKED_BY_MISSING_EVIDENCE",
    "BLOCKED_BY_ENVIRONMENT",
]
RowStatus = Literal[
    "pending",
    "verified",
    "partially_verified",
    "unverified",
    "blocked_by_environment",
    "blocked_by_requirement",
    "not_applicable",
]
CheckoutIntegrity = Literal[
    "REVIEW_CHECKOUT_UNCHANGED", "REVIEW_CHECKOUT_CHANGED", "REVIEW_CHECKOUT_UNVERIFIED"
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Requirement(_Model):
    id: str
    authoritative_text: str
    status: RowStatus
    evidence_refs: list[str] = Field(default_factory=list)
    intended_acceptance_claims: list[str] = Field(default_factory=list)
    unavailable_proof: list[str] = Field(default_factory=list)
    environment_scope: str = "local"
    reason: str = ""


class Review(_Model):
    """An independent review as the engine recorded it."""

    review_id: str
    reviewer_step_id: str
    """The engine execution that ran the reviewer (engine-authenticated provenance)."""
    verdict: Literal["approved", "needs_correction", "load_bearing_findings"]
    head: str
    base: str
    scope: Literal["seam", "integration"] = "seam"
    clean_context: bool = True
    checkout: CheckoutIntegrity = "REVIEW_CHECKOUT_UNVERIFIED"
    engine_authenticated: bool = False


class MicroEligibility(_Model):
    head: str
    tree: str
    ratings: dict[str, str]
    coherent_slice: bool
    public_contract: bool
    hard_triggers: list[str]
    proof_refs: list[str]


class CompletionFacts(_Model):
    tier: Tier
    """The run's review tier (read from its review record by
    :func:`~zeroshot_kernel.software_change.review.tiers.review_tier`)."""
    candidate_head: str
    candidate_tree: str
    base: str = ""
    owner_verified: bool
    requirements: list[Requirement] = Field(default_factory=list)
    receipts: list[EvidenceReceipt] = Field(default_factory=list)
    stale: dict[str, str] = Field(default_factory=dict)
    """Receipt id -> why it is stale."""
    review_available: bool = True
    correction_pending: bool = False
    obligations_satisfied: bool | None = None
    """High risk: the obligations record (``None`` when there is none)."""
    lifecycle_state: str = "INITIAL_REVIEW_REQUIRED"
    review: Review | None = None
    micro: MicroEligibility | None = None


class CompletionDecision(_Model):
    state: CompletionState
    allowed_claims: list[str] = Field(default_factory=list)
    review_id: str | None = None
    reasons: list[str] = Field(default_factory=list)


def matrix_problems(facts: CompletionFacts) -> list[str]:
    """Why the evidence matrix does not cover the requirements (empty when it does)."""
    if not facts.requirements:
        return ["no requirement rows: nothing is proven"]
    problems: list[str] = []
    ids = [row.id for row in facts.requirements]
    if len(set(ids)) != len(ids):
        problems.append("requirement IDs are not unique")
    receipts = {r.id: r for r in facts.receipts}
    for row in facts.requirements:
        if row.status == "not_applicable":
            if not row.reason:
                problems.append(f"{row.id}: not_applicable without a reason")
            continue
        if row.status != "verified":
            problems.append(f"{row.id}: {row.status}")
            continue
        if row.unavailable_proof:
            problems.append(f"{row.id}: verified with unavailable proof")
        counted = [
            receipts[ref]
            for ref in row.evidence_refs
            if ref in receipts and _counts(receipts[ref], row, facts)
        ]
        if not counted:
            problems.append(f"{row.id}: no valid claim-establishing evidence")
            continue
        for claim in row.intended_acceptance_claims:
            if not any(claim in r.establishes for r in counted) or any(
                claim in r.does_not_establish for r in counted
            ):
                problems.append(f"{row.id}: claim {claim!r} is not established")
    return problems


def _counts(receipt: EvidenceReceipt, row: Requirement, facts: CompletionFacts) -> bool:
    return (
        receipt.id not in facts.stale
        and receipt.exit_code == 0
        and receipt.evidence_class == "claim_establishing"
        and row.id in receipt.requirement_ids
        and receipt.environment_scope == row.environment_scope
        and receipt.git_commit == facts.candidate_head
        and receipt.git_tree == facts.candidate_tree
    )


def allowed_claims(facts: CompletionFacts) -> list[str]:
    return sorted(
        {
            c
            for row in facts.requirements
            if row.status == "verified"
            for c in row.intended_acceptance_claims
        }
    )


def decide(facts: CompletionFacts) -> CompletionDecision:
    """The completion decision; the first failing gate decides."""
    claims = allowed_claims(facts)

    def decision(
        state: CompletionState, *reasons: str, review_id: str | None = None, claimed: bool = False
    ) -> CompletionDecision:
        return CompletionDecision(
            state=state,
            allowed_claims=claims if claimed else [],
            review_id=review_id,
            reasons=list(reasons),
        )

    if not facts.owner_verified:
        return decision("IMPLEMENTATION_COMPLETE", "the owner has not verified the change")
    blocked = [r.id for r in facts.requirements if r.status == "blocked_by_environment"]
    if blocked:
        return decision(
            "BLOCKED_BY_ENVIRONMENT", *(f"{r}: blocked by the environment" for r in blocked)
        )
    problems = [f"stale receipt {rid}: {why}" for rid, why in sorted(facts.stale.items())]
    problems += matrix_problems(facts)
    if problems:
        state: CompletionState = (
            "PARTIALLY_VERIFIED" if not facts.review_available else "BLOCKED_BY_MISSING_EVIDENCE"
        )
        return decision(state, *problems)
    if facts.tier == "micro":
        reason = _micro_problem(facts)
        if reason:
            return decision("PARTIALLY_VERIFIED", reason)
        return decision(
            "CANDIDATE_COMPLETE", "micro: eligible, owner proof on the exact head", claimed=True
        )
    if not facts.review_available:
        return decision("OWNER_VERIFIED_REVIEW_UNAVAILABLE", "no independent review available")
    if facts.correction_pending:
        return decision("REVIEW_PENDING", "a review correction is pending")
    if facts.tier == "high-risk" and not facts.obligations_satisfied:
        return decision("REVIEW_PENDING", "high risk: the obligations are not all satisfied")
    chain = _review_problems(facts)
    if chain:
        return decision("REVIEW_PENDING", *chain)
    assert facts.review is not None
    if not facts.review.engine_authenticated:
        return decision(
            "OWNER_VERIFIED_REVIEW_UNAVAILABLE",
            "the reviewer's provenance is owner-recorded, not engine-observed",
            review_id=facts.review.review_id,
        )
    return decision(
        "CANDIDATE_COMPLETE",
        "independent review approved the exact head",
        review_id=facts.review.review_id,
        claimed=True,
    )


def _micro_problem(facts: CompletionFacts) -> str:
    micro = facts.micro
    if micro is None:
        return "micro: no eligibility record"
    if (micro.head, micro.tree) != (facts.candidate_head, facts.candidate_tree):
        return "micro: the eligibility record is for another head"
    if sorted(micro.ratings.values()) != ["low"] * 6 or len(micro.ratings) != 6:
        return "micro: not all six dimensions are low"
    if not micro.coherent_slice or micro.public_contract or micro.hard_triggers:
        return "micro: not one coherent slice without public contract or hard trigger"
    if not micro.proof_refs:
        return "micro: no proof references"
    return ""


def _review_problems(facts: CompletionFacts) -> list[str]:
    review = facts.review
    if review is None:
        return ["no independent review recorded"]
    problems = []
    if review.verdict != "approved":
        problems.append(f"the review verdict is {review.verdict}")
    if review.head != facts.candidate_head or review.base != facts.base:
        problems.append("the review is of another head or base")
    if not review.clean_context:
        problems.append("the reviewer did not work in a clean context")
    if review.checkout != "REVIEW_CHECKOUT_UNCHANGED":
        problems.append(f"checkout integrity: {review.checkout}")
    if facts.tier == "high-risk" and review.scope != "integration":
        problems.append("high risk needs an integration-scope final review")
    if facts.lifecycle_state != "REVIEW_LIFECYCLE_COMPLETE":
        problems.append(f"review lifecycle: {facts.lifecycle_state}")
    return problems
