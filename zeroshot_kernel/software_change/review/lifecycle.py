"""The review lifecycle of one seam: a state machine whose counters only grow.

Events are facts derived from the ledger (a reviewer's verdict, an owner correction, an
escalation, a strategy revision); :func:`apply` folds one into a :class:`SeamLifecycle`
and :func:`replay` folds a whole history. Counters live in the seam-keyed lifecycle,
never in node names or caller labels, so renaming a node or an attempt, or restarting a
controller (which replays the same ledger), cannot buy another cycle. A third cycle is
unreachable: the only way into cycle 2 is the one strategy revision, and a failure in
cycle 2 ends in ``BLOCKED``.

``BLOCKED`` and ``REVIEW_LIFECYCLE_COMPLETE`` absorb every event; the breaker and
escalation states accept only an escalation or a revision; every event, absorbed or not,
is appended to the history.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from zeroshot_kernel.exceptions import InvalidInput
from zeroshot_kernel.software_change.review.tiers import LIMITS, ReviewLimits

LifecycleState = Literal[
    "INITIAL_REVIEW_REQUIRED",
    "OWNER_CORRECTION_REQUIRED",
    "CORRECTION_RECHECK_REQUIRED",
    "CIRCUIT_BREAKER",
    "STRATEGY_ESCALATION_REQUIRES_OWNER",
    "NEW_STRATEGY_REVIEW_REQUIRED",
    "FINAL_INTEGRATION_REVIEW_REQUIRED",
    "FINAL_OWNER_CORRECTION_REQUIRED",
    "REVIEW_LIFECYCLE_COMPLETE",
    "BLOCKED",
]
ReviewVerdict = Literal["approved", "needs_correction", "load_bearing_findings"]
ABSORBING: frozenset[str] = frozenset({"REVIEW_LIFECYCLE_COMPLETE", "BLOCKED"})
STOPPED: frozenset[str] = frozenset({"CIRCUIT_BREAKER", "STRATEGY_ESCALATION_REQUIRES_OWNER"})


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seam: str


class Verdict(_Event):
    kind: Literal["verdict"] = "verdict"
    reviewer: str
    verdict: ReviewVerdict
    scope: Literal["seam", "integration"] = "seam"


class Correction(_Event):
    kind: Literal["correction"] = "correction"


class Escalation(_Event):
    kind: Literal["escalation"] = "escalation"


class StrategyRevision(_Event):
    kind: Literal["revision"] = "revision"
    old_digest: str
    new_digest: str
    material_change: bool
    focused_proof: Literal["passed", "failed", "not_run"]
    reason: str


LifecycleEvent = Annotated[
    Verdict | Correction | Escalation | StrategyRevision, Field(discriminator="kind")
]


class Counters(BaseModel):
    """Aggregate counters of one seam (never reset, whatever the labels)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reviews: int = 0
    rechecks: int = 0
    corrections: int = 0
    cycles: int = 1
    strategy_restarts: int = 0
    final_reviews: int = 0


class SeamLifecycle(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seam: str
    state: LifecycleState = "INITIAL_REVIEW_REQUIRED"
    final_review: bool = False
    """Whether approval leads to a final integration review (high-risk) or completes."""
    reviewer: str | None = None
    """The reviewer the current cycle is bound to (fixed by its first review)."""
    digest: str = ""
    """The current strategy's digest (set by the revision)."""
    revision: int = 1
    reason: str = ""
    """Why the lifecycle stopped (breaker, escalation, blocked)."""
    counters: Counters = Counters()
    limits: ReviewLimits = LIMITS
    history: tuple[str, ...] = ()

    @property
    def cycle(self) -> int:
        return self.counters.cycles


class LifecycleRefused(InvalidInput):
    """The event is not allowed in the lifecycle's state; nothing changed."""


def start(
    seam: str, *, final_review: bool = False, digest: str = "", limits: ReviewLimits = LIMITS
) -> SeamLifecycle:
    return SeamLifecycle(seam=seam, final_review=final_review, digest=digest, limits=limits)


def apply(life: SeamLifecycle, event: LifecycleEvent) -> SeamLifecycle:
    """The lifecycle after ``event``; raises :class:`LifecycleRefused` when the event is
    not allowed (a recheck by another reviewer, a revision without a material change, ...)."""
    if event.seam != life.seam:
        raise LifecycleRefused(f"event for seam {event.seam!r} given to seam {life.seam!r}")
    note = _note(event)
    if life.state in ABSORBING:
        return life.model_copy(update={"history": (*life.history, f"{note} (absorbed)")})
    if life.state in STOPPED and not isinstance(event, Escalation | StrategyRevision):
        raise LifecycleRefused(
            f"{life.state} accepts only an escalation or a revision, not {event.kind}"
        )
    changes = _transition(life, event)
    return life.model_copy(update={**changes, "history": (*life.history, note)})


def replay(
    events: Iterable[LifecycleEvent], *, final_review: bool = False, limits: ReviewLimits = LIMITS
) -> dict[str, SeamLifecycle]:
    """Every seam's lifecycle from its events in order (``init`` is create-only: a seam's
    first event creates it, later ones only advance it)."""
    seams: dict[str, SeamLifecycle] = {}
    for event in events:
        life = seams.get(event.seam) or start(event.seam, final_review=final_review, limits=limits)
        seams[event.seam] = apply(life, event)
    return seams


def _count(life: SeamLifecycle, **increments: int) -> Counters:
    data = life.counters.model_dump()
    for key, value in increments.items():
        data[key] += value
    return Counters(**data)


def _approved(life: SeamLifecycle) -> LifecycleState:
    return "FINAL_INTEGRATION_REVIEW_REQUIRED" if life.final_review else "REVIEW_LIFECYCLE_COMPLETE"


def _transition(life: SeamLifecycle, event: LifecycleEvent) -> dict[str, object]:
    state = life.state
    limits = life.limits
    if isinstance(event, Verdict):
        if state in ("INITIAL_REVIEW_REQUIRED", "NEW_STRATEGY_REVIEW_REQUIRED"):
            if event.scope != "seam":
                raise LifecycleRefused("an integration review before the seam was approved")
            counters = _count(life, reviews=1)
            if event.verdict == "approved":
                return {"state": _approved(life), "reviewer": event.reviewer, "counters": counters}
            return {
                "state": "OWNER_CORRECTION_REQUIRED",
                "reviewer": event.reviewer,
                "counters": counters,
            }
        if state == "CORRECTION_RECHECK_REQUIRED":
            if event.reviewer != life.reviewer:
                raise LifecycleRefused(
                    f"the recheck belongs to reviewer {life.reviewer}, not {event.reviewer}"
                )
            if life.counters.rechecks >= limits.correction_rechecks_per_cycle * life.cycle:
                return {"state": "CIRCUIT_BREAKER", "reason": "extra_recheck"}
            counters = _count(life, rechecks=1)
            if event.verdict == "approved":
                return {"state": _approved(life), "counters": counters}
            if life.cycle >= limits.review_cycles_per_seam:
                return {"state": "BLOCKED", "counters": counters, "reason": "second_cycle_failed"}
            return {
                "state": "CIRCUIT_BREAKER",
                "counters": counters,
                "reason": "load_bearing_findings_after_recheck"
                if event.verdict == "load_bearing_findings"
                else "findings_after_recheck",
            }
        if state == "FINAL_INTEGRATION_REVIEW_REQUIRED":
            if event.scope != "integration":
                raise LifecycleRefused("the final review must have integration scope")
            counters = _count(life, final_reviews=1)
            if event.verdict == "approved":
                return {
                    "state": "REVIEW_LIFECYCLE_COMPLETE",
                    "counters": counters,
                    "reviewer": event.reviewer,
                }
            if counters.final_reviews >= limits.final_integration_reviews:
                # no restart possible after the final reviews are spent
                return {
                    "state": "STRATEGY_ESCALATION_REQUIRES_OWNER",
                    "counters": counters,
                    "reason": "final_integration_review_failed",
                }
            return {"state": "FINAL_OWNER_CORRECTION_REQUIRED", "counters": counters}
        raise LifecycleRefused(f"no review is expected in {state}")
    if isinstance(event, Correction):
        if state == "OWNER_CORRECTION_REQUIRED":
            return {"state": "CORRECTION_RECHECK_REQUIRED", "counters": _count(life, corrections=1)}
        if state == "CORRECTION_RECHECK_REQUIRED":
            return {
                "state": "CIRCUIT_BREAKER",
                "reason": "second_correction_wave",
                "counters": _count(life, corrections=1),
            }
        if state == "FINAL_OWNER_CORRECTION_REQUIRED":
            return {
                "state": "FINAL_INTEGRATION_REVIEW_REQUIRED",
                "counters": _count(life, corrections=1),
            }
        raise LifecycleRefused(f"no correction is expected in {state}")
    if isinstance(event, Escalation):
        if state == "CIRCUIT_BREAKER":
            if life.counters.strategy_restarts >= limits.strategy_restarts_per_seam:
                return {"state": "BLOCKED", "reason": "strategy_restart_spent"}
            return {"state": "STRATEGY_ESCALATION_REQUIRES_OWNER"}
        if state == "STRATEGY_ESCALATION_REQUIRES_OWNER":
            return {}
        raise LifecycleRefused(f"no escalation from {state}")
    # StrategyRevision
    if state != "STRATEGY_ESCALATION_REQUIRES_OWNER":
        raise LifecycleRefused(f"a strategy revision needs an escalation, not {state}")
    if (
        life.counters.strategy_restarts >= limits.strategy_restarts_per_seam
        or life.reason == "final_integration_review_failed"
    ):
        return {"state": "BLOCKED", "reason": "strategy_restart_spent"}
    problems = _revision_problems(life, event)
    if problems:
        raise LifecycleRefused("strategy revision refused: " + "; ".join(problems))
    return {
        "state": "NEW_STRATEGY_REVIEW_REQUIRED",
        "reviewer": None,
        "digest": event.new_digest,
        "revision": life.revision + 1,
        "reason": "",
        "counters": _count(life, strategy_restarts=1, cycles=1),
    }


def _revision_problems(life: SeamLifecycle, event: StrategyRevision) -> list[str]:
    problems = []
    if event.old_digest != life.digest:
        problems.append("the old digest is not the current strategy's")
    if event.new_digest == event.old_digest:
        problems.append("the new strategy has the same digest")
    if not event.material_change:
        problems.append("no material change")
    if event.focused_proof != "passed":
        problems.append(f"focused proof {event.focused_proof}")
    if not event.reason.strip():
        problems.append("no reason")
    return problems


def _note(event: LifecycleEvent) -> str:
    if isinstance(event, Verdict):
        return f"{event.scope} review by {event.reviewer}: {event.verdict}"
    return event.kind
